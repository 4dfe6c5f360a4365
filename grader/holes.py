"""Which definitions of a day's C++ an op reaches: its registration in the bindings names the functions it starts
from, and every definition reached from there through the names each definition's body uses (functions, kernels,
structs, constants, macros) counts. Read from the text, not compiled: over-approximate by design (a name reached is a
definition needed). scripts/hole_table.py counts each graded step's solution regions with it; `grader check` lists
first the placeholders of the exercise it checks."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_IDENT = re.compile(r"[A-Za-z_]\w*")
_QUALIFIED = re.compile(r"(?:[A-Za-z_]\w*\s*::\s*)*[A-Za-z_]\w*")  # ns::name kept whole: it picks the definition
CPP = (".cu", ".cuh", ".cpp", ".h", ".hpp")
_KEYWORDS = frozenset("""alignas alignof asm auto bool break case catch char class const constexpr const_cast continue
decltype default delete do double dynamic_cast else enum explicit extern false float for friend goto if inline int
long mutable namespace new noexcept nullptr operator private protected public register reinterpret_cast return short
signed sizeof static static_assert static_cast struct switch template this throw true try typedef typename union
unsigned using virtual void volatile while __global__ __device__ __host__ __forceinline__ __launch_bounds__
__shared__ __restrict__ __noinline__ define include ifdef ifndef endif pragma unroll if_constexpr""".split())


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


def registration(text: str, op: str) -> set[str]:
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


def resolve(use: str, user: Block | None, by_name: dict[str, list[Block]]) -> list[Block]:
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


def reach(roots: set[str], by_name: dict[str, list[Block]]) -> list[Block]:
    """Every definition reached from the root names through the names each body uses (_resolve)."""
    reached: dict[int, Block] = {}
    todo: list[tuple[str, Block | None]] = [(name, None) for name in roots]
    while todo:
        use, user = todo.pop()
        for b in resolve(use, user, by_name):
            if id(b) not in reached:
                reached[id(b)] = b
                todo += [(u, b) for u in b.uses]
    return list(reached.values())


# -- which placeholders of a stub an op needs ------------------------------------------------------------------------
def _label_names(label: str) -> set[str]:
    """The names a placeholder's label gives (`launch<T, D>(...)`, `row_max/row_sum`, `kWarpSize = 32`): an
    identifier that reads as code (an underscore, a capital inside it, or `(`, `<`, `=` after it), not prose."""
    names = set()
    for m in re.finditer(r"\b([A-Za-z_]\w*)(\s*[(<=])?", label):
        word, after = m.group(1), m.group(2)
        if len(word) > 1 and word not in _KEYWORDS and (after or "_" in word or re.search(r"[a-z][A-Z]", word)):
            names.add(word)
    return names


def _namespaces(text: str) -> list[tuple[str, ...]]:
    """The namespace each line is in (index 0: line 1), named namespaces only."""
    out, depth, stack = [], 0, []  # stack: (name, depth inside it)
    for raw in text.splitlines():
        s = _strip(raw)
        if m := re.match(r"\s*(?:inline\s+)?namespace\b\s*(\w*)[^;{]*\{", s):
            stack.append((m.group(1), depth + 1))
        out.append(tuple(n for n, _ in stack if n))
        depth += s.count("{") - s.count("}")
        while stack and depth < stack[-1][1]:
            stack.pop()
    return out


def placeholders_for(files: dict[str, str], op: str, placeholder: str, headers: dict[str, str] | None = None,
                     step: str | None = None) -> tuple[list[str], list[str], list[str]] | None:
    """("file:line" of each placeholder the op reaches, those of the others, those of the optional Hopper walk), in
    file order, for the C++ files given (name -> text); None where none of them registers the op (then every
    placeholder may be its). A placeholder in a
    definition belongs to it, and its label's names count as that definition's uses (`launch<T, 64> of
    online_kernel`); one outside any definition stands for the names its label gives. Over-approximate, as reach().
    headers: the include folders' files (name -> text), read for their definitions only. step: the exercise's step
    (`20b`): a placeholder labelled `(step 20a) ...` is that step's alone, whatever reaches it (the steps of one
    kernel differ by what a template switches on, which no reading of names tells apart)."""
    cpp = {n: t for n, t in files.items() if n.endswith(CPP)}
    roots = set().union(*(registration(t, op) for t in cpp.values())) if cpp else set()
    if not roots:
        return None
    by_name: dict[str, list[Block]] = {}
    spots: list[tuple[str, Block, str]] = []
    for name, text in (headers or {}).items():
        for b in blocks_of(name, text) if name.endswith(CPP) else []:
            for d in b.defines:
                by_name.setdefault(d, []).append(b)
    for name, text in cpp.items():
        blocks = blocks_of(name, text)
        ns = _namespaces(text)
        for n, line in enumerate(text.splitlines(), 1):
            if placeholder not in line:
                continue
            label = line.split(placeholder, 1)[1]
            inside = next((b for b in blocks if b.first <= n <= b.last), None)
            if inside is not None:
                inside.uses |= _label_names(label)
            else:
                inside = Block(name, n, n, defines=_label_names(label), ns=ns[n - 1])
                blocks.append(inside)
            spots.append((f"{name}:{n}", inside, label))
        for b in blocks:
            for d in b.defines:
                by_name.setdefault(d, []).append(b)
    reached = {id(b) for b in reach(roots, by_name)}
    mine, walks, in_walk = [], [], False
    for _, b, label in spots:
        text = label.lstrip(" :")
        tagged = re.match(r"\(step (\d+[a-z])\b", text)
        # the optional Hopper walk's holes (scripts/hole_table.py's rule) are no graded step's
        walk = bool(re.match(r"optional\b.{0,30}\bhopper\b", text, re.I)) or (
            in_walk and bool(re.match(r"\w*hopper\w*, continued", text, re.I)))
        in_walk = in_walk or walk
        walks.append(walk)
        mine.append(False if walk else tagged.group(1) == step if tagged and step else id(b) in reached)
    return ([s for (s, _, _), m in zip(spots, mine) if m], [s for (s, _, _), m in zip(spots, mine) if not m],
            [s for (s, _, _), w in zip(spots, walks) if w])
