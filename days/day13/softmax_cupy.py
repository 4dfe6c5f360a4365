"""Day 13, route 1: CuPy RawModule. The kernel is CUDA C++ text (softmax_cupy.cu beside this file) that NVRTC
compiles the first time it is used, in this process; CuPy caches the result on disk for the next process.

Nothing is copied: the kernel receives the torch tensors' device pointers. It must run on the stream torch is
using now (the grader calls the op under a non-default stream and waits only for that one), so the launch
happens inside CuPy's view of that stream.
"""
from __future__ import annotations

from pathlib import Path

import cupy
import numpy as np
import torch

_KERNELS = {torch.float32: "softmax_rows_f32", torch.float16: "softmax_rows_f16", torch.bfloat16: "softmax_rows_bf16"}
_cache: dict[tuple[int, torch.dtype], cupy.RawKernel] = {}  # per device (a module belongs to one CUDA context)


def _kernel(dtype: torch.dtype, device: int):
    # Looked up once: the op is timed, and get_function on every call is host time spent on nothing.
    key = (device, dtype)
    if key not in _cache:
        # #line: NVRTC's errors then name softmax_cupy.cu and its lines, not a temporary file.
        source = '#line 1 "softmax_cupy.cu"\n' + Path(__file__).with_name("softmax_cupy.cu").read_text()
        _cache[key] = cupy.RawModule(code=source, options=("--std=c++17",)).get_function(_KERNELS[dtype])
    return _cache[key]


def _threads(cols: int) -> int:
    # About 8 elements a thread, whole warps, 32 to 1024 threads.
    return min(1024, max(32, (cols // 8 + 31) // 32 * 32))


def softmax(x: torch.Tensor, out: torch.Tensor) -> None:
    if x.dtype not in _KERNELS or out.dtype != x.dtype:
        raise TypeError(f"softmax: x and out must share one of {list(_KERNELS)}, got {x.dtype} and {out.dtype}")
    if not (x.is_cuda and x.dim() == 2 and x.is_contiguous() and out.is_contiguous() and out.shape == x.shape):
        raise ValueError("softmax: x and out must be contiguous 2-D CUDA tensors of the same shape")
    rows, cols = x.shape
    if rows == 0 or cols == 0:
        return
    device = x.device.index
    with cupy.cuda.Device(device):
        kernel = _kernel(x.dtype, device)
        stream = cupy.cuda.ExternalStream(torch.cuda.current_stream(x.device).cuda_stream)
        # Arguments sized as the kernel's parameters: np.uint64 data pointers of x and out, np.int32 cols.
        # YOUR CODE HERE: launch `kernel` inside `stream`: grid (rows,), block (_threads(cols),)
