"""Runs one exercise in worker subprocesses with timeouts, and turns their events into a result.

A crashing kernel kills its worker's CUDA context: the case is marked "crash" and a new worker continues with
the next case. A hanging kernel is killed after the case time limit and the remaining cases are not run (each
would hang as long). The grader process itself never touches the GPU.
"""
from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Optional

from grader.course import Course, Day, Exercise
from grader.check.plan import plan
from grader.check.timing import geomean

MAX_RESTARTS = 3
STARTUP_S = 120.0  # importing torch and loading a built extension; generous for a cold disk
CONTEXT_LOST = 3


@dataclass
class ExerciseResult:
    day: str
    exercise: str
    variant: str
    source: str
    seed: int
    status: str = "fail"  # pass | fail | not_implemented | build_error | no_gpu | env_error
    message: str = ""
    threshold: float = 0.0
    speedup: Optional[float] = None  # geometric mean over benchmark cases
    points: int = 0
    info: dict = field(default_factory=dict)
    builds: list = field(default_factory=list)
    cases: list = field(default_factory=list)
    log: str = ""
    compile: list = field(default_factory=list)  # compile-only reports when there is no GPU

    def as_dict(self):
        return asdict(self)


def _reader(fd: int, q: queue.Queue):
    with os.fdopen(fd, "r") as f:
        for line in f:
            try:
                q.put(json.loads(line))
            except ValueError:
                pass
    q.put(None)


def _kill(proc: subprocess.Popen):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def run_exercise(*, course: Course, course_path: Path, root: Path, day: Day, ex: Exercise, src_dir: Path,
                 variant: str, seed: int, dtypes: Optional[list[str]] = None, correctness_only: bool = False,
                 case_s: Optional[float] = None, on_event: Callable[[dict], None] = lambda ev: None,
                 worker: str = "grader.check.worker") -> ExerciseResult:
    res = ExerciseResult(day.id, ex.name, variant, str(src_dir), seed, threshold=ex.threshold)
    planned = plan(ex, dtypes, benchmark=not correctness_only)
    results: dict[int, dict] = {}
    log_path = root / ".grader" / "logs" / f"{day.id}-{ex.name}-{variant}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    res.log = str(log_path)
    case_limit = case_s or course.limits.case_s
    start, restarts, had_failure, stop_reason = 0, 0, False, None
    terminal = None  # an event that ends the exercise early: build failure, missing op, no GPU, env error

    with open(log_path, "w") as log:
        while start < len(planned) or not results:
            spec = dict(root=str(root), course=str(course_path), day=day.id, exercise=ex.name, src_dir=str(src_dir),
                        variant=variant, seed=seed, start=start, dtypes=dtypes, correctness_only=correctness_only,
                        had_failure=had_failure)
            r, w = os.pipe()
            spec["fd"] = w
            env = dict(os.environ, PYTHONUNBUFFERED="1")
            proc = subprocess.Popen([sys.executable, "-m", worker, json.dumps(spec)], pass_fds=[w],
                                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True, cwd=root, env=env)
            os.close(w)
            q: queue.Queue = queue.Queue()
            threading.Thread(target=_reader, args=(r, q), daemon=True).start()
            deadline_len = STARTUP_S
            deadline, current, done = time.monotonic() + deadline_len, None, False
            try:
                while True:
                    try:
                        ev = q.get(timeout=max(0.05, deadline - time.monotonic()))
                    except queue.Empty:
                        _kill(proc)
                        if current is not None:
                            results[current] = dict(ok=False, category="timeout",
                                                    message=f"timed out after {case_limit:g} s (a hung kernel?)")
                            stop_reason = "an earlier case timed out"
                        else:
                            terminal = dict(ev="env_error", message=f"the worker stopped responding "
                                            f"(no progress for {deadline_len:g} s); see {log_path}")
                        break
                    if ev is None:
                        break
                    on_event(ev)
                    kind = ev["ev"]
                    now = time.monotonic()
                    if kind == "phase":
                        deadline_len = course.limits.build_s
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
                    deadline = now + deadline_len
            except BaseException:  # Ctrl-C or a bug here: never leave a worker (and its GPU context) behind
                _kill(proc)
                raise
            if proc.poll() is None:
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    _kill(proc)
            if terminal or done or stop_reason:
                break
            # The worker ended early: the case it was running crashed it (or the worker itself broke).
            if current is not None and current not in results:
                code = proc.returncode
                why = f"killed by signal {-code}" if code and code < 0 else f"exit code {code}"
                results[current] = dict(ok=False, category="crash", message=f"the process running the kernel died "
                                        f"({why}); see {log_path}")
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
                r = dict(ok=False, category="skipped", message="not timed: correctness failed")
            else:
                r = dict(ok=False, category="not_run", message=f"not run: {stop_reason or 'stopped early'}")
        r = {**r, "index": c.index, "kind": c.kind, "dtype": c.dtype, "label": c.label}
        res.cases.append(r)
    return _verdict(res, ex, terminal, correctness_only)


def _verdict(res: ExerciseResult, ex: Exercise, terminal: Optional[dict], correctness_only: bool) -> ExerciseResult:
    if terminal is not None:
        kind = terminal["ev"]
        if kind == "build":
            res.status, res.message = "build_error", "the code does not compile"
        elif kind == "missing_op":
            res.status = "not_implemented"
            res.message = f"the extension has no function `{terminal['op']}`: not implemented yet"
        elif kind == "no_gpu":
            res.status, res.message = "no_gpu", "no CUDA GPU here: correctness and speed need a GPU"
        else:
            res.status, res.message = "env_error", terminal.get("message", "environment error")
        return res
    failures = [c for c in res.cases if not c["ok"] and c["category"] not in ("skipped",)]
    if any(c["ok"] for c in res.cases):
        # Some case passed, so the kernel exists: an output left entirely unwritten is a bug in it (a launch that
        # skips this shape, say), not a missing implementation.
        for c in failures:
            if c["category"] == "not_implemented":
                c["category"], c["message"] = "unwritten", "no output element was written for this shape"
    elif failures and all(c["category"] in ("not_implemented", "skipped", "not_run") for c in failures):
        res.status, res.message = "not_implemented", "the output is never written: not implemented yet"
        return res
    if failures:
        first = failures[0]
        res.status = "fail"
        res.message = f"{len(failures)} case(s) failed; first: {first['dtype']} {first['label']}: {first['message']}"
        return res
    if correctness_only:
        res.status, res.message = "pass", "correct in every case (speed not checked)"
        return res
    speedups = [c["speedup"] for c in res.cases if c["kind"] == "benchmark"]
    res.speedup = geomean(speedups)
    if res.speedup >= ex.threshold:
        res.status, res.points = "pass", ex.points
        res.message = f"correct, and {res.speedup:.2f}x the baseline (needs {ex.threshold:g}x)"
    else:
        res.status = "fail"
        res.message = f"correct, but {res.speedup:.2f}x the baseline: needs {ex.threshold:g}x"
    return res
