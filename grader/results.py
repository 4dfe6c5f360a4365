"""The last result of each check, kept under .grader/results for `grader list` (and the leaderboard)."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from grader.paths import Paths


def write_json(path: Path, data) -> None:
    """Write-then-rename, so a reader (or a crash mid-write) never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(path)


def results_path(root: Path, day: str) -> Path:
    return Paths(root).results() / f"{day}.json"


def save(root: Path, day: str, variant: str, exercises: list[dict]) -> None:
    path = results_path(root, day)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        data = {}
    data[variant] = {"when": time.strftime("%Y-%m-%d %H:%M"), "exercises": exercises}
    write_json(path, data)


def last(root: Path, day: str, variant: str = "student") -> dict | None:
    try:
        return json.loads(results_path(root, day).read_text()).get(variant)
    except (OSError, ValueError):
        return None
