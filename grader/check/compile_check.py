"""Compile-only checks, for machines without a GPU (and for CI): every kernel file through nvcc for sm_80 and
sm_90 with the ptxas resource report; bindings through the host compiler against torch's headers when present.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from grader.check.build import BASE_CUDA_FLAGS, TORCH_CUDA_DEFINES, parse_diagnostics
from grader.paths import relative_path

ARCHS = ("80", "90")
_ENTRY = re.compile(r"Compiling entry function '(?P<fn>[^']+)' for 'sm_(?P<arch>\w+)'")
_FRAME = re.compile(r"(?P<stack>\d+) bytes stack frame, (?P<st>\d+) bytes spill stores, (?P<ld>\d+) bytes spill loads")
_USED = re.compile(r"Used (?P<regs>\d+) registers")
_SMEM = re.compile(r"(?P<smem>\d+) bytes smem")  # may follow "N bytes cumulative stack size" on the same line


@dataclass
class KernelResources:
    function: str
    arch: str
    registers: int = 0
    smem_bytes: int = 0
    stack_bytes: int = 0
    spill_stores: int = 0
    spill_loads: int = 0


@dataclass
class CompileReport:
    file: str
    ok: bool
    tool: str
    diagnostics: list = field(default_factory=list)
    kernels: list = field(default_factory=list)
    note: str = ""
    log: str = ""

    def as_dict(self):
        return asdict(self)


def parse_ptxas(log: str) -> list[KernelResources]:
    out: list[KernelResources] = []
    cur = None
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            cur = KernelResources(m["fn"], "sm_" + m["arch"])
            out.append(cur)
        elif cur and (m := _FRAME.search(line)):
            cur.stack_bytes, cur.spill_stores, cur.spill_loads = int(m["stack"]), int(m["st"]), int(m["ld"])
        elif cur and (m := _USED.search(line)):
            smem = _SMEM.search(line)
            cur.registers, cur.smem_bytes = int(m["regs"]), int(smem["smem"]) if smem else 0
    return out


def demangle(names: list[str]) -> dict[str, str]:
    tool = shutil.which("cu++filt") or shutil.which("c++filt")
    if not tool or not names:
        return {n: n for n in names}
    p = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True)
    pretty = p.stdout.splitlines()
    return dict(zip(names, pretty)) if len(pretty) == len(names) else {n: n for n in names}


def nvcc_path() -> str | None:
    cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    return shutil.which("nvcc") or (str(Path(cuda_home, "bin", "nvcc")) if Path(cuda_home, "bin", "nvcc").exists()
                                     else None)


def compile_cuda(src: Path, include_dirs: list[Path], extra_flags: list[str], root: Path) -> CompileReport:
    nvcc = nvcc_path()
    rel = relative_path(src, root)
    if nvcc is None:
        return CompileReport(rel, False, "nvcc", note="nvcc not found: install the CUDA toolkit or set CUDA_HOME")
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [nvcc, "-c", str(src), "-o", str(Path(tmp) / "k.o"), *BASE_CUDA_FLAGS, *TORCH_CUDA_DEFINES,
               *[f"-I{d}" for d in include_dirs], "-Xptxas", "-v", *extra_flags,
               *[f"-gencode=arch=compute_{a},code=sm_{a}" for a in ARCHS]]
        p = subprocess.run(cmd, capture_output=True, text=True)
    log = p.stdout + p.stderr
    kernels = parse_ptxas(log)
    names = demangle(sorted({k.function for k in kernels}))
    for k in kernels:
        k.function = names.get(k.function, k.function)
    diags = parse_diagnostics(log, root)
    return CompileReport(rel, p.returncode == 0, "nvcc", [str(d) for d in diags], [asdict(k) for k in kernels],
                         log=log[-20000:])


def _cuda_include_dirs() -> list[Path]:
    """Where cuda_runtime_api.h lives (nvcc may be a wrapper script, so its own path is only one guess)."""
    guesses = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    nvcc = nvcc_path()
    if nvcc:
        guesses.append(str(Path(nvcc).resolve().parent.parent))
    return [Path(g) / "include" for g in guesses if g and (Path(g) / "include" / "cuda_runtime_api.h").is_file()]


def _torch_include_paths() -> list[str] | None:
    try:
        from torch.utils import cpp_extension
    except ImportError:
        return None
    return cpp_extension.include_paths()


def compile_host(src: Path, include_dirs: list[Path], root: Path) -> CompileReport:
    """Syntax-check a bindings file against torch's headers (no linking, no GPU needed)."""
    rel = relative_path(src, root)
    torch_inc = _torch_include_paths()
    cxx = shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++")
    if torch_inc is None or cxx is None:
        return CompileReport(rel, True, "c++", note="skipped: needs torch and a C++ compiler")
    import sysconfig

    cuda_inc = [str(d) for d in _cuda_include_dirs()][:1]
    with tempfile.TemporaryDirectory() as tmp:
        # CPU-only torch wheels ship c10/cuda headers but not the one CMake generates for CUDA builds; an empty
        # stand-in is enough for a syntax check (it only defines export macros).
        shim = Path(tmp, "c10", "cuda", "impl")
        shim.mkdir(parents=True)
        (shim / "cuda_cmake_macros.h").write_text("#pragma once\n")
        cmd = [cxx, "-std=c++20", "-fsyntax-only", "-DTORCH_EXTENSION_NAME=compile_check", str(src),
               *[f"-I{p}" for p in torch_inc], f"-I{sysconfig.get_paths()['include']}",
               *[f"-I{p}" for p in cuda_inc], *[f"-I{d}" for d in include_dirs], f"-idirafter{tmp}"]
        p = subprocess.run(cmd, capture_output=True, text=True)
    log = p.stdout + p.stderr
    diags = [d for d in parse_diagnostics(log, root) if d.kind == "error" or not d.file.startswith("/")]
    return CompileReport(rel, p.returncode == 0, "c++", [str(d) for d in diags], log=log[-20000:])


def compile_python(src: Path, root: Path) -> CompileReport:
    """A Python exercise's syntax (its kernels are compiled by CuPy, numba or Triton only on a GPU)."""
    rel = relative_path(src, root)
    try:
        compile(src.read_bytes(), str(src), "exec")  # bytes: a bad encoding is a SyntaxError too, not a crash
    except (SyntaxError, ValueError) as e:  # ValueError: null bytes (Python 3.11)
        msg = e.msg if isinstance(e, SyntaxError) else str(e)
        return CompileReport(rel, False, "python", [f"{rel}:{getattr(e, 'lineno', None) or 1}: error: {msg}"],
                             log=str(e))
    return CompileReport(rel, True, "python")


def compile_sources(sources: list[Path], include_dirs: list[Path], extra_cuda_flags: list[str],
                    root: Path) -> list[CompileReport]:
    reports = []
    for s in sources:
        if not s.is_file():
            reports.append(CompileReport(relative_path(s, root), False, "-", note="file not found"))
        elif s.suffix in (".cu",):
            reports.append(compile_cuda(s, include_dirs, extra_cuda_flags, root))
        elif s.suffix == ".py":
            reports.append(compile_python(s, root))
        else:
            reports.append(compile_host(s, include_dirs, root))
    return reports
