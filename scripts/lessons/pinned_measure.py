"""Day 18's host-device copy table: pageable against pinned host memory, each way, at three sizes; then a copy
beside a matrix product, one after the other against overlapped on two streams, on this GPU.

    python3 scripts/lessons/pinned_measure.py OUT_DIR              # writes OUT_DIR/pinned.json and OUT_DIR/pinned.md
    python3 scripts/lessons/pinned_measure.py --insert pinned.json # regenerates day 18's table from a saved run
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).parent))

from lesson_table import main as lesson_main  # noqa: E402

MIB = 1 << 20
SIZES_MIB = (1, 16, 256)
REPS = 10


def _median(xs):
    return sorted(xs)[len(xs) // 2]


def _wall_ms(torch, fn) -> float:
    """Host wall time of fn through a device synchronize: a pageable copy is staged by the host, so the GPU's
    events alone would not see all of it."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return _median(times)


def measure(_args=None) -> dict:
    import torch

    copies = []
    for mib in SIZES_MIB:
        n = mib * MIB // 4
        dev = torch.randn(n, device="cuda")
        for pinned in (False, True):
            host = torch.randn(n).pin_memory() if pinned else torch.randn(n)
            h2d = _wall_ms(torch, lambda: dev.copy_(host, non_blocking=True))
            d2h = _wall_ms(torch, lambda: host.copy_(dev, non_blocking=True))
            copies.append({"mib": mib, "pinned": pinned, "h2d_ms": h2d, "d2h_ms": d2h,
                           "h2d_GBps": mib * MIB / h2d / 1e6, "d2h_GBps": mib * MIB / d2h / 1e6})

    # A copy of 256 MiB in and a bf16 product sized to take about as long: serial, then on two streams.
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    dev = torch.empty(256 * MIB // 4, device="cuda")
    side = torch.cuda.Stream()
    overlap = []
    for pinned in (False, True):
        host = torch.randn(dev.numel()).pin_memory() if pinned else torch.randn(dev.numel())
        compute = _wall_ms(torch, lambda: a @ b)
        copy = _wall_ms(torch, lambda: dev.copy_(host, non_blocking=True))
        serial = _wall_ms(torch, lambda: (dev.copy_(host, non_blocking=True), a @ b))

        def both():
            with torch.cuda.stream(side):
                dev.copy_(host, non_blocking=True)
            a @ b

        overlapped = _wall_ms(torch, both)
        overlap.append({"pinned": pinned, "compute_ms": compute, "copy_ms": copy, "serial_ms": serial,
                        "overlapped_ms": overlapped})
    return {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "copies": copies, "overlap": overlap}


def table(data: dict) -> str:
    lines = [f"Measured on {data['gpu']} (torch {data['torch']}); "
             f"host wall time through a synchronize, median of {REPS}.", "",
             "| size | host memory | host → device GB/s | device → host GB/s |", "|---|---|---|---|"]
    for r in data["copies"]:
        lines.append(f"| {r['mib']} MiB | {'pinned' if r['pinned'] else 'pageable'} | {r['h2d_GBps']:.1f} | "
                     f"{r['d2h_GBps']:.1f} |")
    lines += ["", "A 256 MiB host → device copy beside an 8192³ bf16 matrix product:", "",
              "| host memory | product ms | copy ms | one after the other ms | on two streams ms | saved ms |",
              "|---|---|---|---|---|---|"]
    for r in data["overlap"]:
        lines.append(f"| {'pinned' if r['pinned'] else 'pageable'} | {r['compute_ms']:.2f} | {r['copy_ms']:.2f} | "
                     f"{r['serial_ms']:.2f} | {r['overlapped_ms']:.2f} | {r['serial_ms'] - r['overlapped_ms']:.2f} |")
    return "\n".join(lines)


def main() -> int:
    return lesson_main(name="pinned", lesson="day18", block="pinned-measured", measure=measure, table=table)


if __name__ == "__main__":
    sys.exit(main())
