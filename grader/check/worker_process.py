"""A worker process, started and watched: its own process group, its events (JSON lines) read from a pipe of its
own, a time limit on each wait, and a kill that reaches everything it started. Used by the runner (a check's
workers, the long-lived `grader watch` worker) and by the sanitizer (a worker under compute-sanitizer): the module
below both, so neither imports the other."""
from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


STARTUP_S = 120.0  # importing torch and loading a built extension; generous for a cold disk
CONTEXT_LOST = 3  # a worker's exit code when a kernel broke its CUDA context (grader/check/worker.py)


def _reader(fd: int, q: queue.Queue):
    with os.fdopen(fd, "r") as f:
        for line in f:
            try:
                q.put(json.loads(line))
            except ValueError:
                pass
    q.put(None)


def _kill(proc: subprocess.Popen, grace_s: float = 0.0):
    """Ends proc's process group: SIGKILL, after SIGTERM and grace_s seconds where grace_s > 0 (a tool such as
    compute-sanitizer gets to end the program it runs)."""
    if grace_s > 0 and proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=grace_s)
        except (ProcessLookupError, PermissionError, subprocess.TimeoutExpired):
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


@dataclass
class WorkerEnd:
    returncode: int | None
    stalled: bool  # no event came in time (or the run's whole time ran out): the process was killed


def _grader_path() -> str:
    """PYTHONPATH that makes the worker import this very grader (not another install of it), whatever its cwd."""
    here = str(Path(__file__).resolve().parents[2])
    return os.pathsep.join([here, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])


def _pump(proc: subprocess.Popen, q: queue.Queue, on_event: Callable[[dict], float], first_wait: float,
          total_s: float | None, grace_s: float, until: Callable[[dict], bool] = lambda ev: False) -> tuple[str, dict | None]:
    """Passes proc's events from q to on_event (which returns how long the next may take) until the stream ends
    ("eof"), an event for which until() holds comes ("until", that event; not passed on), or none comes in time
    ("stalled": proc's group is killed). Interrupted (Ctrl-C, or a bug here), it kills proc and re-raises."""
    end = None if total_s is None else time.monotonic() + total_s
    wait = first_wait
    try:
        while True:
            deadline = time.monotonic() + wait
            deadline = deadline if end is None else min(deadline, end)
            try:
                ev = q.get(timeout=max(0.05, deadline - time.monotonic()))
            except queue.Empty:
                _kill(proc, grace_s)
                return "stalled", None
            if ev is None:
                return "eof", None
            if until(ev):
                return "until", ev
            wait = on_event(ev)
    except BaseException:  # Ctrl-C or a bug here: never leave a worker (and its GPU context) behind
        _kill(proc)
        raise


def _worker_env(env: dict[str, str] | None) -> dict[str, str]:
    """The worker's environment: the grader's, less the ranked secret and the hidden cases' file (the worker is
    given its seed and cases in its job; the secret would give away every other run's inputs)."""
    from grader.sandbox import SECRET_ENV

    base = {k: v for k, v in os.environ.items() if k not in SECRET_ENV}
    return {**base, "PYTHONUNBUFFERED": "1", "PYTHONPATH": _grader_path(), **(env or {})}


def run_worker(make_cmd: Callable[[int], list[str]], *, cwd: Path, log, on_event: Callable[[dict], float],
               first_wait: float, total_s: float | None = None, env: dict[str, str] | None = None,
               grace_s: float = 0.0, prefix: list[str] = ()) -> WorkerEnd:
    """Starts make_cmd(fd) (fd: the write end of a pipe of its own for the events, JSON lines; stdout and stderr go
    to log) in a process group of its own, and passes each event to on_event, which returns how many seconds the
    next one may take. A process that sends none in time, or runs past total_s in all, is killed (its whole group);
    so is one left running when the caller is interrupted. prefix: what the command runs under (a sandbox's bwrap,
    grader/sandbox.py: killing bwrap ends everything inside)."""
    r, w = os.pipe()
    try:
        proc = subprocess.Popen([*prefix, *make_cmd(w)], pass_fds=[w], stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True, cwd=cwd, env=_worker_env(env))
    except BaseException:
        os.close(r)
        os.close(w)
        raise
    os.close(w)
    q: queue.Queue = queue.Queue()
    threading.Thread(target=_reader, args=(r, q), daemon=True).start()
    how, _ = _pump(proc, q, on_event, first_wait, total_s, grace_s)
    if how == "stalled":
        return WorkerEnd(proc.returncode, True)
    if proc.poll() is None:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            _kill(proc, grace_s)
    return WorkerEnd(proc.returncode, False)


class WorkerSession:
    """One long-lived worker (`python -m WORKER --serve`) that runs job after job: torch stays imported, the CUDA
    context alive and the modules it built loaded (`grader watch`). Each request is a JSON line on its stdin; its
    events come back on the event pipe as with run_worker, and an "end" event closes each request. A worker that
    dies (a kernel lost the CUDA context) or is killed (a hang) is replaced by a new one at the next request;
    on_restart(why) is told, once per replacement."""

    def __init__(self, *, cwd: Path, log_path: Path, worker: str = "grader.check.worker",
                 env: dict[str, str] | None = None, on_restart: Callable[[str], None] = lambda why: None,
                 log_mode: str = "a", prefix: list[str] = ()):
        self.cwd, self.log_path, self.worker, self.env, self.on_restart = Path(cwd), Path(log_path), worker, env, on_restart
        self.log_mode, self.prefix = log_mode, list(prefix)  # prefix: a sandbox's bwrap, as in run_worker
        self.proc: subprocess.Popen | None = None
        self._q: queue.Queue = queue.Queue()
        self._log = None
        self._lost: str | None = None  # why the last worker is gone (a new one is started with a notice)
        self.started = 0  # workers started so far
        self._asked = False  # whether the current worker was sent a request (one never asked is killed at once)
        self._released: list[subprocess.Popen] = []  # let go by release(), made sure of by close()

    def _start(self) -> None:
        if self._log is None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(self.log_path, self.log_mode)
        r, w = os.pipe()
        try:
            self.proc = subprocess.Popen([*self.prefix, sys.executable, "-m", self.worker, "--serve", "--fd", str(w)],
                                         pass_fds=[w],
                                         stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.PIPE,
                                         start_new_session=True, cwd=self.cwd, env=_worker_env(self.env), text=True)
        except BaseException:
            os.close(r)
            os.close(w)
            raise
        os.close(w)
        self._q = queue.Queue()
        threading.Thread(target=_reader, args=(r, self._q), daemon=True).start()
        self.started += 1
        self._asked = False
        if self._lost:
            self.on_restart(self._lost)
            self._lost = None

    def start(self) -> WorkerSession:
        """Starts the worker now, before the first request: it imports torch while the caller still plans."""
        if self.proc is None:
            self._start()
        return self

    def _gone(self, why: str) -> None:
        if self.proc is not None:
            _kill(self.proc)
        self.proc, self._lost = None, why

    def run(self, job_path: Path, *, start: int, had_failure: bool, on_event: Callable[[dict], float],
            first_wait: float) -> WorkerEnd:
        """One request (the job from case `start` on), as run_worker runs one process."""
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        request = json.dumps({"job": str(job_path), "start": start, "had_failure": had_failure})
        self._asked = True
        try:
            self.proc.stdin.write(request + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # it died meanwhile: the event stream ends at once, and this counts as its death
        how, ev = _pump(self.proc, self._q, on_event, first_wait, None, 0.0, until=lambda e: e.get("ev") == "end")
        if how == "stalled":
            code = self.proc.returncode
            self._gone("a job stopped responding (a hung kernel?) and its worker was killed")
            return WorkerEnd(code, True)
        if how == "until" and ev.get("fresh") and ev.get("code", 0) != CONTEXT_LOST:
            self.close_worker()  # it exits by itself (see worker.serve); the next request starts another
            return WorkerEnd(ev.get("code", 0), False)
        if how == "until" and ev.get("code", 0) != CONTEXT_LOST:
            return WorkerEnd(ev.get("code", 0), False)
        try:  # its CUDA context is lost (it exits), or it died
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        code = self.proc.poll()
        why = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        self._gone(f"the worker died ({why}; a crashed kernel loses the CUDA context)")
        return WorkerEnd(code, False)

    def close_worker(self) -> None:
        """Ends the current worker (no notice: nothing went wrong)."""
        if self.proc is not None:
            try:
                self.proc.stdin.close()  # end of requests: it exits by itself (once its imports are done)
                if self._asked:
                    self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
            _kill(self.proc)
            self.proc = None

    def release(self) -> None:
        """Lets the current worker go without waiting while its CUDA context is torn down: its stdin closes (the
        end of requests: it exits by itself) and close() makes sure it is gone."""
        if self.proc is not None and not self._asked:
            self.close_worker()  # still importing torch: nothing to finish
        elif self.proc is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            self._released.append(self.proc)
            self.proc = None

    def close(self) -> None:
        self.close_worker()
        for proc in self._released:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            _kill(proc)
        self._released = []
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> WorkerSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
