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


# -- a long-lived worker (grader watch): one process, job after job ---------------------------------------------------
def session_run(course, session, script, tmp_path, **kw):
    (tmp_path / "script").write_text(script)
    day = course.day("day01")
    job = make_job(course=course, root=ROOT, day=day, ex=day.exercises[0], src_dir=ROOT / "solutions" / "day01",
                   seed=1, correctness_only=True)
    return run_job(job, variant="fake-session", correctness_only=True, worker="tests.fake_worker",
                   sanitize_failures=False, session=session, **kw)


@pytest.fixture
def session(tmp_path, monkeypatch):
    from grader.check.worker_process import WorkerSession

    monkeypatch.setenv("FAKE_WORKER_FILE", str(tmp_path / "script"))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    notices = []
    s = WorkerSession(cwd=ROOT, log_path=tmp_path / "worker.log", worker="tests.fake_worker",
                      on_restart=notices.append)
    s.notices = notices
    yield s
    s.close()


def _gone(pid):
    time.sleep(0.2)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_two_jobs_run_in_one_worker(course, session, tmp_path):
    a = session_run(course, session, "ok", tmp_path)
    b = session_run(course, session, "ok,blank", tmp_path)  # the script is read again for each job
    assert a.status == "pass" and b.status == "fail" and b.cases[1]["category"] == "unwritten"
    assert a.info["pid"] == b.info["pid"] and session.started == 1 and session.notices == []
    assert a.log == str(tmp_path / "worker.log")


def test_a_crash_mid_job_restarts_the_worker_and_the_next_job_runs(course, session, tmp_path):
    first = session_run(course, session, "ok,crash" + ",ok" * 30, tmp_path)
    cats = [c["category"] for c in first.cases]
    assert cats[1] == "crash" and cats[0] == "pass" and set(cats[2:]) == {"pass"}  # the rest ran in a new worker
    assert first.status == "fail" and "illegal memory access" in first.message
    assert len(session.notices) == 1 and "died" in session.notices[0]  # one line, when the next worker starts
    second = session_run(course, session, "ok", tmp_path)
    # first.info: the worker that ran its last cases, the one started after the crash; it stays for the next job
    assert second.status == "pass" and second.info["pid"] == first.info["pid"]
    assert session.started == 2 and len(session.notices) == 1


def test_a_hang_is_killed_after_the_limit_and_the_next_job_runs(course, session, tmp_path):
    t0 = time.monotonic()
    hung = session_run(course, session, "ok,hang", tmp_path, case_s=1.0)
    assert time.monotonic() - t0 < 30
    assert hung.cases[1]["category"] == "timeout" and hung.cases[1]["message"].startswith("timed out after 1 s")
    assert _gone(hung.info["pid"])
    after = session_run(course, session, "ok", tmp_path)
    assert after.status == "pass" and after.info["pid"] != hung.info["pid"]
    assert len(session.notices) == 1 and "stopped responding" in session.notices[0]


def test_closing_the_session_ends_its_worker(course, session, tmp_path):
    res = session_run(course, session, "ok", tmp_path)
    session.close()
    assert _gone(res.info["pid"]) and session.proc is None


def test_the_real_worker_serves_jobs_in_one_process(course, tmp_path, monkeypatch):
    """grader.check.worker --serve itself: without a GPU each job ends at "no_gpu", in the same process."""
    from grader.check.worker_process import WorkerSession

    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # a GPU machine too takes the no-GPU path here
    day = course.day("day01")
    job = make_job(course=course, root=ROOT, day=day, ex=day.exercises[0], src_dir=ROOT / "solutions" / "day01",
                   seed=1, correctness_only=True)
    events = []
    with WorkerSession(cwd=ROOT, log_path=tmp_path / "w.log") as s:
        for _ in range(2):
            res = run_job(job, variant="serve", correctness_only=True, session=s, sanitize_failures=False,
                          on_event=events.append)
            assert res.status == "no_gpu", res.message
        assert s.started == 1 and s.proc.poll() is None
    assert [e["ev"] for e in events].count("no_gpu") == 2 and not any(e["ev"] == "end" for e in events)


def test_cases_that_never_ran_are_a_failure_not_a_missing_implementation():
    """A worker that dies before its first case leaves every case "not run": that says nothing about whether the
    output is written, so the verdict is a failure naming why, never NOT IMPLEMENTED (seen when a sandbox kept the
    worker from starting)."""
    from types import SimpleNamespace

    from grader.check.verdict import Category, ExerciseResult, Status, decide

    def result(categories):
        res = ExerciseResult(day="day01", exercise="softmax", variant="solution", source="s", seed=1)
        res.cases = [dict(ok=False, category=c, message=f"{c} here", kind="correctness", dtype="fp32", label=f"{i}x1")
                     for i, c in enumerate(categories)]
        return decide(res, SimpleNamespace(timed=True, points=1), None, correctness_only=True)

    died = result([Category.NOT_RUN] * 3)
    assert died.status == Status.FAIL and "not_run here" in died.message
    assert result([Category.NOT_IMPLEMENTED, Category.NOT_RUN]).status == Status.NOT_IMPLEMENTED


def test_an_exercise_for_one_gpu_generation_is_skipped_elsewhere_saying_why(course):
    """course.yaml `capability:` (day 11's CuTe step needs wgmma): another GPU skips it with the reason, never
    fails it; the GPUs it names run it, and an exercise naming none runs everywhere."""
    from grader.check.worker import capability_shortfall

    cute = next(e for e in course.day("day11").exercises if e.name == "matmul_cute")
    why = capability_shortfall(cute, (8, 0), "NVIDIA A100-SXM4-80GB")
    assert why and "9.0" in why and "A100" in why and "is 8.0" in why and "skipped" in why
    assert capability_shortfall(cute, (9, 0), "NVIDIA H100 80GB HBM3") is None
    plain = course.day("day11").exercises[0]
    assert not plain.capability and capability_shortfall(plain, (7, 5), "Tesla T4") is None
    # day 11's wgmma steps are the optional Hopper track: an A100 or a B200 does not grade them on kernel 2
    for name in ("matmul_wgmma_async", "matmul_wgmma"):
        ex = next(e for e in course.day("day11").exercises if e.name == name)
        assert ex.optional and ex.points > 0
        for cap, gpu in (((8, 0), "NVIDIA A100-SXM4-80GB"), ((10, 0), "NVIDIA B200")):
            why = capability_shortfall(ex, cap, gpu)
            assert why and why.startswith("an optional step") and "not graded here" in why, why
        assert capability_shortfall(ex, (9, 0), "NVIDIA H200") is None
    mandatory = [e for e in course.day("day11").exercises if not e.optional]
    assert mandatory and all(not e.capability for e in mandatory)  # every mandatory point on any GPU since Ampere


def test_a_timed_verdict_takes_the_bar_of_the_gpu_class_it_ran_on(course):
    """10c's 1.07x passes on an sm_86 (its class bar, said in the verdict) and fails on an H100 (1.15x); a GPU the
    course gives no class bar, or an unknown one, keeps the default."""
    from grader.check.verdict import ExerciseResult, decide
    from grader.verdicts import Status

    ex = next(e for e in course.day("day10").exercises if e.name == "flash_attention")
    assert ex.threshold == 1.15 and ex.threshold_on("8.6")[0] == 1.07

    def verdict(capability, speedup=1.10):
        res = ExerciseResult(day="day10", exercise=ex.name, variant="solution", source="s", seed=1,
                             threshold=ex.threshold)
        res.info = {"capability": capability} if capability else {}
        res.cases = [dict(ok=True, category="ok", message="", kind="benchmark", dtype="fp16", label="1x1x1x64",
                          speedup=speedup)]
        return decide(res, ex, None, correctness_only=False)

    on_86 = verdict("8.6")
    assert on_86.status == Status.PASS and on_86.threshold == 1.07 and "needs 1.07x on sm_86" in on_86.message
    for cap in ("9.0", "8.0", None):
        v = verdict(cap)
        assert v.status == Status.FAIL and v.threshold == 1.15 and v.message.endswith("needs 1.15x"), v.message
    assert verdict("8.6", speedup=1.05).status == Status.FAIL

    from rich.console import Console

    from grader.check import report

    for cap, said in (("8.6", True), ("9.0", False)):
        con = Console(record=True, width=200)
        res = verdict(cap)
        report.render(con, res, ex)
        text = con.export_text()
        assert ("the bar on sm_86 is 1.07x, not 1.15x: a GPU with 99 KiB" in text) is said, text
        assert ("on sm_86)" in report.compact(res, ex)[1]) is said
