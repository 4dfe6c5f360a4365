"""The warm worker that outlives a check (grader/check/resident.py): the next check finds it, it exits by itself when
idle, one check at a time has it, and it is off where a process must not be shared. On the CPU the worker answers
"no GPU" and the check is compile-only, which is enough to go through the socket, the hello and the events; the GPU
tests (tests/gpu/test_resident_gpu.py) check verdicts, a crash and a hang through it."""
import fcntl
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from grader.check import resident
from grader.check.day_check import WORKER
from tests.conftest import ROOT, needs_nvcc, run_grader, socket_dir


def _env(tmp_path, idle="60"):
    run = tmp_path / "run"
    if not run.exists():
        run = socket_dir(tmp_path)
    return {"GRADER_RESIDENT": "1", "GRADER_RESIDENT_IDLE_S": idle, "XDG_RUNTIME_DIR": str(run),
            "GRADER_STATE": str(tmp_path / "state")}


def _ours(tmp_path) -> list[int]:
    """The warm workers this test started: their sockets are in its own runtime folder."""
    r = subprocess.run(["pgrep", "-f", f"listen {(tmp_path / 'run').resolve()}/"], capture_output=True, text=True)
    return [int(p) for p in r.stdout.split()]


@pytest.fixture
def no_worker_left(tmp_path):
    yield
    for pid in _ours(tmp_path):
        os.killpg(pid, signal.SIGKILL)
    if (tmp_path / "run").is_symlink():
        shutil.rmtree((tmp_path / "run").resolve(), ignore_errors=True)


def _gone(tmp_path, within_s: float) -> bool:
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        if not _ours(tmp_path):
            return True
        time.sleep(0.2)
    return False


@needs_nvcc
def test_a_second_check_finds_the_warm_worker(tmp_path, no_worker_left):
    env = _env(tmp_path)
    first = run_grader("check", "day01", "--solution", "--timings", env=env)
    second = run_grader("check", "day01", "--solution", "--timings", env=env)
    assert "warm worker started" in first.stderr, first.stderr
    assert "warm worker found" in second.stderr, second.stderr
    assert first.returncode == second.returncode == 2, first.stdout + second.stdout  # compile-only here
    verdict = re.compile(r"^(COMPILED ONLY.*)$", re.M)
    assert verdict.findall(first.stdout) == verdict.findall(second.stdout) != []
    assert len(_ours(tmp_path)) == 1  # the one worker, still there for the next check


@needs_nvcc
def test_an_idle_worker_exits_by_itself(tmp_path, no_worker_left):
    r = run_grader("check", "day01", "--solution", env=_env(tmp_path, idle="1"))
    assert r.returncode == 2, r.stdout + r.stderr
    # It waits one idle second once torch is imported; the bound is what a loaded 2-core machine may take for that.
    assert _gone(tmp_path, within_s=60), "the warm worker outlived its idle time"
    assert not list((tmp_path / "run").resolve().glob("**/*.sock")), "the socket was left behind"


def test_a_socket_path_too_long_means_a_worker_per_check(tmp_path, monkeypatch):
    """bind() refuses a path past sun_path's size: the check then starts its own worker, as before."""
    deep = tmp_path / ("d" * 100)
    deep.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(deep))
    with pytest.raises(OSError, match="longer than a Unix socket's path"):
        resident.ResidentSession(ROOT, tmp_path / "logs" / "x.log")


def test_a_worker_that_cannot_listen_leaves_the_check_to_a_worker_of_its_own(tmp_path, monkeypatch, no_worker_left):
    """A warm worker that dies before it listens (here: a module that is not there) is no worker for the check:
    start() says so, and the check starts its own worker as before, instead of a 'worker died' verdict."""
    for k, v in _env(tmp_path).items():
        monkeypatch.setenv(k, v)
    session = resident.ResidentSession(ROOT, tmp_path / "logs" / "x.log")
    session.worker = "grader.no_such_worker_module"
    assert session.start() is None
    assert session._lock is None  # the lock is let go: the next check may try again


def test_a_check_running_meanwhile_gets_a_worker_of_its_own(tmp_path, monkeypatch, no_worker_left):
    for k, v in _env(tmp_path).items():
        monkeypatch.setenv(k, v)
    held = resident.ResidentSession(ROOT, tmp_path / "logs" / "x.log")
    with open(held.lock_path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        assert resident.ResidentSession(ROOT, tmp_path / "logs" / "x.log").start() is None


def test_off_in_a_sandbox_for_a_scripted_worker_and_when_asked(monkeypatch):
    monkeypatch.setenv("GRADER_RESIDENT", "1")
    assert resident.enabled(WORKER, None)
    assert not resident.enabled(WORKER, sandbox=object())  # a submission's check never shares a process
    assert not resident.enabled("tests.fake_worker", None)
    monkeypatch.setenv("GRADER_RESIDENT", "0")
    assert not resident.enabled(WORKER, None)


def test_another_environment_is_another_worker(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    a = resident.key(ROOT)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert resident.key(ROOT) != a
    monkeypatch.setenv("COLUMNS", "80")  # what does not change the worker's work does not change its key
    b = resident.key(ROOT)
    monkeypatch.setenv("COLUMNS", "200")
    assert resident.key(ROOT) == b


def test_the_socket_folder_is_this_users_alone(tmp_path, monkeypatch):
    run = tmp_path / "run"
    run.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    d = resident._runtime_dir()
    assert d.stat().st_mode & 0o777 == 0o700
    os.chmod(d, 0o777)
    with pytest.raises(OSError, match="not a private folder"):
        resident._runtime_dir()


def test_grade_checks_each_submission_in_processes_of_its_own(tmp_path, monkeypatch):
    """`grader grade` (and `check --on slurm`, through it) runs `grader check` per submission with the warm worker
    off, whatever the instructor's environment says: one student's code never shares a process with the next check."""
    import json
    import sys

    from grader.classroom import grade_task

    monkeypatch.setenv("GRADER_RESIDENT", "1")
    # A scripted `grader check` that records what it was given: the result, with the variable, at --json's path.
    script = ("import json, os, sys; a = sys.argv; p = a[a.index('--json') + 1]; "
              "json.dump({'day': 'day01', 'exercises': [{'status': 'pass'}], 'resident': os.environ.get('GRADER_RESIDENT')}, open(p, 'w'))")
    task = grade_task.Task(submission="alice", day="day01", src_dir=str(tmp_path), result=str(tmp_path / "r.json"),
                           log=str(tmp_path / "log"), course=str(ROOT / "course.yaml"), timeout_s=60,
                           command=(sys.executable, "-c", script))
    grade_task.grade(task)
    assert json.loads((tmp_path / "r.json").read_text())["resident"] == "0"


def test_another_torch_install_is_another_worker(tmp_path, monkeypatch):
    """A torch upgraded under a warm worker would leave the old one loaded: its install keys the worker, read
    without importing torch."""
    from types import SimpleNamespace

    (tmp_path / "torch").mkdir()
    version = tmp_path / "torch" / "version.py"
    version.write_text("__version__ = '2.11.0'\n")
    monkeypatch.setattr(resident.importlib.util, "find_spec",
                        lambda name: SimpleNamespace(origin=str(tmp_path / "torch" / "__init__.py")))
    before = resident.key(ROOT)
    version.write_text("__version__ = '2.12.0'\n")
    os.utime(version, ns=(1, 2))
    assert resident.key(ROOT) != before


@pytest.mark.parametrize("day", ["day13", "day18", "day19"])
def test_a_day_that_needs_a_process_per_run_or_imports_a_routes_package_keeps_no_worker_warm(day, monkeypatch):
    """Day 18's library of torch ops loads once per process, day 19's ranks join a group once, day 13's routes
    import CuPy, numba, Triton, CuTe DSL and Mojo, whose state the grader does not own: their checks start a worker
    each time, as before the warm worker."""
    from grader.check.day_check import resident_session
    from grader.course import load_course

    monkeypatch.setenv("GRADER_RESIDENT", "1")
    d = load_course(ROOT / "course.yaml").day(day)
    assert resident_session(ROOT, d, d.exercises, "solution") is None
