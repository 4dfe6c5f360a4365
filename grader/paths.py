"""Where things live in a course repository, defined once: the student's and the instructor's folders and the
grader's own state under `.grader/` (builds, logs, results, caches, backups, profiles, the site).

$GRADER_STATE moves that state out of the course: it names a folder that holds one folder per course root (keyed
by the root's path, so two courses never share state). The test suite sets it to a temporary folder, so running
the tests never touches a student's own `.grader/`."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

STATE_ENV = "GRADER_STATE"
# The instructor's hidden cases (grader/classroom/hidden.py): this variable's file, else this file beside
# course.yaml. Here, so that the command line names them without loading the module that reads them.
HIDDEN_ENV, HIDDEN_FILE = "GRADER_HIDDEN", "hidden.yaml"
# What a released stub holds where the student's code goes (grader/authoring/release.py writes it; a check finds it
# left in place). Here, so that a student's check names it without loading the release.
PLACEHOLDER = "YOUR CODE HERE"


def write_text_atomic(path: Path, text: str) -> None:
    """Write-then-rename (its folder made if missing): a concurrent reader, or one after a crash mid-write, sees the
    whole file or none of it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


class Paths:
    def __init__(self, root: Path, state_base: Path | None = None):
        """state_base: the folder $GRADER_STATE would name (a sandboxed worker's, seen from outside it)."""
        self.root = Path(root)
        self.state_base = state_base

    # the course's own folders
    def days(self) -> Path:
        return self.root / "days"

    def day(self, day_id: str) -> Path:
        """The student's folder: stubs released from the solutions, filled in by the student."""
        return self.days() / day_id

    def solutions(self) -> Path:
        return self.root / "solutions"

    def solution(self, day_id: str) -> Path:
        return self.solutions() / day_id

    # the grader's state (ignored by git)
    @property
    def state(self) -> Path:
        base = self.state_base or os.environ.get(STATE_ENV)
        if not base:
            return self.root / ".grader"
        root = self.root.resolve()
        return Path(base) / f"{root.name or 'root'}-{hashlib.sha1(str(root).encode()).hexdigest()[:10]}"

    def builds(self) -> Path:
        return self.state / "build"

    def logs(self) -> Path:
        return self.state / "logs"

    def results(self) -> Path:
        return self.state / "results"

    def cache(self) -> Path:
        return self.state / "cache"

    def backups(self) -> Path:
        return self.state / "backup"

    def profiles(self) -> Path:
        return self.state / "profile"

    def site(self) -> Path:
        return self.state / "site"

    def leaderboard(self) -> Path:
        """Where `grader site build` looks for a leaderboard (`grader leaderboard build --out` it)."""
        return self.state / "leaderboard"

    def variant(self, src_dir: Path) -> str:
        """Whose code a folder holds, for results and logs: student or solution for the course's own folders,
        else a short hash of the folder (--dir)."""
        src_dir = Path(src_dir).resolve()
        for name, base in (("student", self.days()), ("solution", self.solutions())):
            if src_dir.parent == base.resolve():
                return name
        return "dir" + hashlib.sha1(str(src_dir).encode()).hexdigest()[:10]


def relative_path(path: Path, root: Path) -> str:
    """path relative to the course root where it is inside it (for messages), else as given."""
    try:
        return str(Path(path).resolve().relative_to(Path(root).resolve()))
    except ValueError:
        return str(path)
