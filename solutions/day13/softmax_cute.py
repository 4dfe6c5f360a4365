"""Day 13, route 4: CuTe DSL, CUTLASS's Python front end (`pip install -e ".[cute]"`). The kernel is Python traced
into MLIR and compiled to PTX and a cubin for the GPU it will run on: `cute.compile` once per dtype (the tensors'
shapes are marked dynamic, so one build serves every shape), then the compiled function is called with torch's
tensors and torch's current stream.

One block of THREADS threads per row, as day 04: each thread keeps an online (max, sum) over its columns
(tid, tid + THREADS, ...), the block merges the pairs (shuffles within a warp, shared memory across warps), and a
second sweep writes exp(x − max) / sum.
"""
from __future__ import annotations

import cutlass
import cutlass.cute as cute
import torch
from cutlass import Float32
from cutlass.cute.runtime import from_dlpack

THREADS = 256
WARPS = THREADS // 32


@cute.jit
def _merge(m_a, s_a, m_b, s_b):
    """Two online (max, sum) pairs as one. A side whose max is −inf has seen only −inf entries (masked ones,
    or none), whose exp is 0: it adds nothing, whatever its s (a single −inf entry comes as (−inf, 1))."""
    m = cute.arch.fmax(m_a, m_b)
    # never exp(−inf − −inf), which is NaN
    a = Float32(0.0)
    if m_a > -Float32.inf:
        a = s_a * cute.math.exp(m_a - m)
    b = Float32(0.0)
    if m_b > -Float32.inf:
        b = s_b * cute.math.exp(m_b - m)
    return m, a + b


@cute.kernel
def _softmax_rows(x: cute.Tensor, y: cute.Tensor):
    tid, _, _ = cute.arch.thread_idx()
    row, _, _ = cute.arch.block_idx()
    lane, warp = cute.arch.lane_idx(), cute.arch.warp_idx()
    smem = cutlass.memory.SmemAllocator()
    m_buf = smem.allocate_tensor(Float32, cute.make_layout((WARPS,)))
    s_buf = smem.allocate_tensor(Float32, cute.make_layout((WARPS,)))
    cols = x.shape[1]
    # BEGIN SOLUTION: the row's max and sum: each thread's online (m, s) over its columns, merged across the warp by shuffles and across warps through m_buf/s_buf, then y[row, :] = exp(x - max) / sum
    m = -Float32.inf
    s = Float32(0.0)
    for j in range(tid, cols, THREADS):
        v = x[row, j].to(Float32)
        m, s = _merge(m, s, v, Float32(1.0))
    for i in cutlass.range_constexpr(5):
        m_o = cute.arch.shuffle_sync_bfly(m, offset=1 << i)
        s_o = cute.arch.shuffle_sync_bfly(s, offset=1 << i)
        m, s = _merge(m, s, m_o, s_o)
    if lane == 0:
        m_buf[warp] = m
        s_buf[warp] = s
    cute.arch.sync_threads()
    m = m_buf[0]
    s = s_buf[0]
    for w in cutlass.range_constexpr(1, WARPS):
        m, s = _merge(m, s, m_buf[w], s_buf[w])
    inv = 1.0 / s
    for j in range(tid, cols, THREADS):
        y[row, j] = (cute.math.exp(x[row, j].to(Float32) - m) * inv).to(y.element_type)
    # END SOLUTION


@cute.jit
def _launch(x: cute.Tensor, y: cute.Tensor, stream):
    _softmax_rows(x, y).launch(grid=(x.shape[0], 1, 1), block=(THREADS, 1, 1), stream=stream)


_compiled: dict = {}  # one build per dtype: the shapes are dynamic


def _cute(t: torch.Tensor):
    # aligned to its element only (a view may start anywhere); rows along dim 1 even when 1×1
    return from_dlpack(t, assumed_align=t.element_size()).mark_layout_dynamic(leading_dim=1)


def _stream():
    import cuda.bindings.driver as driver

    return driver.CUstream(torch.cuda.current_stream().cuda_stream)


def compile_for(dtype: torch.dtype, device: str = "cuda"):
    """The compiled launch for one dtype (built on first use; `device="cpu"` compiles without a GPU: CI's check)."""
    key = (dtype, device)
    if key not in _compiled:
        probe = torch.empty((2, 64), dtype=dtype, device=device)
        import cuda.bindings.driver as driver

        _compiled[key] = cute.compile(_launch, _cute(probe), _cute(torch.empty_like(probe)), driver.CUstream(0))
    return _compiled[key]


def softmax(x: torch.Tensor, out: torch.Tensor) -> None:
    if x.dtype not in (torch.float32, torch.float16, torch.bfloat16) or out.dtype != x.dtype:
        raise TypeError(f"softmax (CuTe DSL): x and out must share a float dtype, got {x.dtype} and {out.dtype}")
    if not (x.is_cuda and x.dim() == 2 and x.is_contiguous() and out.is_contiguous() and out.shape == x.shape):
        raise ValueError("softmax: x and out must be contiguous 2-D CUDA tensors of the same shape")
    if x.shape[0] == 0 or x.shape[1] == 0:
        return
    compile_for(x.dtype)(_cute(x), _cute(out), _stream())

