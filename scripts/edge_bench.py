"""The course's reference kernels against the libraries, timed outside the grader (issue 37): each solution built
the way `grader check` builds it, then timed by triton.testing.do_bench (median, L2 flushed between calls) beside
the library on the same inputs, and by CUDA events in a loop, so that two timers answer the same question.

- attention backward: day 20's `attention_bwd_tc` fed SDPA flash's own forward (o, lse), against the backward of
  SDPA's flash and cuDNN backends (torch.autograd.grad through a graph built once under each: only the backward's
  kernels run, on the forward outputs each library saved);
- attention forward: day 12's `flash_attention_mma` (the wgmma/TMA kernel on sm_90a) against SDPA flash and cuDNN;
- GEMM: day 11's `matmul_wgmma` against torch.matmul (cuBLAS);
- softmax: day 05's `softmax` against a copy of the same bytes and torch.softmax.

    python3 scripts/edge_bench.py OUT_DIR [--only bwd fwd gemm softmax] [--quick [PART ...]] [--define DAY:MACRO=V]
    python3 scripts/edge_bench.py --compare A.json B.json   (two saved runs side by side; no GPU)
    python3 scripts/edge_bench.py --ncu-summary RUN.csv     (a few lines of an `ncu --csv --page details` run)

Writes OUT_DIR/edge-bench-<gpu>.json and .md: per case, our time, the library's and the ceiling's, TFLOP/s (GB/s
for softmax), × each, and our output's largest difference from the library's, checked against the exercise's
tolerance widened as for the grader's timed calls: a row that fails is marked WRONG and the run exits 1. Attention
FLOPs: the FlashAttention papers' convention, 4·B·H·N²·d forward and 2.5 times that backward, halved when causal.
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "lessons"))

from lesson_table import build_module, median_event_ms, solution_with_defines  # noqa: E402

ATTN_SHAPES = [(4, 16, 4096, 128), (4, 16, 4096, 64), (1, 16, 16384, 128)]
GEMM_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (3000, 5000, 2000)]
SOFTMAX_SHAPES = [(4096, 4096), (16384, 1024), (8192, 8192), (64, 262144)]


# Each part of the bench: the day and exercise whose solution it times.
PARTS = {"bwd": ("day20", "attention_bwd_tc"), "fwd": ("day12", "flash_attention_mma"),
         "gemm": ("day11", "matmul_wgmma"), "softmax": ("day05", "softmax")}

DEFINES: dict[str, list[str]] = {}  # --define: day -> ["MACRO=V", ...], each day's solution built with them


def _source(day: str) -> Path:
    return solution_with_defines(day, DEFINES.get(day, []))


def _exercise(day: str, exercise: str):
    from grader.course import load_course

    return next(e for e in load_course(ROOT / "course.yaml").day(day).exercises if e.name == exercise)


def _op(torch, day: str, exercise: str):
    return getattr(build_module(torch, day, exercise, _source(day)), _exercise(day, exercise).op)


DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}


def wrong(part: str, dtype: str, outputs: dict) -> str | None:
    """None where each output (name -> (ours, the library's)) is what these inputs give; else what is wrong. A
    table of speeds must not carry a wrong kernel's row as evidence: the bound is the exercise's tolerance
    (course.yaml), widened as the grader widens it for a timed call's output, since the reference here is the
    library's rounded result, not fp64. A row without the library's result is not judged."""
    from grader.check.worker import widened_compare

    ex = _exercise(*PARTS[part])
    for name, (out, ref) in outputs.items():
        if ref is None:
            continue
        tol = ex.tolerance(name, DTYPES[dtype])
        c = widened_compare(out, ref.double(), tol)
        if not c.ok:
            return f"{name}: {c.message}"
    return None


def nan_like(t):
    """Outputs start as NaN: an element the kernel never writes shows in the max diff (as nan)."""
    return t.new_full(t.shape, float("nan"))


def _timers(torch, fn) -> dict:
    from triton.testing import do_bench

    return {"do_bench_ms": float(do_bench(fn, warmup=25, rep=200, return_mode="median")),
            "events_ms": float(median_event_ms(torch, fn, reps=30))}


def _row(kind, label, dtype, ours, libs: dict, work: float, unit: str, diff, bad: str | None = None) -> dict:
    row = {"kind": kind, "case": label, "dtype": dtype, "ours": ours, "work": work, "unit": unit,
           "max_abs_diff": diff, "wrong": bad}
    scale = 1e12 if unit == "TFLOP/s" else 1e9
    row["ours_rate"] = work / (ours["do_bench_ms"] * 1e-3) / scale
    for name, t in libs.items():
        row[name] = t
        if t is not None:
            row[f"x_{name}"] = t["do_bench_ms"] / ours["do_bench_ms"]
    return row


def _attention(torch, rows: list, which: str, quick: bool) -> None:
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    ours = _op(torch, *PARTS[which])
    for shape in ATTN_SHAPES[:1] if quick else ATTN_SHAPES:
        b, h, n, d = shape
        for dtype in (torch.float16, torch.bfloat16):
            for causal in (False, True):
                g = torch.Generator(device="cuda").manual_seed(b * 1000 + n + d + 7 * causal + (dtype == torch.bfloat16))
                q, k, v, dout = (torch.randn(shape, generator=g, device="cuda", dtype=dtype) for _ in range(4))
                flops = 4 * b * h * n * n * d / (2 if causal else 1) * (2.5 if which == "bwd" else 1.0)
                label = f"{b}x{h}x{n}x{d}" + (" causal" if causal else "")
                libs, refs = {}, {}
                for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
                    try:
                        qq, kk, vv = (t.detach().clone().requires_grad_(which == "bwd") for t in (q, k, v))
                        with sdpa_kernel(backend):
                            if which == "fwd":
                                libs[name] = _timers(torch, lambda: F.scaled_dot_product_attention(
                                    qq, kk, vv, is_causal=causal))
                                refs[name] = F.scaled_dot_product_attention(qq, kk, vv, is_causal=causal)
                            else:
                                out = F.scaled_dot_product_attention(qq, kk, vv, is_causal=causal)
                                libs[name] = _timers(torch, lambda: torch.autograd.grad(
                                    out, (qq, kk, vv), dout, retain_graph=True))
                                refs[name] = torch.autograd.grad(out, (qq, kk, vv), dout, retain_graph=True)
                    except RuntimeError as e:  # this backend does not take these inputs
                        libs[name] = None
                        print(f"  {name} {label} {dtype}: {str(e).splitlines()[0][:120]}", flush=True)
                o, lse = torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, causal)[:2]
                name = str(dtype).split(".")[-1]
                if which == "fwd":
                    o2, lse2 = nan_like(q), nan_like(lse)  # flash's lse: [B, H, N] fp32, as ours
                    mine = _timers(torch, lambda: ours(q, k, v, o2, lse2, causal))
                    ref = refs.get("flash")
                    diff = float((o2.float() - ref.float()).abs().max()) if ref is not None else None
                    bad = wrong(which, name, {"o": (o2, ref), "lse": (lse2, lse)})
                else:
                    dq, dk, dv = (nan_like(q) for _ in range(3))
                    mine = _timers(torch, lambda: ours(q, k, v, o, lse, dout, dq, dk, dv, causal))
                    ref = refs.get("flash")
                    diff = (max(float((a.float() - r.float()).abs().max()) for a, r in zip((dq, dk, dv), ref))
                            if ref is not None else None)
                    bad = wrong(which, name, dict(zip(("dq", "dk", "dv"), zip((dq, dk, dv), ref or (None,) * 3))))
                rows.append(_row(f"attention_{which}", label, name, mine, libs, flops, "TFLOP/s", diff, bad))
                print(json.dumps(rows[-1]), flush=True)


def _gemm(torch, rows: list, quick: bool) -> None:
    ours = _op(torch, *PARTS["gemm"])
    for m, n, k in GEMM_SHAPES[:1] if quick else GEMM_SHAPES:
        for dtype in (torch.float16, torch.bfloat16):
            g = torch.Generator(device="cuda").manual_seed(m * 7 + n * 3 + k)
            a = torch.randn((m, k), generator=g, device="cuda", dtype=dtype)
            b = torch.randn((k, n), generator=g, device="cuda", dtype=dtype)
            c_lib = torch.empty((m, n), device="cuda", dtype=dtype)
            c = nan_like(c_lib)
            libs = {"cublas": _timers(torch, lambda: torch.matmul(a, b, out=c_lib))}
            mine = _timers(torch, lambda: ours(a, b, c))
            diff = float((c.float() - c_lib.float()).abs().max())
            name = str(dtype).split(".")[-1]
            rows.append(_row("gemm", f"{m}x{n}x{k}", name, mine, libs, 2.0 * m * n * k, "TFLOP/s", diff,
                             wrong("gemm", name, {"c": (c, c_lib)})))
            print(json.dumps(rows[-1]), flush=True)


def _softmax(torch, rows: list, quick: bool) -> None:
    ours = _op(torch, *PARTS["softmax"])
    for r, c in SOFTMAX_SHAPES[-1:] if quick else SOFTMAX_SHAPES:
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            g = torch.Generator(device="cuda").manual_seed(r * 13 + c)
            x = torch.randn((r, c), generator=g, device="cuda", dtype=torch.float32).to(dtype)
            out, copy = nan_like(x), torch.empty_like(x)
            libs = {"copy": _timers(torch, lambda: copy.copy_(x)),
                    "torch_softmax": _timers(torch, lambda: torch.softmax(x, dim=-1))}
            mine = _timers(torch, lambda: ours(x, out))
            ref = torch.softmax(x.double(), dim=-1)
            diff = float((out.double() - ref).abs().max())
            name = str(dtype).split(".")[-1]
            rows.append(_row("softmax", f"{r}x{c}", name, mine, libs, 2.0 * x.numel() * x.element_size(), "GB/s",
                             diff, wrong("softmax", name, {"out": (out, ref)})))
            print(json.dumps(rows[-1]), flush=True)


# Each kernel's references in a saved run's rows (x_<name>): the library, and the ceiling (none for GEMM: cuBLAS is).
REFERENCES = {"attention_fwd": ("flash", "cudnn"), "attention_bwd": ("flash", "cudnn"), "gemm": ("cublas", None),
              "softmax": ("torch_softmax", "copy")}


def table(doc: dict) -> str:
    built = "; ".join(f"{d} built with {', '.join(ms)}" for d, ms in sorted((doc.get("defines") or {}).items()))
    lines = [f"{doc['gpu']} (torch {doc['torch']}, {doc['date']}{'; ' + built if built else ''}): do_bench medians; "
             "× = the library's time / ours (above 1: ours is faster).", "",
             "| kernel | case | dtype | ours ms | rate | × library | × ceiling | events/do_bench (ours) | max diff |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    def fmt(v, spec=".2f"):
        return "-" if v is None else format(v, spec)

    for r in doc["rows"]:
        lib, ceil = REFERENCES[r["kind"]]
        x_ceil = r.get(f"x_{ceil}") if ceil else None
        lines.append(f"| {r['kind']} | {r['case']} | {r['dtype']} | {r['ours']['do_bench_ms']:.3f} | "
                     f"{r['ours_rate']:.0f} {r['unit']} | {fmt(r.get(f'x_{lib}'))} | {fmt(x_ceil)} | "
                     f"{r['ours']['events_ms'] / r['ours']['do_bench_ms']:.2f} | {diff_cell(r)} |")
    return "\n".join(lines)


def diff_cell(row: dict) -> str:
    """The max diff, and WRONG (what is wrong) where the output failed its check: that row's speed is no evidence."""
    d = "-" if row["max_abs_diff"] is None else format(row["max_abs_diff"], ".1e")
    return f"{d} **WRONG** ({row['wrong']})" if row.get("wrong") else d


def compare(base: dict, other: dict) -> str:
    """Two saved runs side by side (e.g. the default build and one with a knob, timed in one call): per case of
    both, each one's rate and × ceiling (× library where there is none), and the other's rate over the base's."""
    def built(doc):
        ds = doc.get("defines") or {}
        return "; ".join(f"{d} with {', '.join(ms)}" for d, ms in sorted(ds.items())) or "the defaults"

    def fmt(v):
        return "-" if v is None else f"{v:.2f}"

    by_key = {(r["kind"], r["case"], r["dtype"]): r for r in other["rows"]}
    lines = [f"{base['gpu']}, {base['date']} / {other['date']}: A = {built(base)}, B = {built(other)}; do_bench "
             "medians, × = the reference's time / ours.", "",
             "| kernel | case | dtype | A rate | B rate | B / A | A × ref | B × ref | B max diff |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in base["rows"]:
        o = by_key.get((r["kind"], r["case"], r["dtype"]))
        if o is None:
            continue
        lib, ceil = REFERENCES[r["kind"]]
        ref = f"x_{ceil or lib}"
        lines.append(f"| {r['kind']} | {r['case']} | {r['dtype']} | {r['ours_rate']:.0f} {r['unit']} | "
                     f"{o['ours_rate']:.0f} {o['unit']} | {o['ours_rate'] / r['ours_rate']:.3f} | "
                     f"{fmt(r.get(ref))} | {fmt(o.get(ref))} | "
                     f"{diff_cell(o)} |")
    return "\n".join(lines)


# From an `ncu --csv --page details` run (scripts/device_run.sh EDGE_NCU): the lines worth reading first.
NCU_KEEP = ("Duration", "SM Frequency", "Compute (SM) Throughput", "Memory Throughput", "DRAM Throughput",
            "L2 Cache Throughput", "Issue Slots Busy", "Achieved Occupancy", "Registers Per Thread",
            "Warp Cycles Per Issued Instruction", "Grid Size", "Block Size", "Cluster Size",
            "Dynamic Shared Memory Per Block", "Static Shared Memory Per Block", "Waves Per SM")
NCU_STALL = "smsp__average_warps_issue_stalled_"


def ncu_summary(text: str, stalls: int = 8) -> str:
    """Per profiled kernel, NCU_KEEP's metrics and the tensor pipe's utilisation, then its largest warp stalls per
    issued instruction. Columns are found by their header names (the rule columns after the metric's vary)."""
    rows = list(csv.DictReader(line for line in text.splitlines() if line.startswith('"')))
    if not rows or "Metric Name" not in rows[0]:
        return "no kernel in this ncu run (did the --kernel-name regex match nothing?)"
    lines = []
    for kernel in dict.fromkeys(r["Kernel Name"] for r in rows):
        mine = [r for r in rows if r["Kernel Name"] == kernel]
        lines.append(kernel.split("(")[0])
        lines += [f"  {r['Metric Name']}: {r['Metric Value']} {r['Metric Unit']}".rstrip() for r in mine
                  if r["Metric Name"] in NCU_KEEP or "pipe_tensor" in r["Metric Name"]]
        top = sorted(((float(r["Metric Value"].replace(",", "")), r["Metric Name"]) for r in mine
                      if r["Metric Name"].startswith(NCU_STALL)), reverse=True)[:stalls]
        lines += [f"  stall {name[len(NCU_STALL):].split('_per_issue')[0]}: {v:.2f}" for v, name in top]
    return "\n".join(lines)


def parts_to_time(only: list[str] | None, defines: dict) -> list[str]:
    """--only as given; without it, the parts of the days built with knobs (a knob is timed on its own day's part),
    or every part when there are none."""
    if only:
        return only
    knobbed = [part for part, (day, _) in PARTS.items() if day in defines]
    return knobbed or list(PARTS)


def quick_part(quick: list[str] | None, part: str) -> bool:
    """--quick alone: every part on one shape; --quick PART ...: those parts only; absent: none."""
    return quick is not None and (not quick or part in quick)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path, nargs="?", help="the folder for the run's .json and .md")
    p.add_argument("--compare", nargs=2, type=Path, metavar=("A.json", "B.json"),
                   help="no timing: two saved runs side by side (B's rate over A's per case)")
    p.add_argument("--ncu-summary", type=Path, metavar="RUN.csv",
                   help="no timing: the first lines to read of an `ncu --csv --page details` run")
    p.add_argument("--only", nargs="+", choices=list(PARTS),
                   help="parts to time (default: every part, or with --define only the defined days' parts)")
    p.add_argument("--quick", nargs="*", choices=list(PARTS), metavar="PART",
                   help="one shape of each part named (of every part when none is named): a smoke run, or the one "
                        "shape a knob changes")
    p.add_argument("--define", action="append", default=[], metavar="DAY:MACRO=V[,MACRO=V]",
                   help="build that day's solution with these macros (its knobs, e.g. day05:SOFTMAX_CLUSTER=1); "
                        "the output's name and each row say so")
    a = p.parse_args(argv)
    if a.compare:
        try:
            docs = [json.loads(f.read_text()) for f in a.compare]
        except (OSError, ValueError) as e:
            print(f"edge_bench --compare: cannot read a saved run: {e}", file=sys.stderr)
            return 2
        print(compare(*docs))
        return 0
    if a.ncu_summary:
        try:
            print(ncu_summary(a.ncu_summary.read_text(errors="replace")))
        except OSError as e:
            print(f"edge_bench --ncu-summary: cannot read {a.ncu_summary}: {e}", file=sys.stderr)
            return 2
        return 0
    if a.out is None:
        p.error("give OUT_DIR (where the run's .json and .md go), or --compare A.json B.json")
    for spec in a.define:
        day, _, macros = spec.partition(":")
        if not day.startswith("day") or not macros:
            p.error(f"--define {spec!r}: give DAY:MACRO=V[,MACRO=V] (e.g. day05:SOFTMAX_CLUSTER=1)")
        if day not in {d for d, _ in PARTS.values()}:
            p.error(f"--define {spec!r}: the bench times no solution of {day} "
                    f"(its days: {', '.join(sorted(d for d, _ in PARTS.values()))})")
        DEFINES.setdefault(day, []).extend(m for m in macros.split(",") if m)
    only = parts_to_time(a.only, DEFINES)
    import torch

    if not torch.cuda.is_available():
        print("edge_bench needs a CUDA GPU: it times the solutions against the libraries (run it on the GPU "
              "machine, e.g. in scripts/device_run.sh's MEASURE-like calls)", file=sys.stderr)
        return 2
    rows: list = []
    for part in only:
        quick = quick_part(a.quick, part)
        if part in ("bwd", "fwd"):
            _attention(torch, rows, part, quick)
        elif part == "gemm":
            _gemm(torch, rows, quick)
        else:
            _softmax(torch, rows, quick)
    name = torch.cuda.get_device_name(0)
    slug = next((w.lower() for w in name.split() if w[:1].isalpha() and any(ch.isdigit() for ch in w)), "gpu")
    doc = {"gpu": name, "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"), "defines": DEFINES,
           "rows": rows}
    # a build with knobs gets its own file (no "=" in the name: the device lease returns no such file)
    tag = "".join(f"-{d}-" + "-".join(m.replace("=", "_") for m in ms) for d, ms in sorted(DEFINES.items()))
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / f"edge-bench-{slug}{tag}.json").write_text(json.dumps(doc, indent=1) + "\n")
    (a.out / f"edge-bench-{slug}{tag}.md").write_text(table(doc) + "\n")
    print(table(doc))
    bad = [r for r in rows if r.get("wrong")]
    if bad:
        print(f"edge_bench: {len(bad)} row(s) with a wrong output (marked WRONG above): their times are not evidence",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
