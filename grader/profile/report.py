"""Rendering a profile for people: one column per kernel, one row per speed-of-light number, then a line per
kernel saying which roof it sits under."""
from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

# ncu metric names behind the table's rows (JSON keeps every metric ncu reported).
# Older Nsight Compute versions name it dram__throughput; 2025.x (on our H200) gpu__dram_throughput.
DRAM_PCT = ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
            "dram__throughput.avg.pct_of_peak_sustained_elapsed")
MEM_PCT = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
SM_PCT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
OCC_ACHIEVED = "sm__warps_active.avg.pct_of_peak_sustained_active"
OCC_THEORETICAL = "sm__maximum_warps_per_active_cycle_pct"
REGISTERS = "launch__registers_per_thread"
SMEM_STATIC = "launch__shared_mem_per_block_static"
SMEM_DYNAMIC = "launch__shared_mem_per_block_dynamic"
L2_HIT = "lts__t_sector_hit_rate.pct"


def _pct(v) -> str:
    return "-" if v is None else f"{v:.1f} %"


def _duration(s) -> str:
    if s is None:
        return "-"
    return f"{s * 1e6:,.1f} µs" if s < 1e-3 else f"{s * 1e3:,.2f} ms"


def _bytes(v) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f} B" if v < 1024 else f"{v / 1024:,.1f} KiB"


def _flops(v) -> str:
    if v is None:
        return "-"
    return f"{v / 1e12:.2f} TFLOP/s" if v >= 1e11 else f"{v / 1e9:,.1f} GFLOP/s"


def _ai(s: dict) -> str:
    if s["ai"] is not None:
        return f"{s['ai']:,.2f} FLOP/B"
    return "∞ (no DRAM traffic)" if s["bound"] == "compute" else "-"  # JSON has no infinity: see Summary


def _spills(p) -> str:
    if p is None:
        return "[dim]? (not in ptxas report)[/]"
    s = f"{p['spill_stores']} B st / {p['spill_loads']} B ld"
    return f"[red]{s}[/]" if p["spill_stores"] or p["spill_loads"] else s


def rows(k: dict) -> list[tuple[str, str]]:
    m, s = k["metrics"], k["summary"]
    smem = [m.get(SMEM_STATIC), m.get(SMEM_DYNAMIC)]
    smem_total = None if all(x is None for x in smem) else sum(x or 0 for x in smem)
    regs = m.get(REGISTERS)
    bound = s["bound"] + (f" ({s['pct_of_roof']:.0%} of roof)" if s.get("pct_of_roof") is not None else "")
    return [
        ("duration", _duration(s["duration_s"])),
        ("DRAM throughput (% of peak)", _pct(next((m[k] for k in DRAM_PCT if m.get(k) is not None), None))),
        ("memory throughput (busiest level)", _pct(m.get(MEM_PCT))),
        ("SM throughput (% of peak)", _pct(m.get(SM_PCT))),
        ("occupancy achieved / theoretical", f"{_pct(m.get(OCC_ACHIEVED))} / {_pct(m.get(OCC_THEORETICAL))}"),
        ("registers / thread", "-" if regs is None else f"{regs:.0f}"),
        ("shared memory / block (static+dyn.)", _bytes(smem_total)),
        ("L2 hit rate", _pct(m.get(L2_HIT))),
        ("FP32+FP16 FLOP/s", _flops(s["flop_per_s"])),
        ("DRAM bandwidth", "-" if s["dram_Bps"] is None else f"{s['dram_Bps'] / 1e9:,.0f} GB/s"),
        ("arithmetic intensity", _ai(s)),
        ("spills (ptxas)", _spills(k.get("ptxas"))),
        ("roofline side", bound),
    ]


def ceilings_line(c: dict) -> str:
    cub = f", cuBLAS fp32 GEMM {c['cublas_flops'] / 1e12:.1f} TFLOP/s" if c.get("cublas_flops") else ""
    ridge = c["ffma_flops"] / c["memory_Bps"]
    return (f"ceilings measured on this GPU: memory {c['memory_Bps'] / 1e9:,.0f} GB/s (device copy), FP32 FFMA "
            f"{c['ffma_flops'] / 1e12:.1f} TFLOP/s{cub}; ridge {ridge:.1f} FLOP/B")


def render(console: Console, res: dict, rel) -> None:
    """res: one exercise's profile (the JSON record); rel: path -> text relative to the course root."""
    shape = "x".join(map(str, res["shape"]))
    console.print(f"[bold]{res['day']} · {res['exercise']}[/] · {res['variant']} · {res['dtype']} {shape} · "
                  f"{res['gpu']} (sm_{res['capability'].replace('.', '')})", highlight=False)
    t = Table(title="Nsight Compute, one call (clocks not locked, caches flushed per pass)", title_justify="left",
              box=None, pad_edge=False)
    t.add_column("")
    for k in res["kernels"]:
        t.add_column(escape(k["short"]), justify="right", overflow="fold")
    per_kernel = [rows(k) for k in res["kernels"]]
    for i, (label, _) in enumerate(per_kernel[0]):
        t.add_row(label, *[r[i][1] for r in per_kernel])
    console.print(t)
    console.print(ceilings_line(res["ceilings"]), style="dim", highlight=False)
    for k in res["kernels"]:
        console.print(f"[bold]{escape(k['short'])}[/]: {escape(k['verdict'])}", highlight=False)
    paths = res["paths"]
    console.print(f"report: {rel(paths['report'])} (open it in the Nsight Compute GUI: ncu-ui)", highlight=False)
    if paths.get("roofline"):
        console.print(f"roofline: {rel(paths['roofline'])}", highlight=False)
    console.print(f"json: {rel(paths['json'])}", highlight=False)
    for note in res.get("notes", []):
        console.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
