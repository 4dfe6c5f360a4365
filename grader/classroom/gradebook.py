"""Kernel grades into an nbgrader gradebook, so that `nbgrader export` gives one CSV with the notebooks' scores and
the kernels' together.

Each result file (`grader check --json`, laid out RESULTS/<student>/<day>.json) becomes a submission of one
assignment, by default `<day>-kernels` (a row of its own in the export), or the day's own nbgrader assignment when
the template names it (`{day}`: the kernels add to the notebooks' score). The assignment gets a notebook `kernels`
with one autograded grade cell per exercise of the day, worth its points in course.yaml; a score is earned by the
same per-dtype rule as the Gradescope results (grader/formats.py).
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from grader.classroom import formats
from grader.course import Course
from grader.errors import GraderError
from grader.nbgrader_import import nbgrader_ready

NOTEBOOK = "kernels"
DEFAULT_ASSIGNMENT = "{day}-kernels"


@dataclass
class Summary:
    written: list[tuple[str, str, float, float]] = field(default_factory=list)  # student, assignment, score, max
    skipped: list[tuple[str, str]] = field(default_factory=list)  # file, why


def _read(path: Path, course: Course) -> tuple[dict, datetime]:
    try:
        doc = json.loads(path.read_text())
    except OSError as e:
        raise ValueError(f"cannot read it: {e.strerror or e}") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"not JSON: {e}") from None
    if not (isinstance(doc, dict) and isinstance(doc.get("day"), str) and isinstance(doc.get("exercises"), list)
            and doc["exercises"] and all(isinstance(e, dict) and isinstance(e.get("exercise"), str)
                                         and isinstance(e.get("status"), str) for e in doc["exercises"])):
        raise ValueError("not a `grader check --json` result (no day, or exercises without a name and status)")
    try:
        day = course.day(doc["day"])
    except GraderError as e:
        raise ValueError(str(e)) from None
    known = {e.name for e in day.exercises}
    unknown = [e["exercise"] for e in doc["exercises"] if e["exercise"] not in known]
    if unknown:
        raise ValueError(f"{day.id} has no exercise {', '.join(unknown)} in course.yaml")
    when = doc.get("when")
    try:
        t = datetime.fromisoformat(when.replace("Z", "+00:00")) if isinstance(when, str) else None
    except ValueError:
        t = None
    if t is None:  # an older result without `when`: the file's time
        t = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
    return {**doc, "day": day.id}, (t if t.tzinfo else t.replace(tzinfo=timezone.utc))


def _open(db: str):
    nbgrader_ready()
    try:
        from nbgrader.api import Gradebook
    except ImportError:
        raise GraderError("writing an nbgrader gradebook needs nbgrader: pip install 'nbgrader>=0.9'") from None
    # A new database is created by running alembic, found on PATH: the one beside this Python.
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
    url = db if "://" in db else f"sqlite:///{Path(db).expanduser().resolve()}"
    try:
        return Gradebook(url)
    except Exception as e:  # sqlalchemy's and alembic's errors: a path that cannot hold a database, say
        raise GraderError(f"--db: cannot open the gradebook {db}: {e}") from None


def _grade(gb, cell: str, assignment: str, student: str):
    """The student's grade for one kernel cell, created if the submission predates the cell."""
    from nbgrader.api import Grade, MissingEntry, SubmittedNotebook

    try:
        return gb.find_grade(cell, NOTEBOOK, assignment, student)
    except MissingEntry:
        pass
    submission = gb.find_submission(assignment, student)
    try:
        nb = gb.find_submission_notebook(NOTEBOOK, assignment, student)
    except MissingEntry:
        nb = SubmittedNotebook(notebook=gb.find_notebook(NOTEBOOK, assignment), assignment=submission)
        gb.db.add(nb)
    grade = Grade(cell_id=gb.find_grade_cell(cell, NOTEBOOK, assignment).id, notebook=nb)
    gb.db.add(grade)
    gb.db.commit()
    return grade


def write(files: list[Path], db: str, course: Course, assignment: str = DEFAULT_ASSIGNMENT) -> Summary:
    """Every result in files into the gradebook db (a path or an SQLAlchemy URL); the latest result of a student and
    day counts. Files that are not results are skipped, each with its reason."""
    if "{day}" not in assignment:
        raise GraderError(f"--assignment {assignment!r} must contain {{day}} (e.g. {DEFAULT_ASSIGNMENT!r}, or "
                          "'{day}' for the day's own nbgrader assignment)")
    out = Summary()
    docs = []
    for f in files:
        try:
            doc, when = _read(f, course)
        except ValueError as e:
            out.skipped.append((str(f), str(e)))
            continue
        docs.append((when, f.resolve().parent.name, doc))
    if not docs:
        return out
    gb = _open(db)
    try:
        for when, student, doc in sorted(docs, key=lambda x: x[0]):
            day = course.day(doc["day"])
            name = assignment.format(day=day.id)
            points = {e.name: e.points for e in day.exercises}
            kwargs = {"duedate": datetime.combine(day.due, datetime.max.time())} if day.due else {}
            gb.update_or_create_assignment(name, **kwargs)
            gb.update_or_create_notebook(NOTEBOOK, name)
            # An optional step (day 11's Hopper track) is extra credit: its points count where earned and never
            # into the maximum, so a class whose GPUs cannot grade it still reaches full marks.
            optional = {e.name for e in day.exercises if e.optional}
            for ex in day.exercises:
                gb.update_or_create_grade_cell(ex.name, NOTEBOOK, name,
                                               max_score=0.0 if ex.optional else float(ex.points), cell_type="code")
            gb.update_or_create_student(student)
            gb.update_or_create_submission(name, student, timestamp=when.astimezone(timezone.utc)
                                           .replace(tzinfo=None).isoformat())
            scores = formats.exercise_scores(doc, points, optional)
            for ex, (score, _top) in scores.items():
                g = _grade(gb, ex, name, student)
                if ex in optional:  # its maximum is 0 (formats): what it earned is on top
                    g.auto_score, g.extra_credit = 0.0, float(score)
                else:
                    g.auto_score = float(score)
            gb.db.commit()
            out.written.append((student, name, sum(s for s, _ in scores.values()),
                                float(sum(p for e, p in points.items() if e not in optional))))
    finally:
        gb.close()
    return out
