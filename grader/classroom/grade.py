"""`grader grade SUBMISSIONS_DIR --days … --out RESULTS_DIR`: grade a class, every submission × day.

A submission is one folder of SUBMISSIONS_DIR (its name is the student's), laid out either as a student repository
(`days/dayNN/`, what `grader release --to` writes) or as a copy of that repository's days/ folder (`dayNN/`). Only its
sources are used: the course (course.yaml, tasks, baselines, thresholds) is the instructor's, the one this command
runs from. Each pair gets a result file (grader/grade_task.py), so a run can stop anywhere and the next one carries
on: pairs with a result are skipped, pairs whose grading failed twice (error records) are graded again."""
from __future__ import annotations

import dataclasses
import os
import uuid
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from grader.classroom import grade_task
from grader.errors import GraderError
from grader.check.build import files_read
from grader.classroom.grade_task import Task
from grader.results import write_json
from grader.verdicts import Category, Status

SUMMARY_FILE = "summary.json"  # beside the submissions' folders in --out (the leaderboard skips it)

DEFAULT_TIMEOUT_S = 1800.0  # one local grading; a day's check with timing takes minutes, a hung one is cut here
SHORT = {Status.PASS: "PASS", Status.FAIL: "FAIL", Status.NOT_IMPLEMENTED: "NOT IMPL.",
         Status.BUILD_ERROR: "BUILD ERROR", Status.NO_GPU: "COMPILED", Status.ENV_ERROR: "ENV ERROR",
         Status.SKIPPED: "SKIPPED"}
STYLE = {"PASS": "green", "COMPILED": "yellow", "NOT IMPL.": "yellow", "ERROR": "bold red", "MISSING": "dim"}


@dataclasses.dataclass(frozen=True)
class Submission:
    name: str
    folder: Path
    days_dir: Path  # the folder that holds its dayNN/ folders: folder/days or folder itself


def find_submissions(folder: Path) -> list[Submission]:
    """Every submission in folder, by name (hidden folders and plain files are not submissions)."""
    if not folder.exists():
        raise GraderError(f"{folder} does not exist: give the folder that holds one folder per submission")
    if not folder.is_dir():
        raise GraderError(f"{folder} is not a folder: give the folder that holds one folder per submission")
    subs = [Submission(d.name, d, d / "days" if (d / "days").is_dir() else d)
            for d in sorted(folder.iterdir()) if d.is_dir() and not d.name.startswith(".")]
    if not subs:
        raise GraderError(f"no submissions in {folder}: it should hold one folder per submission, each a student "
                          "repository (days/dayNN/) or a copy of its days/ folder (dayNN/)")
    return subs


def parse_days(values: list[str], course) -> list:
    """--days: ids (day03, day3, 3) separated by spaces or commas, or `all` (every ready day); each must be ready."""
    words = [w for v in values for w in v.replace(",", " ").split()]
    if not words:
        raise GraderError("--days: name at least one day (day01, 1, or all)")
    days = [d for d in course.days if d.status == "ready"] if words == ["all"] else [course.day(w) for w in words]
    for d in days:
        if d.status != "ready":
            raise GraderError(f"--days: {d.id} ({d.title}) is planned, not ready yet: there is nothing to grade")
    return list({d.id: d for d in days}.values())


@dataclasses.dataclass
class Plan:
    tasks: list[Task]
    skipped: int = 0  # pairs with a result already
    missing: int = 0  # pairs whose submission has no folder for the day (recorded as not implemented)
    refused: int = 0  # pairs whose folders hold something other than regular files (recorded as a build error)
    incomplete: int = 0  # pairs whose day folder lacks a source the course gives (recorded as a build error)


def not_regular(sub: Submission, day) -> str | None:
    """The first thing in the folders a pair's check reads (the day's, and those of the earlier days its exercises
    `use`) that is not a regular file or a folder inside the submission: a symbolic link (to a file or a folder,
    anywhere), a device, a fifo or a socket. The check compiles and reads what it finds there, so a link would let
    another file (the instructor's solution, a system file) be graded or copied into the result."""
    used = {u.split("/")[0] for ex in day.exercises for u in ex.uses}
    for path in (sub.folder, sub.days_dir):
        if path.is_symlink():
            return f"{path.name} is a symbolic link"
    for name in [day.id, *sorted(used)]:
        top = sub.days_dir / name
        if top.is_symlink():
            return f"{top.relative_to(sub.folder)} is a symbolic link"
        for dirpath, dirnames, filenames in os.walk(top):  # os.walk never follows a link to a folder
            for entry in sorted(dirnames + filenames):
                f = Path(dirpath) / entry
                if f.is_symlink():
                    return f"{f.relative_to(sub.folder)} is a symbolic link"
                if not (f.is_dir() or f.is_file()):
                    return f"{f.relative_to(sub.folder)} is not a regular file"
    return None


def lacking(sub: Submission, day) -> list[str]:
    """The files a check of the day must read (build.files_read: the exercises' sources and the earlier days'
    files they `use`) that the submission lacks, relative to its days folder. The course gives every one of them (a
    stub at least), so a lack is the submission's: a verdict, not a grading error that a later run would retry to
    the same end."""
    wanted = [f for ex in day.exercises for _, f, must in files_read(ex, sub.days_dir / day.id) if must]
    return [f.relative_to(sub.days_dir).as_posix() for f in dict.fromkeys(wanted) if not f.is_file()]


def plan(subs: list[Submission], days: list, out: Path, *, course_path: Path, timeout_s: float,
         command: tuple[str, ...], options: tuple[str, ...], regrade: bool) -> Plan:
    p, run = Plan([]), uuid.uuid4().hex[:12]
    for sub in subs:
        for day in days:
            result = out / sub.name / f"{day.id}.json"
            task = Task(sub.name, day.id, str(sub.days_dir / day.id), str(result),
                        str(out / sub.name / f"{day.id}.log"), str(course_path), timeout_s, command, options, run)
            if not (sub.days_dir / day.id).is_dir():
                rel = (sub.days_dir / day.id).relative_to(sub.folder)
                grade_task.record(task, day.exercises, Status.NOT_IMPLEMENTED,
                                  f"the submission has no {rel}/ folder: nothing to grade",
                                  {"missing": True})
                p.missing += 1
            elif why := not_regular(sub, day):
                grade_task.record(task, day.exercises, Status.BUILD_ERROR,
                                  f"{why}: a submission is graded from its own regular files only, so nothing of "
                                  "this day was read or built; replace it with the file itself", {"refused": why})
                p.refused += 1
            elif gone := lacking(sub, day):
                names = ", ".join((sub.days_dir.relative_to(sub.folder) / f).as_posix() for f in gone)
                grade_task.record(task, day.exercises, Status.BUILD_ERROR,
                                  f"the submission lacks {names}, which the course gives: nothing of this day was "
                                  "built; restore the file(s) from the course (`git checkout -- FILE`) and submit "
                                  "again", {"lacks": gone})
                p.incomplete += 1
            elif not regrade and grade_task.graded(result, day.id):
                p.skipped += 1
            else:
                p.tasks.append(task)
    return p


def run(executor, tasks: list[Task], exercises: dict, console: Console) -> tuple[int, dict[str, str]]:
    """Grade the tasks, each failed one once more; a second failure becomes an error record. Returns (how many
    passed only on the second attempt, {pair: why} of the error records)."""
    failed: dict[Task, str] = {}
    retried = 0
    cols = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*cols, console=console, transient=False) as bar:
        for attempt in (1, 2):
            todo = tasks if attempt == 1 else list(failed)
            if not todo:
                break
            if attempt == 2:
                retried = len(todo)
                console.print(f"{len(todo)} grading(s) failed: trying each once more", style="yellow")
            failed = {}
            job = bar.add_task("grading" if attempt == 1 else "second attempt", total=len(todo))

            def done(task: Task, why: str | None, job=job, attempt=attempt, failed=failed) -> None:
                if why is not None:
                    failed[task] = why
                    if attempt == 1:
                        console.print(Text.assemble((f"{task.name}: ", "yellow"), why.splitlines()[0][:300]))
                bar.advance(job)

            executor.run(todo, attempt, done)
    second = retried - len(failed)
    errors = {}
    for task, why in failed.items():
        grade_task.record(task, exercises[task.day], Status.ENV_ERROR, f"grading failed twice: {why}",
                          {"error": why, "attempts": 2})
        errors[task.name] = why
    return second, errors


def cell(doc: dict | None) -> str:
    if doc is None:
        return "-"
    grade = doc.get("grade") or {}
    if grade.get("error"):
        return "ERROR"
    if grade.get("missing"):
        return "MISSING"
    statuses = [e["status"] for e in doc["exercises"]]
    if len(set(statuses)) == 1:
        return SHORT.get(statuses[0], statuses[0])
    return f"{statuses.count(Status.PASS)}/{len(statuses)} PASS"


def patterns(doc: dict | None) -> dict[str, str]:
    """exercise -> the pattern of the failing case whose error map says the most (grader/check/error_map.py's
    choose, the map the report draws), where it has one."""
    from grader.check.error_map import choose

    found = {}
    for e in (doc or {}).get("exercises", []):
        first = choose([c for c in e.get("cases") or [] if not c.get("ok") and c.get("category") not in
                        Category.NOT_COUNTED])
        if first and first.get("pattern"):
            found[e["exercise"]] = first["pattern"]
    return found


def summarize(subs: list[Submission], days: list, out: Path, console: Console) -> dict:
    """The table of every pair's verdict, read back from the result files (also written as OUT/SUMMARY_FILE)."""
    t = Table(title=f"{len(subs)} submission(s) × {len(days)} day(s)", title_justify="left")
    t.add_column("submission")
    for d in days:
        t.add_column(d.id)
    summary = {}
    for sub in subs:
        row = {}
        for d in days:
            doc = grade_task.read_result(out / sub.name / f"{d.id}.json", d.id)
            row[d.id] = {"cell": cell(doc), "statuses": [e["status"] for e in doc["exercises"]] if doc else [],
                         "points": sum(e.get("points") or 0 for e in doc["exercises"]) if doc else 0,
                         "patterns": patterns(doc)}
        summary[sub.name] = row
        # the cell, and where a failure's error map showed a pattern, its name (which bug, at a glance)
        t.add_row(sub.name, *(Text(row[d.id]["cell"], style=STYLE.get(row[d.id]["cell"], "red"))
                              + Text("".join(f" {p}" for p in dict.fromkeys(row[d.id]["patterns"].values())),
                                     style="dim") for d in days))
    console.print(t)
    write_json(out / SUMMARY_FILE, summary)
    return summary


def check_out_dir(out: Path, submissions: Path) -> None:
    if out == submissions or submissions in out.parents:
        raise GraderError(f"--out {out} is inside the submissions folder: it would be taken for a submission; "
                          "write the results elsewhere")
    if out.exists() and not out.is_dir():
        raise GraderError(f"--out {out} is a file: give a folder for the results")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise GraderError(f"--out: cannot create {out}: {e.strerror or e}") from None
