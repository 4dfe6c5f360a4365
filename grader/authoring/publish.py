"""`grader publish dayNN --to DIR`: a day's solution added to a student repository once the day is due.

DIR must be a release (`grader release --to`, its manifest names the day). The day's due date (course.yaml
`due:`) must have passed: the solution goes out from the day after it. Earlier, or without a due date, publishing
is refused with the date, unless forced. The solution lands in DIR/solutions/dayNN/, where the grader looks for
it (`grader check --solution`, and the baseline of a later day timed against it). Source files go out as the
student would have written them: the `BEGIN SOLUTION` / `END SOLUTION` marker lines and the instructor-only
lines are dropped, the code between the markers kept; a notebook keeps its solutions and loses nbgrader's
hidden tests (published_notebook); other files are copied as they are.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

from grader.authoring import course_files, release, student_repo
from grader.authoring.student_repo import MANIFEST, Entry
from grader.course import Course, Day
from grader.errors import GraderError


def check_due(day: Day, today: date, force: bool) -> str | None:
    """None if the day may be published today; else why not (refused unless forced, then a warning)."""
    if day.due is None:
        why = f"{day.id} has no due date in course.yaml (`due: YYYY-MM-DD`)"
    elif today <= day.due:
        why = (f"{day.id} is due on {day.due.isoformat()}: its solution can be published from "
               f"{(day.due + timedelta(days=1)).isoformat()} on (today is {today.isoformat()})")
    else:
        return None
    if not force:
        raise GraderError(f"{why}; give --force to publish it anyway")
    return why


_NB_MARKER = re.compile(r"^\s*###\s*(BEGIN|END)\s+(SOLUTION|HIDDEN TESTS)\b")


def published_notebook(data: bytes, rel: str) -> bytes:
    """An nbgrader notebook as it is published: the solutions kept (their marker lines dropped), the hidden tests
    dropped whole. Hidden tests grade every submission, late ones included; they are never handed out."""
    try:
        nb = json.loads(data.decode("utf-8"))
        cells = nb["cells"]
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as e:
        raise GraderError(f"{rel} is not a notebook that can be published ({e}): fix it in solutions/") from None
    for cell in cells:
        src = cell.get("source", "")
        lines = ("".join(src) if isinstance(src, list) else str(src)).splitlines(keepends=True)
        kept, hidden = [], False
        for line in lines:
            m = _NB_MARKER.match(line)
            if m:
                hidden = m.group(2) == "HIDDEN TESTS" and m.group(1) == "BEGIN"
                continue
            if not hidden:
                kept.append(line)
        cell["source"] = kept
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None  # what ran with the hidden tests stays out too
    return (json.dumps(nb, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def solution_files(root: Path, day: Day) -> dict[str, Entry]:
    """The day's solution as it is published, by path relative to the student repository."""
    prefix = f"{course_files.SOLUTIONS}{day.id}/"
    out = {}
    for t in course_files.tracked_files(root):
        if not t.path.startswith(prefix):
            continue
        src = root / t.path
        data = src.read_bytes()
        if release.has_markers_syntax(src):
            data = release.published_solution(release.read_source(src, t.path), Path(t.path)).encode("utf-8")
        elif src.suffix == ".ipynb":
            data = published_notebook(data, t.path)
        out[t.path] = Entry(data, t.executable)
    if not out:
        raise GraderError(f"solutions/{day.id}/ holds no file git tracks: nothing to publish")
    return out


@dataclass
class Published:
    written: list[str]
    removed: list[str]
    unchanged: int
    forced: str | None


def publish(root: Path, course: Course, day_id: str, dest: Path, today: date, force: bool = False) -> Published:
    day = course.day(day_id)
    dest = Path(dest).resolve()
    doc = student_repo.read_manifest(dest) if dest.is_dir() else None
    if doc is None:
        raise GraderError(f"{dest} is not a student repository written by `grader release --to` (it has no "
                          f"{MANIFEST}): release into it first")
    if day.status != "ready":
        raise GraderError(f"{day.id} is planned, not ready: there is no solution to publish")
    if day.id not in doc.get("days", []):
        have = ", ".join(doc.get("days", [])) or "none"
        raise GraderError(f"{day.id} is not released in {dest} (its days: {have}): release it before publishing "
                          "its solution")
    forced = check_due(day, today, force)
    files = solution_files(Path(root).resolve(), day)
    old = doc["published"].get(day.id, {})
    out = Published([], [], 0, forced)
    for rel in sorted(set(old) - set(files)):
        if (dest / rel).is_file():
            (dest / rel).unlink()
            out.removed.append(rel)
    for rel, entry in files.items():
        if student_repo.same_file(dest / rel, entry):
            out.unchanged += 1
        else:
            student_repo.put_file(dest / rel, entry)
            out.written.append(rel)
    doc["published"][day.id] = {p: e.sha256 for p, e in files.items()}
    student_repo.put_file(dest / MANIFEST, Entry(student_repo.manifest_text(doc)))
    return out
