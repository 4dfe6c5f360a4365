"""Runs one exercise in worker subprocesses with timeouts, and turns their events into a result.

A crashing kernel kills its worker's CUDA context: the case is marked "crash" and a new worker continues with
the next case. A hanging kernel is killed after the case time limit and the remaining cases are not run (each
would hang as long). The grader process itself never touches the GPU.

When a correctness case fails as a bad memory access would (wrong values, NaN/inf, unwritten outputs, a crash), that
case runs once more, alone, under compute-sanitizer (grader/check/sanitizer.py), and its message names what the tool
found at the student's file:line. Every worker, the sanitized one too, is started and watched by run_worker.
"""
from __future__ import annotations

import contextlib
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

from grader import timings
from grader.check.job import Job
from grader.check.sanitizer import find_sanitizer, run_under_sanitizer, summary
from grader.check.verdict import ExerciseResult, decide
from grader.paths import Paths
from grader.verdicts import Category, Status

MAX_RESTARTS = 3
STARTUP_S = 120.0  # importing torch and loading a built extension; generous for a cold disk
CONTEXT_LOST = 3
# A failed case that a bad memory access explains runs again under compute-sanitizer (sanitize_first_failure),
# given the time to start plus SANITIZE_SLOWDOWN case limits, at most SANITIZE_MAX_S.
SANITIZED = (Category.NONFINITE, Category.MISMATCH, Category.UNWRITTEN, Category.CRASH)
SANITIZE_SLOWDOWN = 5
SANITIZE_MAX_S = 90.0  # a memcheck rerun of a large case can take minutes (day 09: 5); past this, no finding
SANITIZE_CHECK_MAX_S = 300.0  # an exercise's required tools (`sanitize:`) run over all its small correctness cases


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
    return {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": _grader_path(), **(env or {})}


def run_worker(make_cmd: Callable[[int], list[str]], *, cwd: Path, log, on_event: Callable[[dict], float],
               first_wait: float, total_s: float | None = None, env: dict[str, str] | None = None,
               grace_s: float = 0.0) -> WorkerEnd:
    """Starts make_cmd(fd) (fd: the write end of a pipe of its own for the events, JSON lines; stdout and stderr go
    to log) in a process group of its own, and passes each event to on_event, which returns how many seconds the
    next one may take. A process that sends none in time, or runs past total_s in all, is killed (its whole group);
    so is one left running when the caller is interrupted."""
    r, w = os.pipe()
    try:
        proc = subprocess.Popen(make_cmd(w), pass_fds=[w], stdout=log, stderr=subprocess.STDOUT,
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
                 log_mode: str = "a"):
        self.cwd, self.log_path, self.worker, self.env, self.on_restart = Path(cwd), Path(log_path), worker, env, on_restart
        self.log_mode = log_mode
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
            self.proc = subprocess.Popen([sys.executable, "-m", self.worker, "--serve", "--fd", str(w)], pass_fds=[w],
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


def exercise_log(root: Path, day_id: str, exercise: str, variant: str) -> Path:
    """Where the workers of one exercise's check write their output."""
    return Paths(root).logs() / f"{day_id}-{exercise}-{variant}.log"


def run_job(job: Job, *, variant: str, case_s: float | None = None, correctness_only: bool = False,
            on_event: Callable[[dict], None] = lambda ev: None, worker: str = "grader.check.worker",
            sanitize_failures: bool = True, session: WorkerSession | None = None) -> ExerciseResult:
    """Runs the job in worker processes (a new one after each crash) and returns the exercise's verdict. With a
    session, in its long-lived worker instead (replaced the same way after a crash or a hang).

    sanitize_failures: when a correctness case failed in a way a bad memory access explains (wrong values, NaN/inf,
    outputs left unwritten, a crash), the first such case runs again alone under compute-sanitizer (memcheck, then
    initcheck if memcheck names nothing) where the tool is installed and the job runs on CUDA; what it finds is
    added to that case's message (`sanitizer` holds every report). GRADER_SANITIZE=0 in the environment turns
    this off too."""
    ex, day_id, root = job.exercise, job.target.day, Path(job.root)
    res = ExerciseResult(day_id, ex.name, variant, job.target.src_dir, job.seed, threshold=ex.threshold)
    planned = job.cases
    results: dict[int, dict] = {}
    logs = Paths(root).logs()
    log_path = exercise_log(root, day_id, ex.name, variant)
    job_path = job.write(logs / f"{day_id}-{ex.name}-{variant}.job.json")
    res.log = str(log_path if session is None else session.log_path)
    case_limit = case_s or job.limits.case_s
    build_limit = job.limits.build_s
    start, restarts, had_failure, stop_reason = 0, 0, False, None
    terminal = None  # an event that ends the exercise early: build failure, missing op, no GPU, env error
    current, done, deadline_len = None, False, STARTUP_S  # the running worker's case, end, and current wait

    def command(fd: int) -> list[str]:
        cmd = [sys.executable, "-m", worker, str(job_path), "--start", str(start)]
        return cmd + (["--had-failure"] if had_failure else []) + ["--fd", str(fd)]

    def handle(ev: dict) -> float:
        nonlocal current, done, deadline_len, had_failure, terminal
        timings.event(ev)
        on_event(ev)
        kind = ev["ev"]
        if kind == "phase":
            deadline_len = build_limit
        elif kind == "case_start":
            current, deadline_len = ev["index"], case_limit
        elif kind == "case":
            results[ev["index"]] = ev
            had_failure |= not ev["ok"]
            current, deadline_len = None, STARTUP_S
        elif kind == "build":
            res.builds.append(ev)
            deadline_len = STARTUP_S
            if not ev["ok"]:
                terminal = ev
        elif kind == "info":
            res.info = ev
            deadline_len = STARTUP_S
        elif kind in ("missing_op", "no_gpu", "env_error", "internal_error"):
            terminal = ev
            deadline_len = STARTUP_S
        elif kind == "done":
            done = True
            deadline_len = STARTUP_S
        else:
            deadline_len = STARTUP_S
        return deadline_len

    with open(log_path, "w") if session is None else contextlib.nullcontext() as log:
        while start < len(planned) or not results:
            current, done, deadline_len = None, False, STARTUP_S
            if session is None:
                end = run_worker(command, cwd=root, log=log, on_event=handle, first_wait=STARTUP_S)
            else:
                end = session.run(job_path, start=start, had_failure=had_failure, on_event=handle,
                                  first_wait=STARTUP_S)
            if end.stalled:
                if current is not None:
                    results[current] = dict(ok=False, category=Category.TIMEOUT,
                                            message=f"timed out after {case_limit:g} s (a hung kernel?)")
                    stop_reason = "an earlier case timed out"
                else:
                    terminal = dict(ev="env_error", message=f"the worker stopped responding "
                                    f"(no progress for {deadline_len:g} s); see {res.log}")
            if terminal or done or stop_reason:
                break
            # The worker ended early: the case it was running crashed it (or the worker itself broke).
            if current is not None and current not in results:
                code = end.returncode
                why = f"killed by signal {-code}" if code and code < 0 else f"exit code {code}"
                results[current] = dict(ok=False, category=Category.CRASH,
                                        message=f"the process running the kernel died "
                                        f"({why}); see {res.log}")
            last = max(results) if results else -1
            if restarts >= MAX_RESTARTS or last < 0:
                stop_reason = "too many crashes" if last >= 0 else "the worker died before running a case"
                break
            restarts, had_failure, start = restarts + 1, True, last + 1

    for c in planned:
        r = results.get(c.index)
        if r is None and terminal is not None:
            continue  # nothing ran (no GPU, build error, ...): the verdict says why, a list of "not run" would not
        if r is None:
            if c.kind == "benchmark" and had_failure and not stop_reason and not terminal:
                r = dict(ok=False, category=Category.SKIPPED, message="not timed: correctness failed")
            else:
                r = dict(ok=False, category=Category.NOT_RUN, message=f"not run: {stop_reason or 'stopped early'}")
        r = {**r, "index": c.index, "kind": c.kind, "dtype": c.dtype, "label": c.label}
        res.cases.append(r)
    verdict = decide(res, ex, terminal, correctness_only)
    if ex.sanitize and terminal is None and job.device == "cuda" and verdict.status != Status.NOT_IMPLEMENTED:
        # The exercise must be clean under these tools: a required check, so GRADER_SANITIZE does not turn it off.
        sanitize_check(res, job, job_path, root, case_limit, worker=worker, on_event=on_event)
        verdict = decide(res, ex, terminal, correctness_only)
    elif (sanitize_failures and terminal is None and job.device == "cuda"
            and os.environ.get("GRADER_SANITIZE", "1") != "0"
            and sanitize_first_failure(res, job_path, root, case_limit, worker=worker, on_event=on_event)):
        verdict = decide(res, ex, terminal, correctness_only)  # the first failure's message may now name the bug
    return verdict


def sanitize_check(res: ExerciseResult, job: Job, job_path: Path, root: Path, case_limit: float, *,
                   worker: str = "grader.check.worker", on_event: Callable[[dict], None] = lambda ev: None) -> None:
    """The exercise's `sanitize:` tools, each over the correctness cases of the first dtype in one worker (the
    bugs these tools find do not depend on the element type; every dtype would multiply a slow run). Each tool
    adds a case of kind "sanitizer": failed when the tool reports an error in the student's sources, cannot be
    found, or does not finish in time (a clean verdict needs a finished run)."""
    ex = job.exercise
    dtype = ex.dtypes[0] if not job.cases else job.cases[0].dtype
    wanted = ex.sanitize_shapes
    indices = [c.index for c in job.cases if c.kind == "correctness" and c.dtype == dtype and c.probe is None
               and (not wanted or any(c.case.same_tensors(w) for w in wanted))]
    if not indices:  # `--case` chose none of the shapes the tools run on: nothing to run them over
        return
    exe = find_sanitizer()
    limit = min(SANITIZE_CHECK_MAX_S, STARTUP_S + SANITIZE_SLOWDOWN * case_limit)
    for n, tool in enumerate(ex.sanitize):
        case = dict(index=len(job.cases) + n, kind="sanitizer", dtype=dtype, label=tool, ok=False,
                    category=Category.SANITIZER, sanitizer=[])
        if exe is None:
            case["message"] = (f"compute-sanitizer is not installed here, and this exercise must be clean under "
                               f"{tool}: put the CUDA toolkit's bin/ on PATH or set CUDA_HOME")
            res.cases.append(case)
            continue
        on_event(dict(ev="sanitize", tool=tool, index=indices[0] if indices else 0, dtype=dtype, label="all"))
        try:
            errors, _, code = run_under_sanitizer(job_path, tool, indices, root, limit, worker=worker,
                                                  sanitizer=exe)
        except OSError as e:
            case["message"] = f"compute-sanitizer {tool} would not start: {e}"
            res.cases.append(case)
            continue
        case["sanitizer"] = [e.as_dict() for e in errors]
        named = summary(tool, errors)
        if named:
            case["message"] = named
        elif code is None:
            case["category"] = Category.TIMEOUT
            case["message"] = (f"compute-sanitizer {tool} did not finish in {limit:.0f} s (a hang, e.g. a barrier "
                               "that part of the block never reaches?)")
        else:
            case.update(ok=True, category=Category.PASS,
                        message=f"clean under compute-sanitizer {tool} ({len(indices)} {dtype} cases)")
        res.cases.append(case)


def sanitize_first_failure(res: ExerciseResult, job_path: Path, root: Path, case_limit: float, *,
                           worker: str = "grader.check.worker",
                           on_event: Callable[[dict], None] = lambda ev: None) -> bool:
    """Runs the first correctness case that failed as a bad memory access would (SANITIZED) again, alone, under
    memcheck, and under initcheck if memcheck names nothing; each run is limited to SANITIZE_S. The case gets
    `sanitizer` (every report, as dicts) and, when one is in the student's code, its message names it. False when
    nothing ran (no such case, or no compute-sanitizer here)."""
    case = next((c for c in res.cases if c["kind"] == "correctness" and not c["ok"]
                 and c["category"] in SANITIZED), None)
    exe = find_sanitizer() if case is not None else None
    if exe is None:
        return False
    limit = min(SANITIZE_MAX_S, STARTUP_S + SANITIZE_SLOWDOWN * case_limit)
    found: list[dict] = []
    named = None
    for tool in ("memcheck", "initcheck"):
        on_event(dict(ev="sanitize", tool=tool, index=case["index"], dtype=case["dtype"], label=case["label"]))
        try:
            errors, _, code = run_under_sanitizer(job_path, tool, case["index"], root, limit, worker=worker,
                                                  sanitizer=exe)
        except OSError:  # the tool would not start: no finding, not a failure of the check
            break
        found += [e.as_dict() for e in errors]
        named = summary(tool, errors)
        if named or code is None:  # found it; or the tool ran out of time, and the next would too
            break
    case["sanitizer"] = found
    if named:
        case["message"] = f"{case['message']}; {named}"
    return True
