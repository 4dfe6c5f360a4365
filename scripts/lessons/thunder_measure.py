"""Day 13's Thunder note: whether Lightning Thunder (`thunder.jit`, a compiler for PyTorch programs) installs and
runs beside the day's three routes, and, where it runs on a GPU, what it makes of a softmax: which executor took the
work, the first call's cost (tracing and compiling) and the time per call against torch.softmax on the day's
benchmark shapes. A failure to import or to run is the result, recorded with its reason.

    python3 scripts/lessons/thunder_measure.py OUT_DIR            # OUT_DIR/thunder.json and thunder.md
    python3 scripts/lessons/thunder_measure.py --insert measured/thunder-<machine>.json   # into day 13's lesson

Thunder installs from the registry as `lightning-thunder`. The GPU machine has no network: its wheels (with
looseversion, lightning-utilities, optree, opt_einsum and dill, for that machine's Python) travel in .whl/thunder/,
which scripts/device_run.sh installs for MEASURE=thunder alone (in .whl/ itself every run would get them, and
optree would shadow the machine's own)."""
from __future__ import annotations

import importlib.metadata
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lesson_table import main as lesson_main  # noqa: E402
from lesson_table import median_event_ms  # noqa: E402

SHAPES = [(4096, 4096), (16384, 1024), (8192, 8192), (1024, 32768)]  # day 13's benchmark shapes


def _version(pkg: str) -> str | None:
    try:
        return importlib.metadata.version(pkg)
    except importlib.metadata.PackageNotFoundError:
        return None


def _first_line(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}".rstrip(": ")


def measure(a) -> dict:
    import torch

    data = {"torch": torch.__version__, "thunder": _version("lightning-thunder"),
            "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None}
    if data["thunder"] is None:
        return {**data, "status": "not installed", "why": "pip install lightning-thunder"}
    try:
        import thunder
    except Exception as e:  # an import that breaks on this torch is the finding
        return {**data, "status": "does not import", "why": _first_line(e)}

    def softmax(x):
        return torch.softmax(x, dim=-1)

    device = "cuda" if data["gpu"] else "cpu"
    try:
        jitted = thunder.jit(softmax)
        x = torch.randn(64, 1000, device=device)
        t0 = time.perf_counter()
        y = jitted(x)
        if device == "cuda":
            torch.cuda.synchronize()
        first_s = time.perf_counter() - t0
        ok = bool(torch.allclose(y, torch.softmax(x, -1), rtol=1e-5, atol=1e-7))
        trace = str(thunder.last_traces(jitted)[-1])
    except Exception as e:
        return {**data, "status": "does not run", "why": _first_line(e)}
    executors = sorted({name for name in ("nvFusion", "torch.softmax", "triton", "cudnn", "torchcompile")
                        if name in trace})
    data.update(status="runs", device=device, correct=ok, first_call_s=first_s, executors=executors, rows=[])
    if device == "cuda":
        for rows, cols in SHAPES:
            x = torch.randn(rows, cols, device="cuda")
            ms_thunder = median_event_ms(torch, lambda: jitted(x), reps=30)  # noqa: B023
            ms_torch = median_event_ms(torch, lambda: torch.softmax(x, -1), reps=30)  # noqa: B023
            data["rows"].append({"shape": [rows, cols], "thunder_ms": ms_thunder, "torch_ms": ms_torch})
    return data


def table(data: dict) -> str:
    where = f"on {data['gpu']}" if data.get("gpu") else "on a machine without a GPU"
    head = (f"Measured {where}: lightning-thunder "
            f"{data.get('thunder') or '(none)'} with torch {data['torch']}.")
    if data["status"] != "runs":
        return f"{head} Thunder **{data['status']}** there: `{data['why']}`."
    lines = [f"{head} `thunder.jit(softmax)` runs on the {'GPU' if data['device'] == 'cuda' else data['device'].upper()}, "
             f"{'matching' if data['correct'] else 'NOT matching'} torch.softmax; the first call (tracing and "
             f"compiling) took {data['first_call_s']:.1f} s; the work went to: "
             f"{', '.join(data['executors']) or 'no executor named in the trace'}."]
    if data["rows"]:
        lines += ["", "| rows × cols | thunder ms | torch.softmax ms | thunder × torch |", "|---|---:|---:|---:|"]
        lines += [f"| {r['shape'][0]} × {r['shape'][1]} | {r['thunder_ms']:.3f} | {r['torch_ms']:.3f} | "
                  f"{r['torch_ms'] / r['thunder_ms']:.2f} |" for r in data["rows"]]
    return "\n".join(lines)


def main() -> int:
    return lesson_main(name="thunder", lesson="day13", block="thunder-measured", measure=measure, table=table)


if __name__ == "__main__":
    sys.exit(main())
