"""The GPU suite must fit one device call: its wall time in one call on one GPU, predicted from the seconds each
test took in the last recorded suite (measured/gpu-suite.json, at its parallelism; a new test estimated from its
day's), stays within LIMIT_S. A change that adds tests or slows one shows here, in the change that does it, not in
a developer's next device call. The model (tests/gpu_schedule.py) is checked against the recorded run itself."""
import json

import pytest

from tests.conftest import ROOT, _recorded_seconds
from tests.gpu_schedule import order, predict, simulate

LIMIT_S = 540  # a device call is 600 s; the install and the record's own lines take the rest
RECORD = ROOT / "measured" / "gpu-suite.json"
ONE_GPU_WORKERS = 16  # the one-GPU machines lent (H100 and H200) have 16 CPU cores: the suite runs -n 16


def _record() -> dict:
    return json.loads(RECORD.read_text())


def test_the_whole_gpu_suite_is_predicted_to_fit_one_device_call(gpu_marks):
    rec = _record()
    one_gpu = [t for t, marks in gpu_marks.items() if "multi_gpu" not in marks]
    alone = [t for t in one_gpu if "gpu_alone" in gpu_marks[t]]
    workers = rec.get("workers") or ONE_GPU_WORKERS
    p = predict(one_gpu, _recorded_seconds(), workers, alone, **({"start_s": rec["start_s"]} if "start_s" in rec else {}))
    assert p["wall_s"] <= LIMIT_S, (
        f"the GPU suite is predicted to take {p['wall_s']} s in one call at -n {workers} (over {LIMIT_S} s): "
        f"{p['parallel_s']} s in parallel, {p['alone_s']} s alone, {p['start_s']} s start-up; "
        f"{len(p['estimated'])} test(s) estimated from their day's: {p['estimated'][:8]}. Make the new tests or "
        "the slow ones cheaper (a build shared, fewer cases), or record a faster suite (scripts/device_run.sh).")


def test_the_model_matches_the_recorded_one_call_run():
    """The record of a run in one call keeps the model's prediction from that run's own seconds beside its wall
    time: the model is the scheduler the suite ran under only if they agree."""
    rec = _record()
    if rec.get("parts", 1) > 1 or "predicted_wall_s" not in rec:
        pytest.skip("the record is of a suite run in parts: no one-call wall time to check the model against")
    assert abs(rec["predicted_wall_s"] - rec["wall_s"]) <= 0.15 * rec["wall_s"], (rec["predicted_wall_s"], rec["wall_s"])


def test_the_two_slowest_tests_never_share_a_worker_at_the_start():
    # xdist's first hand-out gives each worker two consecutive tests: slowest first, one worker would run the
    # 257 s test and then the 113 s one (the 377 s part of 2026-12-03)
    seconds = {"a": 257.0, "b": 113.0, "c": 100.0, "d": 90.0, **{f"s{k}": 10.0 for k in range(12)}}
    plain = sorted(seconds, key=lambda t: -seconds[t])
    assert simulate(plain, seconds, 4) == 370.0
    paired = order(list(seconds), seconds, 4)
    assert paired[0] == "a" and seconds[paired[1]] == 10.0
    assert simulate(paired, seconds, 4) == 267.0  # a, then one short test; the rest spread over the others


def test_the_simulation_keeps_every_worker_one_test_ahead():
    # two workers, tests of 5, 4, 3, 2, 1 s in that order: w0 gets 5 and 4, w1 gets 3 and 2; w1 is free at 5 and
    # takes the 1 s test, queued behind nothing: 5 + 1; w0 ends at 9
    seconds = {"t5": 5.0, "t4": 4.0, "t3": 3.0, "t2": 2.0, "t1": 1.0}
    assert simulate(["t5", "t4", "t3", "t2", "t1"], seconds, 2) == 9.0
    assert simulate(["t5"], seconds, 4) == 5.0 and simulate([], seconds, 4) == 0.0


def test_an_unrecorded_test_costs_what_its_days_tests_cost():
    from tests.gpu_schedule import NEW_TEST_S, estimate

    seconds = {"f.py::test_known[day19-a]": 100.0, "f.py::test_known[day19-b]": 80.0,
               "f.py::test_known[day02-a]": 10.0, "f.py::test_solution[day07]": 30.0}
    assert estimate("f.py::test_known[day19-new]", seconds) == 100.0  # the slowest of its function and day
    assert estimate("f.py::test_solution[day19]", seconds) == 100.0  # the slowest of its day
    assert estimate("f.py::test_known[day21-x]", seconds) == 80.0  # a new day: the median of its function
    assert estimate("g.py::test_other", seconds) == NEW_TEST_S
