"""The last result of each check, kept under .grader/results for `grader list` (and the leaderboard).

One file per day: {variant: entry, ..., "ranked": {variant: entry}}. An entry is {"when", "ranked", "exercises"}
(and "seed_sha256" when ranked). Beside it, the error map of each exercise's first failing case that has one, as a
PNG: {day}.{variant}.{exercise}.png (map_path; the map itself is in the case's "error_map").
The last ranked run of each variant is also kept under "ranked", so that a later
ordinary check does not replace what a leaderboard accepts (`ranked_results`)."""
from __future__ import annotations

import json
import time
from pathlib import Path

from grader.paths import Paths, write_text_atomic


def write_json(path: Path, data) -> None:
    """Write-then-rename, so a reader (or a crash mid-write) never sees half a file."""
    write_text_atomic(path, json.dumps(data, indent=1))


def results_path(root: Path, day: str) -> Path:
    return Paths(root).results() / f"{day}.json"


RANKED = "ranked"  # the key of the last ranked entries (never a variant's name: student, solution, dir…)


def _read(root: Path, day: str) -> dict:
    try:
        data = json.loads(results_path(root, day).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save(root: Path, day: str, variant: str, exercises: list[dict], *, ranked: bool = False,
         seed_sha256: str | None = None) -> None:
    """Keep this check's results as the variant's last. ranked: a `grader check --ranked` run (secret inputs,
    two runs), seed_sha256 the hash of its secret; only such entries count for a leaderboard."""
    if ranked and not seed_sha256:
        raise ValueError("a ranked result needs the hash of its secret seed")
    data = _read(root, day)
    mark = {"ranked": True, "seed_sha256": seed_sha256} if ranked else {"ranked": False}
    entry = {"when": time.strftime("%Y-%m-%d %H:%M"), "ranked": bool(ranked),
             "exercises": [{**e, **mark} for e in exercises]}
    if ranked:
        entry["seed_sha256"] = seed_sha256
        kept = data.get(RANKED)
        data[RANKED] = {**(kept if isinstance(kept, dict) else {}), variant: entry}
    data[variant] = entry
    write_json(results_path(root, day), data)
    write_maps(root, day, variant, exercises)


def map_path(root: Path, day: str, variant: str, exercise: str) -> Path:
    return Paths(root).results() / f"{day}.{variant}.{exercise}.png"


def write_maps(root: Path, day: str, variant: str, exercises: list[dict]) -> list[Path]:
    """The PNG of each exercise's most telling map (error_map.choose), beside the day's result; an exercise with none loses
    the PNG of an earlier check (a map of code since fixed would mislead). Without matplotlib nothing is drawn."""
    from grader.check import error_map

    written = []
    for e in exercises:
        path = map_path(root, day, variant, str(e.get("exercise")))
        mapped = error_map.choose(e.get("cases") or [])
        if mapped is None:
            path.unlink(missing_ok=True)
            continue
        try:
            error_map.png(mapped["error_map"], path)
        except ImportError:
            return written
        written.append(path)
    return written


def last(root: Path, day: str, variant: str = "student") -> dict | None:
    """The variant's last result, ranked or not."""
    entry = _read(root, day).get(variant) if variant != RANKED else None
    return entry if isinstance(entry, dict) else None


def ranked_results(root: Path, day: str) -> dict[str, dict]:
    """variant -> its last ranked result, and nothing else: what a leaderboard may accept. Each entry and each of
    its exercises is marked ranked with the secret's hash (anything less, e.g. a hand-edited file, is left out)."""
    kept = _read(root, day).get(RANKED)
    if not isinstance(kept, dict):
        return {}
    out = {}
    for variant, entry in kept.items():
        if not (isinstance(entry, dict) and entry.get("ranked") is True and entry.get("seed_sha256")):
            continue
        exercises = entry.get("exercises")
        if isinstance(exercises, list) and exercises and all(
                isinstance(e, dict) and e.get("ranked") is True and e.get("seed_sha256") == entry["seed_sha256"]
                for e in exercises):
            out[variant] = entry
    return out
