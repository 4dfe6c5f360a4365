"""Where each day of the course stands on a date: planned, not released yet, released, due or published.

From course.yaml's `release:` and `due:` dates and, for a student repository, its manifest (.release.json, which
`grader release --to` writes and `grader publish` extends). In a student repository a day is released only if a
release put it there: a day whose date has come may still be held back (it would hand out an earlier day's answers
before that day is published), or wait for the instructor's next release. Without a manifest (the course
repository) the dates alone say it, and nothing is known to be published. `grader calendar`, `grader list`, the
syllabus and the site all ask here, so that they say the same thing about a day.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path

from grader.course import Course, Day

PLANNED, NOT_RELEASED, RELEASED, DUE, PUBLISHED = "planned", "not released yet", "released", "due", "published"


@dataclass(frozen=True)
class DayState:
    day: Day
    status: str  # one of the five above
    why: str = ""  # what a status needs besides its name: when a day not released yet comes out

    @property
    def label(self) -> str:
        return f"{self.status} ({self.why})" if self.why else self.status

    @property
    def released(self) -> bool:
        return self.status in (RELEASED, DUE, PUBLISHED)


def manifest_of(root: Path) -> dict | None:
    """The manifest of the student repository at root (the folder of its course.yaml), None in the course's own
    repository; a GraderError naming the file if it is there but unreadable."""
    from grader.authoring.student_repo import read_manifest

    return read_manifest(Path(root))


def not_released(day: Day, today: date | None) -> str:
    """Why a ready day is not out yet, as the student sees it: its date, and, once that date has come (the release
    holds it back until the earlier days whose answers its code holds are published), that it waits for a release."""
    if day.release is None:
        return "with a later release"
    if today is not None and day.release <= today:
        return f"on {day.release.isoformat()}; held back until a later release"
    return f"on {day.release.isoformat()}"


def state(day: Day, today: date | None, manifest: dict | None) -> DayState:
    """day's place on today (None: the dates' own order, for a file that must not change with the day, such as the
    syllabus) in the repository whose manifest is given (None: the course repository, where the dates decide)."""
    if day.status != "ready":
        return DayState(day, PLANNED)
    if manifest is not None:
        if day.id in manifest.get("published", {}):
            return DayState(day, PUBLISHED)
        if day.id not in manifest.get("days", []):
            return DayState(day, NOT_RELEASED, not_released(day, today))
    elif today is not None and day.release is not None and day.release > today:
        return DayState(day, NOT_RELEASED, not_released(day, today))
    if today is not None and day.due is not None and today > day.due:
        # its due date has passed; what follows is `grader publish`, which only the course repository can do
        return DayState(day, DUE, "solution not published yet" if manifest is not None else "its solution may be "
                        "published")
    return DayState(day, RELEASED)


def states(course: Course, today: date | None, manifest: dict | None) -> list[DayState]:
    return [state(d, today, manifest) for d in course.days]
