"""A day's check, from arguments rather than a command line: what `grader check` and `grader watch` run (and what
`grader grade` runs per submission, through `grader check`). check_exercise makes one exercise's result (its
sources read first, then one run per seed, compiled only where there is no GPU); check_day runs a day's exercises
in order, the first in a worker started before its job is planned, and hands each result to the caller as it
comes (the command prints it). The caller reports progress through `progress`, a context manager per run that
yields the worker's event handler."""
from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

from grader import timings

from grader.check.ranked import Ranked, combine_runs
from grader.paths import Paths, relative_path

WORKER = "grader.check.worker"  # the module each exercise runs in (the CPU tests substitute a scripted one)


@contextlib.contextmanager
def quiet(what: str, total: int):
    """A progress that shows nothing."""
    yield lambda ev: None


def unpublished_baselines(exercises, course, root: Path) -> dict[str, str]:
    """The timed exercises whose baseline is another day's solution that this repository does not have yet (a
    student repository gets it when the instructor publishes it), each with the note that says so. Such an exercise
    is checked for correctness only (compile-only where there is no GPU): the timing is the one step that needs the
    baseline."""
    notes = {}
    for ex in exercises:
        b = ex.baseline.solution if ex.baseline and ex.timed else None
        if b and not Paths(root).solution(b).is_dir():
            due = course.day(b).due
            after = f", after {b} is due ({due.isoformat()})" if due else ""
            notes[ex.name] = (f"{ex.name} is timed against {b}'s solution, which this repository does not have yet "
                              f"(solutions/{b}/ arrives when the instructor publishes it{after}): its correctness is "
                              "checked now, its speed once it arrives")
    return notes


def placeholders(src_dir: Path, sources: list[str], root: Path) -> list[str]:
    from grader.paths import PLACEHOLDER
    from grader.check.compile_check import MAX_SOURCE_BYTES

    found = []
    for s in sources:
        p = src_dir / s
        try:
            with open(p, "rb") as f:
                text = f.read(MAX_SOURCE_BYTES).decode("utf-8", errors="replace")
        except OSError:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if PLACEHOLDER in line:
                found.append(f"{relative_path(p, root)}:{n}")
    return found


def placeholders_by_step(src_dir: Path, day, ex, root: Path) -> tuple[list[str], list[str]]:
    """The stub's placeholders in ex's sources, as (those this step's code reaches, the rest) (grader/holes.py): the
    rest are other steps' places, the optional Hopper walk's, or ones this step needs through code that is itself
    still a placeholder (its kernel's body, say). Both in file order; nothing is left out."""
    from grader.holes import placeholders_for
    from grader.paths import PLACEHOLDER

    spots = placeholders(src_dir, ex.sources, root)
    if len(spots) < 2:
        return spots, []

    def read(p: Path) -> str:
        try:
            return p.read_text(errors="replace")
        except OSError:
            return ""

    k = next((i for i, e in enumerate(day.exercises) if e.name == ex.name), None)
    files = {s: read(src_dir / s) for s in ex.sources}
    headers = {f"{i}/{h.name}": read(h) for i in ex.include_dirs for h in sorted((root / i).glob("*")) if h.is_file()}
    try:
        found = placeholders_for(files, ex.op or ex.name, PLACEHOLDER, headers,
                                 None if k is None else f"{int(day.id[3:])}{chr(97 + k)}")
    except Exception:  # a reading of the student's text for a message's order: it must never cost the verdict
        found = None
    if found is None:  # no reading of this exercise (a Python route): every placeholder may be its
        return spots, []
    reached = set(found[0])
    source_of = {relative_path(src_dir / s, root): s for s in ex.sources}  # the spot's path -> its source name
    mine = [s for s in spots if f"{source_of.get(s.rsplit(':', 1)[0])}:{s.rsplit(':', 1)[1]}" in reached]
    if not mine:  # nothing reached (the entry point itself is a placeholder): list them all
        return spots, []
    return mine, [s for s in spots if s not in mine]


def check_exercise(*, course, root: Path, day, ex, src_dir: Path, variant: str, seeds: tuple[int, ...],
                   dtypes: list[str] | None = None, case_s: float | None = None, correctness_only: bool = False,
                   ranked: bool = False, fixed_seeds: tuple[int, ...] = (), session=None, prestarted=None,
                   cases: list[str] | None = None, progress=quiet, worker: str = WORKER, sandbox=None,
                   device: str = "cuda"):
    """One exercise's result: its sources read first (one unfit to compile is the student's build error), then one
    run per seed (a ranked check: two, the second only if the first passed, combined by combine_runs), compiled
    only where there is no GPU. fixed_seeds (a ranked check's hidden seeds) come first, one correctness-only run
    each: they are cheap, and any failure decides. session: a long-lived worker to run in (`grader watch`).
    prestarted: a worker started before planning (cmd_check), for the first run only; released after it.
    sandbox: the CheckSandbox (grader/check/sandboxed.py) the build, the workers and the compilers run in.
    device: "cpu" runs an exercise of several processes in CPU processes over gloo (`grader check --on cpu`)."""
    from grader.check.build import source_paths
    from grader.check.compile_check import (compile_python_kernels, compile_sources, defines_op, nvcc_missing,
                                            nvcc_path, source_problem, uncopied_includes)
    from grader.check.job import make_job
    from grader.check.runner import job_file, run_job
    from grader.check.verdict import ExerciseResult, compiled_only, missing_compiler, note_placeholders
    from grader.verdicts import Status

    problems = [p for s in ex.sources if (p := source_problem(src_dir / s, root))]
    problems = problems or uncopied_includes(ex, src_dir, root)
    if problems:
        res = ExerciseResult(day.id, ex.name, variant, str(src_dir), None if ranked else seeds[0],
                             threshold=ex.threshold)
        return compiled_only(res, ex, problems)
    cuda = any(p.suffix == ".cu" for p in source_paths(ex, src_dir))  # what nvcc compiles without a GPU
    no_nvcc = cuda and nvcc_path() is None
    if no_nvcc and ex.build != "python":
        # The machine's problem, not the code's: no build of the extension can start, on a GPU or without one.
        res = ExerciseResult(day.id, ex.name, variant, str(src_dir), None if ranked else seeds[0],
                             threshold=ex.threshold)
        return missing_compiler(res, nvcc_missing())
    runs = []
    planned = [(s, True) for s in fixed_seeds] + [(s, correctness_only) for s in seeds]
    for k, (seed, untimed) in enumerate(planned, 1):
        job = make_job(course=course, root=root, day=day, ex=ex, src_dir=src_dir, seed=seed, dtypes=dtypes,
                       correctness_only=untimed, cases=cases, device=device)
        timings.mark(f"{ex.name}: job planned ({len(job.cases)} cases)")
        what = f"{day.id}.{ex.name}" + (f" (run {k} of {len(planned)})" if len(planned) > 1 else "")
        try:
            with progress(what, len(job.cases)) as on_event:
                res = run_job(job, variant=variant, case_s=case_s, correctness_only=untimed, on_event=on_event,
                              worker=worker, session=session or prestarted, sandbox=sandbox)
        finally:
            if ranked:  # the job file names the seed: a ranked run's inputs must not be recoverable from it
                job_file(root, day.id, ex.name, variant, sandbox).unlink(missing_ok=True)
            if prestarted is not None:  # it served this first run; every later run gets a fresh process
                prestarted.release()
                prestarted = None
                timings.mark("early worker released")
        timings.mark(f"{ex.name}: worker finished ({res.status})")
        if res.status == Status.NO_GPU and no_nvcc:
            res = missing_compiler(res, nvcc_missing())  # a Python route's .cu (on a GPU, its package compiles it)
        elif res.status == Status.NO_GPU:
            reports = compile_sources([*(src_dir / s for s in ex.sources if s.endswith(".py")),
                                       *source_paths(ex, src_dir)],
                                      [root / i for i in ex.include_dirs], ex.extra_cuda_cflags,
                                      root, timeout_s=job.limits.build_s, sandbox=sandbox)
            if ex.cpu_compile and all(r.ok for r in reports):  # the route's own compiler, which needs no GPU
                built = compile_python_kernels(src_dir / ex.sources[0], ex.cpu_compile, list(ex.dtypes), root,
                                               timeout_s=job.limits.build_s, sandbox=sandbox)
                # it imports the file, so it checked the syntax too: one line for the file, not two
                reports = [r for r in reports if r.file != built.file] + [built]
            res = compiled_only(res, ex, reports)
            if res.status == Status.NO_GPU and not defines_op(ex, src_dir):
                res.message += (f". Warning: none of your sources defines the op `{ex.op.split('::')[-1]}` (the "
                                "bindings name it, e.g. m.def(\"" + ex.op.split("::")[-1] + "\", …)): on a GPU the "
                                "check would find no op to call")
            timings.mark(f"{ex.name}: compile-only check done")
        runs.append(res)
        if res.status != Status.PASS:
            break  # every run must pass: the first failure decides
    res = combine_runs(runs, len(planned)) if ranked else runs[0]
    if device == "cpu" and res.status == Status.PASS:
        res.message += (f"; in {ex.processes} CPU processes over gloo, a check of the protocol: the graded check "
                        f"runs on {ex.processes} GPUs")
    if res.status in (Status.NOT_IMPLEMENTED, Status.NO_GPU):
        from grader.paths import PLACEHOLDER

        mine, others = placeholders_by_step(src_dir, day, ex, root)
        res = note_placeholders(res, mine, PLACEHOLDER, others=len(others))
    return res




def solution_baseline(course, root: Path, ex):
    """(exercise, folder) of the solution ex is timed against, or None where its baseline is not a solution."""
    found = course.baseline_exercise(ex)
    return None if found is None else (found[1], Paths(root).solution(found[0].id))


def prestart(root: Path, day, ex, variant: str, worker: str = WORKER, sandbox=None, src_dir: Path | None = None,
             baseline=None):
    """The first exercise's worker, started before its job is planned: importing torch (seconds) overlaps the
    parent's planning. It is a fresh process, as each run's worker is, and serves that one run only (the log is
    the exercise's own, written afresh as run_job's is). In a sandbox, the one its runs would get: the sources of
    src_dir, and baseline, (exercise, folder) of the solution the exercise is timed against, where it is."""
    from grader.check.runner import exercise_log
    from grader.check.worker_process import WorkerSession

    timings.mark("worker started early")
    prefix = sandbox.worker(ex, src_dir, baseline) if sandbox is not None else []
    return WorkerSession(cwd=root, log_path=exercise_log(root, day.id, ex.name, variant), worker=worker,
                         log_mode="w", prefix=prefix).start()


def resident_session(root: Path, day, exercises: list, variant: str, worker: str = WORKER, sandbox=None):
    """The warm worker every run of this check goes to (grader/check/resident.py), started if there is none; None
    where it is off (a sandbox, a scripted worker, GRADER_RESIDENT=0), where another check has it now, and for a
    day with an exercise that needs a process of its own each time (a library of torch ops loads once per process,
    a process group is joined once: the worker would end after each of those runs, so nothing is kept warm) or that
    imports a route's own package (CuPy, numba, Triton, CuTe DSL, Mojo: state of theirs the grader does not own
    would outlive the check)."""
    from grader.check import resident
    from grader.check.build import loads_once
    from grader.check.runner import exercise_log

    if not resident.enabled(worker, sandbox) or any(loads_once(e) or e.processes > 1 or e.build == "python"
                                                      for e in exercises):
        return None
    ex = exercises[0]
    try:
        return resident.ResidentSession(root, exercise_log(root, day.id, ex.name, variant)).start()
    except OSError as e:
        timings.mark(f"no warm worker ({e})")
        return None


def check_day(*, course, root: Path, day, exercises: list, src_dir: Path, variant: str, seeds: tuple[int, ...],
              ranked: Ranked | None = None, overlay: dict | None = None, dtypes: list[str] | None = None,
              cases: list[str] | None = None, case_s: float | None = None, correctness_only: bool = False,
              untimed: set[str] = frozenset(), on_result: Callable = lambda res, ex: None, progress=quiet,
              worker: str = WORKER, sandbox=None, device: str = "cuda") -> list[dict]:
    """Each exercise's result, in order, as the JSON of `grader check` records it (a ranked run's marked so). The
    first exercise runs in a worker started before its job is planned (importing torch overlaps the planning);
    the hidden cases of `overlay` join a ranked run's exercises; `untimed` names the exercises checked for
    correctness only (a baseline not published yet). on_result(res, ex) gets each result as it is made. sandbox:
    a CheckSandbox (grader/check/sandboxed.py) that every build, worker and compiler of the day runs in."""
    mark = {"ranked": True, "seed": None, "seed_sha256": ranked.seed_sha256} if ranked else {"ranked": False}
    out = []
    first = exercises[0]
    timed = not (correctness_only or first.name in untimed) and first.timed
    warm = resident_session(root, day, exercises, variant, worker, sandbox)
    early = warm or prestart(root, day, first, variant, worker, sandbox, src_dir,
                             solution_baseline(course, root, first) if timed else None)
    try:
        for k, ex in enumerate(exercises):
            fixed: tuple[int, ...] = ()
            if overlay:  # the instructor's hidden cases (a ranked run); a student's check never loads them
                from grader.classroom import hidden

                extra = hidden.for_exercise(overlay, day.id, ex.name)
                ex, fixed = extra.merged(ex), tuple(extra.seeds)
            res = check_exercise(course=course, root=root, day=day, ex=ex, src_dir=src_dir, variant=variant,
                                 seeds=seeds, dtypes=dtypes, case_s=case_s,
                                 correctness_only=correctness_only or ex.name in untimed, ranked=bool(ranked),
                                 fixed_seeds=fixed, session=warm,
                                 prestarted=early if k == 0 and warm is None else None, cases=cases,
                                 progress=progress, worker=worker, sandbox=sandbox, device=device)
            on_result(res, ex)
            out.append({**res.as_dict(), **mark})
    finally:
        early.close()  # the early worker is gone by now (waited for here, not before the verdict)
    return out
