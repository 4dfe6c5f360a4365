"""Where a failing output is wrong, as a picture: the output folded onto a small grid of the exercise's own blocks
(its task says which: `error_blocks` in tasks/<name>.py), each cell right, wrong (shaded by its worst ratio to the
tolerance), never written or NaN/inf; and the pattern the grid shows, in words (the detectors below).

Built only for a failing comparison (compare() calls build() on its failing paths): a passing output costs nothing.
The map is plain data (it goes into the JSON result as it is); the renderers at the end draw it as text (the
terminal, `grader watch`, the classroom formats) or as a PNG."""
from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from collections.abc import Callable

# Caps on the grid: a cell is then several of the task's blocks (an integer number of them along each axis), so a
# 4096 x 4096 output still prints in a few lines of a terminal.
MAX_ROWS = 16  # row cells per panel
MAX_COLS = 32  # column cells per panel
MAX_PANELS = 64  # batch x head panels; more are merged in runs of consecutive panels

RIGHT, UNWRITTEN, NONFINITE = ".", "_", "!"
SHADES = "123456789"  # wrong: the worst |err| / (atol + rtol |ref|) in the cell, about 10^digit at most
LEGEND = (f"{RIGHT} right · {SHADES[0]}-{SHADES[-1]} wrong, worst error up to 10^n x the tolerance · "
          f"{UNWRITTEN} never written · {NONFINITE} NaN/inf")

# Every pattern a detector can name (course.yaml's `hints:` may key on these as on a category).
PATTERNS = ("probe_rows", "one_head", "one_batch", "first_block", "last_tile", "above_diagonal", "below_diagonal",
            "every_kth")


@dataclass(frozen=True)
class Blocks:
    """How an output folds: its leading `panels` dimensions (named, e.g. batch, head) are panels, the next ones are
    rows and, if `cols` is set, the last one columns; a natural block is `block` rows x columns. `diagonal`: rows
    and columns index the same thing (a matrix's i and j), so a triangle means something. `properties`: computed
    only when the map is built, {what the rows have in common: bool mask over the output's leading dims}."""
    block: tuple[int, int]
    panels: tuple[str, ...] = ()
    rows: str = "row"
    cols: str | None = "column"
    diagonal: bool = False
    properties: Callable[[], dict] | None = None


def shade(ratio: float) -> str:
    """The digit of a wrong cell: 1 up to 10x the tolerance, 2 up to 100x, ... 9 beyond 10^8x (and inf)."""
    if not math.isfinite(ratio):
        return SHADES[-1]
    return SHADES[min(len(SHADES) - 1, max(0, math.ceil(math.log10(max(ratio, 1.0 + 1e-12))) - 1))]


def _merge(n: int, block: int, cap: int) -> int:
    """The cell size along one axis: the block, or a power-of-two multiple of it so at most `cap` cells remain
    (a power of two: a kernel's own partitions, 8 or 256 rows a block, then fall on cell boundaries)."""
    cells = -(-n // block)
    factor = 1
    while -(-cells // factor) > cap:
        factor *= 2
    return block * factor


def build(out, ref, *, atol: float, rtol: float, blocks: Blocks, unwritten, nonfinite=None) -> dict:
    """The map of one failing output (any float dtype, on any device) against its fp64 reference. unwritten: the
    poisoned elements (compare.poisoned_mask); nonfinite: NaN/inf where the reference disagrees (compare() has it
    on its later paths; computed here if not)."""
    import torch

    shape = tuple(out.shape)
    o, r = out.double(), ref.double()
    if nonfinite is None:
        agree = (torch.isnan(o) & torch.isnan(r)) | (torch.isinf(r) & (o == r)) | (torch.isfinite(r) & torch.isfinite(o))
        nonfinite = ~agree
    nonfinite = nonfinite & ~unwritten
    fine = torch.isfinite(r) & torch.isfinite(o) & ~unwritten
    of, rf = torch.where(fine, o, 0.0), torch.where(fine, r, 0.0)
    diff = (of - rf).abs()
    ratio = torch.where(diff == 0, 0.0, diff / (atol + rtol * rf.abs()))

    npan = len(blocks.panels)
    pan_sizes = list(shape[:npan])
    has_cols = blocks.cols is not None and len(shape) > npan + 1
    ncols = shape[-1] if has_cols else 1
    P = math.prod(pan_sizes)
    R = (math.prod(shape[npan:]) // ncols) if math.prod(shape) else 0
    br, bc = blocks.block if has_cols else (blocks.block[0], 1)
    cr, cc = _merge(R, br, MAX_ROWS), _merge(ncols, bc, MAX_COLS)
    gp = max(1, -(-P // MAX_PANELS))  # panels merged per shown panel
    nR, nC, nP = -(-R // cr), -(-ncols // cc), -(-P // gp)

    def pool(t, fill):
        t = t.reshape(P, R, ncols)
        pad = (0, nC * cc - ncols, 0, nR * cr - R, 0, nP * gp - P)
        t = torch.nn.functional.pad(t, pad, value=fill) if any(pad) else t
        return t.reshape(nP, gp, nR, cr, nC, cc).amax(dim=(1, 3, 5)).cpu()

    # as lists: a Python loop over up to 64 x 16 x 32 cells would index tensors a thousand times slower
    worst = pool(ratio, 0.0).tolist()
    never = pool(unwritten.to(torch.uint8), 0).bool().tolist()
    bad_special = pool(nonfinite.to(torch.uint8), 0).bool().tolist()
    grid, ratios = [], []
    for p in range(nP):
        rows, rrows = [], []
        for i in range(nR):
            line, rline = [], []
            for j in range(nC):
                w = worst[p][i][j]
                ch = (NONFINITE if bad_special[p][i][j] else UNWRITTEN if never[p][i][j]
                      else shade(w) if w > 1 else RIGHT)
                line.append(ch)
                rline.append(float(f"{w:.3g}") if math.isfinite(w) else None)
            rows.append("".join(line))
            rrows.append(rline)
        grid.append(rows)
        ratios.append(rrows)

    # rows (over the panels' leading dims, the columns collapsed) that hold any wrong element, for the properties
    row_bad = (ratio > 1) | unwritten | nonfinite
    row_bad = row_bad.reshape(P * R, ncols).any(dim=1) if has_cols else row_bad.reshape(-1)
    emap = {"shape": list(shape), "panels": list(blocks.panels) if gp == 1 else [],
            "panel_sizes": pan_sizes if gp == 1 else [nP], "panels_per_cell": gp,
            "rows": blocks.rows, "cols": blocks.cols if has_cols else None, "natural_block": [br, bc],
            "block": [cr, cc], "extent": [R, ncols], "diagonal": blocks.diagonal,
            "grid": grid, "ratios": ratios, "legend": LEGEND}
    # kept in the map, so the detectors can be run again on a recorded result (scripts/error_maps.py --rederive)
    emap["properties"] = [list(p) for p in _row_properties(blocks, shape, has_cols, row_bad, P * R)]
    emap["pattern"], emap["pattern_text"] = detect(emap)
    return emap


def cells(emap: dict) -> int:
    """How many cells the map has: one cell says nothing of where, a grid of hundreds says much."""
    return sum(len(row) for panel in emap["grid"] for row in panel)


def resolution(emap: dict) -> float:
    """What the map shows of where: its cells, each counted by the share of the task's own blocks it shows alone (a
    cell that pools k of them counts 1/k). Pooling hides any pattern finer than k blocks: the second eight rows of
    every 16-row MMA fragment show on a 127-row C in 8-row cells, not on a 257-row C in 32-row cells."""
    (br, bc), (nr, nc) = emap["block"], emap.get("natural_block") or emap["block"]
    pooled = max(1, br // max(1, nr)) * max(1, bc // max(1, nc)) * emap.get("panels_per_cell", 1)
    return cells(emap) / pooled


def choose(cases: list[dict]) -> dict | None:
    """The failing case whose map says the most, of an exercise's cases: the highest resolution() (many cells, each
    one of the task's own blocks), then the largest output, then the first. The first failing case is usually the
    smallest shape (1x1, 1x37), whose map of a cell or two shows no shape at all; every case keeps its own map in
    the JSON all the same."""
    mapped = [c for c in cases if not c.get("ok") and c.get("error_map")]
    if not mapped:
        return None
    return max(mapped, key=lambda c: (resolution(c["error_map"]), math.prod(c["error_map"]["shape"])))  # ties: the first


def _row_properties(blocks: Blocks, shape, has_cols: bool, row_bad, n_rows: int) -> list[tuple[str, int, int]]:
    """For each property of the case's rows: (what it is, how many rows have it, how many of them are wrong), when
    the wrong rows are exactly those rows (no wrong row lacks it); else nothing."""
    if blocks.properties is None:
        return []
    found = []
    for what, mask in blocks.properties().items():
        want = tuple(shape[:-1]) if has_cols else tuple(shape)
        if tuple(mask.shape) != want:
            continue  # a property of another output's rows
        mask = mask.reshape(-1).to(row_bad.device).bool()
        have, bad = int(mask.sum()), int(row_bad.sum())
        if have and bad and int((row_bad & ~mask).sum()) == 0:
            found.append((what, have, int((row_bad & mask).sum()), n_rows, bad))
    return found


# -- the detectors ----------------------------------------------------------------------------------------------
def _bad(grid) -> list[list[list[bool]]]:
    return [[[ch != RIGHT for ch in row] for row in panel] for panel in grid]


def _span(i: int, size: int, extent: int) -> str:
    lo, hi = i * size, min((i + 1) * size, extent) - 1
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


def _plural(word: str) -> str:
    return word[:-1] + "ies" if word.endswith("y") and word[-2:-1] not in "aeiou" else word + "s"


def _ordinal(k: int) -> str:
    return {2: "2nd", 3: "3rd"}.get(k, f"{k}th")


def detect(emap: dict, props: list | None = None) -> tuple[str | None, str | None]:
    """The pattern the map shows and a sentence saying it, or (None, None): an output wrong everywhere, nowhere
    (only its relative L2 error failed) or in no shape these detectors know (scattered cells). props: the rows'
    properties (_row_properties), else those the map recorded. Each detector names its shape only where the grid
    holds both sides of it: wrong cells and right ones to contrast them with (a map of one cell, or one wrong
    everywhere, contrasts nothing)."""
    if props is None:
        props = emap.get("properties") or []
    bad = _bad(emap["grid"])
    flat = [c for panel in bad for row in panel for c in row]
    if not any(flat) or all(flat):
        return None, None
    for detector in (_probe_rows, _one_panel, _first_block, _last_tile, _every_kth, _diagonal):
        found = detector(emap, bad, props or [])
        if found:
            return found
    return None, None


def _probe_rows(emap, bad, props):
    # have < n: a row without the property exists, and it is right (every wrong row has the property): a case whose
    # rows all have it, all wrong, cannot tell the property from a kernel wrong everywhere
    for what, have, hit, n, nbad in props:
        if have < n and hit * 2 >= have:
            return "probe_rows", (f"only rows {what} are wrong: {nbad} of the {n} rows, all among the {have} rows "
                                  f"{what}; the kernel mistreats such rows")
    return None


def _one_panel(emap, bad, props):
    names, sizes = emap["panels"], emap["panel_sizes"]
    if not names or math.prod(sizes) < 2:
        return None
    hit = [p for p, panel in enumerate(bad) if any(any(r) for r in panel)]
    idx = [_unflat(p, sizes) for p in hit]
    # the last named dimension first (a head before a batch): one head in every batch is a head's bug
    for k in reversed(range(len(names))):
        if sizes[k] < 2 or len({t[k] for t in idx}) != 1:
            continue
        fixed = idx[0][k]
        full = len(hit) == math.prod(sizes) // sizes[k]
        others = [n for n, s in zip(names, sizes) if n != names[k] and s > 1]
        if full:
            where = f"{names[k]} {fixed}" + (f" (in every {' and '.join(others)})" if others else "")
        elif len(hit) == 1:
            where = ", ".join(f"{n} {i}" for n, i in zip(names, idx[0]))
        else:
            where = f"{names[k]} {fixed} (in some {' and '.join(others)})"
        return f"one_{names[k]}", (f"only {where} is wrong ({len(hit)} of {math.prod(sizes)} panels): an offset or "
                                   f"stride that is right for one {names[k]} only, or a {names[k]} index mixed up")
    return None


def _unflat(p: int, sizes) -> tuple:
    out = []
    for s in reversed(sizes):
        out.append(p % s)
        p //= s
    return tuple(reversed(out))


def _first_block(emap, bad, props):
    if len(bad) < 2 or len(bad[0]) < 2:
        return None
    if all(any(panel[0]) for panel in bad) and not any(any(r) for panel in bad for r in panel[1:]):
        n = emap["block"][0]
        return "first_block", (f"only the first {emap['rows']} block ({_plural(emap['rows'])} 0-{min(n, emap['extent'][0]) - 1}) "
                               f"of every panel is wrong: a start offset that misses each panel's base, or a stride "
                               f"of the wrong tensor")
    return None


# A tail is named only after at least this many right cells along its axis: one right cell beside one wrong one
# (a 1x37 softmax's two column cells) is as likely chance as a rule.
MIN_RIGHT_BEFORE = 2


def _suffix(flags: list[bool]) -> int | None:
    """The start of the run of set flags that ends the list, when the flags set are exactly that run, at least
    MIN_RIGHT_BEFORE cells precede it and it is shorter than they are (the last tile is a tail of the output: half
    of it or more is some other rule, a race that hit one warp row's half, a work split gone wrong); else None."""
    if not flags or not flags[-1] or all(flags):
        return None
    start = len(flags) - 1
    while start > 0 and flags[start - 1]:
        start -= 1
    if any(flags[:start]) or start < MIN_RIGHT_BEFORE or len(flags) - start >= start:
        return None
    return start


def _last_tile(emap, bad, props):
    R, C = len(bad[0]), len(bad[0][0])
    rows_bad = [any(panel[i][j] for panel in bad for j in range(C)) for i in range(R)]
    cols_bad = [any(panel[i][j] for panel in bad for i in range(R)) for j in range(C)]
    rs, cs = _suffix(rows_bad), _suffix(cols_bad)
    (cr, cc), (nr, nc) = emap["block"], emap["extent"]
    rname, cname = emap["rows"], emap["cols"] or ""
    if rs is not None:
        return "last_tile", (f"only the last {rname} block{'s' if R - rs > 1 else ''} ({_plural(rname)} "
                             f"{rs * cr}-{nr - 1} of {nr}) {'are' if R - rs > 1 else 'is'} wrong: a grid or loop that "
                             f"rounds the partial tile down, or a tail not written")
    if cs is not None:
        return "last_tile", (f"only the last {cname} block{'s' if C - cs > 1 else ''} ({_plural(cname)} {cs * cc}-{nc - 1} "
                             f"of {nc}) {'are' if C - cs > 1 else 'is'} wrong: a grid or loop that rounds the partial "
                             f"tile down, or a tail not written")
    # an L: the last rows and the last columns both (a grid rounded down in both directions)
    full_r = [all(panel[i][j] for panel in bad for j in range(C)) for i in range(R)]
    full_c = [all(panel[i][j] for panel in bad for i in range(R)) for j in range(C)]
    rs, cs = _suffix(full_r), _suffix(full_c)
    if rs is not None and cs is not None and all(
            not panel[i][j] or i >= rs or j >= cs for panel in bad for i in range(R) for j in range(C)):
        return "last_tile", (f"only the last {_plural(rname)} ({rs * cr}-{nr - 1}) and the last {_plural(cname)} ({cs * cc}-{nc - 1}) "
                             f"are wrong: the partial tiles at both edges")
    return None


# The strict triangle of a 3 x 3 grid of cells: the smallest on which a triangle differs from a corner.
MIN_TRIANGLE = 3


def _diagonal(emap, bad, props):
    if not emap["diagonal"]:
        return None
    (cr, cc), (nr, nc) = emap["block"], emap["extent"]
    above = below = above_bad = below_bad = 0
    for panel in bad:
        for i, row in enumerate(panel):
            r0, r1 = i * cr, min((i + 1) * cr, nr) - 1
            for j, b in enumerate(row):
                c0, c1 = j * cc, min((j + 1) * cc, nc) - 1
                if r1 < c0:
                    above += 1
                    above_bad += b
                elif c1 < r0:
                    below += 1
                    below_bad += b
    for name, n, hit, other, other_n in (("above", above, above_bad, below_bad, below),
                                         ("below", below, below_bad, above_bad, above)):
        # each side a triangle of at least MIN_TRIANGLE cells: one cell below the diagonal (a 33-row softmax's
        # corner) is no triangle to be right in
        if n >= MIN_TRIANGLE and other_n >= MIN_TRIANGLE and hit >= 0.9 * n and not other:  # nearly the whole triangle: a rule, not chance
            other_side = "below" if name == "above" else "above"
            return f"{name}_diagonal", (f"wrong {name} the diagonal ({hit} of its {n} cells), right {other_side} it: "
                                        f"a causal mask off by one, or the tiles on one side skipped or done twice")
    return None


def _progression(flags: list[bool]) -> tuple[int, int] | None:
    """(k, start) when the set flags are every k-th index from start (k >= 2, at least two of them, over at least
    two whole periods of k cells), else None."""
    on = [i for i, f in enumerate(flags) if f]
    if len(on) < 2:
        return None
    k = on[1] - on[0]
    if (k < 2 or on[0] >= k or any(b - a != k for a, b in zip(on, on[1:])) or on[-1] + k < len(flags)
            or len(flags) < 2 * k):
        return None
    return k, on[0]


def _every_kth(emap, bad, props):
    R, C = len(bad[0]), len(bad[0][0])
    rows_bad = [any(any(panel[i]) for panel in bad) for i in range(R)]
    cols_bad = [any(panel[i][j] for panel in bad for i in range(R)) for j in range(C)]
    for flags, size, name in ((cols_bad, emap["block"][1], emap["cols"]), (rows_bad, emap["block"][0], emap["rows"])):
        found = _progression(flags)
        if found:
            k, start = found
            return "every_kth", (f"every {_ordinal(k)} {name} block from block {start} ({size} {_plural(name)} each) is "
                                 f"wrong: one of every {k} threads, warps or tiles along the {_plural(name)} does it wrong")
    return None


# -- drawing it -------------------------------------------------------------------------------------------------
def panel_label(emap: dict, p: int) -> str:
    names, sizes, gp = emap["panels"], emap["panel_sizes"], emap["panels_per_cell"]
    if gp > 1:
        return f"panels {p * gp}-{(p + 1) * gp - 1}"
    return " ".join(f"{n[0]}{i}" for n, i in zip(names, _unflat(p, sizes)))


def text(emap: dict, width: int = 100) -> list[str]:
    """The map as plain lines: a header saying what a cell is, the panels side by side (wrapped at `width`), the
    legend. Readable without colour: each state has its own character."""
    (cr, cc), (nr, nc) = emap["block"], emap["extent"]
    cols = f" x {cc} {_plural(emap['cols'])}" if emap["cols"] else ""
    head = f"error map: one cell = {cr} {_plural(emap['rows'])}{cols} (of {nr}{f' x {nc}' if emap['cols'] else ''})"
    if emap["panels"] or emap["panels_per_cell"] > 1:
        head += f", one panel per {' x '.join(emap['panels']) or 'run of panels'}"
    if emap.get("output"):
        head = f"{emap['output']}: {head}"
    lines = [head]
    grid = emap["grid"]
    labels = [panel_label(emap, p) for p in range(len(grid))] if len(grid) > 1 or emap["panels"] else [""]
    w = max(len(grid[0][0]), max(len(lb) for lb in labels))
    per_line = max(1, (width - 2) // (w + 2))
    for start in range(0, len(grid), per_line):
        chunk = range(start, min(start + per_line, len(grid)))
        if any(labels):
            lines.append("  " + "  ".join(labels[p].ljust(w) for p in chunk).rstrip())
        for i in range(len(grid[0])):
            lines.append("  " + "  ".join(grid[p][i].ljust(w) for p in chunk).rstrip())
    lines.append("  " + emap["legend"])
    return lines  # the pattern is in the case's message, printed just above


def strip(emap: dict, width: int = 32) -> str:
    """One line: each row of cells (panels in turn) as its worst character, then the pattern's name."""
    order = {RIGHT: 0, **{s: 1 + i for i, s in enumerate(SHADES)}, UNWRITTEN: 20, NONFINITE: 21}
    rows = [max(r, key=order.get) for panel in emap["grid"] for r in panel]
    s = "".join(rows)
    if len(s) > width:
        s = s[:width - 1] + "…"
    return f"[{s}] {emap.get('pattern') or 'no pattern'}"


def png(emap: dict, path) -> None:
    """The map as a PNG: one image per panel side by side, cells coloured by state (shades of red by the worst
    ratio), the pattern as the title. matplotlib is one of the project's dependencies."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    colours = ["#e8f5e9"] + [plt.get_cmap("Reds")(0.25 + 0.75 * i / (len(SHADES) - 1)) for i in range(len(SHADES))] \
        + ["#9e9e9e", "#6a1b9a"]
    code = {RIGHT: 0, **{s: 1 + i for i, s in enumerate(SHADES)}, UNWRITTEN: len(SHADES) + 1,
            NONFINITE: len(SHADES) + 2}
    grid = emap["grid"]
    n = len(grid)
    width = min(2 + 2.2 * n, 16)
    fig, axes = plt.subplots(1, n, figsize=(width, 3.2), squeeze=False)
    (cr, cc) = emap["block"]
    for p, ax in enumerate(axes[0]):
        data = [[code[ch] for ch in row] for row in grid[p]]
        ax.imshow(data, cmap=ListedColormap(colours), vmin=0, vmax=len(colours) - 1, interpolation="nearest",
                  aspect="auto")
        ax.set_title(panel_label(emap, p) if n > 1 or emap["panels"] else "", fontsize=8)
        ax.set_ylabel(f"{emap['rows']} block ({cr} {_plural(emap['rows'])})", fontsize=8)
        ax.set_xlabel(f"{emap['cols']} block ({cc} {_plural(emap['cols'])})" if emap["cols"] else "", fontsize=8)
        ax.tick_params(labelsize=7)
        for axis in (ax.xaxis, ax.yaxis):  # a block's index, never a fraction of one
            axis.set_major_locator(MaxNLocator(integer=True))
    title = f"{emap.get('output', '')}: " if emap.get("output") else ""
    title += f"{emap.get('pattern') or 'no pattern'}" + (f": {emap['pattern_text']}" if emap.get("pattern_text") else "")
    fig.suptitle(textwrap.fill(title, int(13 * width)), fontsize=8)  # about 13 characters an inch at this size
    handles = [Patch(color=colours[0], label="right"), Patch(color=colours[1], label="wrong, up to 10x the tolerance"),
               Patch(color=colours[len(SHADES)], label=f"wrong, over 10^{len(SHADES) - 1}x"),
               Patch(color=colours[-2], label="never written"), Patch(color=colours[-1], label="NaN/inf")]
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 0.9))
    fig.savefig(path, dpi=110)
    plt.close(fig)
