"""Which files make up the course, and which of them are the instructor's alone.

The course is what git tracks under the folder of course.yaml (`git ls-files`: no build outputs, caches or
scratch files, whatever the checkout holds), read from the working tree. A student repository leaves out:

- `solutions/` (a day's solution joins it only through `grader publish`);
- the hidden cases (grader/classroom/hidden.py), wherever the overlay lives inside the course;
- the paths course.yaml lists under `instructor_only:` (by default the grader's own test suite, the scripts,
  the measurements and the CI that runs them: see course.INSTRUCTOR_ONLY_PATHS);
- `days/dayNN/` of every day that is not out yet: planned, or ready with a release date still to come (the
  released days' stubs are generated from solutions/ rather than copied: grader/authoring/release.py).
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from grader.course import Course
from grader.errors import GraderError

SOLUTIONS = "solutions/"


@dataclass(frozen=True)
class Tracked:
    path: str  # relative to the course's folder, with forward slashes
    executable: bool


def _git(root: Path, *args: str) -> bytes:
    try:
        r = subprocess.run(["git", "-C", str(root), *args], capture_output=True, timeout=120)
    except FileNotFoundError:
        raise GraderError("git is not installed: the release takes the course's files from git (`git ls-files`)") \
            from None
    if r.returncode != 0:
        said = r.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GraderError(f"{root} is not in a git repository ({said[-1] if said else 'git failed'}): the release "
                          "takes the files git tracks; run `git init` and commit the course first")
    return r.stdout


def tracked_files(root: Path) -> list[Tracked]:
    """The files git tracks under root, sorted, with their executable bit as committed."""
    out = []
    for entry in _git(root, "ls-files", "-s", "-z", "--", ".").split(b"\0"):
        if not entry:
            continue
        meta, _, name = entry.partition(b"\t")
        mode = meta.split(b" ")[0]
        if mode == b"160000":  # a submodule: not a file
            continue
        path = name.decode("utf-8", "surrogateescape")
        out.append(Tracked(path, mode == b"100755"))
    missing = [t.path for t in out if not (root / t.path).is_file()]
    if missing:
        raise GraderError(f"{len(missing)} tracked file(s) are missing from the working tree (first: {missing[0]}): "
                          "commit their removal (`git rm`) or restore them, then release again")
    return sorted(out, key=lambda t: t.path)


def uncommitted(root: Path) -> list[str]:
    """Tracked files whose working-tree text differs from the last commit (the release takes the working tree)."""
    out = _git(root, "status", "--porcelain", "-z", "--untracked-files=no", "--", ".")
    return sorted(e[3:].decode("utf-8", "surrogateescape") for e in out.split(b"\0") if len(e) > 3)


def matches(path: str, pattern: str) -> bool:
    """course.yaml's `instructor_only:` patterns: `folder/` is the folder and all under it; otherwise the whole
    relative path, where `*` and `?` stay within a folder, `**` crosses folders and `**/` is any folder or none."""
    if pattern.endswith("/"):
        return path.startswith(pattern)
    wild = {"**/": "(?:.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}
    rx = "".join(wild.get(part, re.escape(part)) for part in re.split(r"(\*\*/|\*\*|\*|\?)", pattern))
    return re.fullmatch(rx, path) is not None


def released_days(course: Course, today: date) -> list[str]:
    """The ready days whose release date has come (or that have none), in course order."""
    return [d.id for d in course.days if d.status == "ready" and (d.release is None or d.release <= today)]


def why_left_out(path: str, course: Course, released: list[str], hidden: set[str]) -> str | None:
    """Why a tracked file stays out of the student repository, or None if it goes in. hidden: where the overlay
    of hidden cases is or would be, relative to the course."""
    if path.startswith(SOLUTIONS):
        return "solutions"
    if path in hidden:
        return "hidden cases"
    for pat in course.instructor_only:
        if matches(path, pat):
            return f"instructor_only: {pat}"
    parts = path.split("/")
    if parts[0] == "days" and len(parts) > 2 and parts[1] not in released:
        day = next((d for d in course.days if d.id == parts[1]), None)
        if day is None:
            return "days/ of no day in course.yaml"
        if day.status != "ready":
            return "days not ready"
        return f"days released later ({day.id} on {day.release})"
    return None
