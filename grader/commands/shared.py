"""What the commands share: the console, the course and the source folder a command works on, the exercises
chosen, progress, and how a check's result is kept."""
from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from grader import clock, results, timings

from grader.check import day_check
from grader.errors import GraderError
from grader.paths import Paths, relative_path
from grader.verdicts import Status, exit_code, restore

if TYPE_CHECKING:  # the schema (pydantic) loads with the course, not with the command line
    from grader.course import Course
# Not a terminal (CI logs, pipes): wider than 80 columns so tables and paths stay on one line.


console = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)
WORKER = day_check.WORKER  # the module each exercise runs in (the CPU tests substitute a scripted one here)


def _load(args) -> tuple[Path, Path, Course]:
    from grader.course import load_course

    root, path = locate_course(args.course)
    return root, path, load_course(path)


def locate_course(given: str | None) -> tuple[Path, Path]:
    """(root, course.yaml) of --course, else of the first course.yaml from the current folder upwards. What --course
    names is judged before its links are followed: a link to nothing is said to be one."""
    from grader.course import find_course_file
    from grader.yaml_file import not_a_file

    if not given:
        path = find_course_file(Path.cwd().resolve())
        return path.parent, path
    p = Path(given).expanduser()
    if why := not_a_file(p):
        inside = p / "course.yaml"
        fix = f"--course {inside}" if p.is_dir() and inside.is_file() else "--course PATH to the course's course.yaml"
        raise GraderError(f"--course {given} {why}: give {fix}")
    path = p.resolve()
    return path.parent, path


# -- check --------------------------------------------------------------------------------------------------
def _source_dir(args, root: Path, day) -> tuple[Path, str]:
    paths = Paths(root)
    if args.solution and args.dir:
        raise GraderError("give either --solution or --dir, not both")
    d = paths.solution(day.id) if args.solution else Path(args.dir).resolve() if args.dir else paths.day(day.id)
    if d.exists() and not d.is_dir():
        raise GraderError(f"{d} is a file, not a folder (a day is checked from the folder that holds its sources)")
    if not d.is_dir():
        raise GraderError(f"{d} does not exist" + ("" if args.dir else _why_missing(day, args.solution, root)))
    return d, paths.variant(d)


def _why_missing(day, solution: bool, root: Path) -> str:
    """Why a course folder is absent: in a student repository, a day not out yet (its date to come, or held back
    by the last release) or a solution not published."""
    from grader.authoring import semester

    today = clock.today()
    try:
        manifest = semester.manifest_of(root)
    except GraderError:
        manifest = None
    if not solution and manifest is not None and day.id not in manifest.get("days", []):
        return (f": {day.id} is not released yet ({semester.not_released(day, today)}); its folder comes with the "
                "release that holds it (`git pull` then)")
    if not solution and day.release and day.release > today:
        return f": {day.id} is released on {day.release.isoformat()}, and its folder comes with it"
    if solution:
        after = f" (after its due date, {day.due.isoformat()})" if day.due else ""
        return (f": in a student repository a day's solution appears once the instructor publishes it{after}; "
                "in the course repository, restore solutions/")
    return ": run `grader release` to create it"


def _exercises(args, day, src_dir: Path, root: Path, per_exercise: bool = False) -> list:
    """The day's exercises (or the one named by --exercise), each with all its sources present. per_exercise (a
    local `grader check`): an exercise lacking one of its own sources is kept, and its check reports the missing
    file as that exercise's build error, so the day's other exercises are still checked (a student who skipped one
    route, or deleted its file). A folder that holds none of the day's sources is an error: not the day's folder."""
    exercises = [e for e in day.exercises if not args.exercise or e.name == args.exercise]
    if not exercises:
        raise GraderError(f"{day.id} has no exercise {args.exercise!r} (it has: "
                          f"{', '.join(e.name for e in day.exercises)})")
    here = relative_path(src_dir, root)
    lacking = {ex.name: [s for s in ex.sources if not (src_dir / s).is_file()] for ex in exercises}
    every = list(dict.fromkeys(s for e in day.exercises for s in e.sources))
    if per_exercise and not any(os.path.lexists(src_dir / s) for s in every):
        raise GraderError(f"{here} holds none of {day.id}'s sources ({', '.join(every)}): "
                          + ("is it the day's folder?" if args.dir else restore([here], day.id)))
    others = len(exercises) > 1
    for ex in exercises:
        missing = lacking[ex.name]
        if missing and per_exercise:
            console.print(f"{day.id}.{ex.name}: {here} lacks {', '.join(missing)}"
                          + ("; the other exercises are checked" if others else ""), style="yellow", highlight=False)
            continue
        if missing:
            raise GraderError(f"{here} lacks {', '.join(missing)} (sources of {day.id}.{ex.name}): "
                              + restore([relative_path(src_dir / m, root) for m in missing], day.id))
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


def progress_telling_correct(correct):
    """_progress that also calls correct(n) once every correctness case has passed and the first benchmark case
    starts (`grader watch` prints the verdict then, not after the timing). Not called if a case failed."""
    @contextlib.contextmanager
    def progress(what: str, total: int):
        with _progress(what, total) as inner:
            kinds: dict[int, str] = {}
            seen = {"passed": 0, "failed": 0, "told": False}

            def on_event(ev: dict) -> None:
                inner(ev)
                if ev["ev"] == "case_start":
                    kinds[ev["index"]] = ev["kind"]
                    if ev["kind"] == "benchmark" and not seen["told"] and seen["passed"] and not seen["failed"]:
                        seen["told"] = True
                        correct(seen["passed"])
                elif ev["ev"] == "case":
                    if not ev["ok"]:
                        seen["failed"] += 1
                    elif kinds.get(ev.get("index")) == "correctness":
                        seen["passed"] += 1
            yield on_event
    return progress


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
                                  args.format or formats.FORMATS,
                                  optional=frozenset(e.name for e in day.exercises if e.optional))
        except OSError as e:
            raise GraderError(f"--results-dir: cannot write into {args.results_dir}: {e.strerror or e}") from None
        console.print("results for " + ", ".join(relative_path(p, Path.cwd()) for p in paths), style="dim")
    timings.mark("results written")
    return exit_code(counted_statuses(day, out))


def counted_statuses(day, out: list[dict]) -> list[str]:
    """The statuses the exit code weighs: every exercise's, but an optional step's only once it is begun and graded
    here (a stub left as released, or a step this GPU does not grade, is no failure of the day)."""
    optional = {e.name for e in day.exercises if e.optional}
    return [r["status"] for r in out
            if not (r["exercise"] in optional and r["status"] in (Status.NOT_IMPLEMENTED, Status.SKIPPED))]


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


def _hidden_cases(args, course_path: Path, course, day, exercises) -> dict | None:
    """The hidden cases of a ranked run (none is normal: a student repository has no overlay), announced by count."""
    from grader.classroom import hidden

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
