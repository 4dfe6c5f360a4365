"""Day 13, route 2: numba.cuda. The kernel is Python, compiled by numba to PTX (through NVVM) the first time it is
called with a new combination of argument types, one compilation per dtype.

The torch tensors reach the kernel through the CUDA array interface (`cuda.as_cuda_array`), without a copy. That
interface has no bfloat16 type, so this route takes fp32 and fp16 only. The launch goes to the stream torch is
using now, wrapped with `cuda.external_stream`.
"""
from __future__ import annotations

import math

import numba
import numpy as np
import torch

# numba-cuda 0.30 registers an implementation for np.row_stack at its first compilation, and NumPy 2.5 removed
# that alias of np.vstack: without this line every compilation fails with "module 'numpy' has no attribute
# 'row_stack'". (numba itself checks the NumPy version before doing so; numba-cuda does not yet.)
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack

from numba import cuda  # noqa: E402  (after the shim above)

_F32 = numba.float32
_NEG_INF = _F32(-math.inf)
_FULL_MASK = 0xFFFFFFFF


@cuda.jit(device=True, inline=True)
def _merge(m, s, m2, s2):
    # (m, s) stands for s * exp(m); -inf means "nothing yet". Same algebra as the CUDA C++ days.
    mx = max(m, m2)
    if mx == _NEG_INF:
        return m, s
    a = _F32(0) if m == _NEG_INF else s * math.exp(m - mx)
    b = _F32(0) if m2 == _NEG_INF else s2 * math.exp(m2 - mx)
    return mx, a + b


@cuda.jit(device=True, inline=True)
def _push4(m, s, v0, v1, v2, v3):
    # Four values into a thread's own (m, s): their max first, then one rescale and one exp each, with no branch
    # that splits the warp (per element, "if v > m" runs both sides, each with an exp, whenever lanes disagree).
    mx = max(max(m, v0), max(max(v1, v2), v3))
    if mx == _NEG_INF:
        return m, s
    s = s * math.exp(m - mx) + math.exp(v0 - mx) + math.exp(v1 - mx) + math.exp(v2 - mx) + math.exp(v3 - mx)
    return mx, s


@cuda.jit(device=True, inline=True)
def _warp_merge(m, s):
    off = 16
    while off > 0:
        m, s = _merge(m, s, cuda.shfl_xor_sync(_FULL_MASK, m, off), cuda.shfl_xor_sync(_FULL_MASK, s, off))
        off //= 2
    return m, s


@cuda.jit
def _softmax_rows(x, out):
    """One block per row: an online (max, sum) per thread, merged across the block, then a second pass writes."""
    part_m = cuda.shared.array(32, numba.float32)
    part_s = cuda.shared.array(32, numba.float32)
    row = cuda.blockIdx.x
    cols = x.shape[1]
    tid = cuda.threadIdx.x
    # Contract: an fp32 online (m, s) per thread (_push4), _warp_merge, one (m, s) per warp in part_m/part_s,
    # cuda.syncthreads(), every warp merges them; then out = exp(x - m) / s. blockDim.x: whole warps, <= 1024.
    # BEGIN SOLUTION: out[row, :] = softmax(x[row, :]); thread tid owns columns tid, tid + blockDim.x, ...
    step = cuda.blockDim.x
    m = _NEG_INF
    s = _F32(0)
    # Four loads issued before any is used (one at a time, each waits a full memory latency).
    c = tid
    while c + 3 * step < cols:
        v0, v1, v2, v3 = x[row, c], x[row, c + step], x[row, c + 2 * step], x[row, c + 3 * step]
        m, s = _push4(m, s, _F32(v0), _F32(v1), _F32(v2), _F32(v3))
        c += 4 * step
    while c < cols:  # the tail, one value at a time (the other three are -inf: they add nothing)
        m, s = _push4(m, s, _F32(x[row, c]), _NEG_INF, _NEG_INF, _NEG_INF)
        c += step
    m, s = _warp_merge(m, s)
    warp, lane, warps = tid // 32, tid % 32, cuda.blockDim.x // 32
    if lane == 0:
        part_m[warp] = m
        part_s[warp] = s
    cuda.syncthreads()
    m = part_m[lane] if lane < warps else _NEG_INF
    s = part_s[lane] if lane < warps else _F32(0)
    m, s = _warp_merge(m, s)
    inv_s = _F32(1) / s
    c = tid
    while c + 3 * step < cols:
        v0, v1, v2, v3 = x[row, c], x[row, c + step], x[row, c + 2 * step], x[row, c + 3 * step]
        out[row, c] = math.exp(_F32(v0) - m) * inv_s
        out[row, c + step] = math.exp(_F32(v1) - m) * inv_s
        out[row, c + 2 * step] = math.exp(_F32(v2) - m) * inv_s
        out[row, c + 3 * step] = math.exp(_F32(v3) - m) * inv_s
        c += 4 * step
    while c < cols:
        out[row, c] = math.exp(_F32(x[row, c]) - m) * inv_s
        c += step
    # END SOLUTION


def _threads(cols: int) -> int:
    return min(1024, max(32, (cols // 8 + 31) // 32 * 32))


def softmax(x: torch.Tensor, out: torch.Tensor) -> None:
    if x.dtype not in (torch.float32, torch.float16) or out.dtype != x.dtype:
        raise TypeError(f"softmax (numba): x and out must both be float32 or float16, got {x.dtype} and "
                        f"{out.dtype} (the CUDA array interface has no bfloat16)")
    if not (x.is_cuda and x.dim() == 2 and x.is_contiguous() and out.is_contiguous() and out.shape == x.shape):
        raise ValueError("softmax: x and out must be contiguous 2-D CUDA tensors of the same shape")
    rows, cols = x.shape
    if rows == 0 or cols == 0:
        return
    stream = cuda.external_stream(torch.cuda.current_stream(x.device).cuda_stream)
    # x and out reach the kernel as CUDA arrays (cuda.as_cuda_array), without a copy.
    # BEGIN SOLUTION: launch _softmax_rows on `stream`: rows blocks of _threads(cols) threads
    xa, oa = cuda.as_cuda_array(x, sync=False), cuda.as_cuda_array(out, sync=False)
    _softmax_rows[rows, _threads(cols), stream](xa, oa)
    # END SOLUTION
