"""Compile-only checks, for machines without a GPU (and for CI): every kernel file through nvcc for sm_80 and
sm_90 with the ptxas resource report; bindings through the host compiler against torch's headers when present.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from grader.check.build import (BASE_CUDA_FLAGS, QUOTED_INCLUDE, TORCH_CUDA_DEFINES, Diagnostic, files_read,
                                parse_diagnostics)
from grader.paths import Paths, relative_path, write_text_atomic
from grader.verdicts import MISSING_FILE

ARCHS = ("80", "90")
# A source larger than this is refused before any compiler sees it: no exercise comes near it, and a generated or
# binary file of tens of MB would keep nvcc busy for minutes.
MAX_SOURCE_BYTES = 2 * 2**20
COMPILE_TIMEOUT_S = 600.0  # one compiler run, when the caller gives no limit of its own
_ENTRY = re.compile(r"Compiling entry function '(?P<fn>[^']+)' for 'sm_(?P<arch>\w+)'")
_FRAME = re.compile(r"(?P<stack>\d+) bytes stack frame, (?P<st>\d+) bytes spill stores, (?P<ld>\d+) bytes spill loads")
_USED = re.compile(r"Used (?P<regs>\d+) registers")
# ptxas made every wgmma of a function wait for the one before (C7510 to C7515, "Potential Performance Loss"): the
# kernel is still correct, but its products no longer overlap anything. ptxas says so before the function's entry.
_SERIALIZED = re.compile(r"\((?P<code>C751[0-5])\) Potential Performance Loss: wgmma\.mma_async instructions are "
                         r"serialized.*? (?:in|for) the function '(?P<fn>[^']+)'")
_SMEM = re.compile(r"(?P<smem>\d+) bytes smem")  # may follow "N bytes cumulative stack size" on the same line
# nvcc's error for a file that ends early (truncated mid-function): no file(line) of its own.
_AT_END = re.compile(r"^At end of source: (?P<kind>error|warning)[^:]*: (?P<msg>.*)$")


@dataclass
class KernelResources:
    function: str
    arch: str
    registers: int = 0
    smem_bytes: int = 0
    stack_bytes: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    wgmma_serialized: str = ""  # ptxas's code (e.g. C7515) when it serialised this function's wgmma, else ""


@dataclass
class CompileReport:
    file: str
    ok: bool
    tool: str
    diagnostics: list = field(default_factory=list)
    kernels: list = field(default_factory=list)
    note: str = ""
    log: str = ""
    cached: bool = False  # the report of an earlier run on the same content (compile_sources' cache)

    def as_dict(self):
        return asdict(self)


def parse_ptxas(log: str) -> list[KernelResources]:
    out: list[KernelResources] = []
    cur = None
    serialized = {m["fn"]: m["code"] for m in _SERIALIZED.finditer(log)}  # wgmma exists on sm_90a alone
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            cur = KernelResources(m["fn"], "sm_" + m["arch"])
            if m["arch"].startswith("90"):
                cur.wgmma_serialized = serialized.get(m["fn"], "")
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
    try:
        p = subprocess.run([tool], input="\n".join(names), capture_output=True, timeout=60,
                           encoding="utf-8", errors="replace")
    except (OSError, subprocess.TimeoutExpired):
        return {n: n for n in names}
    pretty = p.stdout.splitlines()
    return dict(zip(names, pretty)) if len(pretty) == len(names) else {n: n for n in names}


def _cuda_home() -> str:
    return os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"


def nvcc_path() -> str | None:
    cuda_home = _cuda_home()
    return shutil.which("nvcc") or (str(Path(cuda_home, "bin", "nvcc")) if Path(cuda_home, "bin", "nvcc").exists()
                                     else None)


def nvcc_missing() -> str:
    """What to do when nvcc_path finds nothing, naming where it looked (the check's verdict, its compile report and
    `grader doctor` all say this)."""
    return (f"nvcc, the CUDA toolkit's compiler, is neither on PATH nor in {Path(_cuda_home(), 'bin')}: install the "
            "CUDA toolkit (https://developer.nvidia.com/cuda-downloads; on a GPU machine, of the CUDA major version "
            "torch was built for) and put its bin/ on PATH, or set CUDA_HOME to the folder it is installed in")


def _run_compiler(cmd: list[str], timeout_s: float | None, prefix: list[str] = ()) -> tuple[int | None, str]:
    """(exit code, stdout + stderr) of one compiler run; None as the code when it ran past timeout_s. prefix: a
    sandbox the compiler runs in (the source's `#include "/any/path"` then finds only what the sandbox holds)."""
    # Compilers quote the source's bytes, whatever its encoding: decode with replacement, never fail on them.
    try:
        p = subprocess.run([*prefix, *cmd], capture_output=True, timeout=timeout_s or COMPILE_TIMEOUT_S,
                           encoding="utf-8", errors="replace", stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        out = [x.decode("utf-8", errors="replace") if isinstance(x, bytes) else x or "" for x in (e.stdout, e.stderr)]
        return None, "".join(out)
    except OSError as e:  # the compiler is there but cannot be started
        return 127, f"cannot run {cmd[0]}: {e.strerror or e}\n"
    return p.returncode, p.stdout + p.stderr


def compile_cuda(src: Path, include_dirs: list[Path], extra_flags: list[str], root: Path,
                 timeout_s: float | None = None, sandbox=None, depfile: Path | None = None,
                 gencodes: list[str] | None = None) -> CompileReport:
    """depfile: where nvcc writes every file the compile read (make's format), for a caller that keys the report
    by them (tests/compile_records.py). gencodes: the images to build instead of sm_80 and sm_90 (the compile
    matrix's class GPUs)."""
    nvcc = nvcc_path()
    rel = relative_path(src, root)
    if nvcc is None:
        return CompileReport(rel, False, "nvcc", note=nvcc_missing())
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [nvcc, "-c", str(src), "-o", str(Path(tmp) / "k.o"), *BASE_CUDA_FLAGS, *TORCH_CUDA_DEFINES,
               *[f"-I{d}" for d in include_dirs], "-Xptxas", "-v", *extra_flags,
               *(gencodes if gencodes is not None else [f"-gencode=arch=compute_{a},code=sm_{a}" for a in ARCHS]),
               *_depfile_flags(depfile)]
        prefix = sandbox.compiler([src.parent, *include_dirs], Path(tmp)) if sandbox is not None else []
        code, log = _run_compiler(cmd, timeout_s, prefix)
    if code is None:
        return CompileReport(rel, False, "nvcc", note=f"nvcc did not finish in {timeout_s or COMPILE_TIMEOUT_S:g} s",
                             log=log[-20000:])
    kernels = parse_ptxas(log)
    names = demangle(sorted({k.function for k in kernels}))
    for k in kernels:
        k.function = names.get(k.function, k.function)
    diags = [str(d) for d in parse_diagnostics(log, root)] + _at_end(log, src, rel)
    return CompileReport(rel, code == 0, "nvcc", diags, [asdict(k) for k in kernels], log=log[-20000:])


def _depfile_flags(depfile: Path | None) -> list[str]:
    return ["-MD", "-MF", str(depfile)] if depfile is not None else []


def _at_end(log: str, src: Path, rel: str) -> list[str]:
    """nvcc's "At end of source" errors as diagnostics at the file's last line."""
    found = [m for line in log.splitlines() if (m := _AT_END.match(line.strip()))]
    if not found:
        return []
    try:
        last = src.read_bytes().rstrip(b"\n").count(b"\n") + 1
    except OSError:
        last = 1
    return list(dict.fromkeys(str(Diagnostic(rel, last, m["kind"], m["msg"].strip())) for m in found))


def _cuda_include_dirs() -> list[Path]:
    """Where cuda_runtime_api.h lives (nvcc may be a wrapper script, so its own path is only one guess)."""
    guesses = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    nvcc = nvcc_path()
    if nvcc:
        guesses.append(str(Path(nvcc).resolve().parent.parent))
    return [Path(g) / "include" for g in guesses if g and (Path(g) / "include" / "cuda_runtime_api.h").is_file()]


def _torch_include_paths() -> list[str] | None:
    """The folders of torch's C++ headers (what cpp_extension.include_paths() gives for the CPU), found without
    importing torch: the grader process asks for them on every compile-only check (the cache key), and importing
    torch costs a second there."""
    import importlib.util

    spec = importlib.util.find_spec("torch")
    folders = [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
    include = next((f / "include" for f in folders if (f / "include" / "torch").is_dir()), None)
    return None if include is None else [str(include), str(include / "torch" / "csrc" / "api" / "include")]


def compile_host(src: Path, include_dirs: list[Path], root: Path, timeout_s: float | None = None,
                 sandbox=None, depfile: Path | None = None) -> CompileReport:
    """Syntax-check a bindings file against torch's headers (no linking, no GPU needed). depfile: as compile_cuda's."""
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
               *[f"-I{p}" for p in cuda_inc], *[f"-I{d}" for d in include_dirs], f"-idirafter{tmp}",
               *_depfile_flags(depfile)]
        prefix = sandbox.compiler([src.parent, *include_dirs], Path(tmp)) if sandbox is not None else []
        code, log = _run_compiler(cmd, timeout_s, prefix)
    if code is None:
        return CompileReport(rel, False, "c++", note=f"the C++ compiler did not finish in "
                             f"{timeout_s or COMPILE_TIMEOUT_S:g} s", log=log[-20000:])
    diags = [d for d in parse_diagnostics(log, root) if d.kind == "error" or not d.file.startswith("/")]
    return CompileReport(rel, code == 0, "c++", [str(d) for d in diags], log=log[-20000:])


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


# Runs in a process of its own (the student's code): imports the exercise's Python file and calls its compile
# function once per dtype with device "cpu". Exit 3 and "MISSING <package>" when the route's package is absent.
_CPU_COMPILE = r"""
import importlib.util, sys, traceback
path, function, *dtypes = sys.argv[1:]
try:
    import torch
    spec = importlib.util.spec_from_file_location("cpu_compiled_route", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
except ModuleNotFoundError as e:
    top = (e.name or "").split(".")[0]
    if top and importlib.util.find_spec(top) is None:
        print(f"MISSING {top}")
        sys.exit(3)
    traceback.print_exc()
    sys.exit(1)
except BaseException:
    traceback.print_exc()
    sys.exit(1)
names = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
if not callable(getattr(module, function, None)):
    print(f"ERROR: the file defines no function `{function}(dtype, device)`, which builds its kernels for a dtype "
          "(the compile-only check calls it with device \"cpu\"); the stub has its signature")
    sys.exit(4)
for d in dtypes:
    try:
        getattr(module, function)(names[d], "cpu")
    except BaseException:
        print(f"in {function}({d}):")
        traceback.print_exc()
        sys.exit(1)
print("compiled", *dtypes)
"""


def compile_python_kernels(src: Path, function: str, dtypes: list[str], root: Path, timeout_s: float | None = None,
                           sandbox=None) -> CompileReport:
    """A Python route whose kernels compile without a GPU (course.yaml `cpu_compile:`, e.g. CuTe DSL's
    cute.compile): the file's `function(dtype, "cpu")` for each dtype, in a process of its own. A route whose
    package this Python lacks is checked for syntax only, and the report says so."""
    rel = relative_path(src, root)
    cmd = [sys.executable, "-c", _CPU_COMPILE, str(src), function, *dtypes]
    with tempfile.TemporaryDirectory() as tmp:
        prefix = sandbox.compiler([src.parent], Path(tmp)) if sandbox is not None else []
        code, log = _run_compiler(cmd, timeout_s, prefix)
    if code is None:
        return CompileReport(rel, False, "python", note=f"its kernels did not compile in "
                             f"{timeout_s or COMPILE_TIMEOUT_S:g} s", log=log[-20000:])
    if code == 3 and log.startswith("MISSING "):
        package = log.split()[1]
        return CompileReport(rel, True, "python", note=f"kernels not compiled: the package `{package}` is not "
                             "installed here (syntax checked only)")
    if code == 4 and log.startswith("ERROR: "):
        return CompileReport(rel, False, "python", [f"{rel}:1: error: {log.strip()[len('ERROR: '):]}"], log=log)
    if code != 0:
        lines = [int(n) for n in re.findall(rf'File "{re.escape(str(src))}", line (\d+)', log)]
        last = log.strip().splitlines()[-1] if log.strip() else f"exit code {code}"
        return CompileReport(rel, False, "python", [f"{rel}:{lines[-1] if lines else 1}: error: {last}"],
                             log=log[-20000:])
    return CompileReport(rel, True, "python", note=f"kernels compiled ({', '.join(dtypes)})")


def source_problem(src: Path, root: Path) -> CompileReport | None:
    """Why a source cannot be handed to a compiler at all (missing, unreadable, over MAX_SOURCE_BYTES, empty, with
    NUL bytes, not UTF-8), as a failed report whose diagnostic names the file and line; None when it can.

    The one place these rules live: the compile-only check and `grader check` (before any build) both ask it."""
    rel = relative_path(src, root)

    def bad(line: int, message: str) -> CompileReport:
        return CompileReport(rel, False, "-", [str(Diagnostic(rel, line, "error", message))], note=message)

    try:
        if not src.is_file():
            return CompileReport(rel, False, "-", note=MISSING_FILE if not src.exists() else "not a regular file")
        size = src.stat().st_size
        with open(src, "rb") as f:
            data = f.read(MAX_SOURCE_BYTES + 1)  # never more: the file may grow while we read
    except OSError as e:
        return CompileReport(rel, False, "-", note=f"cannot be read: {e.strerror or e}")
    if len(data) > MAX_SOURCE_BYTES:
        size = max(size, len(data))
        return bad(1, f"the file is {size / 2**20:.1f} MiB; sources over {MAX_SOURCE_BYTES // 2**20} MiB are refused "
                      "(is it a generated or binary file?)")
    if not data.strip():
        return bad(1, "the file is empty: it should hold your code (restore it with `git checkout`, or release the "
                      "day's stub again)")
    nul = data.find(b"\0")
    if nul >= 0:
        return bad(data.count(b"\n", 0, nul) + 1,
                   "the file contains NUL bytes (a binary file, or text saved as UTF-16?): save it as UTF-8 text")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        return bad(line, f"not valid UTF-8 (byte 0x{data[e.start]:02x} at column {col}): save the file as UTF-8")
    return None


HOST_SOURCE_SUFFIXES = {".cpp", ".cc", ".cxx", ".c"}  # what compile_host syntax-checks
HEADER_SUFFIXES = {".h", ".hh", ".hpp", ".cuh", ".inc", ".inl"}
CACHE_VERSION = 2  # bump when a report's contents change (2: wgmma_serialized)


def _tool_identity(path: str | None) -> str:
    """A compiler as far as its output goes: its resolved path, size and mtime (a new toolkit changes them)."""
    if not path:
        return "-"
    try:
        real = Path(path).resolve()
        st = real.stat()
        return f"{real}:{st.st_size}:{st.st_mtime_ns}"
    except OSError:
        return str(path)


def cache_key(src: Path, include_dirs: list[Path], extra_cuda_flags: list[str], root: Path,
              sandboxed: bool = False) -> str:
    """The content a compile-only report depends on: the source, every header beside it and in the include
    folders (what `#include "..."` can reach), the flags, the compilers and torch's headers. Same key, same report,
    whichever run asks. sandboxed: a compiler in a sandbox sees less (an `#include` of a file outside the sources
    fails there), so a report made in one is never the answer outside it, nor the reverse."""
    h = hashlib.sha256()

    def add(*parts) -> None:
        for p in parts:
            data = p if isinstance(p, bytes) else str(p).encode()
            h.update(len(data).to_bytes(8, "little") + data)

    add(CACHE_VERSION, src.name, src.read_bytes(), *ARCHS, *extra_cuda_flags, *BASE_CUDA_FLAGS,
        *TORCH_CUDA_DEFINES, "sandboxed" if sandboxed else "open")
    if src.suffix == ".cu":
        add(_tool_identity(nvcc_path()))
    elif src.suffix != ".py":
        add(_tool_identity(shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++")))
        add(*(_torch_include_paths() or ["no torch"]))
        add(*(str(d) for d in _cuda_include_dirs()[:1]))
    for i, d in enumerate([src.parent, *include_dirs]):
        add("." if i == 0 else relative_path(d, root))  # the source's own folder by content only (see _cached)
        for f in sorted(Path(d).rglob("*")) if Path(d).is_dir() else []:
            if f.suffix in HEADER_SUFFIXES and f.is_file():
                add(f.relative_to(d).as_posix(), f.read_bytes())
    return h.hexdigest()


def _cached(src: Path, include_dirs: list[Path], extra_cuda_flags: list[str], root: Path, compile_one,
            sandboxed: bool = False):
    """compile_one(), or the report of an earlier run on the same content. A run that timed out or could not start
    the compiler is not kept (the next one may do better)."""
    try:
        key = cache_key(src, include_dirs, extra_cuda_flags, root, sandboxed)
    except OSError:
        return compile_one()
    path = Paths(root).cache() / "compile" / f"{key}.json"
    # The key leaves out where the folder is, so a file identical in days/ and solutions/ (with identical headers
    # beside it) compiles once: the stored report names its folder with a placeholder, filled in on the way out.
    rel_dir = relative_path(src.parent, root)
    folders = [(str(src.parent.resolve()) + "/", "\0ABS\0/")] + ([(rel_dir + "/", "\0REL\0/")] if rel_dir != "." else [])

    def swap(text: str, out: bool) -> str:
        for real, mark in folders:
            text = text.replace(mark, real) if out else text.replace(real, mark)
        return text

    def convert(d: dict, out: bool) -> dict:
        d = dict(d)
        for k in ("file", "note", "log"):
            d[k] = swap(d[k], out)
        d["diagnostics"] = [swap(x, out) for x in d["diagnostics"]]
        return d

    try:
        return CompileReport(**{**convert(json.loads(path.read_text(encoding="utf-8")), True), "cached": True})
    except (OSError, ValueError, TypeError, KeyError):
        pass
    report = compile_one()
    if "did not finish" in report.note or "not found" in report.note or report.log.startswith("cannot run "):
        return report
    try:
        write_text_atomic(path, json.dumps(convert(report.as_dict(), False)))  # a concurrent reader: all or none
    except OSError:
        pass  # a read-only state folder: no cache, same answer
    return report


def uncopied_includes(ex, src_dir: Path, root: Path) -> list:
    """A failed compile report for each `#include "name"` in what a build compiles (files_read) that names a file
    beside it which the build's copy leaves out (a .cu or .cpp other than the exercise's sources): compiled in place,
    as the compile-only check does, it would build; in the build's copy it is not there. Asked before any build, on
    a GPU or without one, so both say the same."""
    read = files_read(ex, src_dir)
    copied = {name for name, _, _ in read}
    out = []
    for name, path, _ in read:
        if "/" in name or path.suffix == ".py" or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in QUOTED_INCLUDE.finditer(text):
            inc = m.group(1)
            if inc in copied or "/" in inc or not (path.parent / inc).is_file():
                continue
            rel = relative_path(path, root)
            line = text.count("\n", 0, m.start()) + 1
            why = (f'#include "{inc}" names a file that a build does not copy: a build compiles a copy of this '
                   f"exercise's sources ({', '.join(ex.sources)}) and the .h, .cuh and .hpp headers beside them. "
                   f"Rename it to a header (e.g. {Path(inc).stem}.cuh) or move its code into a source")
            out.append(CompileReport(rel, False, "-", [str(Diagnostic(rel, line, "error", why))], note=why))
    return out


def compile_sources(sources: list[Path], include_dirs: list[Path], extra_cuda_flags: list[str],
                    root: Path, timeout_s: float | None = None, sandbox=None) -> list[CompileReport]:
    """Each source through its compiler (timeout_s: the limit of one compiler run); a source that cannot be
    compiled at all (source_problem) is reported without running one. Reports are cached by content under the
    course's state (.grader/cache/compile): an unchanged file is not compiled again. sandbox: a CheckSandbox the
    compilers run in (grader/check/sandboxed.py)."""
    boxed = sandbox is not None
    reports = []
    for s in sources:
        if problem := source_problem(s, root):
            reports.append(problem)
        elif s.suffix in (".cu",):
            reports.append(_cached(s, include_dirs, extra_cuda_flags, root,
                                   lambda s=s: compile_cuda(s, include_dirs, extra_cuda_flags, root, timeout_s,
                                                            sandbox), boxed))
        elif s.suffix == ".py":
            reports.append(compile_python(s, root))
        elif s.suffix not in HOST_SOURCE_SUFFIXES:
            continue  # e.g. a .mojo kernel: read above, and compiled by its route's own compiler (cpu_compile)
        else:
            reports.append(_cached(s, include_dirs, [], root,
                                   lambda s=s: compile_host(s, include_dirs, root, timeout_s, sandbox), boxed))
    return reports


def defines_op(ex, src_dir: Path) -> bool:
    """Whether the exercise's own sources define its op, read as text (no GPU, nothing built): a C++ source that
    names it as a string (`m.def("name", …)`, the course's COURSE_*_OP(m, "name", …) macros, a TORCH_LIBRARY schema
    "name(…"), or a Python one with `def name(`. A compile-only verdict cannot call the op, so without this a
    student whose bindings forgot it would not know."""
    name = ex.op.split("::")[-1]
    cpp = re.compile(r'"' + re.escape(name) + r'["(]')
    py = re.compile(r"^\s*def\s+" + re.escape(name) + r"\s*\(", re.M)
    for s in ex.sources:
        try:
            text = (Path(src_dir) / s).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if (py if s.endswith(".py") else cpp).search(text):
            return True
    return False

