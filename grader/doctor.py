"""`grader doctor`: is this machine ready to build and grade CUDA extensions?"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass

from grader.check.compile_check import nvcc_missing, nvcc_path


@dataclass
class Check:
    name: str
    ok: bool | None  # None: a warning, not a blocker
    detail: str


def _run(cmd: list[str]) -> str | None:
    try:
        return subprocess.run(cmd, capture_output=True, encoding="utf-8", errors="replace",
                              timeout=20).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None


# Where a CUDA build of torch comes from (the index matching the GPU machine's CUDA; cu130 for CUDA 13.0).
CUDA_TORCH = "pip install torch --index-url https://download.pytorch.org/whl/cu130"
CPU_TORCH = "pip install torch --index-url https://download.pytorch.org/whl/cpu"
COMPILE_ONLY = ("`grader check` compiles your kernels for sm_80 and sm_90 and shows ptxas's report (registers, "
                "shared memory, spills); correctness and speed need a GPU")


def _has_driver() -> bool:
    return shutil.which("nvidia-smi") is not None or any(
        os.path.exists(p) for p in ("/proc/driver/nvidia/version", "/dev/nvidiactl"))


def needs_a_gpu(command: str) -> str:
    """What to add to a GPU tool's message on a machine with no NVIDIA driver: the tool runs the kernels, so the
    student needs a GPU machine before anything to install here (empty where a driver is found)."""
    if _has_driver():
        return ""
    return (f"; and this machine has no NVIDIA GPU driver: `{command}` runs your kernels, so it needs a GPU machine "
            "(there the tool comes with the CUDA toolkit); here `grader check` compiles them")


def checks() -> list[Check]:
    out = [Check("python", sys.version_info >= (3, 10), sys.version.split()[0])]
    try:
        import torch
        from torch.utils import cpp_extension
    except ImportError as e:
        how = (f"on this GPU machine, a CUDA build: {CUDA_TORCH} (or the cuXYZ index matching its CUDA version)"
               if _has_driver() else
               f"no NVIDIA driver here, so compile-only mode: {CPU_TORCH} (the CPU build)")
        out.append(Check("torch", False, f"not importable ({e}): install PyTorch; {how}"))
        torch = None
    cpu_build = torch is not None and torch.version.cuda is None
    if cpu_build:
        # Nothing here can make a CPU-only torch run kernels (CUDA_HOME included): say what this machine can do, and
        # how to grade on one that has a GPU.
        out.append(Check("torch", None, f"{torch.__version__} is a CPU-only build: compile-only mode here. To grade, "
                         f"on a GPU machine: {CUDA_TORCH} (or the cuXYZ index matching its CUDA version)"))
        out.append(Check("GPU", None, "not usable with a CPU-only torch: correctness and speed are checked on a GPU "
                                      "machine"))
    elif torch is not None:
        out.append(Check("torch", True, f"{torch.__version__}, built for CUDA {torch.version.cuda}"))
        if torch.cuda.is_available():
            cap = torch.cuda.get_device_capability(0)
            p = torch.cuda.get_device_properties(0)
            out.append(Check("GPU", True, f"{p.name}, sm_{cap[0]}{cap[1]}, {p.multi_processor_count} SMs, "
                             f"{p.total_memory / 2**30:.0f} GiB"))
            out.append(Check("build arch", True, f"TORCH_CUDA_ARCH_LIST={cap[0]}.{cap[1]} (this GPU only)"))
        else:
            out.append(Check("GPU", False, "no CUDA GPU visible to torch: `grader check` will compile only"))
        home = getattr(cpp_extension, "CUDA_HOME", None)
        out.append(Check("CUDA_HOME", home is not None, home or "not found by torch: set CUDA_HOME"))
    smi = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]) if shutil.which(
        "nvidia-smi") else None
    out.append(Check("driver", True if smi else None, f"NVIDIA driver {smi.splitlines()[0]}" if smi else
                     "nvidia-smi not found (fine on a machine without a GPU)"))
    nvcc = nvcc_path()
    if nvcc:
        ver = (_run([nvcc, "--version"]) or "").splitlines()
        rel = next((ln.split("release")[1].split(",")[0].strip() for ln in ver if "release" in ln), "?")
        ok: bool | None = True
        detail = f"{nvcc} (CUDA {rel})"
        if torch is not None and torch.version.cuda and rel.split(".")[0] != torch.version.cuda.split(".")[0]:
            ok, detail = None, detail + f": torch was built with CUDA {torch.version.cuda}; majors should match"
        out.append(Check("nvcc", ok, detail))
    else:
        out.append(Check("nvcc", False, nvcc_missing() + (" (compile-only mode needs it)" if cpu_build else "")))
    ninja = shutil.which("ninja")
    # ninja builds the extensions that run on a GPU; compile-only mode calls nvcc directly.
    out.append(Check("ninja", True if ninja else None if cpu_build else False,
                     ninja or "not found: pip install ninja" + (" (needed on a GPU machine)" if cpu_build else "")))
    if cpu_build and nvcc:
        out.append(Check("mode", True, f"compile-only: {COMPILE_ONLY}"))
    out.append(sandbox_check(torch is not None and not cpu_build and torch.cuda.is_available()))
    return out


def sandbox_check(gpu: bool) -> Check:
    """Whether submissions' code can be sandboxed here (`grader grade`, `check --ranked`; grader/sandbox.py), and
    with a GPU, whether CUDA works inside. Not a blocker: a student's own checks run without it."""
    from grader import sandbox

    p = sandbox.probe()
    if not p.ok:
        return Check("sandbox", None, f"{p.detail}; `grader grade` and `check --ranked` need it (or --no-sandbox)")
    if gpu:
        inside = sandbox.cuda_inside()
        if inside is not None:
            return Check("sandbox", None, f"{p.detail}, but CUDA fails inside it: {inside}")
        return Check("sandbox", True, f"{p.detail}; CUDA works inside")
    return Check("sandbox", True, p.detail)
