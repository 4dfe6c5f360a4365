"""Registers and spills per kernel from ptxas, for the GPU being profiled: the exercise's .cu files compiled once
more with the build's flags and `-Xptxas -v`, for that architecture only (compile_check's parsing and demangling).

Spills are a compile-time fact: ptxas says how many bytes each kernel stores to and loads from local memory
because registers ran out, which is what the profile's "spills" row shows.
"""
from __future__ import annotations

import subprocess
import tempfile
from dataclasses import asdict
from pathlib import Path

from grader.check.build import BASE_CUDA_FLAGS, TORCH_CUDA_DEFINES
from grader.check.compile_check import demangle, nvcc_path, parse_ptxas
from grader.profile.ncu import short_name


def kernel_resources(sources: list[Path], include_dirs: list[Path], extra_flags: list[str],
                     capability: tuple[int, int], timeout_s: float = 300) -> dict[str, dict]:
    """{mangled name: resources} for every kernel of the .cu sources; {} when nvcc is missing or fails (the
    profile then shows spills as unknown rather than failing)."""
    nvcc = nvcc_path()
    if nvcc is None:
        return {}
    arch = f"{capability[0]}{capability[1]}"
    found = {}
    for src in (s for s in sources if s.suffix == ".cu"):
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [nvcc, "-c", str(src), "-o", str(Path(tmp) / "k.o"), *BASE_CUDA_FLAGS, *TORCH_CUDA_DEFINES,
                   *[f"-I{d}" for d in include_dirs], "-Xptxas", "-v", *extra_flags,
                   f"-gencode=arch=compute_{arch},code=sm_{arch}"]
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
            except (OSError, subprocess.TimeoutExpired):
                continue
        # The exercise's own flags may add images (e.g. sm_80 and sm_90a for wgmma): keep this GPU's, and its
        # arch-specific one ("a") where built, since that is the image the driver runs here.
        rank = {f"sm_{arch}": 1, f"sm_{arch}a": 2}
        for k in parse_ptxas(p.stdout + p.stderr):
            if rank.get(k.arch, 0) > rank.get(found.get(k.function, {}).get("arch"), 0):
                found[k.function] = asdict(k)
    pretty = demangle(sorted(found))
    for mangled, k in found.items():
        k["demangled"] = pretty.get(mangled, mangled)
    return found


def match(kernel_name: str, demangled: str, resources: dict[str, dict]) -> dict | None:
    """ncu's name for a kernel (mangled, or demangled by ncu) -> ptxas's entry for it.

    By mangled name first; else by the demangled name without its parameter list, which also matches kernels in
    an anonymous namespace (whose mangled names differ between two compilations of the same file)."""
    if kernel_name in resources:
        return resources[kernel_name]
    want = short_name(demangled, width=10**6)
    return next((k for k in resources.values() if short_name(k["demangled"], width=10**6) == want), None)
