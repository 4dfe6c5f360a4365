"""Rendering results for people (rich tables) and for machines (--json)."""
from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from grader.check import error_map
from grader.check.verdict import class_bar
from grader.verdicts import Category, Status

STYLE = {"pass": "bold green", "fail": "bold red", "not_implemented": "bold yellow", "build_error": "bold red",
         "no_gpu": "bold yellow", "env_error": "bold red", "skipped": "bold yellow"}
LABEL = {"pass": "PASS", "fail": "FAIL", "not_implemented": "NOT IMPLEMENTED", "build_error": "BUILD ERROR",
         "no_gpu": "COMPILED ONLY (no GPU)", "env_error": "ENVIRONMENT ERROR", "skipped": "SKIPPED"}
MAX_LISTED_FAILURES = 8
LOG_TAIL_LINES = 30  # of a compiler's output that gave no file:line diagnostic


def _us(ms: float) -> str:
    return f"{ms * 1000:,.1f}"


def _has_content(path: str) -> bool:
    try:
        return bool(path) and Path(path).stat().st_size > 0
    except OSError:
        return False


def _label(c: dict) -> str:
    """A case's label, with the run it belongs to in a ranked check (two runs on different inputs)."""
    return f"{c['label']} (run {c['run']})" if "run" in c else c["label"]


def render(console: Console, res, ex, hint: str | None = None, *, ranked: str | None = None,
           shown: dict[str, str] | None = None) -> None:
    """The result for people: builds, the correctness and speed tables, the verdict line and the hint.

    ranked: the hash of a ranked run's secret seed; then no seed is printed (the inputs stay secret).
    shown: the compile reports already printed in this check (render_compile), kept across its exercises."""
    info = res.info
    cap = str(info.get("capability", "?")).replace(".", "") if info else ""
    # CPU processes (`--on cpu`) have no compute capability to name
    where = (f"{info.get('gpu', '?')}" + (f" (sm_{cap})" if cap.isalnum() else "")) if info else ""
    seed = f"ranked (seed hash {ranked[:8]}…)" if ranked else f"seed {res.seed}"
    console.print(f"[bold]{res.day} · {res.exercise}[/] · {res.variant} ({res.source}) · {seed}"
                  + (f" · {where}" if where else ""), highlight=False)
    for b in res.builds:
        if b["ok"]:
            note = " (recovered a stale build lock)" if b.get("recovered_lock") else ""
            console.print(f"  built {b['target']} in {b['seconds']:.1f} s{note}")
        else:
            console.print(f"  [red]build of the {b['target']} failed[/]")
            for d in b.get("diagnostics", [])[:12] or [b.get("log", "")[-3000:]]:
                console.print(f"    {d}", markup=False, highlight=False)
    if res.compile:
        render_compile(console, res.compile, shown, res.exercise)
    corr = [c for c in res.cases if c["kind"] == "correctness"]
    if corr:
        render_correctness(console, corr)
    for c in (c for c in res.cases if c["kind"] == "sanitizer"):
        mark = "[green]✓[/]" if c["ok"] else "[red]✗[/]"
        console.print(f"  {mark} {c['message']}", highlight=False)
    bench = [c for c in res.cases if c["kind"] == "benchmark" and "time" in c]
    if bench:
        render_benchmark(console, bench, ex)
    style = STYLE.get(res.status, "bold")
    console.print(f"[{style}]{LABEL.get(res.status, res.status)}[/]  {res.message}", highlight=False)
    bar, on, why = class_bar(ex, info) if ex.timed and res.speedup is not None else (None, "", None)
    if why:  # course.yaml class_thresholds: this GPU class's own bar, and why
        console.print(f"the bar{on} is {bar:g}x, not {ex.threshold:g}x: {why}", style="dim", markup=False,
                      highlight=False)
    if hint:
        console.print(f"[cyan]hint:[/] {hint}", highlight=False)
    if res.status in (Status.FAIL, Status.BUILD_ERROR, Status.ENV_ERROR):
        # Compile-only (res.compile): what the compilers said is shown above, and no worker log holds more.
        notes = [f"full log: {res.log}"] if not res.compile and _has_content(res.log) else []
        if not ranked and res.status != Status.BUILD_ERROR and res.cases:  # inputs matter only to cases that ran
            notes.append(f"reproduce with --seed {res.seed}")
        if notes:
            console.print(" · ".join(notes), style="dim", markup=False, highlight=False)


def render_correctness(console: Console, cases: list[dict]) -> None:
    per = defaultdict(list)
    for c in cases:
        per[c["dtype"]].append(c)
    t = Table(title="correctness", title_justify="left", box=None, pad_edge=False)
    for col in ("dtype", "cases", "worst rel L2", "max abs err", "status"):
        t.add_column(col, justify="right" if col not in ("dtype", "status") else "left")
    for dt, cs in per.items():
        ok = sum(c["ok"] for c in cs)
        l2 = max((c.get("rel_l2", 0) for c in cs if c["ok"]), default=None)
        mx = max((c.get("max_abs", 0) for c in cs if c["ok"]), default=None)
        status = "[green]ok[/]" if ok == len(cs) else f"[red]{len(cs) - ok} failed[/]"
        t.add_row(dt, f"{ok}/{len(cs)}", "-" if l2 is None else f"{l2:.1e}", "-" if mx is None else f"{mx:.1e}",
                  status)
    console.print(t)
    bad = [c for c in cases if not c["ok"]]
    if all(c["category"] == Category.NOT_IMPLEMENTED for c in bad):
        return  # the verdict line says it once
    # one map, under the case whose map says the most (error_map.choose): the pattern of the others is in their
    # message; listed after the first few when it is not among them
    mapped = error_map.choose(bad)
    listed = bad[:MAX_LISTED_FAILURES]
    for c in listed + ([mapped] if mapped is not None and all(c is not mapped for c in listed) else []):
        console.print(f"  [red]✗[/] {c['dtype']} {_label(c)}: {c['message']}", highlight=False)
        if c is mapped:
            render_map(console, c["error_map"])
    if len(bad) > MAX_LISTED_FAILURES:
        console.print(f"  … and {len(bad) - MAX_LISTED_FAILURES} more (see --json)")


MAP_STYLE = {error_map.RIGHT: "green", error_map.UNWRITTEN: "yellow", error_map.NONFINITE: "bold magenta"}


def render_map(console: Console, emap: dict) -> None:
    """A failing output's error map (grader/check/error_map.py's text), indented under its case; coloured where
    the terminal has colour, and as readable without it (each state its own character)."""
    cells = set(MAP_STYLE) | set(error_map.SHADES) | {" "}
    for line in error_map.text(emap, width=max(40, console.width - 4)):
        t = Text("    ")
        if set(line) <= cells:  # a row of cells (not the header, a panel's label, the legend)
            for ch in line:
                t.append(ch, style=MAP_STYLE.get(ch, "red" if ch in error_map.SHADES else ""))
        else:
            t.append(line)
        console.print(t, highlight=False)


def render_benchmark(console: Console, cases: list[dict], ex) -> None:
    base = ex.baseline.describe() if ex.baseline else "-"
    t = Table(title=f"speed (median; baseline: {base})", title_justify="left", box=None,
              pad_edge=False)
    cols = ["shape", "dtype", "time µs"]
    has_bw = any("gbps" in c for c in cases)
    has_fl = any("tflops" in c for c in cases)
    ceiling = next((c["ceiling"] for c in cases if "ceiling" in c), None)
    cols += (["GB/s", "% of copy"] if has_bw else []) + (["TFLOP/s"] if has_fl else [])
    cols += [f"% of {ceiling}"] if ceiling else []
    has_mem = any(c.get("scratch_bytes", 0) > 0 for c in cases)  # memory the op allocated beyond its outputs
    cols += ["scratch MiB"] if has_mem else []
    cols += ["baseline µs", "speedup", "vs library"]
    for col in cols:
        t.add_column(col, justify="left" if col in ("shape", "dtype") else "right")
    for c in cases:
        row = [_label(c), c["dtype"], _us(c["time"]["median_ms"])]
        if has_bw:
            row += [f"{c['gbps']:,.0f}", f"{c['pct_of_copy']:.0%}"]
        if has_fl:
            row += [f"{c['tflops']:.1f}"]
        if ceiling:
            row += [f"{c['pct_of_ceiling']:.0%}" if "pct_of_ceiling" in c else "-"]  # e.g. no cuDNN for fp32
        if has_mem:
            row += [f"{c.get('scratch_bytes', 0) / 2**20:,.1f}"]
        vs_lib = f"{c['vs_library']:.2f}x" if "vs_library" in c else "-"
        row += [_us(c["baseline_time"]["median_ms"]), f"{c['speedup']:.2f}x", vs_lib]
        t.add_row(*row)
    console.print(t)


def _same_report(r: dict) -> str:
    """What makes two compile reports say the same thing: all of it but whether it came from the cache."""
    return json.dumps({k: v for k, v in r.items() if k != "cached"}, sort_keys=True)


def render_compile(console: Console, reports: list[dict], shown: dict[str, str] | None = None,
                   exercise: str = "") -> None:
    """Each compiler's report: its verdict line, diagnostics and ptxas table. shown (report -> the exercise that
    printed it) spans a check: exercises of a day that share a file compile it identically, so a report already
    printed is named in one line rather than printed again."""
    for r in reports:
        key = _same_report(r)
        if shown is not None and key in shown:
            verdict = ("cannot be compiled" if r["tool"] == "-" else
                       f"{'compiles' if r['ok'] else 'does not compile'} ({r['tool']})")
            console.print(f"  {r['file']}: {verdict}, as reported above for {shown[key]}", markup=False,
                          highlight=False)
            continue
        if shown is not None:
            shown[key] = exercise
        if r["tool"] == "-":  # refused before any compiler ran (missing, empty, binary, not UTF-8, too large)
            console.print(Text.assemble(f"  {r['file']}: ", ("cannot be compiled", "red")))
        else:
            console.print(Text.assemble(f"  {r['file']}: ", ("compiles", "green") if r["ok"] else
                                        ("does not compile", "red"), f" ({r['tool']})",
                                        f" — {r['note']}" if r["note"] else ""))
        for d in r["diagnostics"][:12]:
            console.print(f"    {d}", markup=False, highlight=False)
        if not r["ok"] and not r["diagnostics"] and r.get("log", "").strip():
            # No file:line to show: the compiler's own last words are the only clue (there is no other log).
            for line in r["log"].rstrip().splitlines()[-LOG_TAIL_LINES:]:
                console.print(f"    {line}", markup=False, highlight=False)
        elif r["tool"] == "-" and not r["diagnostics"] and r["note"]:
            console.print(f"    {r['note']}", markup=False, highlight=False)
        if r["kernels"]:
            t = Table(box=None, pad_edge=False)
            for col in ("kernel", "arch", "registers", "smem B", "stack B", "spill st/ld B"):
                t.add_column(col, justify="left" if col in ("kernel", "arch") else "right")
            for k in r["kernels"]:
                spill = f"{k['spill_stores']}/{k['spill_loads']}"
                t.add_row(k["function"], k["arch"], str(k["registers"]), str(k["smem_bytes"]),
                          str(k["stack_bytes"]), f"[red]{spill}[/]" if k["spill_stores"] or k["spill_loads"] else spill)
            console.print(t)
            for k in r["kernels"]:
                if k.get("wgmma_serialized"):
                    console.print(f"    [red]ptxas serialised every wgmma of {_short_function(k['function'])} "
                                  f"({k['wgmma_serialized']})[/]: still correct, but each product now waits for the "
                                  f"one before; ptxas's {k['wgmma_serialized']} message says why", highlight=False)


def _short_function(sig: str) -> str:
    """`void k<float>(float const*, int)` -> `k<float>`."""
    sig = re.sub(r"^void\s+", "", sig)
    depth = 0
    for i, ch in enumerate(sig):
        depth += ch == "<"
        depth -= ch == ">"
        if ch == "(" and depth == 0:
            return sig[:i]
    return sig


def correct_line(day: str, exercise: str, cases: int) -> str:
    """The first line of a correct verdict in `grader watch` (printed as soon as the correctness cases pass)."""
    return f"✓ {day}.{exercise}: correct ({cases} cases)"


def compact(res, ex) -> list[str]:
    """The verdict in a line or two (`grader watch`): correctness first (or what the compilers said, without a
    GPU), then the speed against the baseline when it was timed. Plain text."""
    name = f"{res.day}.{res.exercise}"
    if res.status == Status.BUILD_ERROR:
        diags = [d for r in res.compile for d in r["diagnostics"]] + [d for b in res.builds for d in b.get("diagnostics", [])]
        first = next((d for d in diags if ": error:" in d), diags[0] if diags else "")
        return [f"✗ {name}: does not compile" + (f": {first}" if first else "")]
    if res.status == Status.NO_GPU:
        kernels = [k for r in res.compile for k in r["kernels"]]
        line = f"✓ {name}: compiles (no GPU: correctness and speed not checked)"
        if kernels:
            regs = sorted({k["registers"] for k in kernels})
            spills = [f"{_short_function(k['function'])} ({k['arch']}: {k['spill_stores']}/{k['spill_loads']} B)"
                      for k in kernels if k["spill_stores"] or k["spill_loads"]]
            line += (f"; ptxas: {len(kernels)} kernels, {regs[0]}–{regs[-1]} registers, "
                     + (f"spills in {', '.join(spills[:2])}" + (" …" if len(spills) > 2 else "") if spills else "no spills"))
            serialized = [f"{_short_function(k['function'])} ({k['wgmma_serialized']})"
                          for k in kernels if k.get("wgmma_serialized")]
            if serialized:
                line += f"; wgmma serialised in {', '.join(serialized[:2])}" + (" …" if len(serialized) > 2 else "")
        return [line]
    if res.status in (Status.NOT_IMPLEMENTED, Status.ENV_ERROR, Status.SKIPPED):
        return [f"… {name}: {LABEL.get(res.status, res.status)}: {res.message}"]
    corr = [c for c in res.cases if c["kind"] == "correctness"]
    bad = [c for c in res.cases if c["kind"] != "benchmark" and not c["ok"]]
    if bad:
        c = bad[0]
        lines = [f"✗ {name}: {len(bad)} of {len(corr)} correctness cases failed; first: {c['dtype']} {_label(c)}: "
                 f"{c['message']}"]
        mapped = error_map.choose(bad)
        if mapped:  # the most telling map in one line: each row of cells as its worst state, and the pattern's name
            lines.append(f"  map {mapped['dtype']} {_label(mapped)}: {error_map.strip(mapped['error_map'])}")
        return lines
    lines = [correct_line(res.day, res.exercise, len(corr))]
    bench = [c for c in res.cases if c["kind"] == "benchmark"]
    if res.speedup is not None:
        word = "PASS" if res.status == Status.PASS else "FAIL"
        base = ex.baseline.describe() if ex.baseline else "the baseline"
        bar, on, _ = class_bar(ex, res.info)
        lines.append(f"  {word} speed: {res.speedup:.2f}x {base} (needs {bar:g}x{on}), geomean of {len(bench)} shapes")
    elif res.status != Status.PASS:  # timed, and a timed case failed (stale output, impossible timing, ...)
        lines.append(f"  {LABEL.get(res.status, res.status)} {res.message}")
    return lines
