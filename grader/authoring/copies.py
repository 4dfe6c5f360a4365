"""Whether given code answers a hole: the same code as a solution region, whatever its layout, comments or names.

An exact-line comparison (leaks.py) misses a copy whose loop variable was renamed, whose statement was wrapped
over two lines or whose loop lost its braces. Here both sides are normalised first:

1. **tokens**: comments dropped (and a Python docstring, a comment in all but name), whitespace and line breaks
   ignored; numbers, strings and punctuation kept as they are.
2. **code lines**: the tokens cut into statements. C++/CUDA: after a `;` outside parentheses, after the `)` that
   closes a `for`/`if`/`while`/`switch` header, at a block's braces (dropped, so `for (...) x;` and
   `for (...) { x; }` are the same code) and at the end of a preprocessor line. Python: at the end of a logical
   line. Dropped as saying nothing: code lines of fewer than MIN_TOKENS tokens (`return;`, `else`) and
   `#pragma` lines (hints to the compiler: a copy without its `#pragma unroll` is the same copy).
3. **names**: an identifier is renamable unless it is a keyword, a type, a CUDA builtin or intrinsic, or a name of
   the math, runtime or torch API (KNOWN, `__*`, `cuda*`): `__shfl_xor_sync(..., m, offset)` stays itself.
4. **windows**: every K consecutive code lines, and every K of K + 1 consecutive ones that keep the first and the
   last (a line inserted, deleted or edited on either side is a line skipped), with the renamable identifiers
   renamed by order of first appearance within the window: `i` and `j` both become the window's first name,
   so renaming a variable hides nothing. A hole shorter than K code lines is one window, all of it.

A hole's windows are indexed by hash (`Index`); a file's windows are looked up in it, and each window found marks
its lines of the hole as covered. **The measure** of "file G answers hole H" is the number of H's code lines so
covered, loop and branch headers not counted (`for (int i = 0; i < n; ++i)` is in every kernel), and its
fraction of H's code lines (headers not counted either).

**The threshold** (`answers`): the whole hole, however short (at least 2 code lines); or at least MIN_COVERED code
lines and at least MIN_FRACTION of the hole; or MANY_COVERED code lines, whatever the fraction. Measured on the
course at 355f89f, every released file against every hole of an earlier day or, for a shared file, of any day:

- copies: day 03's `online_merge` and `warp_reduce_online` in days 04 and 05 (4 of 4, 3 of 3); day 04's
  `block_reduce_online` in day 05 (8 of 12, with its second half reworded); day 10's FlashAttention-2 loop in day
  19's `attend_tile` (49 of 73); day 02's warp reductions in day 14's softmax_rows.cuh and day 12's `swz` in
  common/swizzle.cuh (whole); day 12's `load_tile` in day 20 (5 of 9); day 01's bindings in day 05's (4 of 6);
  day 03's warp-per-row kernel in day 14's oob.cu (5 of 10: its set-up; its passes are rewritten).
- not copies: the bindings boilerplate every op shares (rows, cols, the stream: 3 of 6 of day 01's, in
  common/softmax_binding.h and day 02), the same set-up without the first pass (day 14's spill.cu: 5 of 12 of
  day 02's kernel, 42 %), loops that tile the same way (3 of 9 of day 12's `load_rows` in day 20), and partial
  copies short of the threshold (14 of the 48 code lines of day 10's helpers in day 19, held back by its loop).

So MIN_FRACTION = 0.5 takes the copies and leaves what shares a set-up or boilerplate; MIN_COVERED = 4 keeps
three lines of boilerplate from answering a six-line hole (the nearest miss: day 17's dropout kernel stores dK
and dV as day 16's hole does, 3 of 4); MANY_COVERED = 24 catches a long copy of part of a very large hole, above
the most any file shares with a hole it does not answer (15 code lines: day 20's stub with its own optional step
20d). K = 3: two lines are a generic pair (a load, then a loop), four would let a one-line edit hide a copy of a
five-line hole.
"""
from __future__ import annotations

import builtins
import functools
import keyword
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from grader.authoring.leaks import lines_of, notebook_lines

K = 3
MIN_TOKENS = 3
MIN_COVERED = 4
MIN_FRACTION = 0.5
MANY_COVERED = 24

C_SUFFIXES = {".cu", ".cuh", ".cpp", ".cc", ".c", ".h", ".hpp", ".hxx", ".cxx"}
PY_SUFFIXES = {".py", ".mojo", ".ipynb"}
MARKDOWN_SUFFIXES = {".md"}

_CPP_WORDS = """
alignas alignof asm auto bool break case catch char char16_t char32_t class const constexpr const_cast continue
decltype default delete do double dynamic_cast else enum explicit extern false float for friend goto if inline int
long mutable namespace new noexcept nullptr operator private protected public register reinterpret_cast return short
signed sizeof static static_assert static_cast struct switch template this thread_local throw true try typedef typeid
typename union unsigned using virtual void volatile while size_t ptrdiff_t uintptr_t std
threadIdx blockIdx blockDim gridDim warpSize dim3 half half2 float2 float3 float4 int2 int3 int4 uint2 uint3 uint4
char2 char4 short2 short4 double2 nv_bfloat16 nv_bfloat162 nvcuda wmma mma cub cooperative_groups
expf exp exp2 exp2f expm1f log logf log2 log2f log1pf sqrt sqrtf rsqrtf fabs fabsf abs fmax fmaxf fmin fminf max min
fma fmaf ceil ceilf floor floorf round roundf powf pow tanh tanhf erff isinf isnan isfinite INFINITY NAN FLT_MAX
memcpy memset printf assert atomicAdd atomicMax atomicCAS atomicExch make_float2 make_float4 make_int2 make_int4
at torch c10 TORCH_CHECK TORCH_LIBRARY TORCH_LIBRARY_IMPL Tensor kCUDA kFloat kHalf kBFloat16 pybind11 PYBIND11_MODULE
numel data_ptr is_contiguous scalar_type empty_like zeros_like contiguous
"""
_PY_WORDS = """
torch triton tl numba cuda cupy np numpy jit kernel program_id arange load store where maximum exp sum max
constexpr register_fake register_autograd library custom_op self cls
"""
KNOWN = {"c": frozenset(_CPP_WORDS.split()),
         "py": frozenset(_PY_WORDS.split()) | frozenset(keyword.kwlist)
         | frozenset(n for n in dir(builtins) if not n.startswith("_"))}
_LITERAL_NAME = re.compile(r"__\w+|cuda[A-Z_]\w*|cu[A-Z]\w*|u?int\d+_t|CU_\w+|CUDA_\w+")
_HEADERS = {"for", "if", "while", "switch"}  # C++ statements whose header ends a code line
_HEADER_WORDS = _HEADERS | {"elif", "with"}
_INIT_BEFORE = {"=", ",", "(", "[", "{", "return"}  # a `{` after these opens an initialiser, not a block

# One match per token, the whitespace before it skipped: group 1 text to skip (a comment, an escaped line end),
# group 2 a line end, group 3 a token (a string, a number, a name, one character of punctuation).
_C_TOKEN = re.compile(r"""[ \t\r\f\v]*(?:
    (/\*[\s\S]*?(?:\*/|\Z)|//[^\n]*|\\\n)
  | (\n)
  | ("(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])+'|\.?\d(?:[eEpP][+-]|[\w.])*|[A-Za-z_]\w*|[^\s\w]))""", re.X)
_PY_TOKEN = re.compile(r"""[ \t\r\f\v]*(?:
    (\#[^\n]*|\\\n)
  | (\n)
  | ([rRbBuUfF]{0,2}(?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')
     |\.?\d(?:[eE][+-]|[\w.])*|[A-Za-z_]\w*|[^\s\w]))""", re.X)
_FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)[^\n]*\n([\s\S]*?)^\1\2\s*$", re.M)
_BEGIN = re.compile(r"^\s*(?://+|#+)\s*BEGIN\s+SOLUTION\b:?\s*(.*?)\s*$")
_END = re.compile(r"^\s*(?://+|#+)\s*END\s+SOLUTION\b")


@dataclass(frozen=True)
class Line:
    """One normalised code line: its tokens, and the physical line (1-based) it starts on."""
    tokens: tuple[str, ...]
    at: int

    @property
    def header(self) -> bool:
        """A loop or branch header (`for (int i = 0; i < n; ++i)`, `if x:`): context for a window, but no code of
        its own to count, the same in every kernel."""
        return self.tokens[0] in _HEADER_WORDS and self.tokens[-1] in (")", ":")


def _name(tok: str, known: frozenset) -> str:
    """An identifier that a copy may rename, marked (a leading NUL) for the windows to rename; anything else as
    it is."""
    if (tok[0].isalpha() or tok[0] == "_") and tok not in known and _LITERAL_NAME.fullmatch(tok) is None:
        return "\0" + tok
    return tok




_SEEN: dict[str, dict[str, str]] = {"c": {}, "py": {}}  # each language's tokens, as _name gives them


def _namer(lang: str):
    """_name for one language, remembered per token (the course names the same identifiers over and over)."""
    seen, known = _SEEN[lang], KNOWN[lang]

    def name(tok: str) -> str:
        out = seen.get(tok)
        if out is None:
            out = seen[tok] = _name(tok, known)
        return out
    return name


def _c_lines(text: str, first: int = 1) -> list[Line]:
    """C++/CUDA code lines: cut after a `;` outside parentheses, after the `)` that closes a `for`/`if`/`while`/
    `switch` header, after `else` and `do`, at a block's `{` and `}` (braces dropped: `for (...) x;` and
    `for (...) { x; }` are the same code), and at the end of a preprocessor line. Braces of an initialiser
    (`= {1, 2}`) or inside parentheses (a lambda) stay tokens of their line."""
    out: list[Line] = []
    cur: list[str] = []
    at = n = first
    depth, inits, directive, bol, header = 0, 0, False, True, False
    prev = ""
    name = _namer("c")
    for skip, nl, tok in _C_TOKEN.findall(text):
        if skip:
            n += skip.count("\n")
            continue
        if nl:
            n += 1
            if directive:
                if cur:
                    out.append(Line(tuple(cur), at))
                cur, header, directive = [], False, False
            bol = True
            continue
        if bol and tok == "#":
            if cur:
                out.append(Line(tuple(cur), at))
            cur, header, directive = [], False, True
        bol = False
        if not cur:
            at = n
        if directive:  # `#`, the directive's name as it is, then its code
            cur.append(tok if len(cur) < 2 else name(tok))
            continue
        if tok in "{}" and depth == 0 and inits == 0:
            if tok == "{" and prev in _INIT_BEFORE:
                inits += 1
                cur.append(tok)
            elif cur:
                out.append(Line(tuple(cur), at))
                cur, header = [], False
            prev = tok
            continue
        prev = tok
        if tok in "([":
            depth += 1
        elif tok in ")]":
            depth = depth - 1 if depth else 0
        elif inits and tok in "{}":
            inits += 1 if tok == "{" else -1
        elif not cur and tok in _HEADERS:
            header = True
        cur.append(name(tok))
        if depth == 0 and inits == 0 and (tok == ";" or (header and tok == ")")
                                          or (len(cur) == 1 and tok in ("else", "do"))):
            out.append(Line(tuple(cur), at))
            cur, header = [], False
    if cur:
        out.append(Line(tuple(cur), at))
    return out


def _py_lines(text: str, first: int = 1) -> list[Line]:
    """Python code lines: logical lines (a bracket open carries a line on), and statements apart on one line."""
    out, cur, at, depth, n = [], [], first, 0, first
    name = _namer("py")
    for skip, nl, tok in _PY_TOKEN.findall(text):
        if skip:
            n += skip.count("\n")
            continue
        if nl:
            n += 1
            if depth == 0 and cur:
                out.append(Line(tuple(cur), at))
                cur = []
            continue
        if not cur:
            at = n
        if len(tok) > 2:
            n += tok.count("\n")  # a triple-quoted string over several lines
        if tok in "([{":
            depth += 1
        elif tok in ")]}":
            depth = depth - 1 if depth else 0
        elif tok == ";" and depth == 0:
            out.append(Line(tuple(cur), at))
            cur = []
            continue
        cur.append(name(tok))
    if cur:
        out.append(Line(tuple(cur), at))
    # a line that is one string is a docstring: a comment in all but name
    return [ln for ln in out if not (len(ln.tokens) == 1 and ln.tokens[0][-1:] in "\"'")]


def _significant(lines: list[Line]) -> list[Line]:
    """Less the lines too short to say anything and `#pragma` lines (hints to the compiler, not code: a copy
    without its `#pragma unroll` is the same copy)."""
    return [ln for ln in lines if len(ln.tokens) >= MIN_TOKENS and ln.tokens[:2] != ("#", "pragma")]


def language(path: str | Path) -> str | None:
    """"c", "py", "md" (its fenced code blocks count), or None for any other text (read as C++, the language of
    most holes)."""
    suffix = Path(path).suffix.lower()
    if suffix in C_SUFFIXES:
        return "c"
    if suffix in PY_SUFFIXES:
        return "py"
    if suffix in MARKDOWN_SUFFIXES:
        return "md"
    return None


def code_lines(path: str | Path, text: str, first: int = 1) -> list[Line]:
    """A file's normalised code lines, trivial ones dropped. A notebook: its cells' lines; a Markdown page: its
    fenced code blocks (Python ones as Python); any other text as C++ (a lesson in .txt quoting a kernel is code
    all the same). first: the number of text's first line (a hole's text starts inside its file)."""
    return list(_code_lines(str(path).endswith(".ipynb"), language(path), text, first))


# A release compares every file it writes with every hole, and its forecast does so again for each later date: the
# same texts, normalised once (Lines are frozen, so the tuples can be shared).
@functools.lru_cache(maxsize=4096)
def _code_lines(notebook: bool, lang: str | None, text: str, first: int) -> tuple[Line, ...]:
    if notebook:
        return tuple(_significant(_py_lines("\n".join(notebook_lines(text)))))
    if lang == "md":
        out = []
        for m in _FENCE.finditer(text):
            first = text.count("\n", 0, m.start(4)) + 1
            parse = _py_lines if m.group(3).lower() in ("python", "py", "mojo", "pycon") else _c_lines
            out += parse(m.group(4), first)
        return tuple(_significant(out))
    return tuple(_significant((_py_lines if lang == "py" else _c_lines)(text, first)))


def _key(lines) -> int:
    """A window's hash, its identifiers renamed by order of first appearance within it."""
    names: dict[str, str] = {}
    parts = []
    for ln in lines:
        for tok in ln.tokens:
            if tok[0] == "\0":
                tok = names.setdefault(tok, f"\0{len(names)}")
            parts.append(tok)
        parts.append("\n")
    return hash("\1".join(parts))


def grams(n: int, k: int = K) -> list[tuple[int, ...]]:
    """The windows over n code lines, as line indices: every k consecutive lines, and every k lines of k + 1
    consecutive ones that keep the first and the last (one line skipped: inserted, deleted or edited on one side
    is then a line skipped on that side or on both). Fewer than k lines: all of them, as one window."""
    if n < k:
        return [tuple(range(n))] if n >= 2 else []
    out = [tuple(range(s, s + k)) for s in range(n - k + 1)]
    for s in range(n - k):
        span = range(s, s + k + 1)
        out += [tuple(i for i in span if i != skip) for skip in range(s + 1, s + k)]
    return out


def _shape(line: Line) -> int:
    """A line with every renamable identifier alike: two lines can stand at the same place of two matching
    windows only if their shapes are equal (a cheap test that spares most windows their renaming)."""
    return hash(tuple("\0" if t[0] == "\0" else t for t in line.tokens))


def _file_keys(lines: list[Line], k: int, short: set[int], shapes: set[int]) -> list[tuple[int, int]]:
    """(key, index of its first line) of every window of a file that may match a hole (each of its lines shaped
    like some hole's line): its k-line grams, and its windows of each length in `short` (the lengths of the holes
    shorter than k)."""
    ok = [_shape(ln) in shapes for ln in lines]
    out = [(_key([lines[i] for i in g]), g[0]) for g in grams(len(lines), k) if all(ok[i] for i in g)]
    for n in short:
        out += [(_key(lines[s:s + n]), s) for s in range(len(lines) - n + 1) if all(ok[s:s + n])]
    return out


# -- holes ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Hole:
    """A `BEGIN SOLUTION` … `END SOLUTION` region of a solution file: the day it belongs to, its label, the line of
    its BEGIN marker, and its normalised code lines."""
    path: str
    day: str
    label: str
    line: int
    lines: tuple[Line, ...]

    @property
    def weight(self) -> int:
        """Its code lines that count (all but loop and branch headers)."""
        return sum(not ln.header for ln in self.lines)

    @property
    def name(self) -> str:
        return f"'{self.label}'" if self.label else f"at {self.path}:{self.line}"


def holes_of(path: str, text: str, day: str) -> list[Hole]:
    """The solution regions of one file (outermost ones; a notebook's in its cells' lines)."""
    out, depth, start, label, body = [], 0, 0, "", []
    for n, line in enumerate(lines_of(path, text), 1):
        if _BEGIN.match(line):
            if depth == 0:
                start, label, body = n, _BEGIN.match(line).group(1), []
            depth += 1
            continue
        if _END.match(line) and depth:
            depth -= 1
            if depth == 0:
                lang_path = path if not path.endswith(".ipynb") else "cells.py"
                out.append(Hole(path, day, label, start, tuple(code_lines(lang_path, "\n".join(body), start + 1))))
            continue
        if depth:
            body.append(line)
    return out


@dataclass(frozen=True)
class Match:
    """How much of a hole a file gives: `covered` of the hole's `total` code lines (loop and branch headers not
    counted), from the file's line `at` on (its first window found)."""
    path: str
    hole: Hole
    covered: int
    at: int

    @property
    def total(self) -> int:
        return self.hole.weight

    @property
    def answers(self) -> bool:
        return answers(self.covered, self.total, len(self.hole.lines))

    def __str__(self) -> str:
        return (f"{self.path} gives {self.hole.day}'s hole {self.hole.name} ({self.covered} of {self.total} code "
                f"lines, from line {self.at})")


def answers(covered: int, total: int, lines: int) -> bool:
    """The threshold (the module's docstring says why these values). covered and total count a hole's code lines
    less its headers; lines counts them all."""
    if total == 0 or lines < 2:
        return False
    if covered >= total:  # the whole hole, however short
        return True
    return covered >= MANY_COVERED or (covered >= MIN_COVERED and covered / total >= MIN_FRACTION)


@dataclass
class Index:
    """Every window of every hole, by hash."""
    holes: list[Hole]
    k: int = K
    _by_key: dict[int, list[tuple[int, tuple[int, ...]]]] = field(default_factory=dict, repr=False)
    _short: set[int] = field(default_factory=set, repr=False)
    _shapes: set[int] = field(default_factory=set, repr=False)
    _answered: dict[tuple[str, str], list[Match]] = field(default_factory=dict, repr=False)

    def __post_init__(self):
        by_key = defaultdict(list)
        for h, hole in enumerate(self.holes):
            self._shapes.update(_shape(ln) for ln in hole.lines)
            if len(hole.lines) < self.k:
                self._short.add(len(hole.lines))
            for g in grams(len(hole.lines), self.k):
                by_key[_key([hole.lines[i] for i in g])].append((h, g))
        self._by_key = dict(by_key)

    def matches(self, path: str, text: str, lines: list[Line] | None = None) -> list[Match]:
        """Every hole the file shares at least one window with, with its measure (most covered first)."""
        lines = code_lines(path, text) if lines is None else lines
        covered: dict[int, set[int]] = defaultdict(set)
        first: dict[int, int] = {}
        for key, j in _file_keys(lines, self.k, self._short, self._shapes):
            for h, g in self._by_key.get(key, ()):
                covered[h].update(g)
                first[h] = min(first.get(h, lines[j].at), lines[j].at)
        out = [Match(path, self.holes[h], sum(not self.holes[h].lines[i].header for i in c), first[h])
               for h, c in covered.items()]
        return sorted(out, key=lambda m: (-m.covered, m.hole.path, m.hole.line))

    def answered(self, path: str, text: str) -> list[Match]:
        """The holes this file answers (the threshold passed), most covered first. Kept by (path, text): the two
        builds of a release ask of the same files."""
        if (path, text) not in self._answered:
            self._answered[(path, text)] = [m for m in self.matches(path, text) if m.answers]
        return list(self._answered[(path, text)])
