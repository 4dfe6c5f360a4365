"""How much code each graded step asks for: the code lines (not blank, not comment) inside the BEGIN/END SOLUTION
regions of solutions/ that each exercise needs, a region shared by several exercises counted once, under the first
(in course order) that needs it.

Which regions an exercise needs is read from the code, not declared: its op's registration in the day's bindings
names the functions it starts from, and the regions it needs are those inside (or around) every definition reached
from there through the names each definition's body uses (functions, kernels, structs, constants, macros, in every
source and header of the day). A Python exercise whose file holds no such registration needs every region of its
own sources. Over-approximate by design: a name reached is a definition needed.

    python3 scripts/hole_table.py                 # the table, every day
    python3 scripts/hole_table.py day11 --over 150

tests/test_hole_table.py holds every graded step to STEP_LIMIT code lines, except those course.yaml's
`long_step:` gives a reason for."""
from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.holes import CPP as _CPP, Block, blocks_of, reach, registration  # noqa: E402

STEP_LIMIT = 150
_BEGIN = re.compile(r"^\s*(?://|#)\s*BEGIN SOLUTION\b")
_END = re.compile(r"^\s*(?://|#)\s*END SOLUTION\b")
def code_line(line: str) -> bool:
    """Not blank, not a comment, not a preprocessor line (nor a Python comment)."""
    s = line.strip()
    return bool(s) and not s.startswith(("//", "/*", "*", "#"))


@dataclass
class Hole:
    path: str
    line: int  # its BEGIN marker
    end: int
    label: str
    code: int


def holes_of(path: str, text: str) -> list[Hole]:
    out, start, label, body = [], 0, "", []
    for n, line in enumerate(text.splitlines(), 1):
        if _BEGIN.match(line) and not start:
            start, label, body = n, line.split("BEGIN SOLUTION", 1)[1].lstrip(":").strip(), []
        elif _END.match(line) and start:
            out.append(Hole(path, start, n, label, sum(code_line(x) for x in body)))
            start = 0
        elif start:
            body.append(line)
    return out


@dataclass
class Step:
    day: str
    name: str
    points: float
    optional: bool
    holes: list[Hole]

    @property
    def code(self) -> int:
        return sum(h.code for h in self.holes)


def steps(course, only: set[str] | None = None) -> list[Step]:
    out = []
    for day in course.days:
        if only and day.id not in only:
            continue
        folder = ROOT / "solutions" / day.id
        if not folder.is_dir():
            continue
        files = {p.name: p.read_text(errors="replace") for p in sorted(folder.iterdir()) if p.is_file()}
        holes = {name: holes_of(name, t) for name, t in files.items()}
        # the definitions the day's code can reach: its own files, the shared include folders, earlier days' files
        others: dict[str, str] = {}
        for ex in day.exercises:
            for inc in ex.include_dirs:
                for hp in sorted((ROOT / inc).glob("*")):
                    if hp.suffix in _CPP:
                        others[f"{inc}/{hp.name}"] = hp.read_text(errors="replace")
            for u in ex.uses:
                up = ROOT / "solutions" / u
                if up.is_file():
                    others[u] = up.read_text(errors="replace")
        blocks = [b for name, t in {**files, **others}.items() if name.endswith(_CPP) for b in blocks_of(name, t)]
        by_name: dict[str, list[Block]] = {}
        for b in blocks:
            for d in b.defines:
                by_name.setdefault(d, []).append(b)
        taken: set[tuple[str, int]] = set()
        # Regions the solution labels itself: "(step 20b) ..." belongs to that step (the steps of one kernel differ
        # by what a template switches on, which no reading of names tells apart); "optional ... Hopper" and the
        # "hopper..., continued" regions after it are the optional Hopper walk, a row of their own.
        labelled: dict[int, list[Hole]] = {}
        walk: list[Hole] = []
        for hs in holes.values():
            in_walk = False
            for h in hs:
                if m := re.match(r"\(step (\d+)([a-z])\b", h.label):
                    if int(m.group(1)) == int(day.id[3:]) and ord(m.group(2)) - 97 < len(day.exercises):
                        labelled.setdefault(ord(m.group(2)) - 97, []).append(h)
                        taken.add((h.path, h.line))
                elif re.match(r"optional\b.{0,30}\bhopper\b", h.label, re.I) or (
                        in_walk and re.match(r"\w*hopper\w*, continued", h.label, re.I)):
                    walk.append(h)
                    taken.add((h.path, h.line))
                    in_walk = True
        for k, ex in enumerate(day.exercises):
            cpp = [s for s in ex.sources if s.endswith(_CPP)]
            roots = set().union(*(registration(files.get(s, ""), ex.op or ex.name) for s in cpp)) if cpp else set()
            needed: list[Hole] = []
            if roots:
                reached = reach(roots, by_name)
                for name in cpp:
                    for h in holes.get(name, []):
                        if any(b.path == name and not (h.end < b.first or h.line > b.last) for b in reached):
                            needed.append(h)
                # the exercise's own files that are not C++ (a Python route beside its kernel) need all their holes
                needed += [h for s in ex.sources if not s.endswith(_CPP) for h in holes.get(s, [])]
            else:
                needed = [h for s in ex.sources for h in holes.get(s, [])]
            mine = labelled.get(k, []) + [h for h in needed if (h.path, h.line) not in taken]
            taken |= {(h.path, h.line) for h in mine}
            out.append(Step(day.id, ex.name, ex.points, bool(ex.optional), mine))
        if walk:
            out.append(Step(day.id, "the Hopper walk", 0, True, walk))
    return out


def main() -> int:
    from grader.course import load_course

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("days", nargs="*")
    ap.add_argument("--over", type=int, default=0, help="only the steps over this many code lines")
    ap.add_argument("--holes", action="store_true", help="list each step's regions")
    a = ap.parse_args()
    course = load_course(ROOT / "course.yaml")
    print("| day | step | points | holes | code lines |\n|---|---|---|---|---|")
    for s in steps(course, set(a.days) or None):
        if s.code <= a.over:
            continue
        opt = " (optional)" if s.optional else ""
        print(f"| {s.day[3:]} | {s.name}{opt} | {s.points:g} | {len(s.holes)} | {s.code} |")
        if a.holes:
            for h in s.holes:
                print(f"|  |  {h.path}:{h.line} {h.label[:70]} |  |  | {h.code} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
