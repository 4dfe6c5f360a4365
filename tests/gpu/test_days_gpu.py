"""GPU tests: every solution is correct, every stub says "not implemented" (or, where course.yaml plants a bug in
it, fails with the category it declares), every known-wrong kernel fails with the right message. Timing targets
live in scripts/device_run.sh (benchmarks), not here. Builds are keyed by the content of their sources, so the
suite runs in parallel (pytest -n) and a known-wrong copy recompiles only the file its edit changes."""
import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest

from tests.absent_packages import absent_package, untested_routes
from tests.known_wrong import KNOWN_WRONG, bug_id, check_args, check_env, plant, skip_reason
from tests.conftest import ROOT, SHARED_STATE, run_grader

pytestmark = pytest.mark.gpu


def _ready_days():
    from grader.course import load_course

    return [d.id for d in load_course(ROOT / "course.yaml").days if d.status == "ready"]


def _day_params():
    """The ready days, those with an exercise in several processes (one per GPU) marked multi_gpu."""
    from grader.course import load_course

    return [pytest.param(d.id, marks=[pytest.mark.multi_gpu] if any(e.processes > 1 for e in d.exercises) else [])
            for d in load_course(ROOT / "course.yaml").days if d.status == "ready"]


_ITEM = []  # the test running in this process (one at a time per xdist worker), for its recorded properties


@pytest.fixture(autouse=True)
def _current_item(request):
    _ITEM[:] = [request.node]
    yield
    _ITEM.clear()


def _check(*args, tmp_path, timed=False, shared=True, env=None, boxable=True):
    """`grader check` with the suite's shared state (builds made once for every worker), unless shared is False.
    With $GRADER_TEST_SANDBOX=1, every check runs in the sandbox that `grader grade` gives a submission, unless
    boxable is False (a test of the course's own builds folder, which a sandboxed check does not build in)."""
    out = tmp_path / "result.json"
    t0 = time.perf_counter()
    boxed = ["--sandbox"] if boxable and os.environ.get("GRADER_TEST_SANDBOX") == "1" else []
    # $GRADER_TEST_TIMINGS=1: each check's step timestamps (`--timings`) kept with the test (where its seconds go)
    stamps = ["--timings"] if os.environ.get("GRADER_TEST_TIMINGS") == "1" else []
    r = run_grader("check", *args, *([] if timed else ["--correctness-only"]), *boxed, *stamps, "--seed", "7",
                   "--json", str(out), state=SHARED_STATE if shared else None, env=env)
    assert "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
    data = json.loads(out.read_text()) if out.exists() else None
    if _ITEM and data:  # where the suite's time goes (scripts/gpu_suite.py): the builds against the whole check
        builds = [b.get("seconds") or 0 for ex in data.get("exercises", []) for b in ex.get("builds", [])]
        failed = [f"{c['dtype']} {c['label']}: {c['category']}" for ex in data.get("exercises", [])
                  for c in ex.get("cases", []) if not c.get("ok")]
        _ITEM[0].user_properties += [("check_s", round(time.perf_counter() - t0, 1)),
                                     ("build_s", round(sum(builds), 1)), ("failed", failed[:12])]
    if _ITEM and stamps:
        _ITEM[0].user_properties.append(("timings", [ln for ln in r.stderr.splitlines() if ln.startswith("[timings]")]))
    return r, data


def _too_big(day) -> set[str]:
    """The exercises of the day that need more GPUs (`processes:`) than this machine has: they say so and are
    skipped (exit 2), never failed."""
    import torch

    from grader.course import load_course

    return {e.name for e in load_course(ROOT / "course.yaml").day(day).exercises
            if e.processes > torch.cuda.device_count()}


def _untested(data) -> list[str]:
    """The suite's record of routes a check could not run here: `day.exercise (package)`, one a property."""
    absent = untested_routes((data or {}).get("exercises", []))
    if _ITEM and absent:
        _ITEM[0].user_properties.append(("absent_packages", absent))
    return absent


@pytest.mark.parametrize("day", _day_params())
def test_solution_is_correct_in_every_dtype_and_shape(day, tmp_path):
    from grader.course import load_course

    allowed = {e.name for e in load_course(ROOT / "course.yaml").day(day).exercises if e.determinism == "allowed"}
    skipped = _too_big(day)
    r, data = _check(day, "--solution", tmp_path=tmp_path)
    absent = _untested(data)
    assert r.returncode == (2 if skipped or absent else 0), r.stdout
    for ex in data["exercises"]:
        if ex["exercise"] in skipped:
            assert ex["status"] == "skipped" and "one per GPU" in ex["message"], ex["message"]
            continue
        if absent_package(ex):
            continue
        assert ex["status"] == "pass", ex["message"]
        # every case passed; a correctness case also gave the same bits twice, unless the exercise allows otherwise
        # (fp32 atomics, day 17), and a sanitizer check has no bits
        assert all(c["ok"] and (c["kind"] == "sanitizer" or c["deterministic"] or ex["exercise"] in allowed)
                   for c in ex["cases"])


@pytest.mark.parametrize("day", _day_params())
def test_stub_reports_not_implemented_or_its_planted_bug(day, tmp_path):
    from grader.course import load_course

    planted = {e.name: e.stub.fails_as for e in load_course(ROOT / "course.yaml").day(day).exercises}
    skipped = _too_big(day)
    r, data = _check(day, tmp_path=tmp_path)
    assert r.returncode == 1, r.stdout
    _untested(data)
    for ex in data["exercises"]:
        want = planted[ex["exercise"]]
        if ex["exercise"] in skipped:
            assert ex["status"] == "skipped", ex["message"]
        elif absent_package(ex):
            continue
        elif want is None:
            assert ex["status"] == "not_implemented" and "YOUR CODE HERE still at" in ex["message"], ex["message"]
        else:  # a "fix the bug" stub: it runs, and fails as declared
            assert ex["status"] == "fail", ex["message"]
            cats = {c["category"] for c in ex["cases"]} | {c.get("hint_category") for c in ex["cases"]}
            assert want in cats, (want, sorted(c for c in cats if c))


@pytest.mark.parametrize("bug", [pytest.param(b, marks=[pytest.mark.multi_gpu] if b.get("gpus", 1) > 1 else [])
                                 for b in KNOWN_WRONG],
                         ids=[bug_id(b) for b in KNOWN_WRONG])  # -k day12 selects a day
def test_known_wrong_kernel_fails_with_the_right_message(bug, tmp_path):
    # the copy, `uses:` folders, edits and check arguments: tests/known_wrong.py (scripts/error_maps.py runs the same)
    if why := skip_reason(bug):
        pytest.skip(why)
    src = plant(bug, tmp_path)
    # compute-sanitizer after a failure (the first failed case rerun under memcheck; an exercise's required tools)
    # only adds to a message: an entry with `sanitizer:` tests what it adds, and elsewhere it is off. It was a
    # quarter of the suite's time, finding nothing in bugs of arithmetic.
    rerun = bug.get("sanitizer")
    r, data = _check(*check_args(bug, src), tmp_path=tmp_path, timed=bug.get("timed", False), env=check_env(bug))
    if (keep := os.environ.get("GRADER_KEEP_RESULTS")) and data:  # scripts/error_maps.py's table from this run's
        # checks (the same arguments and seed): it checks again only what is not kept
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tmp_path / "result.json", Path(keep) / f"{bug_id(bug)}.json")
    if data and (absent := _untested(data)) and len(absent) == len(data["exercises"]):
        pytest.skip(f"{bug['name']}: {', '.join(absent)} is not installed in this Python, so its route is untested")
    assert r.returncode == 1, r.stdout
    cases = [c for ex in data["exercises"] for c in ex["cases"]]
    want = bug["category"] if isinstance(bug["category"], list) else [bug["category"]]
    hits = [c for c in cases if not c["ok"] and (c["category"] in want or c.get("hint_category") in want)]
    assert hits, f"no case failed as {want}: {sorted({c['category'] for c in cases})}\n{r.stdout}"
    assert any(re.search(bug["message"], c["message"]) for c in hits), [c["message"] for c in hits][:3]
    if "pattern" in bug:  # what its error map must show: on the map a student is shown (error_map.choose), as
        # scripts/error_maps.py tabulates it
        from grader.check.error_map import choose

        shown = choose([c for c in cases if not c["ok"]])
        assert shown and shown.get("pattern") == bug["pattern"], [c.get("pattern") for c in hits][:3]
    if rerun:
        assert any(re.search(rerun, c["message"]) for c in hits), [c["message"] for c in hits][:3]
    assert all(ex["status"] == "fail" for ex in data["exercises"])


def test_stale_build_lock_is_recovered(tmp_path):
    """In this worker's own state: no other test's build of day01 holds (or clears) the first workspace."""
    src = tmp_path / "day01"
    shutil.copytree(ROOT / "solutions" / "day01", src)
    r, _ = _check("day01", "--dir", str(src), tmp_path=tmp_path, shared=False, boxable=False)
    assert r.returncode == 0
    from grader.check.build import build_unit, workspace
    from grader.course import load_course

    (ex,) = load_course(ROOT / "course.yaml").day("day01").exercises
    (workspace(ROOT, "day01", build_unit(ex)) / "lock").write_text("")  # as left by a build that was killed
    with open(src / "softmax.cu", "a") as f:  # new content: a build, not a cache hit, so the lock is met
        f.write("\n// a comment that changes the build key\n")
    r, _ = _check("day01", "--dir", str(src), tmp_path=tmp_path, shared=False, boxable=False)
    assert r.returncode == 0 and "recovered a stale build lock" in r.stdout


@pytest.mark.parametrize("ex,tool", [("race", "racecheck"), ("oob", "memcheck"), ("uninit", "initcheck"),
                                     ("sync", "synccheck")])
def test_grader_sanitize_names_each_planted_bug_at_its_line(ex, tool):
    """The day-14 stub under its tool: exit 1, and the first error is in the stub's own file at a line of the
    kernel; the solution under the same tool is clean (exit 0)."""
    if "day14" not in _ready_days():
        pytest.skip("day14 is planned")
    r = run_grader("sanitize", "day14", "--exercise", ex, "--tool", tool, "--seed", "7", state=SHARED_STATE)
    assert "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
    assert r.returncode == 1, r.stdout
    assert re.search(rf"days/day14/(?:{ex}\.cu|softmax_rows\.cuh):\d+", r.stdout), r.stdout
    r = run_grader("sanitize", "day14", "--solution", "--exercise", ex, "--tool", tool, "--seed", "7", state=SHARED_STATE)
    assert r.returncode == 0 and "clean" in r.stdout, r.stdout
