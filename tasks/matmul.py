"""Matrix multiply: c[M, N] = a[M, K] @ b[K, N], all row-major, c in the inputs' dtype.

The matmul track (days 6-9) runs on CUDA cores: fp16/bf16 inputs are multiplied and accumulated in fp32, and
only the result is rounded to the input type. The honest yardstick is therefore cuBLAS's fp32 GEMM (TF32 off)
of the same shape, timed in the same run: that is this task's `ceiling`. `library` is what torch.matmul does in
the inputs' own dtype, which for fp16/bf16 means tensor cores (day 11's subject), so the report shows both.
A case's shape is [M, N, K].
"""
from __future__ import annotations

import torch

LIBRARY = "torch.matmul"  # what the report calls the library op


def make_inputs(shape, dtype, generator, device):
    m, n, k = shape
    # Entries of size k**-0.25 make every output an O(1) sum of k terms whatever k is, so one absolute
    # tolerance per dtype fits every shape. Fresh values for every case.
    s = float(k) ** -0.25
    a = torch.randn((m, k), generator=generator, device=device, dtype=torch.float32) * s
    b = torch.randn((k, n), generator=generator, device=device, dtype=torch.float32) * s
    return {"a": a.to(dtype), "b": b.to(dtype)}


def make_outputs(inputs):
    a, b = inputs["a"], inputs["b"]
    return {"c": torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)}


def reference(a, b):
    # The inputs as stored (already rounded to fp16/bf16) times each other in fp64: only the kernel's
    # accumulation order and the final rounding separate a correct kernel from this.
    return (a.double() @ b.double(),)


def library(a, b, c):
    torch.matmul(a, b, out=c)


def ceiling(a, b):
    """cuBLAS fp32 GEMM (no TF32) of the same shape on fp32 copies made here, outside the timed call."""
    torch.backends.cuda.matmul.allow_tf32 = False
    a32, b32 = a.float().contiguous(), b.float().contiguous()
    c32 = torch.empty((a.shape[0], b.shape[1]), dtype=torch.float32, device=a.device)
    return "cuBLAS fp32", lambda: torch.mm(a32, b32, out=c32)


def error_blocks(name, shape, **params):
    # Error maps (grader/check/error_map.py): C in blocks of 8 x 8, of which the course's tiles (32 to 256) and an
    # MMA's accumulator fragment (16 x 8) are whole numbers: a bug in every other 8 rows of a fragment shows, and a
    # large C merges blocks by powers of two into its tiles. Rows and columns are C's i and j.
    return {"block": [8, 8], "rows": "row", "cols": "column", "diagonal": True}


def flops(a, b):
    return 2 * a.shape[0] * a.shape[1] * b.shape[1]


# Keep fp32 cases in true fp32 whatever the environment says (torch.matmul would otherwise use TF32).
torch.backends.cuda.matmul.allow_tf32 = False
