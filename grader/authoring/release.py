"""Student stubs from the instructor's solutions (the nbgrader convention, for source files).

In solutions/dayNN/*, each region from a line containing `BEGIN SOLUTION` to a line containing `END SOLUTION`
(both marker lines included) becomes one placeholder line with the BEGIN line's indentation. Files without
markers are copied as they are. A day's `notebooks:` are released by nbgrader itself (grader/notebooks.py).
`days/` is generated, never edited by hand: CI checks it matches.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from grader.course import Course
from grader.errors import GraderError
from grader.authoring.notebooks import release_notebook

BEGIN, END = "BEGIN SOLUTION", "END SOLUTION"
PLACEHOLDER = "YOUR CODE HERE"
_COMMENT = {".cu": "//", ".cuh": "//", ".cpp": "//", ".h": "//", ".hpp": "//", ".py": "#"}


def comment_prefix(path: Path) -> str:
    return _COMMENT.get(path.suffix, "//")


def strip_solutions(text: str, path: Path) -> str:
    """The stub text for one file; raises GraderError naming file:line for unbalanced markers."""
    out, open_at, indent = [], None, ""
    for n, line in enumerate(text.splitlines(keepends=True), 1):
        if BEGIN in line:
            if open_at is not None:
                raise GraderError(f"{path}:{n}: `{BEGIN}` inside the region opened at line {open_at}")
            open_at, indent = n, re.match(r"\s*", line).group(0)
        elif END in line:
            if open_at is None:
                raise GraderError(f"{path}:{n}: `{END}` without a matching `{BEGIN}`")
            out.append(f"{indent}{comment_prefix(path)} {PLACEHOLDER}\n")
            open_at = None
        elif open_at is None:
            out.append(line)
    if open_at is not None:
        raise GraderError(f"{path}:{open_at}: `{BEGIN}` is never closed by `{END}`")
    return "".join(out)


def has_placeholder(text: str) -> bool:
    return PLACEHOLDER in text


@dataclass(frozen=True)
class Planned:
    source: Path
    target: Path
    text: str


def release_plan(course: Course, root: Path, day_ids: list[str] | None = None) -> list[Planned]:
    days = [course.day(d) for d in day_ids] if day_ids else [d for d in course.days if d.status == "ready"]
    plan = []
    for day in days:
        if day.status != "ready":
            raise GraderError(f"{day.id} is planned, not ready: nothing to release")
        seen: set[str] = set()  # exercises of one day may share source files: release each once
        for ex in day.exercises:
            for name in ex.sources:
                if name in seen:
                    continue
                seen.add(name)
                src = root / "solutions" / day.id / name
                if not src.is_file():
                    raise GraderError(f"{src.relative_to(root)} is missing: course.yaml lists it as a source of "
                                      f"{day.id}.{ex.name}")
                plan.append(Planned(src, root / "days" / day.id / name, strip_solutions(src.read_text(), src)))
        for name in day.notebooks:
            src = root / "solutions" / day.id / name
            if not src.is_file():
                raise GraderError(f"{src.relative_to(root)} is missing: course.yaml lists it as a notebook of {day.id}")
            plan.append(Planned(src, root / "days" / day.id / name, release_notebook(src)))
    return plan


def stale(plan: list[Planned]) -> list[Path]:
    return [p.target for p in plan if not p.target.is_file() or p.target.read_text() != p.text]


def write(plan: list[Planned], backup_dir: Path) -> tuple[list[Path], list[Path]]:
    """Writes the stubs that differ. A file being replaced is first copied under backup_dir, so a student's
    work in days/ is never lost to a release. Returns (written, backed_up)."""
    changed, saved = stale(plan), []
    for p in plan:
        if p.target not in changed:
            continue
        if p.target.is_file():
            keep = backup_dir / p.target.parent.name / p.target.name
            keep.parent.mkdir(parents=True, exist_ok=True)
            keep.write_bytes(p.target.read_bytes())
            saved.append(keep)
        p.target.parent.mkdir(parents=True, exist_ok=True)
        p.target.write_text(p.text)
    return changed, saved
