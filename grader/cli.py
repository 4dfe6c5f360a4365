"""The `grader` command: check, watch, profile, list, doctor, release, publish, syllabus, leaderboard, gradebook,
grade, site.

Exit codes: 0 pass, 1 fail (wrong, slow, not implemented, does not compile), 2 usage or environment error.
Every error reaches the user as a message; an unexpected one also leaves its traceback in .grader/logs.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import secrets
import sys
import time
import traceback
from datetime import date
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from grader import results, timings

from grader.classroom import hidden
from grader.authoring import release
from grader.check import report
from grader.check import day_check
from grader.check.day_check import check_day, check_exercise, placeholders, unpublished_baselines
from grader.check.ranked import RANKED_SEED_ENV, RANKED_SEED_FILE_ENV, ranked_secret, ranked_seeds
from grader.check.sanitizer import TOOLS as SANITIZER_TOOLS
from grader.check.sanitizer import find_sanitizer
from grader.course import DTYPES, Course, find_course_file, load_course
from grader.errors import GraderError
from grader.paths import Paths, relative_path
from grader.verdicts import EXIT_ENV as ENV
from grader.verdicts import EXIT_FAIL as FAIL
from grader.verdicts import exit_code
# Not a terminal (CI logs, pipes): wider than 80 columns so tables and paths stay on one line.
console = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)
WORKER = day_check.WORKER  # the module each exercise runs in (the CPU tests substitute a scripted one here)


def _load(args) -> tuple[Path, Path, Course]:
    path = Path(args.course).resolve() if args.course else find_course_file(Path.cwd().resolve())
    return path.parent, path, load_course(path)


# -- check --------------------------------------------------------------------------------------------------
def _source_dir(args, root: Path, day) -> tuple[Path, str]:
    paths = Paths(root)
    if args.solution and args.dir:
        raise GraderError("give either --solution or --dir, not both")
    d = paths.solution(day.id) if args.solution else Path(args.dir).resolve() if args.dir else paths.day(day.id)
    if not d.is_dir():
        raise GraderError(f"{d} does not exist" + ("" if args.dir else _why_missing(day, args.solution)))
    return d, paths.variant(d)


def _why_missing(day, solution: bool) -> str:
    """Why a course folder is absent: in a student repository, a day not out yet or a solution not published."""
    today = date.today()
    if not solution and day.release and day.release > today:
        return f": {day.id} is released on {day.release.isoformat()}, and its folder comes with it"
    if solution:
        after = f" (after its due date, {day.due.isoformat()})" if day.due else ""
        return (f": in a student repository a day's solution appears once the instructor publishes it{after}; "
                "in the course repository, restore solutions/")
    return ": run `grader release` to create it"


def _exercises(args, day, src_dir: Path, root: Path) -> list:
    """The day's exercises (or the one named by --exercise), each with all its sources present."""
    exercises = [e for e in day.exercises if not args.exercise or e.name == args.exercise]
    if not exercises:
        raise GraderError(f"{day.id} has no exercise {args.exercise!r} (it has: "
                          f"{', '.join(e.name for e in day.exercises)})")
    for ex in exercises:
        missing = [s for s in ex.sources if not (src_dir / s).is_file()]
        if missing:
            raise GraderError(f"{relative_path(src_dir, root)} lacks {', '.join(missing)} "
                              f"(sources of {day.id}.{ex.name})")
        from grader.check.build import source_paths

        gone = [p for p in source_paths(ex, src_dir) if not p.is_file()]
        if gone:
            raise GraderError(f"{day.id}.{ex.name} compiles your kernels of earlier days from the folders beside "
                              f"{relative_path(src_dir, root)}, and {relative_path(gone[0], root)} is not there: "
                              "keep those days' folders next to this one (as in the course repository)")
    return exercises


@contextlib.contextmanager
def _progress(what: str, total: int):
    """One status line per run of an exercise, following its worker's events."""
    with console.status(f"starting {what}…") as status:
        yield Progress(status, total)


class Progress:
    """One status line that follows the worker's events."""

    def __init__(self, status, total: int):
        self.status, self.total, self.done, self.failed = status, total, 0, 0

    def __call__(self, ev: dict) -> None:
        kind = ev["ev"]
        if kind == "phase":
            self.status.update(f"building the {ev['target']} (ninja; a cold build takes a few seconds)…")
        elif kind == "case_start":
            verb = "checking" if ev["kind"] == "correctness" else "timing"
            failed = f", {self.failed} failed" if self.failed else ""
            self.status.update(f"{verb} {ev['dtype']} {ev['label']}  [{self.done + 1}/{self.total}{failed}]")
        elif kind == "case":
            self.done += 1
            self.failed += not ev["ok"]


# -- ranked runs ----------------------------------------------------------------------------------------------
# -- check: one exercise, then the command ----------------------------------------------------------------
def _write_json(path: str, doc: dict) -> None:
    try:
        Path(path).write_text(json.dumps(doc, indent=1))
    except OSError as e:
        raise GraderError(f"--json: cannot write {path}: {e.strerror or e}") from None


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
    root, course_path, course = _load(args)
    timings.mark("course loaded")
    day = course.day(args.day)
    if day.status != "ready":
        raise GraderError(f"{day.id} ({day.title}) is planned, not ready yet: no exercise to check")
    src_dir, variant = _source_dir(args, root, day)
    variant = args.variant or variant
    exercises = _exercises(args, day, src_dir, root)
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

    def show(res, ex):
        report.render(console, res, ex, hint(res, ex, course.hints), ranked=ranked.seed_sha256 if ranked else None)
        timings.mark(f"{ex.name}: verdict printed")

    out = check_day(course=course, root=root, day=day, exercises=exercises, src_dir=src_dir, variant=variant,
                    seeds=seeds, ranked=ranked, overlay=overlay, dtypes=args.dtype, cases=args.case,
                    case_s=args.timeout, correctness_only=args.correctness_only, untimed=set(untimed),
                    on_result=show, progress=_progress, worker=WORKER, sandbox=sandbox)
    # "when" (UTC, ISO 8601): a leaderboard drops results older than its window (stale).
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    doc = {"day": day.id, "variant": variant, "when": when, **({"ranked": True, "seed_sha256": ranked.seed_sha256} if ranked
                                                 else {"ranked": False, "seed": seeds[0]}), "exercises": out}
    return _keep(args, root, day, doc)


def _keep(args, root: Path, day, doc: dict, save: bool = True) -> int:
    """A check's result kept: as the day's last (`grader list`), in --json and --results-dir; its exit code.
    save=False: not the check's own result (a Slurm job that left none), so not kept as the day's."""
    out = doc["exercises"]
    if args.case:  # some cases only: not the day's result (`grader list` keeps the last whole check)
        console.print(f"--case: only the cases named {', '.join(map(repr, args.case))} ran; this is not saved as "
                      f"{day.id}'s result", style="dim")
    elif save:
        results.save(root, day.id, doc["variant"], out, ranked=bool(doc.get("ranked")),
                     seed_sha256=doc.get("seed_sha256"))
    if args.json:
        _write_json(args.json, doc)
    if args.results_dir:
        from grader.classroom import formats

        try:
            paths = formats.write(doc, {e.name: e.points for e in day.exercises}, Path(args.results_dir),
                                  args.format or formats.FORMATS)
        except OSError as e:
            raise GraderError(f"--results-dir: cannot write into {args.results_dir}: {e.strerror or e}") from None
        console.print("results for " + ", ".join(relative_path(p, Path.cwd()) for p in paths), style="dim")
    timings.mark("results written")
    return exit_code([r["status"] for r in out])


def _sandbox(args, root: Path, variant: str, default: bool):
    """The sandbox a check's code runs in (grader/check/sandboxed.py): on with --sandbox or by default (a ranked
    check, each grading of `grader grade`), off with --no-sandbox, which says what that gives up."""
    from grader import sandbox
    from grader.check.sandboxed import CheckSandbox

    if args.no_sandbox:
        console.print(f"--no-sandbox: {sandbox.GIVES_UP}", style="yellow")
        return None
    if not (args.sandbox or default):
        return None
    sandbox.require()
    return CheckSandbox(root, variant, worker=WORKER)


def _cases_exist(args, day, exercises) -> None:
    """Each exercise checked has a case that --case names (else a usage error that shows what its cases are
    called), so a typo never gives an empty check that passes."""
    from grader.check.plan import plan

    for ex in exercises:
        everything = plan(ex, args.dtype, benchmark=not args.correctness_only)
        if not plan(ex, args.dtype, benchmark=not args.correctness_only, cases=args.case):
            examples = ", ".join(repr(c.named) for c in everything[:3])
            raise GraderError(f"--case {' / '.join(map(repr, args.case))}: no case of {day.id}.{ex.name} is named so "
                              f"(its cases are named like {examples}; --exercise picks one exercise)")


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

    def check(ex, session):
        return check_exercise(course=course, root=root, day=day, ex=ex, src_dir=src_dir, variant=variant, seeds=(seed,),
                              dtypes=args.dtype, case_s=args.timeout,
                              correctness_only=args.correctness_only or ex.name in untimed, session=session,
                              progress=_progress, worker=WORKER)

    return watch.watch(check=check, console=console, root=root, day=day, exercises=exercises, src_dir=src_dir,
                       seed=seed, worker=WORKER, hints=lambda res, ex: hint(res, ex, course.hints),
                       max_runs=args.max_runs)


def _hidden_cases(args, course_path: Path, course, day, exercises) -> dict | None:
    """The hidden cases of a ranked run (none is normal: a student repository has no overlay), announced by count."""
    path = hidden.locate(course_path, args.hidden)
    if path is None:
        return None
    overlay = hidden.load(path, course)
    mine = [hidden.for_exercise(overlay, day.id, ex.name) for ex in exercises]
    shapes, fixed = sum(len(h.correctness) for h in mine), sum(len(h.seeds) for h in mine)
    if shapes or fixed:
        console.print(f"with the hidden cases of {relative_path(path, course_path.parent)}: {shapes} more shape(s), "
                      f"{fixed} fixed seed(s) (one correctness run each)", style="dim")
    return overlay


def _ready_day(args, verb: str):
    """(root, course, day, source folder, variant, exercises) of a command on one ready day's code."""
    root, _, course = _load(args)
    day = course.day(args.day)
    if day.status != "ready":
        raise GraderError(f"{day.id} ({day.title}) is planned, not ready yet: no exercise to {verb}")
    src_dir, variant = _source_dir(args, root, day)
    return root, course, day, src_dir, variant, _exercises(args, day, src_dir, root)


# -- sanitize -----------------------------------------------------------------------------------------------
def cmd_sanitize(args) -> int:
    from grader.check import sanitize_command as sc

    root, course, day, src_dir, variant, exercises = _ready_day(args, "sanitize")
    exe = find_sanitizer()
    if exe is None:
        raise GraderError(sc.missing_tool_message())
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
    root, _, course = _load(args)
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
        status = "[green]ready[/]" if d.status == "ready" else "[dim]planned[/]"
        t.add_row(d.id, title, d.track, status, last_s)
    console.print(t)
    return 0


def cmd_doctor(args) -> int:
    from grader.doctor import checks

    from grader.check.slurm_settings import doctor as slurm_doctor

    cs = checks() + slurm_doctor(args.course)
    for c in cs:
        mark = "[green]✓[/]" if c.ok else "[yellow]![/]" if c.ok is None else "[red]✗[/]"
        console.print(f"{mark} {c.name:<11} {c.detail}")
    blocking = [c for c in cs if c.ok is False]
    if blocking:
        console.print(f"[red]{len(blocking)} problem(s)[/]: fix them to grade on this machine")
    return ENV if blocking else 0


def cmd_release(args) -> int:
    if args.to:
        return release_to(args)
    if args.hidden:
        raise GraderError("--hidden names the hidden cases a release to a student repository (--to DIR) leaves out; "
                          "without --to the release only writes stubs into days/")
    root, _, course = _load(args)
    plan = release.release_plan(course, root, args.days or None)
    if args.check:
        stale = release.stale(plan)
        for p in stale:
            console.print(f"[red]out of date:[/] {relative_path(p, root)}")
        if stale:
            console.print("days/ differs from what `grader release` generates from solutions/: run `grader release`")
            return FAIL
        console.print(f"days/ is up to date ({len(plan)} files)")
        return 0
    backup = Paths(root).backups() / time.strftime("%Y%m%d-%H%M%S")
    written, saved = release.write(plan, backup)
    for p in written:
        console.print(f"wrote {relative_path(p, root)}")
    if saved:
        console.print(f"[yellow]the previous versions of {len(saved)} file(s) are saved in "
                      f"{relative_path(backup, root)}[/]")
    console.print(f"{len(written)} of {len(plan)} stub files changed")
    return 0


def release_to(args) -> int:
    """`grader release --to DIR`: the student repository, as of today's date."""
    from grader.authoring import student_repo

    if args.days:
        raise GraderError("--to writes every day released by today (course.yaml's `release:` dates), not chosen days: "
                          f"drop {' '.join(args.days)}")
    if args.check:
        raise GraderError("--check compares days/ with what solutions/ generate; it does not combine with --to")
    root, course_path, course = _load(args)
    overlay = hidden.locate(course_path, args.hidden)
    today = date.today()
    dest = Path(args.to).expanduser()
    try:  # an earlier release there: the days whose solutions it holds, whose answers may now go out
        before = student_repo.read_manifest(dest.resolve()) if dest.is_dir() else None
    except OSError:
        before = None
    with console.status("building the student repository…"):
        tree = student_repo.build(root, course_path, course, today, overlay,
                                  published=set((before or {}).get("published", {})))
    names = {hidden.FILE_NAME} | ({overlay.name} if overlay else set())
    try:
        res = student_repo.write(tree, dest, root, course, names)
    except OSError as e:
        raise GraderError(f"--to: cannot write into {dest}: {e.strerror or e}") from None
    later = [f"{d.id} ({d.release.isoformat()})" for d in course.days
             if d.status == "ready" and d.release and d.release > today]
    span = f"{tree.days[0]} … {tree.days[-1]}" if len(tree.days) > 1 else "".join(tree.days) or "no day"
    console.print(f"released {len(tree.days)} day(s) ({span}) into {dest}: {len(res.written)} file(s) written, "
                  f"{len(res.removed)} removed, {res.unchanged} unchanged")
    if later:
        console.print(f"not yet released: {', '.join(later)}", style="dim")
    left = ", ".join(f"{why} ({n})" for why, n in sorted(tree.left_out.items()))
    console.print(f"left out: {left}", style="dim")
    for day, path, answers in tree.held:
        console.print(f"[yellow]held back:[/] {day}: it includes {path}, which holds {answers}'s answers; it goes out "
                      f"with the next release after `grader publish {answers} --to {dest}`")
    if tree.uncommitted:
        console.print(f"[yellow]note:[/] {len(tree.uncommitted)} tracked file(s) have uncommitted changes, released "
                      f"as they are in the working tree (first: {tree.uncommitted[0]})")
    if res.changed_by_hand:
        console.print(f"[yellow]note:[/] {len(res.changed_by_hand)} file(s) of the previous release were edited in "
                      f"{dest} and are now replaced (first: {res.changed_by_hand[0]})")
    doc = student_repo.read_manifest(dest.resolve()) or {}
    waiting = [(ex, b) for ex, b in tree.baselines if b not in doc.get("published", {})]
    if waiting:
        console.print(f"[yellow]note:[/] {len(waiting)} timed exercise(s) are timed against a solution the student "
                      "repository gets only with `grader publish` (until then `grader check` checks their correctness "
                      f"only); first: {waiting[0][0]}, against {waiting[0][1]}")
    return 0


def cmd_publish(args) -> int:
    from grader.authoring.publish import publish

    root, _, course = _load(args)
    dest = Path(args.to).expanduser()
    try:
        res = publish(root, course, args.day, dest, date.today(), force=args.force)
    except OSError as e:
        raise GraderError(f"--to: cannot write into {dest}: {e.strerror or e}") from None
    day = course.day(args.day)
    if res.forced:
        console.print(f"[yellow]published before it is due (--force):[/] {res.forced}")
    console.print(f"published {day.id}'s solution into {dest / 'solutions' / day.id}: {len(res.written)} file(s) "
                  f"written, {len(res.removed)} removed, {res.unchanged} unchanged")
    return 0


def cmd_syllabus(args) -> int:
    from grader.authoring.syllabus import render

    root, _, course = _load(args)
    path, text = root / "syllabus.md", render(course)
    current = path.read_text() if path.is_file() else None
    if args.check:
        if current != text:
            console.print("syllabus.md is out of date with course.yaml: run `grader syllabus`")
            return FAIL
        console.print("syllabus.md is up to date")
        return 0
    if current != text:
        path.write_text(text)
        console.print("wrote syllabus.md")
    return 0


# -- leaderboard --------------------------------------------------------------------------------------------
def cmd_leaderboard(args) -> int:
    from grader.classroom import leaderboard as lb

    if args.seed_sha256 and not re.fullmatch(r"[0-9a-f]{64}", args.seed_sha256):
        raise GraderError("--seed-sha256 takes the 64 hex digits a ranked run prints and records (seed_sha256)")
    max_age = None if args.max_age_days == 0 else args.max_age_days
    board = lb.build(args.results, max_age_days=max_age, seed_sha256=args.seed_sha256)
    out = Path(args.out).expanduser()
    lb.write(board, out)
    for r in board.rejected:
        console.print(Text.assemble(("rejected", "yellow"), f" {r.source} ({r.kind}): {r.reason}"))
    for r in board.not_entered:
        console.print(Text.assemble(("not entered", "dim"), f" {r.source} ({r.kind.replace('_', ' ')}): {r.reason}"))
    for b in board.boards:
        top = b["entries"][0]
        console.print(f"{b['day']} on {b['gpu']}: {len(b['entries'])} ranked, first {top['name']} "
                      f"{top['speedup']:.2f}x")
    apart = f", {len(board.not_entered)} not entered (missing or compiled only)" if board.not_entered else ""
    console.print(f"{board.accepted} result(s) ranked on {len(board.boards)} board(s), {len(board.rejected)} "
                  f"rejected{apart}; written into {out} (leaderboard.md, leaderboard.json, rejected.json, plots/)")
    return 0


# -- gradebook ----------------------------------------------------------------------------------------------
def cmd_gradebook(args) -> int:
    from grader.classroom import gradebook
    from grader.classroom.leaderboard import result_files

    _, _, course = _load(args)
    files = result_files(args.results)
    if not files:
        raise GraderError("no result files (*.json) found in what was given")
    with console.status("writing the gradebook (nbgrader)…"):
        res = gradebook.write(files, args.db, course, args.assignment)
    for f, why in res.skipped:
        console.print(Text.assemble(("skipped", "yellow"), f" {f}: {why}"))
    for student, assignment, score, top in res.written:
        console.print(f"{student}: {assignment} {score:g} of {top:g}", style="dim")
    console.print(f"{len(res.written)} result(s) written into {args.db}, {len(res.skipped)} skipped; "
                  "`nbgrader export` gives them with the notebooks' scores")
    if not res.written:
        return ENV
    return FAIL if res.skipped else 0


# -- grade --------------------------------------------------------------------------------------------------
def cmd_grade(args) -> int:
    from grader.classroom import executors, grade
    from grader.classroom.grade_task import default_command

    root, course_path, course = _load(args)
    days = grade.parse_days(args.days, course)
    submissions = Path(args.submissions).expanduser().resolve()
    subs = grade.find_submissions(submissions)
    out = Path(args.out).expanduser().resolve()
    grade.check_out_dir(out, submissions)
    if args.ranked:
        ranked_secret(root)  # a missing secret is said once, here, not by every grading
    if args.executor == "slurm":
        if args.workers or args.timeout:
            raise GraderError("--workers and --timeout are the local executor's: on Slurm, set array_parallelism and "
                              "timeout_min in --slurm-config")
        config = executors.load_slurm_config(args.slurm_config)
        executor, timeout_s = executors.SlurmExecutor(config, out / ".submitit"), config.task_timeout_s
    else:
        if args.slurm_config:
            raise GraderError("--slurm-config configures --executor slurm: add it, or drop --slurm-config")
        executor, timeout_s = executors.LocalExecutor(args.workers), args.timeout or grade.DEFAULT_TIMEOUT_S
    options = ("--correctness-only",) * args.correctness_only + ("--ranked",) * args.ranked
    if args.no_sandbox:
        from grader.sandbox import GIVES_UP

        console.print(f"--no-sandbox: {GIVES_UP}", style="yellow")
    elif args.executor == "local":  # a Slurm node says so itself, in the grading's error record
        from grader.sandbox import require

        require()
    options += ("--no-sandbox",) if args.no_sandbox else ("--sandbox",)
    p = grade.plan(subs, days, out, course_path=course_path, timeout_s=timeout_s, command=default_command(),
                   options=options, regrade=args.regrade)
    missing = f", {p.missing} without the day's folder (recorded as not implemented)" if p.missing else ""
    missing += (f", {p.refused} refused: a link or a special file where the sources should be (recorded as a build "
                "error)" if p.refused else "")
    console.print(f"{len(subs)} submission(s) × {len(days)} day(s): {len(p.tasks)} to grade, {p.skipped} already "
                  f"graded{missing}; {executor.describe()}")
    second, errors = grade.run(executor, p.tasks, {d.id: d.exercises for d in days}, console) if p.tasks else (0, {})
    grade.summarize(subs, days, out, console)
    again = f" ({second} on the second attempt)" if second else ""
    console.print(f"graded {len(p.tasks) - len(errors)} pair(s){again}, skipped {p.skipped} already graded; results "
                  f"in {out}")
    if errors:
        console.print(f"[red]{len(errors)} grading(s) failed twice[/] and are recorded as errors (a later run grades "
                      f"them again); first: {next(iter(errors))}: {next(iter(errors.values()))}", highlight=False)
        return FAIL
    return 0


# -- site ---------------------------------------------------------------------------------------------------
def cmd_site(args) -> int:
    from grader.site.build import build, require

    require()  # before loading anything else: a missing extra gets its own message
    root, _, course = _load(args)
    out = Path(args.out).resolve() if args.out else Paths(root).site()
    board = Path(args.leaderboard).expanduser().resolve() if args.leaderboard else Paths(root).leaderboard()
    if args.leaderboard and not (board / "leaderboard.md").is_file():
        raise GraderError(f"--leaderboard: {args.leaderboard} holds no leaderboard.md (write one with "
                          "`grader leaderboard build RESULTS… --out DIR`)")
    with console.status("building the course website (MkDocs, Material theme)…"):
        res = build(root, course, out, strict=args.strict, leaderboard=board)
    for w in res.warnings:
        console.print(Text.assemble(("warning:", "yellow"), f" {w}"))
    console.print(f"built {res.pages} pages and {res.terms} glossary term{'' if res.terms == 1 else 's'} into "
                  f"{relative_path(res.site, root)} in {res.seconds:.1f} s")
    if args.site_cmd == "build":
        return 0
    import threading

    from grader.site.serve import make_server, watch

    try:
        server = make_server(res.site, args.host, args.port)
    except OSError as e:
        raise GraderError(f"cannot listen on {args.host}:{args.port}: {e.strerror or e}") from None
    host, port = server.server_address[:2]
    console.print(f"serving on http://{host}:{port}/ (Ctrl-C stops)" +
                  ("; rebuilding when a source changes" if not args.no_watch else ""))
    stop = threading.Event()

    def rebuild():
        try:
            r = build(root, _load(args)[2], out, strict=False, leaderboard=board)
            console.print(f"rebuilt in {r.seconds:.1f} s" + (f" ({len(r.warnings)} warnings)" if r.warnings else ""))
        except Exception as e:  # a broken source, or a file caught mid-save: say so, keep serving the last good site
            console.print(Text.assemble(("rebuild failed:", "red"), f" {e}"))

    if not args.no_watch:
        threading.Thread(target=watch, args=(root, rebuild, stop), daemon=True).start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        console.print("stopped")
    finally:
        stop.set()
        server.server_close()
    return 0


# -- entry --------------------------------------------------------------------------------------------------
# Option values checked as they are parsed: a bad one is argparse's usage error (exit 2) before anything runs.
def positive_seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(v) or v <= 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, not {text}")
    return v


def _int_in(text: str, lo: int, hi: int, what: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not lo <= v <= hi:
        raise argparse.ArgumentTypeError(f"{what} must be from {lo} to {hi}, not {text}")
    return v


def seed_value(text: str) -> int:
    return _int_in(text, 0, 2**63 - 1, "a seed")


def port_value(text: str) -> int:
    return _int_in(text, 0, 65535, "a port")


def variant_name(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][\w.-]{0,63}", text) or text == results.RANKED:
        raise argparse.ArgumentTypeError(f"{text!r} is not a name for a variant (letters, digits, . _ -)")
    return text


def json_path(text: str) -> str:
    """A file the results can be written to, checked before the run (not after it): "-" is stdout where the option
    allows it (its const)."""
    if text == "-":
        return text
    p = Path(text).expanduser()
    if text.endswith(("/", os.sep)) or p.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder: give a file name, e.g. {Path(text) / 'results.json'}")
    parent = p.parent
    if not parent.is_dir():
        what = "is not a folder" if parent.exists() else "does not exist"
        raise argparse.ArgumentTypeError(f"cannot write {text}: the folder {parent} {what} (create it first)")
    if not os.access(parent, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise argparse.ArgumentTypeError(f"cannot write {text}: permission denied")
    return str(p)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="grader", description="Build, check and time the course's CUDA exercises.")
    p.add_argument("--course", help="path to course.yaml (default: found from the current folder upwards)")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    c = sub.add_parser("check", help="check a day: build, correctness in every dtype, speed vs the baseline")
    c.add_argument("day", help="day01, day1 or 1")
    c.add_argument("--solution", action="store_true", help="check the instructor's solution instead of days/")
    c.add_argument("--dir", help="check the files in this folder instead of days/dayNN")
    c.add_argument("--exercise", help="only this exercise of the day")
    c.add_argument("--dtype", action="append", help="only this dtype (repeatable): fp32, fp16, bf16")
    c.add_argument("--case", action="append", metavar="TEXT",
                   help="only the cases whose name, as the verdict prints it (e.g. 'fp16 1x2x37x64 causal'), contains "
                        "TEXT (repeatable): a quick re-check of the case that failed; not saved as the day's result")
    c.add_argument("--seed", type=seed_value, help="seed for the random inputs (default: a fresh one, printed)")
    c.add_argument("--correctness-only", action="store_true", help="skip timing")
    c.add_argument("--timeout", type=positive_seconds, help="seconds one case may take before it counts as hung")
    c.add_argument("--json", metavar="PATH", type=json_path, help="also write the full results as JSON")
    c.add_argument("--results-dir", metavar="DIR", help="also write the results for Gradescope (results.json), JUnit "
                   "(junit.xml) and GitHub Classroom (classroom.json) into DIR")
    c.add_argument("--format", action="append", choices=["gradescope", "junit", "classroom"],
                   help="with --results-dir: only this format (repeatable)")
    c.add_argument("--ranked", action="store_true",
                   help=f"for the leaderboard: two runs on inputs from a secret seed (${RANKED_SEED_ENV}, or a file "
                        f"named by ${RANKED_SEED_FILE_ENV}); both must pass, the lower speedup counts")
    c.add_argument("--timings", action="store_true", help=f"print timestamps of each step to stderr (also: "
                                                           f"${timings.ENV}=1)")
    box = c.add_mutually_exclusive_group()
    box.add_argument("--sandbox", action="store_true", help="build and run the code in a sandbox: no network, "
                     "nothing of the course but what the check needs, a private /tmp (default with --ranked)")
    box.add_argument("--no-sandbox", action="store_true", help="never sandbox the code, not even with --ranked "
                     "(says what that gives up)")
    c.add_argument("--hidden", metavar="PATH",
                   help=f"with --ranked: the instructor's hidden cases (default: ${hidden.HIDDEN_ENV}, else "
                        f"{hidden.FILE_NAME} beside course.yaml, if there is one)")
    c.add_argument("--on", choices=["slurm"], help="run the check as one Slurm job on the cluster's GPUs (from a login "
                                                   "node; the course's slurm.yaml says what the job asks for)")
    c.add_argument("--slurm-config", metavar="YAML", help="with --on slurm: your own settings, on top of the course's "
                                                          "slurm.yaml (default: ~/.config/grader/slurm.yaml, if any)")
    c.add_argument("--variant", type=variant_name, help=argparse.SUPPRESS)  # a job's check, named as the student's
    c.set_defaults(fn=cmd_check)
    w = sub.add_parser("watch", help="check a day again on every save, in one warm worker: a compact verdict in "
                                     "seconds (compile-only without a GPU)")
    w.add_argument("day", help="day01, day1 or 1")
    w.add_argument("--solution", action="store_true", help="watch the instructor's solution instead of days/")
    w.add_argument("--dir", help="watch the files in this folder instead of days/dayNN")
    w.add_argument("--exercise", help="only this exercise of the day")
    w.add_argument("--dtype", action="append", help="only this dtype (repeatable): fp32, fp16, bf16")
    w.add_argument("--seed", type=seed_value, help="seed for the random inputs, the same for every check of the "
                                                   "session (default: a fresh one, printed)")
    w.add_argument("--correctness-only", action="store_true", help="skip timing")
    w.add_argument("--timeout", type=positive_seconds, help="seconds one case may take before it counts as hung")
    w.add_argument("--timings", action="store_true", help=f"print timestamps of each step to stderr (also: "
                                                           f"${timings.ENV}=1)")
    w.add_argument("--max-runs", type=lambda t: _int_in(t, 1, 10**9, "--max-runs"), help=argparse.SUPPRESS)
    w.set_defaults(fn=cmd_watch)
    z = sub.add_parser("sanitize", help="a day's correctness cases under compute-sanitizer (memcheck, racecheck, "
                                        "initcheck, synccheck), errors named at your file:line")
    z.add_argument("day", help="day01, day1 or 1")
    z.add_argument("--tool", choices=list(SANITIZER_TOOLS),
                   help="default: the tools the exercise requires (course.yaml `sanitize:`), else memcheck")
    z.add_argument("--solution", action="store_true", help="the instructor's solution instead of days/")
    z.add_argument("--dir", help="the files in this folder instead of days/dayNN")
    z.add_argument("--exercise", help="only this exercise of the day")
    z.add_argument("--dtype", action="append", help="these dtypes (repeatable; default: the exercise's first)")
    z.add_argument("--seed", type=seed_value, help="seed for the random inputs (default: a fresh one, printed)")
    z.add_argument("--timeout", type=positive_seconds, default=600.0,
                   help="seconds one tool may run over all the cases (default: 600; the tools slow kernels 10-100x)")
    z.set_defaults(fn=cmd_sanitize)
    f = sub.add_parser("profile", help="Nsight Compute on your kernels: speed of light, occupancy, spills, and a "
                                       "roofline plot against ceilings measured on this GPU")
    f.add_argument("day", help="day01, day1 or 1")
    f.add_argument("--solution", action="store_true", help="profile the instructor's solution instead of days/")
    f.add_argument("--dir", help="profile the files in this folder instead of days/dayNN")
    f.add_argument("--exercise", help="only this exercise of the day (default: every one)")
    f.add_argument("--dtype", choices=["fp32", "fp16", "bf16"], help="default: the exercise's first dtype")
    f.add_argument("--shape", help="sizes separated by commas, e.g. 4096,4096,4096 (default: the first benchmark "
                                   "shape)")
    f.add_argument("--ncu", metavar="PATH", help="the ncu to use (default: $NSIGHT_COMPUTE, PATH, "
                                                 "/usr/local/cuda/bin/ncu)")
    f.add_argument("--remeasure-ceilings", action="store_true",
                   help="measure this GPU's memory and compute ceilings again instead of using the cached ones")
    f.add_argument("--json", nargs="?", const="-", metavar="PATH", type=json_path,
                   help="also write the results as JSON to PATH, or to stdout without PATH (always saved under "
                        ".grader/profile)")
    f.set_defaults(fn=cmd_profile)
    sub.add_parser("list", help="days, their status and your last results").set_defaults(fn=cmd_list)
    sub.add_parser("doctor", help="check GPU, driver, torch CUDA, nvcc, ninja").set_defaults(fn=cmd_doctor)
    r = sub.add_parser("release", help="(instructors) generate the student stubs in days/ from solutions/, or write "
                                       "the student repository (--to DIR)")
    r.add_argument("days", nargs="*", help="days to release (default: every ready day)")
    r.add_argument("--check", action="store_true", help="only report whether days/ is up to date (CI)")
    r.add_argument("--to", metavar="DIR", help="write the student repository into DIR (new, empty, or an earlier "
                                               "release): the days released by today, no solutions, no hidden cases")
    r.add_argument("--hidden", metavar="PATH", help=f"with --to: the hidden cases to keep out (default: "
                                                    f"${hidden.HIDDEN_ENV}, else {hidden.FILE_NAME} beside course.yaml)")
    r.set_defaults(fn=cmd_release)
    u = sub.add_parser("publish", help="(instructors) add a day's solution to a student repository once it is due")
    u.add_argument("day", help="day01, day1 or 1")
    u.add_argument("--to", metavar="DIR", required=True, help="the student repository (written by `release --to`)")
    u.add_argument("--force", action="store_true", help="publish before the due date (or without one)")
    u.set_defaults(fn=cmd_publish)
    y = sub.add_parser("syllabus", help="(instructors) render syllabus.md from course.yaml")
    y.add_argument("--check", action="store_true", help="only report whether syllabus.md is current (CI)")
    y.set_defaults(fn=cmd_syllabus)
    lb = sub.add_parser("leaderboard", help="(instructors) the leaderboard of ranked results, per day and GPU model")
    lbs = lb.add_subparsers(dest="leaderboard_cmd", required=True, metavar="ACTION")
    b = lbs.add_parser("build", help="rank `grader check --ranked --json` results; reject the untrustworthy, saying why")
    b.add_argument("results", nargs="+", metavar="RESULTS",
                   help="result files, or folders of them laid out RESULTS/<participant>/<day>.json")
    b.add_argument("--out", metavar="DIR", required=True, help="where leaderboard.md/.json, rejected.json and the "
                                                                "plots go (the site reads it: `grader site build`)")
    b.add_argument("--max-age-days", type=lambda t: _int_in(t, 0, 100000, "--max-age-days"), default=30,
                   help="results older than this are stale (default: 30; 0 keeps every age)")
    b.add_argument("--seed-sha256", metavar="HEX", help="the current secret's hash: results ranked with another "
                                                         "secret are stale")
    b.set_defaults(fn=cmd_leaderboard)
    g = sub.add_parser("gradebook", help="(instructors) kernel grades into an nbgrader gradebook, for `nbgrader "
                                         "export` with the notebooks")
    g.add_argument("results", nargs="+", metavar="RESULTS",
                   help="`grader check --json` files, or folders of them laid out RESULTS/<student>/<day>.json")
    g.add_argument("--db", required=True, metavar="PATH", help="the gradebook: a sqlite file (nbgrader's "
                                                                "gradebook.db) or an SQLAlchemy URL")
    g.add_argument("--assignment", default="{day}-kernels", metavar="TEMPLATE",
                   help="the assignment each day's kernels go to (default: {day}-kernels, a row of its own in the "
                        "export; '{day}' adds them to the day's notebook assignment)")
    g.set_defaults(fn=cmd_gradebook)
    g = sub.add_parser("grade", help="(instructors) grade a class: every submission × day, on this machine or on "
                                     "Slurm, one result file per pair (resumable)")
    g.add_argument("submissions", metavar="SUBMISSIONS_DIR",
                   help="one folder per submission: a student repository (days/dayNN/) or a copy of its days/")
    g.add_argument("--days", nargs="+", required=True, metavar="DAY", help="the days to grade: day01 day03, 1,3, or all")
    g.add_argument("--out", required=True, metavar="RESULTS_DIR",
                   help="where the results go: RESULTS_DIR/<submission>/<day>.json, as `grader check --json` writes")
    g.add_argument("--executor", choices=["local", "slurm"], default="local",
                   help="local (default): one worker per GPU, or per core without one (compile-only); slurm: a job "
                        "array through submitit")
    g.add_argument("--workers", type=lambda s: _int_in(s, 1, 4096, "--workers"),
                   help="local: gradings at once (default: one per GPU, else one per core)")
    g.add_argument("--timeout", type=positive_seconds,
                   help="local: seconds one grading may take (default: 1800)")
    g.add_argument("--slurm-config", metavar="YAML", help="slurm: partition, gpus_per_task, cpus_per_task, mem_gb, "
                                                         "timeout_min, setup … (see README.md)")
    g.add_argument("--correctness-only", action="store_true", help="skip timing")
    g.add_argument("--ranked", action="store_true", help=f"ranked gradings, for the leaderboard (the secret: "
                                                        f"${RANKED_SEED_ENV} or ${RANKED_SEED_FILE_ENV})")
    g.add_argument("--regrade", action="store_true", help="grade every pair again, even those with a result")
    g.add_argument("--no-sandbox", action="store_true", help="grade without the sandbox each submission's code "
                   "otherwise runs in (says what that gives up)")
    g.set_defaults(fn=cmd_grade)
    s = sub.add_parser("site", help="the course website, made from course.yaml, syllabus.md and the lessons")
    ss = s.add_subparsers(dest="site_cmd", required=True, metavar="ACTION")
    for name, text in (("build", "build the static site (into .grader/site/html)"),
                       ("serve", "build it, serve it locally and rebuild when a source changes")):
        a = ss.add_parser(name, help=text)
        a.add_argument("--out", metavar="DIR", help="build folder (default: .grader/site)")
        a.add_argument("--strict", action="store_true", help="fail on any MkDocs warning (e.g. a broken link)")
        a.add_argument("--leaderboard", metavar="DIR", help="add the leaderboard page from this `grader leaderboard "
                                                             "build --out` folder (default: .grader/leaderboard, if "
                                                             "there is one)")
        if name == "serve":
            a.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
            a.add_argument("--port", type=port_value, default=8000, help="port (default: 8000; 0 picks a free one)")
            a.add_argument("--no-watch", action="store_true", help="do not rebuild when a source changes")
        a.set_defaults(fn=cmd_site)
    return p


def main(argv: list[str] | None = None) -> int:
    timings.mark("grader imported")
    args = parser().parse_args(argv)
    if getattr(args, "timings", False):
        timings.enable()
        timings.mark("grader imported")
    try:
        return args.fn(args)
    except GraderError as e:
        # Messages quote compilers, ncu and the student's own errors: brackets in them are text, not markup.
        console.print(Text.assemble(("error:", "red"), f" {e}"))
        return e.exit_code
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/]")
        return 130
    except OSError as e:
        state = _state_problem(e)
        if state is None:
            return _internal_error(e)
        console.print(Text.assemble(("error:", "red"), f" {state}"))
        return ENV
    except Exception as e:  # a bug in the grader: say so, keep the traceback out of the user's way
        return _internal_error(e)


def _state_problem(e: OSError) -> str | None:
    """The message for a state folder (.grader/ or $GRADER_STATE) that cannot be used, if that is what e is: one
    that is read-only, or a file where the folder should be. None for any other OSError."""
    from grader.paths import STATE_ENV

    names = [Path(n) for n in (e.filename, e.filename2) if n]
    roots = [Path(os.environ[STATE_ENV])] if os.environ.get(STATE_ENV) else []
    roots += [d / ".grader" for d in (Path.cwd(), *Path.cwd().parents)]
    for n in names:
        for r in roots:
            try:
                inside = n.resolve() == r.resolve() or r.resolve() in n.resolve().parents
            except OSError:
                inside = False
            if inside:
                how = "a file, not a folder" if r.is_file() else (e.strerror or str(e)).lower()
                fix = (f"point ${STATE_ENV} at a folder you can write" if os.environ.get(STATE_ENV) else
                       f"make {r} writable (or remove it), or point ${STATE_ENV} at a folder you can write")
                return (f"the grader keeps its builds, logs and results in {r}, and it cannot write there ({how}: "
                        f"{n}): {fix}")
    return None


def _internal_error(e: BaseException) -> int:
    """A bug in the grader: say so, keep the traceback out of the user's way."""
    from grader.paths import Paths

    log = Paths(Path.cwd()).logs() / "internal-error.log"
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(traceback.format_exc())
        where = f"details in {log}"
    except OSError:
        where = "no log could be written"
    console.print(Text.assemble(("internal error in the grader:", "red"),
                                f" {type(e).__name__}: {e} ({where}); please report it"))
    return ENV


if __name__ == "__main__":
    sys.exit(main())
