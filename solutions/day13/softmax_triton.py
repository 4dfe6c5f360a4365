"""Day 13, route 3: Triton. The kernel is written per block of a row, not per thread: Triton picks the thread
layout, vector widths and shuffles. It compiles once per dtype and per value of each `tl.constexpr`, and runs on
torch's current stream by itself.

Rows of up to ONE_PASS_MAX elements are held in registers whole: one read, one write, the least a softmax can
move. Longer rows take two sweeps (an online max and sum, then the output), reading the row twice.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

ONE_PASS_MAX = 32768  # elements of a row kept in registers (fp32: 128 KiB across a 512-thread block)
CHUNK = 4096          # elements per sweep step for longer rows


@triton.jit
def _softmax_one_pass(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    # Contract: masked lanes load -inf (they add nothing); max, exp and sum in fp32; store in out's dtype.
    # BEGIN SOLUTION: out[row, :cols] = softmax(x[row, :cols]), the whole row in one BLOCK (BLOCK >= cols)
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=float("-inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    tl.store(out_ptr + row * cols + offs, y.to(out_ptr.dtype.element_ty), mask=mask)
    # END SOLUTION


@triton.jit
def _softmax_two_sweeps(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    # Contract: a lane that has seen only -inf keeps s = 0 (never exp(-inf - -inf) = NaN); fp32 throughout.
    # BEGIN SOLUTION: out[row, :] for rows longer than BLOCK: sweep 1 per-lane online (m, s), sweep 2 writes
    for start in range(0, cols, BLOCK):
        mask = start + offs < cols
        x = tl.load(x_ptr + row * cols + start + offs, mask=mask, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        # A lane that has seen only -inf keeps m = -inf; exp(-inf - -inf) would be NaN.
        alive = m_new > float("-inf")
        s = tl.where(alive, s * tl.exp(m - m_new) + tl.exp(x - m_new), 0.0)
        m = m_new
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(tl.where(m > float("-inf"), s * tl.exp(m - row_max), 0.0), axis=0)
    inv = 1.0 / row_sum
    for start in range(0, cols, BLOCK):
        mask = start + offs < cols
        x = tl.load(x_ptr + row * cols + start + offs, mask=mask, other=float("-inf")).to(tl.float32)
        tl.store(out_ptr + row * cols + start + offs, (tl.exp(x - row_max) * inv).to(out_ptr.dtype.element_ty),
                 mask=mask)
    # END SOLUTION


def softmax(x: torch.Tensor, out: torch.Tensor) -> None:
    if x.dtype not in (torch.float32, torch.float16, torch.bfloat16) or out.dtype != x.dtype:
        raise TypeError(f"softmax (Triton): x and out must share a float dtype, got {x.dtype} and {out.dtype}")
    if not (x.is_cuda and x.dim() == 2 and x.is_contiguous() and out.is_contiguous() and out.shape == x.shape):
        raise ValueError("softmax: x and out must be contiguous 2-D CUDA tensors of the same shape")
    rows, cols = x.shape
    if rows == 0 or cols == 0:
        return
    if cols <= ONE_PASS_MAX:
        block = triton.next_power_of_2(cols)
        # About 16 elements a thread: enough loads in flight, few enough registers.
        warps = min(16, max(1, block // 512))
        _softmax_one_pass[(rows,)](x, out, cols, BLOCK=block, num_warps=warps)
    else:
        _softmax_two_sweeps[(rows,)](x, out, cols, BLOCK=CHUNK, num_warps=8)
