"""scripts/gpu_suite.py --merge: a GPU suite run in parts on one GPU (device_run.sh SUITE_PART, one call each) is
recorded as one suite; parts that overlap or come from different GPUs are refused."""
import importlib.util
import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT

spec = importlib.util.spec_from_file_location("gpu_suite", ROOT / "scripts" / "gpu_suite.py")
suite = importlib.util.module_from_spec(spec)
spec.loader.exec_module(suite)


def _part(tests: dict[str, tuple[str, float]], gpu="NVIDIA H200", wall=300, date="2026-12-02") -> dict:
    lines = [{"id": t, "when": "call", "outcome": o, "seconds": s, "props": {"build_s": s / 2}} for t, (o, s) in
             tests.items()]
    rec = suite.record(lines, wall_s=wall, summary=f"{len(tests)} ran", collected=len(tests))
    return rec | {"gpu": gpu, "date": date}


def test_parts_add_up_to_one_suite_and_keep_every_tests_seconds(tmp_path):
    a = _part({"t::a": ("passed", 100.0), "t::b": ("failed", 5.0)}, wall=400)
    b = _part({"t::c": ("passed", 300.0), "t::d": ("skipped", 0.5)}, wall=350, date="2026-12-03")
    files = []
    for name, rec in (("a", a), ("b", b)):
        files.append(tmp_path / f"{name}.json")
        files[-1].write_text(json.dumps(rec))
    out = tmp_path / "suite.json"
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_suite.py"), "--merge", *map(str, files), "--json",
                        str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rec = json.loads(out.read_text())
    assert (rec["collected"], rec["finished"], rec["passed"], rec["failed"], rec["skipped"]) == (4, 4, 2, 1, 1)
    assert rec["wall_s"] == 750 and rec["date"] == "2026-12-03" and rec["parts"] == 2
    assert set(rec["seconds"]) == {"t::a", "t::b", "t::c", "t::d"} and list(rec["failures"]) == ["t::b"]
    assert [s["id"] for s in rec["slowest"]][:2] == ["t::c", "t::a"]
    assert "2 passed, 1 failed, 1 skipped of 4 collected" in r.stdout


def test_overlapping_parts_or_two_gpu_models_are_refused():
    a = _part({"t::a": ("passed", 1.0)})
    with pytest.raises(SystemExit, match="in parts 1 and 2"):
        suite.merge([a, _part({"t::a": ("passed", 2.0)})])
    with pytest.raises(SystemExit, match="different GPUs"):
        suite.merge([a, _part({"t::b": ("passed", 2.0)}, gpu="NVIDIA H100 80GB HBM3")])


def test_without_times_or_parts_it_is_a_usage_error():
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_suite.py")], capture_output=True, text=True)
    assert r.returncode == 2 and "--merge" in r.stderr and "Traceback" not in r.stderr


def test_routes_whose_package_is_absent_are_recorded_as_untested_not_hidden():
    lines = [{"id": "t::a", "when": "call", "outcome": "passed", "seconds": 1.0,
              "props": {"absent_packages": ["day13.softmax_mojo (mojo)"]}},
             {"id": "t::b", "when": "call", "outcome": "skipped", "seconds": 0.1,
              "props": {"absent_packages": ["day13.softmax_cute (cutlass)", "day13.softmax_mojo (mojo)"]}}]
    a = suite.record(lines, wall_s=1, summary="", collected=2)
    assert a["untested"] == ["day13.softmax_cute (cutlass)", "day13.softmax_mojo (mojo)"]
    b = _part({"t::c": ("passed", 1.0)})
    assert suite.merge([a | {"gpu": b["gpu"]}, b])["untested"] == a["untested"]


def test_only_a_package_really_absent_excuses_an_exercise():
    """tests/gpu/test_days_gpu.py excuses an env_error only for a package this Python lacks: one it has, reported
    missing, is the grader's bug and fails the test."""
    from tests.absent_packages import absent_package

    def result(status, pkg):
        return {"status": status, "message": f"day13.softmax_mojo needs the Python package `{pkg}`",
                "missing_package": pkg}

    assert absent_package(result("env_error", "surely_not_installed_pkg")) == "surely_not_installed_pkg"
    assert absent_package(result("env_error", "json")) is None
    assert absent_package(result("fail", "surely_not_installed_pkg")) is None
    assert absent_package({"status": "env_error", "message": "could not measure this GPU's ceilings"}) is None
    from tests.absent_packages import untested_routes

    routes = [result("env_error", "surely_not_installed_pkg") | {"day": "day13", "exercise": "softmax_mojo"},
              result("env_error", "json") | {"day": "day13", "exercise": "softmax_cute"}]
    assert untested_routes(routes) == ["day13.softmax_mojo (surely_not_installed_pkg)"]


def test_a_missing_package_is_named_in_the_result_not_only_in_its_message(tmp_path):
    """The field absent_package reads: a Python route whose import fails on a package this Python lacks gives an
    env_error result whose `missing_package` names it (the worker's event, carried by the verdict)."""
    from grader.check.verdict import ExerciseResult, decide

    ev = {"ev": "env_error", "message": "d.e needs the Python package `surely_not_installed_pkg`",
          "missing_package": "surely_not_installed_pkg"}
    res = decide(ExerciseResult(day="d", exercise="e", variant="v", source="s", seed=1), None, ev, False)
    assert (res.status, res.as_dict()["missing_package"]) == ("env_error", "surely_not_installed_pkg")
    other = decide(ExerciseResult(day="d", exercise="e", variant="v", source="s", seed=1), None,
                   {"ev": "env_error", "message": "course.yaml: bad"}, False)
    assert other.missing_package is None


def test_a_part_names_the_tests_it_left_unfinished_and_their_rerun_completes_the_suite(tmp_path):
    """A part cut off by its time limit (PYTEST_S) records the collected tests that did not finish; --unfinished
    lists them for the rerun (device_run.sh PYTEST_IDS), and the merge counts each test once."""
    def part(done, collected, **kw):
        lines = [{"id": t, "when": "call", "outcome": "passed", "seconds": 1.0, "props": {}} for t in done]
        return suite.record(lines, wall_s=10, summary="", collected=None, collected_ids=collected) | kw

    a = part(["t::a"], ["t::a", "t::b", "t::c"], gpu="G")  # t::b cut mid-call, t::c never started
    assert (a["collected"], a["finished"], a["unfinished"]) == (3, 1, ["t::b", "t::c"])
    b = part(["t::d"], ["t::d"], gpu="G")
    files = []
    for name, rec in (("a", a), ("b", b)):
        files.append(tmp_path / f"{name}.json")
        files[-1].write_text(json.dumps(rec))
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_suite.py"), "--unfinished", *map(str, files)],
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.split() == ["t::b", "t::c"], r.stderr
    half = suite.merge([a, b])
    assert (half["collected"], half["finished"], half["unfinished"]) == (4, 2, ["t::b", "t::c"])
    rerun = part(["t::b"], ["t::b", "t::c"], gpu="G")  # the rerun finishes one of the two
    whole = suite.merge([a, b, rerun])
    assert (whole["collected"], whole["finished"], whole["passed"], whole["unfinished"]) == (4, 3, 3, ["t::c"])
    old = a.copy()
    del old["unfinished"]
    (tmp_path / "old.json").write_text(json.dumps(old))
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_suite.py"), "--unfinished",
                        str(tmp_path / "old.json")], capture_output=True, text=True)
    assert r.returncode == 2 and "--collected-ids" in r.stderr and "Traceback" not in r.stderr
