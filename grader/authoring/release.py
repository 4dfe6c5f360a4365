"""Student stubs from the instructor's solutions (the nbgrader convention, for source files).

Each source file in solutions/dayNN/ goes through three steps, in this order, to become its stub in days/dayNN/:

1. plant bugs (`plant_bugs`): the find/replace edits of the day's exercises' `stub: {plant: [...]}` in
   course.yaml, applied to the raw solution: the student gets a kernel with a bug to fix. Each `find` must occur
   exactly once in the file at the time it is applied, else the release fails naming the file, the exercise and
   the edit (a typo never releases the clean solution). Exercises sharing a file all have their edits applied
   (an edit listed identically by several exercises, once).
2. clear solutions (`clear_solutions`): a region from a `// BEGIN SOLUTION` marker line to a `// END SOLUTION`
   marker line (both included) becomes one placeholder line, `// YOUR CODE HERE`, with the BEGIN line's
   indentation; text after `BEGIN SOLUTION` on its line is the hole's label (`// BEGIN SOLUTION: the row maximum`
   gives `// YOUR CODE HERE: the row maximum`).
3. strip instructor-only lines (`strip_instructor_only`): a line ending with the comment `// INSTRUCTOR ONLY` is
   dropped, and so is every line from `// BEGIN INSTRUCTOR ONLY` to `// END INSTRUCTOR ONLY` (tuning knobs the
   student does not need to see).

A marker is a whole comment in the file's own comment syntax (`//`, or `#` in Python); a line that merely
mentions the words inside code or a string is not one. A comment that looks like a marker but is written
otherwise (`/* BEGIN SOLUTION */` in a .cu, `// BEGIN SOLUTION` in a .py, `// INSTRUCTOR ONLY: why`) is an
error rather than silently kept, and so are unbalanced markers and a planted edit that lands in lines steps 2
or 3 remove. Errors name file:line in the solution file. A file with none of these is released unchanged.

A day's `notebooks:` are released by nbgrader itself (grader/authoring/notebooks.py), not by these rules.
`days/` is generated, never edited by hand: CI checks it matches.
"""
from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path

from grader.authoring.notebooks import release_notebook
from grader.course import Course, Day, Edit
from grader.check.build import HEADER_SUFFIXES
from grader.errors import GraderError
from grader.paths import PLACEHOLDER  # noqa: F401  (the stub marker, defined once; named here too)

BEGIN, END = "BEGIN SOLUTION", "END SOLUTION"
INSTRUCTOR_ONLY = "INSTRUCTOR ONLY"
_COMMENT = {".cu": "//", ".cuh": "//", ".cpp": "//", ".h": "//", ".hpp": "//", ".py": "#", ".mojo": "#"}
# A comment in any of the syntaxes an instructor might reach for, opening with a marker's words: checked against
# the file's own syntax, so that a marker the release would not see is an error instead of a leaked solution.
_OPENER = r"(?://|/\*|#|--|<!--)[/*#!-]*\s*"
_SOLUTION_LIKE = re.compile(rf"^\s*{_OPENER}(?:BEGIN|END) SOLUTION\b")
_INSTRUCTOR_LIKE = re.compile(rf"{_OPENER}(?:(?:BEGIN|END)\s+)?{INSTRUCTOR_ONLY}\b")

# A line of a file on its way to a stub: (its number in the solution file, its text with its line ending, the
# planted edits it carries, by index). Numbers survive the steps so every error points into the solution file.
Line = tuple[int, str, frozenset]


def comment_prefix(path: Path) -> str:
    return _COMMENT.get(Path(path).suffix, "//")


def _prefix_re(path: Path) -> str:
    p = comment_prefix(path)
    return re.escape(p) + re.escape(p[-1]) + "*"  # `///` and `###` are comments too


def _marker_re(path: Path, words: str) -> re.Pattern:
    """`<prefix> BEGIN <words>[ label]` or `<prefix> END <words>[ anything]` as a whole line; group 1 BEGIN/END,
    group 2 the rest."""
    return re.compile(rf"^\s*{_prefix_re(path)}\s*(BEGIN|END) {words}\b(.*?)\s*$")


def _split(text: str) -> list[str]:
    """Lines with their endings; only \\n ends a line (not a form feed), so numbers match an editor's."""
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


def _numbered(text: str) -> list[Line]:
    return [(n, s, frozenset()) for n, s in enumerate(_split(text), 1)]


def _text(lines: list[Line]) -> str:
    return "".join(s for _, s, _ in lines)


def _eol(s: str) -> str:
    return s[len(s.rstrip("\r\n")):] or "\n"


# -- 1. plant bugs ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Plant:
    """One planted edit and who asked for it (`day05.softmax stub.plant[0]`), for messages."""
    where: str
    edit: Edit


def plants_for(day: Day, name: str) -> list[Plant]:
    """The edits the exercises of `day` plant in its file `name`, in course.yaml's order; an edit that several
    exercises list identically (a bug in code they share) is applied once."""
    found: dict[tuple[str, str], list[str]] = {}
    for ex in day.exercises:
        for i, e in enumerate(ex.stub.plant):
            if e.file == name:
                found.setdefault((e.find, e.replace), []).append(f"{day.id}.{ex.name} stub.plant[{i}]")
    return [Plant(" and ".join(w), Edit(file=name, find=f, replace=r)) for (f, r), w in found.items()]


def _occurrences(text: str, find: str) -> list[int]:
    hits, at = [], text.find(find)
    while at >= 0:
        hits.append(at)
        at = text.find(find, at + 1)  # overlapping ones too: "aa" is twice in "aaa"
    return hits


def _plant(lines: list[Line], path: Path, plants: Sequence[Plant]) -> tuple[list[Line], set[int]]:
    """The lines with the edits applied, each new line tagged with its edit, and the edits that no later step
    can remove (lines deleted at the start or end of the file, which no region encloses)."""
    safe = set()
    for k, p in enumerate(plants):
        text, find = _text(lines), p.edit.find
        hits = _occurrences(text, find)
        if len(hits) != 1:
            after = " after the edits listed before it" if k else ""
            found = "does not occur" if not hits else f"occurs {len(hits)} times"
            raise GraderError(f"{path}: {p.where} (find {find!r}) {found} in the file{after}; a planted edit's "
                              "`find` must match exactly one place")
        starts = [0, *accumulate(len(s) for _, s, _ in lines)]
        i = bisect_right(starts, hits[0]) - 1  # the lines the match touches, i..j
        j = bisect_right(starts, hits[0] + len(find) - 1) - 1
        new = text[starts[i]:hits[0]] + p.edit.replace + text[hits[0] + len(find):starts[j + 1]]
        while new and not new.endswith("\n") and j + 1 < len(lines):  # the edit joined lines: take the next in
            j += 1
            new += lines[j][1]
        tags = frozenset({k}).union(*(t for _, _, t in lines[i:j + 1]))
        repl = [(lines[i][0], s, tags) for s in _split(new)]
        if not repl:  # whole lines deleted: the bug shows between their neighbours, unless both are removed
            if i == 0 or j + 1 == len(lines):
                safe.add(k)
            lines = [(n, s, t | {k}) if m in (i - 1, j + 1) else (n, s, t) for m, (n, s, t) in enumerate(lines)]
        lines = lines[:i] + repl + lines[j + 1:]
    return lines, safe


def plant_bugs(text: str, path: Path, plants: Sequence[Plant]) -> str:
    """Step 1: the solution with the planted edits applied, in order."""
    return _text(_plant(_numbered(text), path, plants)[0])


# -- 2. clear solutions -------------------------------------------------------------------------------------
def _clear(lines: list[Line], path: Path) -> list[Line]:
    marker, prefix = _marker_re(path, "SOLUTION"), comment_prefix(path)
    out, open_at, placeholder = [], None, ""
    for line in lines:
        n, s, _ = line
        m = marker.match(s)
        if m is None and _SOLUTION_LIKE.match(s):
            raise GraderError(f"{path}:{n}: this looks like a solution marker, but a {Path(path).suffix} file's "
                              f"markers are whole `{prefix} {BEGIN}` / `{prefix} {END}` lines")
        if m and m.group(1) == "BEGIN":
            if open_at is not None:
                raise GraderError(f"{path}:{n}: `{BEGIN}` inside the region opened at line {open_at}")
            label = m.group(2).lstrip(" \t:-\u2013\u2014")
            indent = s[:len(s) - len(s.lstrip())]
            open_at, placeholder = n, f"{indent}{prefix} {PLACEHOLDER}{': ' + label if label else ''}{_eol(s)}"
        elif m:
            if open_at is None:
                raise GraderError(f"{path}:{n}: `{END}` without a matching `{BEGIN}`")
            out.append((open_at, placeholder, frozenset()))
            open_at = None
        elif open_at is None:
            out.append(line)
    if open_at is not None:
        raise GraderError(f"{path}:{open_at}: `{BEGIN}` is never closed by `{END}`")
    return out


def clear_solutions(text: str, path: Path) -> str:
    """Step 2: each marked region becomes one placeholder line (with the BEGIN line's label, if any)."""
    return _text(_clear(_numbered(text), path))


strip_solutions = clear_solutions  # the name this step had before the pipeline


# -- 3. strip instructor-only lines ---------------------------------------------------------------------------
def _strip(lines: list[Line], path: Path) -> list[Line]:
    region, prefix = _marker_re(path, INSTRUCTOR_ONLY), comment_prefix(path)
    tail = re.compile(rf"{_prefix_re(path)}\s*{INSTRUCTOR_ONLY}\s*$")
    begin, end = f"BEGIN {INSTRUCTOR_ONLY}", f"END {INSTRUCTOR_ONLY}"
    out, open_at = [], None
    for line in lines:
        n, s, _ = line
        m, dropped = region.match(s), tail.search(s)
        if m is None and dropped is None and _INSTRUCTOR_LIKE.search(s):
            raise GraderError(f"{path}:{n}: this looks like an instructor-only marker, but a {Path(path).suffix} "
                              f"file's are a line ending with `{prefix} {INSTRUCTOR_ONLY}` or whole `{prefix} {begin}`"
                              f" / `{prefix} {end}` lines")
        if m and m.group(1) == "BEGIN":
            if open_at is not None:
                raise GraderError(f"{path}:{n}: `{begin}` inside the region opened at line {open_at}")
            open_at = n
        elif m:
            if open_at is None:
                raise GraderError(f"{path}:{n}: `{end}` without a matching `{begin}` (or its `{begin}` is inside "
                                  "a solution region)")
            open_at = None
        elif open_at is None and dropped is None:
            out.append(line)
    if open_at is not None:
        raise GraderError(f"{path}:{open_at}: `{begin}` is never closed by `{end}`")
    return out


def strip_instructor_only(text: str, path: Path) -> str:
    """Step 3: drops the lines marked instructor-only and the instructor-only regions."""
    return _text(_strip(_numbered(text), path))


# -- the pipeline ---------------------------------------------------------------------------------------------
def make_stub(text: str, path: Path, plants: Sequence[Plant] = ()) -> str:
    """The student's version of one solution file: plant, clear, strip. A planted edit that the later steps
    remove entirely is an error: the stub would not carry the bug its exercise is meant to fail with."""
    lines, kept = _plant(_numbered(text), path, plants)
    lines = _strip(_clear(lines, path), path)
    kept = kept.union(*(t for _, _, t in lines))
    for k, p in enumerate(plants):
        if k not in kept:
            raise GraderError(f"{path}: {p.where} (find {p.edit.find!r}) lies in a solution or instructor-only "
                              "region, which the release removes: the stub would not carry the bug")
    return _text(lines)


def published_solution(text: str, path: Path) -> str:
    """The solution as `grader publish` hands it out after the due date: the solution markers dropped and the code
    between them kept, instructor-only lines stripped. Unbalanced or misspelt markers are the release's errors."""
    _clear(_numbered(text), path)
    marker = _marker_re(path, "SOLUTION")
    return _text(_strip([ln for ln in _numbered(text) if not marker.match(ln[1])], path))


def has_markers_syntax(path: Path) -> bool:
    """Whether the release knows the file's comment syntax (a source file it clears and strips)."""
    return Path(path).suffix in _COMMENT


def read_source(path: Path, shown: Path | str | None = None) -> str:
    """A solution file's text; a GraderError (not a traceback) if it is not UTF-8."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise GraderError(f"{shown or path}:{line}: not valid UTF-8 (byte 0x{data[e.start]:02x} at offset "
                          f"{e.start}): save the file as UTF-8") from None


def has_placeholder(text: str) -> bool:
    return PLACEHOLDER in text


def planted(course: Course, day_id: str) -> list[tuple[str, str]]:
    """(exercise name, fails_as) for each exercise of the day whose released stub carries planted bugs: the
    category its stub must fail with."""
    return [(ex.name, ex.stub.fails_as) for ex in course.day(day_id).exercises if ex.stub.plant]


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
                shown = src.relative_to(root)
                if not src.is_file():
                    raise GraderError(f"{shown} is missing: course.yaml lists it as a source of {day.id}.{ex.name}")
                stub = make_stub(read_source(src, shown), shown, plants_for(day, name))
                plan.append(Planned(src, root / "days" / day.id / name, stub))
        # Headers beside the sources are part of every build of them (build.py copies them along): release them too.
        for src in sorted(p for p in (root / "solutions" / day.id).glob("*") if p.suffix in HEADER_SUFFIXES):
            if src.name not in seen:
                seen.add(src.name)
                shown = src.relative_to(root)
                stub = make_stub(read_source(src, shown), shown, plants_for(day, src.name))
                plan.append(Planned(src, root / "days" / day.id / src.name, stub))
        for name in day.notebooks:
            src = root / "solutions" / day.id / name
            if not src.is_file():
                raise GraderError(f"{src.relative_to(root)} is missing: course.yaml lists it as a notebook of {day.id}")
            plan.append(Planned(src, root / "days" / day.id / name, release_notebook(src)))
    return plan


def stale(plan: list[Planned]) -> list[Path]:
    # bytes, so that a target that is not UTF-8 (a student's editor) is simply out of date
    return [p.target for p in plan if not p.target.is_file() or p.target.read_bytes() != p.text.encode("utf-8")]


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
        p.target.write_bytes(p.text.encode("utf-8"))
    return changed, saved
