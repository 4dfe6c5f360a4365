"""The runner's handling of crashing and hanging kernels, with a scripted fake worker (no GPU needed)."""
import os
import time

import pytest

from grader.check.job import make_job
from grader.check.runner import run_job
from tests.conftest import ROOT


def run(course, monkeypatch, behaviour, **kw):
    monkeypatch.setenv("FAKE_WORKER", behaviour)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    day = course.day("day01")
    job = make_job(course=course, root=ROOT, day=day, ex=day.exercises[0], src_dir=ROOT / "solutions" / "day01",
                   seed=1, correctness_only=True)
    kw.setdefault("sanitize_failures", False)  # the rerun under compute-sanitizer: tests/test_sanitizer.py
    return run_job(job, variant="fake", correctness_only=True, worker="tests.fake_worker", **kw)


def test_all_good(course, monkeypatch):
    res = run(course, monkeypatch, "ok")
    assert res.status == "pass" and all(c["ok"] for c in res.cases)


def test_nothing_written_anywhere_is_not_implemented(course, monkeypatch):
    res = run(course, monkeypatch, "blank")
    assert res.status == "not_implemented" and {c["category"] for c in res.cases} == {"not_implemented"}


def test_one_shape_left_unwritten_by_a_working_kernel_is_a_failure(course, monkeypatch):
    # a kernel that passes other cases is implemented: the blank case is its bug, with the "unwritten" hint
    res = run(course, monkeypatch, "ok,blank,ok")
    assert res.status == "fail" and res.cases[1]["category"] == "unwritten"
    assert "no output element was written" in res.message


def test_a_crash_is_a_verdict_and_the_next_worker_goes_on(course, monkeypatch):
    # case 1 crashes the context; a new worker must run cases 2.. and they pass
    res = run(course, monkeypatch, "ok,crash,ok,ok,ok,ok,ok,ok,ok,ok,ok,ok,ok,ok,ok,ok,ok")
    cats = [c["category"] for c in res.cases]
    assert cats[1] == "crash" and cats[0] == "pass" and cats[2:] == ["pass"] * (len(cats) - 2)
    assert res.status == "fail" and "illegal memory access" in res.message


def test_a_worker_that_dies_silently_is_reported(course, monkeypatch):
    res = run(course, monkeypatch, "ok,ok,die" + ",ok" * 20)
    assert res.cases[2]["category"] == "crash" and "exit code 139" in res.cases[2]["message"]
    assert res.cases[3]["category"] == "pass"


def test_repeated_crashes_stop_after_a_few_restarts(course, monkeypatch):
    res = run(course, monkeypatch, "crash")
    cats = [c["category"] for c in res.cases]
    assert cats[:4] == ["crash"] * 4 and set(cats[4:]) == {"not_run"}


def test_a_hang_times_out_and_stops(course, monkeypatch):
    res = run(course, monkeypatch, "ok,hang,ok", case_s=1.5)
    assert res.cases[1]["category"] == "timeout" and res.cases[1]["message"].startswith("timed out after 1.5 s")
    assert {c["category"] for c in res.cases[2:]} == {"not_run"}
    assert res.status == "fail"


def test_interrupting_the_grader_kills_the_worker(course, monkeypatch, tmp_path):
    pidfile = tmp_path / "pid"
    monkeypatch.setenv("FAKE_WORKER_PIDFILE", str(pidfile))

    def interrupt(ev):
        if ev["ev"] == "case_start" and ev["index"] == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(course, monkeypatch, "ok,hang", on_event=interrupt)
    pid = int(pidfile.read_text())
    time.sleep(0.2)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
