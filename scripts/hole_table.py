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
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

STEP_LIMIT = 150
_BEGIN = re.compile(r"^\s*(?://|#)\s*BEGIN SOLUTION\b")
_END = re.compile(r"^\s*(?://|#)\s*END SOLUTION\b")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_QUALIFIED = re.compile(r"(?:[A-Za-z_]\w*\s*::\s*)*[A-Za-z_]\w*")  # ns::name kept whole: it picks the definition
_CPP = (".cu", ".cuh", ".cpp", ".h", ".hpp")
_KEYWORDS = frozenset("""alignas alignof asm auto bool break case catch char class const constexpr const_cast continue
decltype default delete do double dynamic_cast else enum explicit extern false float for friend goto if inline int
long mutable namespace new noexcept nullptr operator private protected public register reinterpret_cast return short
signed sizeof static static_assert static_cast struct switch template this throw true try typedef typename union
unsigned using virtual void volatile while __global__ __device__ __host__ __forceinline__ __launch_bounds__
__shared__ __restrict__ __noinline__ define include ifdef ifndef endif pragma unroll if_constexpr""".split())


def code_line(line: str) -> bool:
    """Not blank, not a comment, not a preprocessor line (nor a Python comment)."""
    s = line.strip()
    return bool(s) and not s.startswith(("//", "/*", "*", "#"))


def _strip(line: str) -> str:
    """A line without its strings and // comment (braces and names inside them are no code)."""
    line = re.sub(r'"(?:\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(?:\\.|[^'\\])*'", "''", line)
    return line.split("//", 1)[0]


@dataclass
class Block:
    """A top-level definition of a C++ file: its lines (1-based, inclusive), the names it defines and uses."""
    path: str
    first: int
    last: int
    defines: set[str] = field(default_factory=set)
    uses: set[str] = field(default_factory=set)
    ns: tuple[str, ...] = ()
    opened: tuple[tuple[str, ...], ...] = ()  # `using namespace X::Y;` inside it


def _uses(body: str) -> set[str]:
    """The names a body uses, `ns::name` where it qualifies them."""
    return {re.sub(r"\s+", "", t) for t in _QUALIFIED.findall(body)} - _KEYWORDS


def _defined(header: str) -> set[str]:
    """The names a definition's header introduces: a function's, a struct's, a constant's, a macro's."""
    h = re.sub(r"template\s*<[^{;]*?>\s*(?=[A-Za-z_])", " ", header)
    h = re.sub(r"__launch_bounds__\s*\([^)]*\)", " ", h)
    if m := re.match(r"\s*#\s*define\s+(\w+)", h):
        return {m.group(1)}
    if m := re.search(r"\b(?:struct|class|union|enum(?:\s+class)?)\s+(\w+)", h):
        return {m.group(1)}
    head = h.split("{", 1)[0]
    if m := re.search(r"(\w+)\s*\(", head):
        return {m.group(1)} - _KEYWORDS
    if m := re.search(r"(\w+)\s*(?:\[[^\]]*\])?\s*=", head):
        return {m.group(1)}
    return set()


def blocks_of(path: str, text: str) -> list[Block]:
    """The file's top-level definitions (namespaces are see-through; a declaration ending in `;` defines
    nothing here, its definition does)."""
    out: list[Block] = []
    depth, ns, names, cur, header = 0, [], [], None, ""
    opened: list[list[tuple[str, ...]]] = [[]]  # per namespace level, the `using namespace` directives in it
    lines = text.splitlines()
    alt: list[bool] = []  # per open #if: whether this line is in an #else/#elif branch (its braces repeat the first's)
    k = 0
    while k < len(lines):
        raw = lines[k]
        n = k + 1
        s = _strip(raw)
        if m := re.match(r"\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b", raw):
            if m.group(1).startswith("if"):
                alt.append(False)
            elif m.group(1) in ("elif", "else") and alt:
                alt[-1] = True
            elif m.group(1) == "endif" and alt:
                alt.pop()
            s = ""
        elif any(alt):
            s = re.sub(r"[{}]", " ", s)
        if depth == len(ns) and cur is None:
            if re.match(r"\s*#\s*define\b", raw):  # a macro, with its continuation lines
                first = n
                while lines[k].rstrip().endswith("\\") and k + 1 < len(lines):
                    k += 1
                body = "\n".join(_strip(x) for x in lines[first - 1:k + 1])
                b = Block(path, first, k + 1, _defined(body), ns=tuple(x for x in names if x))
                b.uses = _uses(body) - b.defines
                out.append(b)
                k += 1
                continue
            if not s.strip() or s.strip().startswith("#"):
                k += 1
                continue
            if m := re.match(r"\s*using\s+namespace\s+([\w:\s]+?)\s*;", s):
                opened[-1].append(tuple(re.sub(r"\s+", "", m.group(1)).split("::")))
                k += 1
                continue
            if m := re.match(r"\s*(?:inline\s+)?namespace\b\s*(\w*)[^;{]*\{\s*$", s):
                ns.append(depth)
                names.append(m.group(1))
                opened.append([])
                depth += 1
                k += 1
                continue
            if s.strip().startswith("}") and ns:  # a namespace closes
                ns.pop()
                names.pop()
                opened.pop()
                depth -= 1
                k += 1
                continue
            cur, header = Block(path, n, n, ns=tuple(x for x in names if x)), ""
        if cur is not None:
            header += s + "\n"
            depth += s.count("{") - s.count("}")
            if depth <= len(ns) and (("{" in header and "}" in header) or s.rstrip().endswith(";")):
                cur.last = n
                body = "\n".join(_strip(x) for x in lines[cur.first - 1:n])
                if "{" in header or "=" in header.split("(", 1)[0]:
                    cur.defines = _defined(header)
                cur.uses = _uses(body) - cur.defines
                cur.opened = tuple(q for level in opened for q in level) + tuple(
                    tuple(re.sub(r"\s+", "", q).split("::"))
                    for q in re.findall(r"using\s+namespace\s+([\w:\s]+?)\s*;", body))
                if cur.defines:
                    out.append(cur)
                cur, header, depth = None, "", len(ns)
        k += 1
    return out


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


def _registration(text: str, op: str) -> set[str]:
    """The names in the call of a bindings file that registers `op`: its arguments after the quoted name, to the
    call's closing parenthesis (a lambda's body included)."""
    i = text.find(f'"{op}"')
    if i < 0:
        return set()
    rest = "\n".join(_strip(x) for x in text[i + len(op) + 2:].splitlines())
    depth = 1
    for j, ch in enumerate(rest):
        depth += (ch == "(") - (ch == ")")
        if depth == 0:
            return _uses(rest[:j])
    return _uses(rest)


def _resolve(use: str, user: Block | None, by_name: dict[str, list[Block]]) -> list[Block]:
    """The definitions a use names: `ns::name`, those in a namespace ending so; a plain name, those in the user's
    own namespace or one it opens (`using namespace`), else in the nearest namespace around it; none elsewhere (each
    kernel's `launch` and `kernel` live in namespaces of their own; an anonymous namespace is its parent's). A root
    (user None) may be any of them."""
    *quals, name = use.split("::")
    found = by_name.get(name, [])
    quals = [q for q in quals if q]
    if quals:
        return [b for b in found if tuple(b.ns[-len(quals):]) == tuple(quals)] or found
    if user is None:
        return found
    opened = [b for b in found if any(q and b.ns[-len(q):] == q for q in user.opened)]
    if opened:
        return opened
    for k in range(len(user.ns), -1, -1):
        near = [b for b in found if b.ns == user.ns[:k]]
        if near:
            return near
    return []  # as C++ looks names up: not visible from here (a member, a parameter, another namespace's name)


def _reach(roots: set[str], by_name: dict[str, list[Block]]) -> list[Block]:
    """Every definition reached from the root names through the names each body uses (_resolve)."""
    reached: dict[int, Block] = {}
    todo: list[tuple[str, Block | None]] = [(name, None) for name in roots]
    while todo:
        use, user = todo.pop()
        for b in _resolve(use, user, by_name):
            if id(b) not in reached:
                reached[id(b)] = b
                todo += [(u, b) for u in b.uses]
    return list(reached.values())


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
            roots = set().union(*(_registration(files.get(s, ""), ex.op or ex.name) for s in cpp)) if cpp else set()
            needed: list[Hole] = []
            if roots:
                reached = _reach(roots, by_name)
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
