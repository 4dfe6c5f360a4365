"""`grader watch`: the loop over changes, with the scripted fake worker in --serve mode (no GPU), a bounded source of
changes (so no test can hang), and watchfiles itself on a temporary folder."""
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

from grader import cli, watch
from grader.commands import shared
from tests.conftest import ROOT, needs_nvcc
from tests.processes import STARTED, lines_of, started, wait_for
from tests.test_cli import COURSE

# `grader watch` as a command, its checks run by tests/fake_worker.py (the fake_day course).
FAKE_WATCH = ("import sys; from grader.commands import shared; shared.WORKER = 'tests.fake_worker'; "
              "from grader import cli; sys.exit(cli.main(sys.argv[1:]))")
# From the start of `grader watch` to its first verdict: 0.9-1.4 s with the fake worker, 3-4 s compiling day 1
# (17 s cold) on the 2-core machine at a load of 6. A 20-fold margin.
FIRST_VERDICT_S = {"fake": 30, "real": 20 * 17}
# From SIGINT to its exit: the watch closes its worker (waiting up to 5 s for one in the middle of a request, then
# killing it). It took 0.2-0.45 s here at a load of 6; the 5 s and a 20-fold margin on that.
STOP_S = 5 + 20 * 0.45


@pytest.fixture
def fake_day(tmp_path, monkeypatch):
    """A course in tmp_path (day01, its solution) whose checks run tests/fake_worker.py; the script of the fake
    is a file the test rewrites between checks."""
    (tmp_path / "course.yaml").write_text(COURSE)
    shutil.copytree(ROOT / "solutions" / "day01", tmp_path / "solutions" / "day01")
    shutil.copytree(ROOT / "solutions" / "day01", tmp_path / "mine")
    monkeypatch.setattr(shared, "WORKER", "tests.fake_worker")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    script = tmp_path / "script"
    script.write_text("ok")
    monkeypatch.setenv("FAKE_WORKER_FILE", str(script))
    return tmp_path


def run_watch(course_dir, changes, *args, monkeypatch):
    monkeypatch.setattr(watch, "file_changes", lambda folders: changes)
    return cli.main(["--course", str(course_dir / "course.yaml"), "watch", "day01", "--dir", str(course_dir / "mine"),
                     "--correctness-only", "--seed", "4", *args])


def edits(course_dir, *scripts):
    """Each step: the fake's script for the next check, then a line added to the kernel, then that file changed."""
    kernel = course_dir / "mine" / "softmax.cu"
    for k, script in enumerate(scripts):
        (course_dir / "script").write_text(script)
        with open(kernel, "a") as f:
            f.write(f"// edit {k}\n")
        yield {kernel, course_dir / "mine" / ".softmax.cu.swp"}


def verdicts(out: str) -> list[str]:
    return [line for line in out.splitlines() if "day01.softmax:" in line]


def test_an_edit_gets_a_second_verdict(fake_day, monkeypatch, capsys):
    assert run_watch(fake_day, edits(fake_day, "ok,blank"), monkeypatch=monkeypatch) == 0
    out = capsys.readouterr().out
    got = verdicts(out)
    assert len(got) == 2, out
    assert "✓ day01.softmax: correct (3 cases)" in got[0]
    assert "✗ day01.softmax: 1 of 3 correctness cases failed; first: fp32" in got[1]
    assert "changed: mine/softmax.cu" in out and ".swp" not in out and "seed 4" in out


def test_changes_that_concern_no_exercise_are_ignored(fake_day, monkeypatch, capsys):
    noise = iter([{fake_day / "mine" / "notes.txt"}, {fake_day / "elsewhere.cu"}])
    assert run_watch(fake_day, noise, monkeypatch=monkeypatch) == 0
    assert len(verdicts(capsys.readouterr().out)) == 1


def test_max_runs_bounds_the_loop(fake_day, monkeypatch, capsys):
    assert run_watch(fake_day, edits(fake_day, "ok", "ok", "ok"), "--max-runs", "2", monkeypatch=monkeypatch) == 0
    assert len(verdicts(capsys.readouterr().out)) == 3


def test_a_crash_restarts_the_worker_and_watching_goes_on(fake_day, monkeypatch, capsys):
    steps = edits(fake_day, "ok,crash" + ",ok" * 10, "ok")
    assert run_watch(fake_day, steps, monkeypatch=monkeypatch) == 0
    out = capsys.readouterr().out
    got = verdicts(out)
    assert len(got) == 3 and "✗" in got[1] and "illegal memory access" in got[1] and "✓" in got[2]
    restarted = [line for line in out.splitlines() if "worker restarted" in line]
    assert len(restarted) == 1 and "still watching" in restarted[0]


def test_a_hang_is_killed_and_watching_goes_on(fake_day, monkeypatch, capsys):
    steps = edits(fake_day, "ok,hang", "ok")
    assert run_watch(fake_day, steps, "--timeout", "1", monkeypatch=monkeypatch) == 0
    out = capsys.readouterr().out
    got = verdicts(out)
    assert len(got) == 3 and "timed out after 1 s" in got[1] and "✓" in got[2]
    assert sum("worker restarted" in line for line in out.splitlines()) == 1


def test_ctrl_c_stops_cleanly_and_ends_the_worker(fake_day, monkeypatch, capsys, tmp_path):
    pidfile = tmp_path / "pid"
    monkeypatch.setenv("FAKE_WORKER_PIDFILE", str(pidfile))

    def interrupted():
        yield from ()
        raise KeyboardInterrupt

    assert run_watch(fake_day, interrupted(), monkeypatch=monkeypatch) == 0
    assert "stopped watching" in capsys.readouterr().out
    with pytest.raises(ProcessLookupError):  # killed and reaped before the watch returned
        os.kill(int(pidfile.read_text()), 0)


@pytest.mark.parametrize("args, text", [
    (["day99"], "no day 'day99' in course.yaml"),
    (["day01", "--dir", "/nonexistent/folder"], "/nonexistent/folder does not exist"),
    (["day01", "--solution", "--exercise", "nope"], "day01 has no exercise 'nope'"),
])
def test_bad_input_gets_the_messages_of_check(args, text, capsys):
    for cmd in ("check", "watch"):
        assert cli.main([cmd, *args]) == 2
        assert text in capsys.readouterr().out


def test_a_header_concerns_every_exercise_and_a_source_its_own(course):
    day = course.day("day01")
    ex = day.exercises[0]
    src = ROOT / "solutions" / "day01"
    assert watch.affected([ex], {src / "softmax.cu"}, src, ROOT) == [ex]
    assert watch.affected([ex], {src / "helpers.cuh"}, src, ROOT) == [ex]  # a header beside the sources, new or not
    assert watch.affected([ex], {src / "README.md", src / ".softmax.cu.swp"}, src, ROOT) == []
    if ex.include_dirs:
        assert watch.affected([ex], {ROOT / ex.include_dirs[0] / "x.cuh"}, src, ROOT) == [ex]
    assert src.resolve() in watch.watched_folders([ex], src, ROOT)


def test_watchfiles_reports_a_save(tmp_path):
    target = tmp_path / "k.cu"
    target.write_text("a\n")
    stop = threading.Event()
    timer = threading.Timer(30, stop.set)  # the bound: no change seen in 30 s ends the watch (it came in 0.6 s)
    timer.start()

    def save():
        time.sleep(0.5)
        while not stop.is_set():
            target.write_text(f"{time.time()}\n")
            time.sleep(0.3)

    threading.Thread(target=save, daemon=True).start()
    try:
        batch = next(watch.file_changes([tmp_path], stop), set())
    finally:
        stop.set()
        timer.cancel()
    assert target in batch


def _interrupted(cmd, kind: str, how: str, **popen) -> tuple[int, str]:
    """Starts `grader watch` (cmd) as a shell would (how), waits for its first verdict, sends SIGINT as Ctrl-C or
    `kill -INT` does, and waits for it to end: (exit code, output)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=started(how),
                            **popen)
    lines = lines_of(proc)
    try:
        wait_for(lines, "day01.softmax:", FIRST_VERDICT_S[kind], proc)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=STOP_S)
        lines.reader.join(STOP_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, "".join(lines)


@pytest.mark.parametrize("how", STARTED)
def test_sigint_stops_a_watch_however_it_was_started(fake_day, how):
    """`grader watch day03 &` from a script starts with SIGINT ignored: `kill -INT` stops it all the same, and its
    worker with it."""
    pidfile = fake_day / "pid"
    env = {**os.environ, "FAKE_WORKER_PIDFILE": str(pidfile)}
    code, out = _interrupted([sys.executable, "-c", FAKE_WATCH, "--course", str(fake_day / "course.yaml"), "watch",
                              "day01", "--dir", str(fake_day / "mine"), "--correctness-only", "--seed", "4"],
                             "fake", how, cwd=fake_day, env=env)
    assert code == 0 and "stopped watching" in out and "Traceback" not in out, out
    with pytest.raises(ProcessLookupError):
        os.kill(int(pidfile.read_text()), 0)


@needs_nvcc
@pytest.mark.parametrize("how", STARTED)
def test_ctrl_c_in_a_real_watch_exits_without_a_traceback(how):
    """The real worker, compile-only on a machine without a GPU (a GPU machine checks day01's solution): the first
    verdict comes, then SIGINT as a terminal sends it (or `kill -INT` to a watch a script started)."""
    code, out = _interrupted([sys.executable, "-m", "grader", "watch", "day01", "--solution", "--correctness-only"],
                             "real", how, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert code == 0, out
    assert "✓ day01.softmax:" in out and "stopped watching" in out and "Traceback" not in out, out


def test_the_verdict_comes_when_the_correctness_cases_pass_and_the_speed_line_when_the_timing_ends(tmp_path,
                                                                                                   monkeypatch):
    """A timed check says "correct" as soon as its last correctness case passes (the timing takes a second more);
    the speed line then follows with the whole check's time, and the verdict is not printed twice."""
    from types import SimpleNamespace

    from grader.check import report

    printed = []
    ex = SimpleNamespace(name="softmax", sources=[], uses=[], include_dirs=[])

    def check(ex, session, correct):
        correct(3)
        printed.append("-- timing --")
        return "result"

    monkeypatch.setattr(report, "compact", lambda res, ex: ["✓ day01.softmax: correct (3 cases)",
                                                            "  PASS speed: 1.10x (needs 1x)"])
    console = SimpleNamespace(print=lambda line, **kw: printed.append(line))
    watch.watch(check=check, console=console, root=tmp_path, day=SimpleNamespace(id="day01"), exercises=[ex],
                src_dir=tmp_path, seed=1, worker="w", hints=lambda res, ex: None, changes=[], max_runs=0)
    got = [line for line in printed if "day01.softmax" in line or "speed" in line or "timing" in line]
    assert "✓ day01.softmax: correct (3 cases)" in got[0] and got[0].endswith("; timing…"), got
    assert got[1] == "-- timing --" and got[2].startswith("  PASS speed: 1.10x (needs 1x)  [") and len(got) == 3, got


def test_the_progress_tells_correct_once_and_never_after_a_failure():
    told = []
    events = [{"ev": "case_start", "index": 0, "kind": "correctness", "dtype": "fp32", "label": "a"},
              {"ev": "case", "index": 0, "ok": True},
              {"ev": "case_start", "index": 1, "kind": "correctness", "dtype": "fp32", "label": "b"},
              {"ev": "case", "index": 1, "ok": True},
              {"ev": "case_start", "index": 2, "kind": "benchmark", "dtype": "fp32", "label": "c"},
              {"ev": "case", "index": 2, "ok": True},
              {"ev": "case_start", "index": 3, "kind": "benchmark", "dtype": "fp32", "label": "d"}]
    with shared.progress_telling_correct(told.append)("day01.softmax", 4) as on_event:
        for ev in events:
            on_event(ev)
    assert told == [2]
    told.clear()
    failed = events[:3] + [{"ev": "case", "index": 1, "ok": False}] + events[4:]
    with shared.progress_telling_correct(told.append)("day01.softmax", 4) as on_event:
        for ev in failed:
            on_event(ev)
    assert told == []
