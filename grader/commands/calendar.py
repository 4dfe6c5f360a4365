"""`grader calendar`: the semester, day by day: its release and due dates and where each day stands today.

In the course repository the dates alone decide (a day is released once its date has come); with `--to DIR`, a
student repository that `grader release --to` wrote, what that release holds decides, and which solutions `grader
publish` added there. In a student repository (its course.yaml beside the release's manifest) the command reads its
own release. A row marks today among the dates.
"""
from __future__ import annotations

import json
from datetime import date
from pathlib import Path

from rich.table import Table

from grader import clock
from grader.authoring import semester
from grader.commands.shared import _load, _write_json, console
from grader.errors import GraderError

STYLE = {semester.PLANNED: "dim", semester.NOT_RELEASED: "dim", semester.RELEASED: "green", semester.DUE: "yellow",
         semester.PUBLISHED: "cyan"}


def target_manifest(to: str) -> tuple[Path, dict]:
    """--to DIR: the folder and its release manifest, or a GraderError saying what DIR is instead."""
    from grader.authoring.student_repo import MANIFEST, read_manifest  # the release's modules: only for --to

    dest = Path(to).expanduser()
    if not dest.exists():
        raise GraderError(f"--to: {dest} does not exist: give the folder `grader release --to` wrote")
    if not dest.is_dir():
        raise GraderError(f"--to: {dest} is a file, not a student repository (a folder `grader release --to` wrote)")
    doc = read_manifest(dest.resolve())
    if doc is None:
        raise GraderError(f"--to: {dest} is not a student repository written by `grader release --to` (it has no "
                          f"{MANIFEST}): release into it first, or leave --to out for the dates alone")
    return dest, doc


def today_row(states: list[semester.DayState], today: date) -> int:
    """Where the today marker goes: after the last day whose release date has come (a day without one has no place
    in time to mark)."""
    at = 0
    for i, s in enumerate(states):
        if s.day.release is not None and s.day.release <= today:
            at = i + 1
    return at


def _iso(d: date | None) -> str | None:
    return d.isoformat() if d else None


def cmd_calendar(args) -> int:
    root, _, course = _load(args)
    today = clock.today()
    if args.to:
        where, manifest = target_manifest(args.to)
    else:
        manifest = semester.manifest_of(root)
        where = root if manifest is not None else None
    states = semester.states(course, today, manifest)
    if args.json:
        doc = {"course": course.title, "today": today.isoformat(),
               "repository": str(where) if where is not None else None,
               "days": [{"day": s.day.id, "title": s.day.title, "mandatory": s.day.mandatory,
                         "release": _iso(s.day.release), "due": _iso(s.day.due), "status": s.status, "why": s.why,
                         "label": s.label} for s in states]}
        if args.json == "-":
            print(json.dumps(doc, indent=1))
        else:
            _write_json(args.json, doc)
        return 0
    if manifest is not None and manifest.get("course") not in (None, course.title):
        console.print(f"[yellow]note:[/] {where} is a release of {manifest['course']!r}, not of {course.title!r}")
    source = f"the release in {where}" if where is not None else "course.yaml's dates (no release: --to DIR adds one)"
    t = Table(title=f"{course.title}: the semester, from {source}", title_justify="left")
    for col in ("day", "title", "release", "due", "status"):
        t.add_column(col)
    mark = today_row(states, today)
    for i, s in enumerate(states):
        if i == mark:
            t.add_row("[bold]today[/]", "", f"[bold]{today.isoformat()}[/]", "", "")
        title = s.day.title + (" [bold](mandatory)[/]" if s.day.mandatory else "")
        t.add_row(s.day.id, title, _iso(s.day.release) or "-", _iso(s.day.due) or "-",
                  f"[{STYLE[s.status]}]{s.label}[/]")
    if mark == len(states):
        t.add_row("[bold]today[/]", "", f"[bold]{today.isoformat()}[/]", "", "")
    console.print(t)
    if not any(s.day.release or s.day.due for s in states):
        console.print("course.yaml gives no day a `release:` or `due:` date: every ready day goes out at once",
                      style="dim")
    return 0
