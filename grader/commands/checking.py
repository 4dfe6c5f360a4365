"""A student's commands: check (locally or on Slurm), watch, sanitize, profile, list and doctor."""
from __future__ import annotations

import os
import secrets
import time

from rich.console import Console
from rich.table import Table

from grader import gpu_support, results, timings

from grader.check import report
from grader.check.day_check import check_day, check_exercise, placeholders, unpublished_baselines
from grader.check.ranked import ranked_secret, ranked_seeds
from grader.check.sanitizer import find_sanitizer
from grader.course import DTYPES
from grader.errors import GraderError
from grader.paths import relative_path
from grader.verdicts import EXIT_ENV as ENV
from grader.commands import shared
from grader.commands.shared import (_cases_exist, _exercises, _hidden_cases, _keep, _load, _progress,
                                     _ready_day, _sandbox, _source_dir, console)


def cmd_check(args) -> int:
    from grader.check.verdict import hint

    if args.ranked and args.seed is not None:
        raise GraderError("--ranked takes its inputs from the secret seed: drop --seed")
    if args.format and not args.results_dir:
        raise GraderError("--format says which result files to write: give --results-dir DIR too")
    if args.ranked and args.correctness_only:
        raise GraderError("--ranked times the code as the leaderboard does: drop --correctness-only")
    if args.hidden and not args.ranked:
        raise GraderError("--hidden adds the instructor's hidden cases to a ranked run only: add --ranked")
    if args.ranked and args.case:
        raise GraderError("--ranked runs every case, as the leaderboard does: drop --case")
    if args.ranked and os.environ.get(gpu_support.SIMULATE_ENV, "").strip():
        raise GraderError(f"--ranked runs as the GPU it is on: unset {gpu_support.SIMULATE_ENV} (a simulated GPU "
                          "takes another class's rules and speed bars, for instructors' runs)")
    root, course_path, course = _load(args)
    timings.mark("course loaded")
    day = course.day(args.day)
    if day.status != "ready":
        raise GraderError(f"{day.id} ({day.title}) is planned, not ready yet: no exercise to check")
    src_dir, variant = _source_dir(args, root, day)
    variant = args.variant or variant
    # Slurm's copy needs every file
    exercises = _exercises(args, day, src_dir, root, per_exercise=args.on != "slurm")
    if args.on == "cpu":
        exercises = _process_groups_on_cpu(args, day, exercises)
    # On Slurm the cluster's install has the baselines, and its check says what it has.
    untimed = {} if args.correctness_only or args.on else unpublished_baselines(exercises, course, root)
    if untimed and args.ranked:
        raise GraderError(next(iter(untimed.values())).split(": its correctness")[0] + ": a ranked run is timed, so "
                          "it waits for that solution")
    for note in untimed.values():
        console.print(note, style="dim")
    if args.dtype:
        bad = [d for d in args.dtype if d not in DTYPES]
        if bad:
            raise GraderError(f"unknown dtype(s) {bad}: use {', '.join(DTYPES)}")
    if args.case:
        _cases_exist(args, day, exercises)
    if args.on == "slurm":
        from grader.check import on_slurm

        doc, complete = on_slurm.check(args, course_path=course_path, root=root, day=day, exercises=exercises,
                                       src_dir=src_dir, variant=variant, console=console)
        return _keep(args, root, day, doc, save=complete)
    elif args.slurm_config:
        raise GraderError("--slurm-config is for a check on Slurm: add --on slurm, or drop --slurm-config")
    ranked = ranked_seeds(ranked_secret(root)) if args.ranked else None
    overlay = None
    if ranked:
        seeds: tuple[int, ...] = ranked.seeds
        console.print(f"ranked run (seed hash {ranked.short}): {len(seeds)} runs on independent secret inputs, "
                      "both must pass", style="dim")
        overlay = _hidden_cases(args, course_path, course, day, exercises)
    else:
        seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
        seeds = (seed,)
        console.print(f"seed {seed} (rerun with --seed {seed} to get the same inputs)", style="dim")
    sandbox = _sandbox(args, root, variant, default=bool(ranked))

    shown: dict[str, str] = {}  # the compile reports printed so far: a file the exercises share is shown once

    def show(res, ex):
        report.render(console, res, ex, hint(res, ex, course.hints), ranked=ranked.seed_sha256 if ranked else None,
                      shown=shown)
        timings.mark(f"{ex.name}: verdict printed")

    on_cpu = args.on == "cpu"
    out = check_day(course=course, root=root, day=day, exercises=exercises, src_dir=src_dir, variant=variant,
                    seeds=seeds, ranked=ranked, overlay=overlay, dtypes=args.dtype, cases=args.case,
                    case_s=args.timeout, correctness_only=args.correctness_only or on_cpu, untimed=set(untimed),
                    on_result=show, progress=_progress, worker=shared.WORKER, sandbox=sandbox,
                    device="cpu" if on_cpu else "cuda")
    # "when" (UTC, ISO 8601): a leaderboard drops results older than its window (stale).
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    doc = {"day": day.id, "variant": variant, "when": when, **({"ranked": True, "seed_sha256": ranked.seed_sha256} if ranked
                                                 else {"ranked": False, "seed": seeds[0]}), "exercises": out}
    # On the CPU it is a check of the protocol, not the day's result: `grader list` keeps the last GPU check.
    return _keep(args, root, day, doc, save=not on_cpu)


def _process_groups_on_cpu(args, day, exercises: list) -> list:
    """`--on cpu`: the exercises of several processes among those asked for, or why there are none. The rest need
    a GPU, so they are left out by name rather than run somewhere they were never meant to."""
    if args.ranked:
        raise GraderError("--ranked is graded on GPUs, as the leaderboard runs it: drop --on cpu")
    group = [e for e in exercises if e.processes > 1]
    if not group:
        named = [e.name for e in day.exercises if e.processes > 1]
        where = (f"{day.id}'s is {', '.join(named)}" if named else f"{day.id} has none")
        raise GraderError(f"--on cpu checks only exercises that run in several processes ({where}): the others need "
                          "a GPU. Drop --on cpu to check them here, or on a machine with a GPU")
    left = [e.name for e in exercises if e.processes == 1]
    console.print(f"--on cpu: {', '.join(e.name for e in group)} in CPU processes over gloo, correctness only; "
                  "not saved as the day's result"
                  + (f"; left out, they need a GPU: {', '.join(left)}" if left else ""), style="dim")
    return group



def cmd_watch(args) -> int:
    """`grader check` again on every save of the day's files, in one warm worker (grader/watch.py)."""
    from grader import watch
    from grader.check.verdict import hint

    root, course, day, src_dir, variant, exercises = _ready_day(args, "watch")
    untimed = {} if args.correctness_only else unpublished_baselines(exercises, course, root)
    for note in untimed.values():
        console.print(note, style="dim")
    bad = [d for d in args.dtype or [] if d not in DTYPES]
    if bad:
        raise GraderError(f"unknown dtype(s) {bad}: use {', '.join(DTYPES)}")
    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)

    def check(ex, session, correct=None):
        return check_exercise(course=course, root=root, day=day, ex=ex, src_dir=src_dir, variant=variant, seeds=(seed,),
                              dtypes=args.dtype, case_s=args.timeout,
                              correctness_only=args.correctness_only or ex.name in untimed, session=session,
                              progress=shared.progress_telling_correct(correct) if correct else _progress,
                              worker=shared.WORKER)

    return watch.watch(check=check, console=console, root=root, day=day, exercises=exercises, src_dir=src_dir,
                       seed=seed, worker=shared.WORKER, hints=lambda res, ex: hint(res, ex, course.hints),
                       max_runs=args.max_runs)


def cmd_sanitize(args) -> int:
    from grader.check import sanitize_command as sc

    root, course, day, src_dir, variant, exercises = _ready_day(args, "sanitize")
    exe = find_sanitizer()
    if exe is None:
        from grader.doctor import needs_a_gpu

        raise GraderError(sc.missing_tool_message() + needs_a_gpu("grader sanitize"))
    bad = [d for d in args.dtype or [] if d not in DTYPES]
    if bad:
        raise GraderError(f"unknown dtype(s) {bad}: use {', '.join(DTYPES)}")
    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    console.print(f"seed {seed} (rerun with --seed {seed} to get the same inputs)", style="dim")
    runs = []
    for ex in exercises:
        dtypes = [d for d in (args.dtype or ex.dtypes[:1]) if d in ex.dtypes]
        if not dtypes:
            console.print(f"{day.id}.{ex.name}: no {', '.join(args.dtype)} cases (it has {', '.join(ex.dtypes)})",
                          style="yellow", highlight=False)
            continue
        for tool in sc.tools_for(ex, args.tool):
            with console.status(f"{day.id}.{ex.name} under compute-sanitizer {tool}…"):
                runs.append(sc.run_tool(course=course, root=root, day=day, ex=ex, src_dir=src_dir, variant=variant,
                                        tool=tool, seed=seed, dtypes=dtypes, timeout_s=args.timeout,
                                        sanitizer=exe))
    if not runs:
        raise GraderError("nothing to run: no exercise of the day has the dtype(s) asked for")
    sc.render(console, runs)
    return sc.exit_code(runs)


# -- profile ------------------------------------------------------------------------------------------------
def cmd_profile(args) -> int:
    from grader.profile.command import run_profile

    root, course, day, src_dir, variant, exercises = _ready_day(args, "profile")
    # With the JSON on stdout, everything for people goes to stderr.
    out = Console(stderr=True, highlight=False, soft_wrap=True) if args.json == "-" else console
    return run_profile(args, out, root=root, course=course, day=day, exercises=exercises,
                       src_dir=src_dir, variant=variant, rel=lambda p: relative_path(p, root),
                       placeholders=lambda ex: placeholders(src_dir, ex.sources, root))


# -- list, doctor, release ----------------------------------------------------------------------------------
def cmd_list(args) -> int:
    from grader import clock
    from grader.authoring import semester

    from grader import gpu_support

    root, _, course = _load(args)
    # In a student repository a day is ready once a release put it there; the course repository holds every day.
    manifest = semester.manifest_of(root)
    today = clock.today()
    cap = gpu_support.capability_here() if any(gpu_support.limited_steps(d) for d in course.days) else None
    notes: list[str] = []
    t = Table(title=course.title, title_justify="left")
    for col in ("day", "title", "track", "status", "last check"):
        t.add_column(col)
    for d in course.days:
        last = results.last(root, d.id) if d.status == "ready" else None
        if last:
            parts = []
            for e in last["exercises"]:
                sp = f" {e['speedup']:.2f}x" if e.get("speedup") else ""
                parts.append(f"{report.LABEL.get(e['status'], e['status'])}{sp}")
            last_s = f"{', '.join(parts)} ({last['when']})"
        else:
            last_s = "-" if d.status == "ready" else ""
        title = d.title + (" [bold](mandatory)[/]" if d.mandatory else "")
        state = semester.state(d, today, manifest) if manifest is not None else None
        if state is not None and state.status == semester.NOT_RELEASED:
            status, last_s = f"[dim]{state.label}[/]", ""
        else:
            status = "[green]ready[/]" if d.status == "ready" else "[dim]planned[/]"
            note = gpu_support.list_note(d, cap) if d.status == "ready" else ""
            if note:  # said under the table: a long cell would widen every row
                notes.append(f"{d.id}: {note}")
                status += " [dim](*)[/]"
        t.add_row(d.id, title, d.track, status, last_s)
    console.print(t)
    for line in notes:
        console.print(f"(*) {line}", style="dim", markup=False)
    return 0


def cmd_doctor(args) -> int:
    from grader.doctor import checks

    from grader.check.slurm_settings import doctor as slurm_doctor

    try:  # read once: the course line and the steps line both use it
        loaded = _load(args)
    except GraderError as e:
        loaded = e
    cs = checks() + [_course_check(args, loaded)] + _steps_check(loaded) + slurm_doctor(args.course)
    for c in cs:
        mark = "[green]✓[/]" if c.ok else "[yellow]![/]" if c.ok is None else "[red]✗[/]"
        console.print(f"{mark} {c.name:<11} {c.detail}")
    blocking = [c for c in cs if c.ok is False]
    if blocking:
        console.print(f"[red]{len(blocking)} problem(s)[/]: fix them to grade on this machine")
    return ENV if blocking else 0


def _steps_check(loaded) -> list:
    """doctor's line on which of the course's steps this GPU grades (none without a GPU or a readable course).
    loaded: _load's (root, path, course), or the error it raised."""
    from grader import gpu_support
    from grader.doctor import Check

    if isinstance(loaded, GraderError):  # the course line above already says what is wrong with it
        return []
    _, _, course = loaded
    try:
        cap = gpu_support.capability_here()
    except gpu_support.SimulationError as e:
        return [Check("steps", False, str(e))]
    if cap is None:  # no GPU here: which steps need one generation, for the student choosing a GPU
        limited = [f"{d.id}.{e.name}" for d in course.days if d.status == "ready" for e in gpu_support.limited_steps(d)]
        return [Check("steps", True, f"no GPU here; on a GPU of compute capability {course.min_capability} or newer "
                      "every step is graded, except " + ", ".join(limited) + " (graded on their own GPU generation "
                      "only)")] if limited else []
    names = doctor_gpu_names()  # one nvidia-smi for the name and the count
    gpu = names[0] if names else "this GPU"
    if gpu_support.simulated() is not None:
        gpu = f"{gpu}, {gpu_support.simulation_words(cap)}"
    ok, detail = gpu_support.doctor_detail(course, cap, gpu)
    checks = [Check("steps", ok, detail)]
    if groups := gpu_support.process_groups_detail(course, len(names) or 1):
        checks.append(Check("GPUs", None, groups))  # a warning: the class's grading machine may have them
    return checks


def doctor_gpu_names() -> list[str]:
    from grader.doctor import _run

    out = _run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"])
    return [line.strip() for line in out.splitlines() if line.strip()] if out else []


def _course_check(args, loaded):
    """doctor's line on the course: course.yaml found and valid (a check needs it), broken (a problem), or none here
    (a warning: doctor still checks the machine)."""
    from pathlib import Path

    from grader.doctor import Check

    if isinstance(loaded, GraderError):
        e = loaded
        here = Path.cwd().resolve()
        if not args.course and not any((d / "course.yaml").is_symlink() or (d / "course.yaml").exists()
                                       for d in (here, *here.parents)):
            return Check("course", None, "no course.yaml in this folder or any parent: run `grader doctor` inside the "
                                         "course repository (or pass --course PATH) to check the course too")
        return Check("course", False, f"{e}")
    _, path, course = loaded
    ready = sum(d.status == "ready" for d in course.days)
    from grader.authoring import semester

    try:
        manifest = semester.manifest_of(path.parent)
    except GraderError as e:
        return Check("course", False, f"{e}")
    if manifest is not None:  # a student repository: what its release holds, not what the course will hold
        out = len(manifest.get("days", []))
        return Check("course", True, f"{relative_path(path, Path.cwd())}: {len(course.days)} days, {out} released so "
                                     f"far, {ready - out} to come (`grader calendar` says when)")
    return Check("course", True, f"{relative_path(path, Path.cwd())}: {len(course.days)} days, {ready} ready")
