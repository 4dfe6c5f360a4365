"""What must never reach a student repository, and a scan for it.

Three kinds of text are the instructor's alone:

- **solution lines**: the lines inside `BEGIN SOLUTION` … `END SOLUTION` regions of the files in solutions/ (and
  inside nbgrader's `### BEGIN SOLUTION` / `### BEGIN HIDDEN TESTS` regions of a notebook's cells), and the
  instructor-only lines (`// INSTRUCTOR ONLY`, `BEGIN INSTRUCTOR ONLY` regions). A line counts when its code (the
  line without a trailing comment, whitespace collapsed) has at least MIN_CHARS characters, and the instructor
  does not give it away elsewhere: a line that also stands outside every region of a solution file is stub
  material (a later day's stub hands out an earlier day's reduction), and a line course.yaml's `allow_leak:` lists
  with its reason (`public`) is the instructor's own choice to show.
- **marker lines**: a whole-line marker comment (`// BEGIN SOLUTION`, `# END INSTRUCTOR ONLY`, a line ending
  with `// INSTRUCTOR ONLY`, nbgrader's `### BEGIN HIDDEN TESTS`) in any file: a stub the release should have
  cleared.
- **hidden cases**: the overlay file itself (grader/classroom/hidden.py), by name or by content.

`scan` looks for all three in a tree about to be released; `grader release --to` refuses to write a tree with a
finding, and the tests scan what it wrote. It compares exact lines, and is the release's last gate: a copy of a
hole with renamed variables or rewrapped lines is copies.py's to measure, and the release holds back the day (or
keeps out the shared file) that gives it until the hole's day is published (student_repo.held_back).
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

from grader.authoring.release import comment_prefix

MIN_CHARS = 16  # shorter code (`}`, `return err;`, `__syncthreads();`) is everywhere and says nothing

_WORDS = r"(?:SOLUTION|INSTRUCTOR ONLY|HIDDEN TESTS)"
MARKER_LINE = re.compile(rf"^\s*\"?\s*(?://+|#+)\s*(?:BEGIN|END)\s+{_WORDS}\b|(?://+|#+)\s*INSTRUCTOR ONLY\s*(?:\\n)?\"?,?$")
_REGION = re.compile(rf"^\s*(?://+|#+)\s*(BEGIN|END)\s+{_WORDS}\b")
_TAIL = re.compile(r"(?://+|#+)\s*INSTRUCTOR ONLY\s*$")
_TRAILING_COMMENT = {"//": re.compile(r"\s//.*$"), "#": re.compile(r"\s#.*$")}


@dataclass(frozen=True)
class Finding:
    path: str  # relative to the tree
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def code_of(line: str, prefix: str = "//") -> str:
    """A line's code for comparison: its trailing comment dropped, whitespace collapsed; a comment line stays
    whole (comments inside a solution region are solution text too)."""
    text = " ".join(line.split())
    if text.startswith(("//", "#", "/*", "*")):
        return text
    return _TRAILING_COMMENT[prefix].sub("", " " + text).strip()


def notebook_lines(text: str) -> list[str]:
    """The source lines of a notebook's cells (a notebook that is not JSON: its text's lines)."""
    try:
        nb = json.loads(text)
        cells = nb.get("cells", []) if isinstance(nb, dict) else []
    except ValueError:
        return text.splitlines()
    out = []
    for c in cells:
        src = c.get("source", "") if isinstance(c, dict) else ""
        out += ("".join(src) if isinstance(src, list) else str(src)).splitlines()
    return out


def lines_of(path: str | Path, text: str) -> list[str]:
    return notebook_lines(text) if str(path).endswith(".ipynb") else text.splitlines()


def split_regions(path: str | Path, text: str) -> tuple[list[str], list[str]]:
    """(lines inside solution, hidden-test and instructor-only regions or marked instructor-only, the other
    lines), markers themselves left out."""
    inside, outside, depth = [], [], 0
    for line in lines_of(path, text):
        m = _REGION.match(line)
        if m:
            depth = max(0, depth + (1 if m.group(1) == "BEGIN" else -1))
        elif depth or _TAIL.search(line):
            inside.append(_TAIL.sub("", line))
        else:
            outside.append(line)
    return inside, outside


def _codes(path: str | Path, lines: list[str]) -> set[str]:
    prefix = "#" if str(path).endswith(".ipynb") else comment_prefix(Path(path))
    return {c for c in (code_of(s, prefix) for s in lines) if len(c) >= MIN_CHARS}


def solution_lines(solution_files: dict[str, str], public: set[str] = frozenset()) -> dict[str, str]:
    """{code of a line: the solution file it comes from} for every secret line of these solution files (path ->
    text), less the lines given away outside the regions of any of them and those in `public`."""
    found, given = {}, set()
    for path, text in sorted(solution_files.items()):
        inside, outside = _region_codes(str(path), text)
        given |= outside
        for c in inside:
            found.setdefault(c, path)
    return {c: p for c, p in found.items() if c not in given and c not in public}


# A release reads the same solutions and scans the same files on every date of a semester (and its forecast once
# more): each text's lines are read once.
@functools.lru_cache(maxsize=4096)
def _region_codes(path: str, text: str) -> tuple[tuple[str, ...], frozenset[str]]:
    """(the codes inside the regions, sorted; those outside them) of one solution file."""
    inside, outside = split_regions(path, text)
    return tuple(sorted(_codes(path, inside))), frozenset(_codes(path, outside))


@functools.lru_cache(maxsize=4096)
def _scanned(path: str, text: str) -> tuple[tuple[tuple[int, str], ...], tuple[str, ...]]:
    """(the marker lines of a file, numbered, and code_of of each of its lines, or of each cell line of a notebook)."""
    prefix = "#" if path.endswith(".ipynb") else comment_prefix(Path(path))
    markers = tuple((n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if MARKER_LINE.search(line))
    return markers, tuple(code_of(line, prefix) for line in lines_of(path, text))


def scan(tree: dict[str, bytes], secrets: dict[str, str], hidden: tuple[str, bytes] | None = None) -> list[Finding]:
    """Every finding in a tree (relative path -> bytes): marker lines, secret lines, and the hidden-case overlay
    (hidden: its file name and content). Files that are not UTF-8 text are checked only for the overlay."""
    out = []
    for path, data in sorted(tree.items()):
        if hidden and (Path(path).name == hidden[0] or (hidden[1].strip() and data == hidden[1])):
            out.append(Finding(path, 0, f"the hidden cases ({hidden[0]}) are instructor-only"))
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        markers, codes = _scanned(path, text)
        for n, line in markers:
            out.append(Finding(path, n, f"a marker line the release should have removed: {line[:80]}"))
        for n, c in enumerate(codes, 1):
            if c in secrets:
                where = "cell line" if path.endswith(".ipynb") else "line"
                out.append(Finding(path, n, f"{where} from a solution region of {secrets[c]}: {c[:80]}"))
    return out
