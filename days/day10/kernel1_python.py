"""Kernel 1 with no parallelism: attention as nested loops in plain Python, one (batch, head) at a time.

    python3 days/day10/kernel1_python.py      # small N on the CPU, checked against the grader's fp64 reference

The CUDA kernels of today spread these loops over threads; here they run one after the other:

    for each query row i                       Kernel 1: a row of S, P and O; Kernel 2: a row of a block's Q tile
        for each key j                         scores_kernel: s_ij = scale * (q_i . k_j)
            for each c < d                         the dot product
        m = max_j s_ij                         softmax_kernel: the row's max ...
        p_ij = exp(s_ij - m), l = sum_j p_ij       ... and its sum of exponentials
        o_i = sum_j p_ij v_j / l               pv_kernel
        lse_i = m + log l

Python's floats are fp64, so the loops agree with the fp64 reference to about 1e-15. `subtract_max=False` is the
textbook formula `exp(s) / sum(exp(s))` with nothing subtracted: correct in exact arithmetic, and correct here
too until a score passes the log of the largest finite number of the type the exponentials are computed in. Above
that, exp(s) is inf, l is inf, and o = inf / inf is NaN. `exp` chooses that type: `exp_fp64` (Python's float,
overflowing above 709.78) or `exp_fp32` (the type the course's kernels compute in, overflowing above 88.72).
"""
from __future__ import annotations

import math
import struct


def exp_fp64(x: float) -> float:
    """exp in Python's float, with IEEE overflow: inf, as the GPU's expf gives (math.exp raises instead)."""
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def exp_fp32(x: float) -> float:
    """exp rounded to fp32: inf wherever the fp32 result would be (x above log(FLT_MAX), about 88.72)."""
    y = exp_fp64(x)
    try:
        return struct.unpack("<f", struct.pack("<f", y))[0]
    except OverflowError:  # finite in fp64, too large for fp32
        return math.inf


def attention_head(q, k, v, causal=False, subtract_max=True, exp=exp_fp64):
    """One head: q, k, v are lists of N rows of d numbers. Returns (o, lse): N rows of d numbers, N numbers."""
    n, d = len(q), len(q[0])
    scale = 1.0 / math.sqrt(d)
    o, lse = [], []
    for i in range(n):
        s = []
        for j in range(n):
            if causal and j > i:
                s.append(-math.inf)  # exp(-inf) is 0: a masked key gets no weight
                continue
            dot = 0.0
            for c in range(d):
                dot += q[i][c] * k[j][c]
            s.append(scale * dot)
        # The row's max is what keeps every exponent <= 0. Without it (the textbook formula), exp overflows as soon
        # as one score passes log(largest finite number) and the row becomes NaN.
        m = max(s) if subtract_max else 0.0
        p = [exp(x - m) for x in s]
        total = sum(p)
        o.append([sum(p[j] * v[j][c] for j in range(n)) / total for c in range(d)])
        lse.append(m + math.log(total))
    return o, lse


def attention(q, k, v, causal=False, subtract_max=True, exp=exp_fp64):
    """[B, H, N, d] torch tensors in, (o [B, H, N, d], lse [B, H, N]) as fp64 torch tensors out: every head in turn."""
    import torch

    heads = [[attention_head(q[b, h].tolist(), k[b, h].tolist(), v[b, h].tolist(), causal, subtract_max, exp)
              for h in range(q.shape[1])] for b in range(q.shape[0])]
    o = torch.tensor([[oh for oh, _ in row] for row in heads], dtype=torch.float64)
    lse = torch.tensor([[lh for _, lh in row] for row in heads], dtype=torch.float64)
    return o, lse


def main() -> int:
    import sys
    from pathlib import Path

    import torch

    # The day's task (its inputs, its fp64 reference, its sharp probe) lives in tasks/ at the repository's root.
    sys.path.insert(0, str(next(p for p in Path(__file__).resolve().parents if (p / "course.yaml").is_file())))
    from tasks import attention as task

    shape = (1, 2, 48, 16)  # small enough for Python: about 2·N²·d multiply-adds per head
    gen = torch.Generator().manual_seed(0)
    plain = task.make_inputs(shape, torch.float32, gen, "cpu")
    sharp = task.probes["sharp"](plain, gen)  # q x 30: scores of standard deviation 30
    print(f"shape {list(shape)}; largest |error| against tasks.attention.reference (fp64):")
    for name, inputs in (("plain", plain), ("sharp", sharp)):
        for causal in (False, True):
            ref_o, ref_lse = task.reference(inputs["q"], inputs["k"], inputs["v"], causal)
            for subtract_max, exp in ((True, exp_fp64), (False, exp_fp64), (False, exp_fp32)):
                o, lse = attention(inputs["q"], inputs["k"], inputs["v"], causal, subtract_max, exp)
                bad = int((~torch.isfinite(o)).any(dim=-1).sum())
                err = (o - ref_o).abs().nan_to_num(nan=math.inf).max().item()
                label = f"{'max subtracted' if subtract_max else 'no max, exp in ' + exp.__name__[4:]:<22}"
                print(f"  {name:5} {'causal' if causal else 'full':6} {label} o {err:.1e}"
                      f"{f'   {bad} rows NaN' if bad else ''}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
