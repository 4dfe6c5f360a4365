"""Host microseconds per call at the day-20 lesson model's attention shape (B 8, H 4, N 256, d 64, bf16, causal):
the course's forward and backward called raw and through the autograd.Function of scripts/lessons/day20_measure.py, against
SDPA pinned to its FlashAttention-2 backend, with contiguous inputs and with the model's strided views ([B, N, 3, H,
d] unbound and transposed). At this size a training step is bound by the host, so these decide its time.

    python3 scripts/attention_host_calls.py     # on a GPU machine; prints one line per measurement
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "lessons"))

B, H, N, D = 8, 4, 256, 64


def host_us(torch, fn, n: int = 300, reps: int = 5) -> tuple[float, float]:
    """(host, wall) microseconds per call, the median of reps loops of n calls; they agree while the host is the
    bottleneck (the GPU keeps up with the launches)."""
    runs = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        runs.append(((t1 - t0) / n * 1e6, (time.perf_counter() - t0) / n * 1e6))
    return sorted(runs)[len(runs) // 2]


def main() -> int:
    import torch
    import torch.nn.functional as F
    from day20_measure import attention_fn
    from lesson_table import build_module
    from torch.nn.attention import SDPBackend, sdpa_kernel

    fwd = build_module(torch, "day12", "flash_attention_mma").flash_attention_mma
    bwd = build_module(torch, "day20", "attention_bwd_tc").attention_bwd_tc
    op = attention_fn(torch, fwd, bwd)
    dt = torch.bfloat16
    q, k, v, do = (torch.randn(B, H, N, D, device="cuda", dtype=dt) for _ in range(4))
    o, lse = torch.empty_like(q), torch.empty(B, H, N, device="cuda")
    dq, dk, dv = torch.empty_like(q), torch.empty_like(q), torch.empty_like(q)
    fwd(q, k, v, o, lse, True)
    qs = torch.randn(B, N, 3, H, D, device="cuda", dtype=dt).unbind(2)[0].transpose(1, 2)

    class Null(torch.autograd.Function):  # the Function's own cost: an allocation, nothing computed
        @staticmethod
        def forward(ctx, a, b, c):
            return torch.empty_like(a)

        @staticmethod
        def backward(ctx, g):
            return g, g, g

    base = torch.randn(B, N, 3, H, D, device="cuda", dtype=dt, requires_grad=True)
    qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))

    def strided(f):
        def run():
            a, b, c = base.unbind(2)
            f(a.transpose(1, 2), b.transpose(1, 2), c.transpose(1, 2)).backward(do)
        return run

    def sdpa(a, b, c):
        return F.scaled_dot_product_attention(a, b, c, is_causal=True)

    cases = {
        "empty_like": lambda: torch.empty_like(q),
        "contiguous (already)": lambda: q.contiguous(),
        "contiguous (a copy)": lambda: qs.contiguous(),
        "course forward, raw": lambda: fwd(q, k, v, o, lse, True),
        "course backward, raw": lambda: bwd(q, k, v, o, lse, do, dq, dk, dv, True),
        "SDPA forward, no grad": lambda: sdpa(q, k, v),
        "SDPA fwd+bwd, contiguous": lambda: sdpa(qg, kg, vg).backward(do),
        "course fwd+bwd, contiguous": lambda: op(qg, kg, vg).backward(do),
        "empty Function fwd+bwd": lambda: Null.apply(qg, kg, vg).backward(do),
        "SDPA fwd+bwd, strided": strided(sdpa),
        "course fwd+bwd, strided": strided(op),
    }
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}: host µs per call, B {B} H {H} N {N} d {D} bf16")
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        for name, fn in cases.items():
            h, w = host_us(torch, fn, n=200 if "+" in name else 300)
            print(f"{name:28s} host {h:7.1f}   wall {w:7.1f}")
    return 0


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    sys.exit(main())
