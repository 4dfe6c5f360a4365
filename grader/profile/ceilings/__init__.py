"""Roofline ceilings measured on this GPU, once, and cached per GPU name in .grader/cache/ceilings-<gpu>.json.

- memory: a device-to-device copy of a buffer far larger than L2, bytes read + written per second;
- compute: an FP32 FFMA microbenchmark (ffma_peak.cu here, built once per architecture);
- practical compute: cuBLAS fp32 GEMM of 8192^3 with TF32 off, what tuned CUDA-core code reaches.

Clocks are left alone, as in `grader check` and under `ncu --clock-control none`, so all three are boost-clock
numbers comparable with the kernel's. This runs in a plain process, never under ncu (which would serialize and
replay every kernel).
"""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

from grader.check.build import BuildError, build_extension
from grader.paths import Paths
from grader.results import write_json

HERE = Path(__file__).resolve().parent
COPY_BYTES = 1 << 30  # per direction: far beyond any L2, so no flush is needed
GEMM_N = 8192
FFMA_ITERS = 4096  # about 5 ms per launch on an H100/H200
THREADS = 256


def cache_path(root: Path, gpu: str) -> Path:
    safe = re.sub(r"\W+", "-", gpu).strip("-")
    return Paths(root).cache() / f"ceilings-{safe}.json"


def load_cached(root: Path, gpu: str) -> dict | None:
    try:
        data = json.loads(cache_path(root, gpu).read_text())
    except (OSError, ValueError):
        return None
    needed = ("gpu", "memory_Bps", "ffma_flops")
    return data if isinstance(data, dict) and all(k in data for k in needed) else None


def _timer(torch):
    from grader.check.timing import CudaTimer

    return CudaTimer(torch, warmup=2, min_reps=5, max_reps=30, budget_s=2.0, rel_stderr=0.005)


def _build_ffma(root: Path, cap: tuple[int, int]):
    arch = f"sm_{cap[0]}{cap[1]}"
    try:
        mod, _, _ = build_extension(name=f"grader_ceilings_{arch}", sources=[HERE / "ffma_peak.cu",
                                    HERE / "bindings.cpp"], include_dirs=[],
                                    build_dir=Paths(root).builds() / f"ceilings-{arch}", extra_cuda_cflags=[],
                                    capability=cap, root=root)
    except BuildError as e:
        why = "; ".join(map(str, e.diagnostics[:3])) or e.log[-2000:]
        raise RuntimeError(f"the FFMA microbenchmark (grader/profile/ceilings) does not build: {why}") from None
    return mod


def measure(torch, root: Path) -> dict:
    """Measures the three ceilings on GPU 0 and caches them; returns the cached record."""
    props = torch.cuda.get_device_properties(0)
    cap = torch.cuda.get_device_capability(0)
    timer = _timer(torch)

    n = min(COPY_BYTES, props.total_memory // 8)
    src = torch.ones(n, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    copy = timer.time(lambda: dst.copy_(src))
    memory_Bps = 2 * n / (copy.median_ms * 1e-3)
    src = dst = None  # free 2 GiB before the GEMM's operands

    mod = _build_ffma(root, cap)
    per_sm = getattr(props, "max_threads_per_multi_processor", 2048) // THREADS
    blocks = props.multi_processor_count * max(per_sm, 1)
    out = torch.empty(blocks * THREADS, dtype=torch.float32, device="cuda")
    ffma = timer.time(lambda: mod.ffma_peak(out, 0.9999, 1e-4, FFMA_ITERS, blocks, THREADS))
    ffma_flops = 2.0 * mod.ffma_per_thread_iter() * FFMA_ITERS * blocks * THREADS / (ffma.median_ms * 1e-3)

    g = GEMM_N if props.total_memory >= 8 * 2**30 else GEMM_N // 2
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False  # true fp32: the matmul track's yardstick
    try:
        a, b = (torch.randn(g, g, device="cuda") for _ in range(2))
        c = torch.empty(g, g, device="cuda")
        gemm = timer.time(lambda: torch.mm(a, b, out=c))
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
    cublas_flops = 2.0 * g**3 / (gemm.median_ms * 1e-3)

    record = {
        "gpu": props.name, "capability": f"{cap[0]}.{cap[1]}", "sms": props.multi_processor_count,
        "memory_Bps": memory_Bps, "ffma_flops": ffma_flops, "cublas_flops": cublas_flops,
        "how": {"copy_bytes_each_way": n, "copy_ms": copy.median_ms, "ffma_launch": [blocks, THREADS, FFMA_ITERS],
                "ffma_ms": ffma.median_ms, "gemm_n": g, "gemm_ms": gemm.median_ms, "clocks": "not locked (boost)"},
        "torch": torch.__version__, "measured": time.strftime("%Y-%m-%d %H:%M"),
    }
    write_json(cache_path(root, props.name), record)
    return record
