"""Runs one exercise in worker subprocesses with timeouts, and turns their events into a result.

A crashing kernel kills its worker's CUDA context: the case is marked "crash" and a new worker continues with
the next case. A hanging kernel is killed after the case time limit and the remaining cases are not run (each
would hang as long). The grader process itself never touches the GPU.

When a correctness case fails as a bad memory access would (wrong values, NaN/inf, unwritten outputs, a crash), that
case runs once more, alone, under compute-sanitizer (grader/check/sanitizer.py), and its message names what the tool
found at the student's file:line. Every worker, the sanitized one too, is started and watched by worker_process.run_worker.
"""
from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from pathlib import Path

from grader import timings
from grader.check.job import Job
from grader.check.sanitizer import find_sanitizer, run_under_sanitizer, summary
from grader.check.worker_process import STARTUP_S, WorkerSession, run_worker
from grader.check.verdict import ExerciseResult, decide
from grader.paths import Paths
from grader.verdicts import Category, Status

MAX_RESTARTS = 3
# A failed case that a bad memory access explains runs again under compute-sanitizer (sanitize_first_failure),
# given the time to start plus SANITIZE_SLOWDOWN case limits, at most SANITIZE_MAX_S.
SANITIZED = (Category.NONFINITE, Category.MISMATCH, Category.UNWRITTEN, Category.CRASH)
SANITIZE_SLOWDOWN = 5
SANITIZE_MAX_S = 90.0  # a memcheck rerun of a large case can take minutes (day 09: 5); past this, no finding
SANITIZE_CHECK_MAX_S = 300.0  # an exercise's required tools (`sanitize:`) run over all its small correctness cases


def exercise_log(root: Path, day_id: str, exercise: str, variant: str) -> Path:
    """Where the workers of one exercise's check write their output."""
    return Paths(root).logs() / f"{day_id}-{exercise}-{variant}.log"


def job_file(root: Path, day_id: str, exercise: str, variant: str, sandbox=None) -> Path:
    """Where the job of one exercise's check is written: beside its log, or, for a sandboxed check, in the
    folder its sandbox reads jobs from (grader/check/sandboxed.py)."""
    name = f"{day_id}-{exercise}-{variant}.job.json"
    return sandbox.job_path(name) if sandbox is not None else Paths(root).logs() / name


def run_job(job: Job, *, variant: str, case_s: float | None = None, correctness_only: bool = False,
            on_event: Callable[[dict], None] = lambda ev: None, worker: str = "grader.check.worker",
            sanitize_failures: bool = True, session: WorkerSession | None = None, sandbox=None) -> ExerciseResult:
    """Runs the job in worker processes (a new one after each crash) and returns the exercise's verdict. With a
    session, in its long-lived worker instead (replaced the same way after a crash or a hang).

    sanitize_failures: when a correctness case failed in a way a bad memory access explains (wrong values, NaN/inf,
    outputs left unwritten, a crash), the first such case runs again alone under compute-sanitizer (memcheck, then
    initcheck if memcheck names nothing) where the tool is installed and the job runs on CUDA; what it finds is
    added to that case's message (`sanitizer` holds every report). GRADER_SANITIZE=0 in the environment turns
    this off too, and the exercise's required tools (`sanitize:`) once a case has already failed.

    sandbox: a CheckSandbox (grader/check/sandboxed.py) every worker runs in, the sanitized ones too (a session's
    worker was started in it by its owner)."""
    ex, day_id, root = job.exercise, job.target.day, Path(job.root)
    res = ExerciseResult(day_id, ex.name, variant, job.target.src_dir, job.seed, threshold=ex.threshold)
    planned = job.cases
    results: dict[int, dict] = {}
    log_path = exercise_log(root, day_id, ex.name, variant)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    job_path = job.write(job_file(root, day_id, ex.name, variant, sandbox))
    prefix = sandbox.for_job(job, timed=not correctness_only) if sandbox is not None and session is None else []
    res.log = str(log_path if session is None or getattr(session, "per_job_log", False) else session.log_path)
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
            res.threshold = ex.threshold_on(ev.get("capability"))[0]  # the bar of the GPU class it runs on
            deadline_len = STARTUP_S
        elif kind in ("missing_op", "no_gpu", "skipped", "env_error", "internal_error"):
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
                end = run_worker(command, cwd=root, log=log, on_event=handle, first_wait=STARTUP_S, prefix=prefix)
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
            code = end.returncode
            why = f"killed by signal {-code}" if code and code < 0 else f"exit code {code}"
            if current is not None and current not in results:
                results[current] = dict(ok=False, category=Category.CRASH,
                                        message=f"the process running the kernel died "
                                        f"({why}); see {res.log}")
            last = max(results) if results else -1
            if restarts >= MAX_RESTARTS or last < 0:
                stop_reason = "too many crashes" if last >= 0 else \
                    f"the worker died before running a case ({why}); see {res.log}"
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
    if ex.processes > 1:  # compute-sanitizer watches one process: a rerun under it would miss the other ranks
        return verdict
    sanitizing = os.environ.get("GRADER_SANITIZE", "1") != "0"
    if (ex.sanitize and terminal is None and job.device == "cuda" and verdict.status != Status.NOT_IMPLEMENTED
            and (sanitizing or verdict.status != Status.FAIL)):
        # The exercise must be clean under these tools: a required check, so GRADER_SANITIZE=0 does not turn it off
        # while it could decide the verdict. Once a case has failed it can only add to the diagnosis, as a rerun
        # does: then GRADER_SANITIZE=0 turns it off too.
        sanitize_check(res, job, job_path, root, case_limit, worker=worker, on_event=on_event, sandbox=sandbox)
        verdict = decide(res, ex, terminal, correctness_only)
    elif (sanitize_failures and terminal is None and job.device == "cuda" and sanitizing
            and sanitize_first_failure(res, job_path, root, case_limit, worker=worker, on_event=on_event,
                                       sandbox=sandbox)):
        verdict = decide(res, ex, terminal, correctness_only)  # the first failure's message may now name the bug
    return verdict


def sanitize_check(res: ExerciseResult, job: Job, job_path: Path, root: Path, case_limit: float, *,
                   worker: str = "grader.check.worker", on_event: Callable[[dict], None] = lambda ev: None,
                   sandbox=None) -> None:
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
                                                  sanitizer=exe, sandbox=sandbox)
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
                           on_event: Callable[[dict], None] = lambda ev: None, sandbox=None) -> bool:
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
                                                  sanitizer=exe, sandbox=sandbox)
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
