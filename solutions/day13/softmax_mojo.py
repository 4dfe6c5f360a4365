"""Day 13, route 5: Mojo (`pip install -e ".[mojo]"`). The kernel is Mojo (softmax_mojo.mojo beside this file);
the Mojo compiler turns it into PTX on the CPU, no GPU needed, and this file hands the PTX to the CUDA driver and
launches it on torch's current stream, the way CuPy's RawModule launches NVRTC's output.

`mojo run softmax_mojo.mojo` executes that file's main() on the host: main() asks the compiler for the PTX of
`softmax_rows[dtype]` for a GPU target (compile_info), once per dtype, and prints it. The driver then compiles
the PTX for the GPU it runs on (cuModuleLoadData), and cuLaunchKernel starts it with the tensors' pointers.

One block of THREADS threads per row, as day 04 and the CuTe route: each thread an online (max, sum) over its
columns, shuffles within a warp, shared memory across warps, then a second sweep writing exp(x − max) / sum.
"""
from __future__ import annotations

import ctypes
import re
from pathlib import Path

import torch
from mojo.run import subprocess_run_mojo

THREADS = 256  # the block size: passed to the Mojo file with -D, which sizes its shared buffers from it
CPU_TARGET = "sm_90"  # what compile_for(dtype, "cpu") compiles for: the course's H100/H200
_SOURCE = Path(__file__).with_name("softmax_mojo.mojo")
_DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}
_ENTRY = re.compile(r"^\.visible \.entry (\S+)\(", re.M)

_ptx: dict[str, dict[str, str]] = {}  # arch -> dtype name -> PTX: one `mojo run` gives all three dtypes
_loaded: dict[tuple[int, torch.dtype], tuple[ctypes.c_void_p, ctypes.c_void_p]] = {}  # (device, dtype) -> module, fn


class MojoBuildError(RuntimeError):
    pass


def _mojo_ptx(arch: str) -> dict[str, str]:
    """The PTX of softmax_rows for each dtype, for one GPU architecture (sm_90, sm_80, ...)."""
    if arch not in _ptx:
        run = subprocess_run_mojo(["run", "-D", f"SOFTMAX_ARCH={arch}", "-D", f"SOFTMAX_THREADS={THREADS}", str(_SOURCE)],
                                  capture_output=True, text=True, timeout=600)
        if run.returncode != 0:
            log = run.stderr.replace(str(_SOURCE), _SOURCE.name)
            errors = [ln for ln in log.splitlines() if ": error: " in ln and ln.startswith(_SOURCE.name)]
            # The first error last: a report that shows one line shows the one to fix first.
            raise MojoBuildError(log.rstrip() + "\n" + (errors[0] if errors else "mojo run failed"))
        parts = re.split(r"^// ===== kernel (\w+)$", run.stdout, flags=re.M)
        _ptx[arch] = dict(zip(parts[1::2], parts[2::2], strict=True))
        missing = set(_DTYPES.values()) - set(_ptx[arch])
        if missing:
            raise MojoBuildError(f"{_SOURCE.name}: main() printed no kernel for {sorted(missing)}")
    return _ptx[arch]


# --- the CUDA driver, through ctypes: load PTX, find the kernel, launch it on a stream ---

_driver = None


def _cuda():
    global _driver
    if _driver is None:
        _driver = ctypes.CDLL("libcuda.so.1")
    return _driver


def _check(result: int, what: str) -> None:
    if result != 0:
        text = ctypes.c_char_p()
        _cuda().cuGetErrorString(result, ctypes.byref(text))
        raise RuntimeError(f"{what} failed: {text.value.decode() if text.value else result}")


def _function(dtype: torch.dtype, device: int):
    key = (device, dtype)
    if key not in _loaded:
        major, minor = torch.cuda.get_device_capability(device)
        ptx = _mojo_ptx(f"sm_{major}{minor}")[_DTYPES[dtype]]
        cu = _cuda()
        # torch's primary context must be the current one: the module belongs to the context it is loaded in.
        torch.cuda.current_stream(device).synchronize()  # makes torch's context current on this thread
        module, fn = ctypes.c_void_p(), ctypes.c_void_p()
        _check(cu.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(ptx.encode() + b"\0")), "cuModuleLoadData")
        _check(cu.cuModuleGetFunction(ctypes.byref(fn), module, _ENTRY.search(ptx)[1].encode()),
               "cuModuleGetFunction")
        _loaded[key] = (module, fn)
    return _loaded[key][1]


def compile_for(dtype: torch.dtype, device: str = "cuda"):
    """The kernel for one dtype: its PTX for CPU_TARGET with `device="cpu"` (no GPU needed: CI's check), else
    the loaded function for the current GPU."""
    if dtype not in _DTYPES:
        raise TypeError(f"softmax (Mojo): no kernel for {dtype}")
    if device == "cpu":
        return _mojo_ptx(CPU_TARGET)[_DTYPES[dtype]]
    return _function(dtype, torch.cuda.current_device())


def softmax(x: torch.Tensor, out: torch.Tensor) -> None:
    if x.dtype not in _DTYPES or out.dtype != x.dtype:
        raise TypeError(f"softmax (Mojo): x and out must share one of {list(_DTYPES)}, got {x.dtype} and {out.dtype}")
    if not (x.is_cuda and x.dim() == 2 and x.is_contiguous() and out.is_contiguous() and out.shape == x.shape):
        raise ValueError("softmax: x and out must be contiguous 2-D CUDA tensors of the same shape")
    rows, cols = x.shape
    if rows == 0 or cols == 0:
        return
    with torch.cuda.device(x.device):
        fn = _function(x.dtype, x.device.index)
        stream = torch.cuda.current_stream(x.device).cuda_stream
        # The kernel's parameters as the PTX declares them: two 64-bit pointers and a 64-bit Int; the driver
        # takes the address of each.
        args = (ctypes.c_uint64(x.data_ptr()), ctypes.c_uint64(out.data_ptr()), ctypes.c_int64(cols))
        params = (ctypes.c_void_p * 3)(*(ctypes.cast(ctypes.byref(a), ctypes.c_void_p) for a in args))
        _check(_cuda().cuLaunchKernel(fn, rows, 1, 1, THREADS, 1, 1, 0, ctypes.c_void_p(stream), params, None),
               "cuLaunchKernel")
