"""Building an exercise as a torch extension, and making build errors readable: file:line in the student's own
file, the compiler's noise dropped.

A build is keyed by what goes into it, not by the folder that holds the sources: the content key (the sources, the
headers beside them and in the include folders, the flags, the GPU and torch) names a folder under
`.grader/build/` that keeps the built module. The same code in any folder is built once; a hit imports the module
with no ninja run at all.

Exercises of a day that compile the same files with the same flags are one build unit (build_unit): one build
serves them all. A miss compiles in a workspace of its unit (`<day>-<unit>-work`, one build at a time, under an
flock; builds of one unit at once take the next free workspace, up to BUILD_SLOTS): the
sources are copied into its `src/`, rewriting only the files whose bytes changed, and torch's ninja build runs
there. Its commands name the workspace's fixed paths and a fixed module name, so they never change between
versions of the code, and ninja recompiles only the files that changed since the workspace's previous build (a
kernel edit does not recompile the bindings, which include all of torch). The module is then copied into its
keyed folder, and imported from there."""
from __future__ import annotations

import fcntl
import functools
import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import types
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from grader.paths import Paths, relative_path, write_text_atomic

# PyTorch compiles with these; kernels must build the same way everywhere (the compile-only check too).
TORCH_CUDA_DEFINES = ["-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
                      "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__"]
BASE_CUDA_FLAGS = ["-O3", "-std=c++17", "-lineinfo"]
CXX_FLAGS = ["-O3"]
# How fast a build runs, not what it makes (so in no build key): nvcc's host and device passes at once (--threads 0:
# one thread per core), and gold for the link against torch's libraries where this compiler links with it (bfd reads
# their symbol tables about twice as slowly). The student's edit -> verdict is mostly this build (measured/NOTES.md).
SPEED_CUDA_FLAGS = ["--threads", "0"]


@functools.cache
def speed_ldflags(cxx: str, cache: Path) -> tuple[str, ...]:
    """("-fuse-ld=gold",) when cxx links a C++ shared library with gold here, else (). Asked of the compiler: an
    ld.gold on the PATH is not enough (a GCC installed beside the system's gave gold a libstdc++.so path it could
    not open, and every build failed). The answer is kept in cache (the grader's cache folder) under the compiler's
    and gold's paths and dates, so the probe's quarter second is paid once a machine, not on a student's first edit
    of every warm worker. A tuple: cpp_extension appends torch's libraries to the list it is given, which must not
    be this kept answer."""
    gold, compiler = shutil.which("ld.gold"), shutil.which(cxx)
    if not gold or not compiler:
        return ()
    try:
        ident = " ".join(f"{os.path.realpath(p)}:{os.stat(p).st_mtime_ns}" for p in (compiler, gold))
    except OSError:
        return ()
    kept = cache / f"gold-{hashlib.sha256(ident.encode()).hexdigest()[:16]}"
    try:
        if kept.is_file():
            return ("-fuse-ld=gold",) if kept.read_text().strip() == "yes" else ()
    except OSError:
        pass
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "probe.cpp"
        src.write_text('#include <string>\nstd::string probe() { return std::string("gold"); }\n')
        try:
            r = subprocess.run([compiler, "-shared", "-fPIC", "-fuse-ld=gold", str(src), "-o",
                                str(Path(d) / "probe.so")], capture_output=True)
        except OSError:
            return ()
    try:
        write_text_atomic(kept, "yes\n" if r.returncode == 0 else "no\n")
    except OSError:
        pass  # a read-only state: asked again by the next process
    return ("-fuse-ld=gold",) if r.returncode == 0 else ()


# Headers beside the sources are copied with them (and key the build): `#include "helpers.cuh"` must find them.
HEADER_SUFFIXES = (".h", ".cuh", ".hpp")
# A quoted include (the name it gives): the course's sources find their headers and shared files by these.
QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
LIB_SUFFIX = ".so"
USED_MARKER = ".grader-used"  # touched on every use of a keyed build (its mtime: when it was last used)

# nvcc: "/abs/file.cu(42): error: ..."; gcc/clang: "/abs/file.cpp:42:7: error: ..."
_NVCC_DIAG = re.compile(r"^(?P<file>[^\s(][^(]*)\((?P<line>\d+)\): (?P<kind>error|warning)[^:]*: (?P<msg>.*)$")
_GCC_DIAG = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:(?P<col>\d+):)? (?P<kind>fatal error|error|warning): "
                       r"(?P<msg>.*)$")


@dataclass(frozen=True)
class Diagnostic:
    file: str
    line: int
    kind: str
    message: str

    def __str__(self):
        return f"{self.file}:{self.line}: {self.kind}: {self.message}"


def _folder_pairs(folders: dict[Path, Path] | None) -> list[tuple[str, str]]:
    """(prefix as the compiler may print it, folder it stands for): absolute and symlink-free spellings."""
    pairs = []
    for built, real in (folders or {}).items():
        for spelling in {os.path.abspath(built), os.path.realpath(built)}:
            pairs.append((spelling.rstrip(os.sep) + os.sep, str(real).rstrip(os.sep) + os.sep))
    return sorted(pairs, key=lambda p: -len(p[0]))


def map_paths(text: str, folders: dict[Path, Path] | None) -> str:
    """text with every path inside a folder we compiled from (a workspace's src/) naming the folder it was
    copied from (the student's) instead."""
    for built, real in _folder_pairs(folders):
        text = text.replace(built, real)
    return text


def parse_diagnostics(log: str, root: Path, folders: dict[Path, Path] | None = None) -> list[Diagnostic]:
    """Compiler diagnostics from a build log, paths made relative to the course root, duplicates dropped.

    folders maps a folder the compiler saw (the build's copy of the sources) to the one the sources came from, so
    that a diagnostic names the student's own file."""
    pairs = _folder_pairs(folders)
    seen, out = set(), []
    for raw in log.splitlines():
        line = raw.strip()
        m = _NVCC_DIAG.match(line) or _GCC_DIAG.match(line)
        if not m:
            continue
        file = m["file"]
        for built, real in pairs:
            if file.startswith(built):
                file = real + file[len(built):]
                break
        d = Diagnostic(relative_path(Path(file), root), int(m["line"]), "error" if "error" in m["kind"] else "warning",
                       m["msg"].strip())
        if d not in seen:
            seen.add(d)
            out.append(d)
    return out


def arch_list(capability: tuple[int, int]) -> str:
    """TORCH_CUDA_ARCH_LIST for the GPU at hand only: faster builds than torch's every-arch default. A simulated
    older GPU (GRADER_SIMULATE_GPU) gets its PTX too: its SASS would not run on the GPU at hand, which compiles the
    PTX, the code that GPU would run."""
    arch = f"{capability[0]}.{capability[1]}"
    return f"{arch}+PTX" if _simulating(capability) else arch


def _simulating(capability: tuple[int, int]) -> bool:
    """Whether this build is for a GPU simulated on another (grader/gpu_support.py) that runs without Hopper's
    instructions (simulating 9.0 on a Hopper GPU is the GPU itself)."""
    from grader.gpu_support import simulated

    sim = simulated()
    return sim is not None and tuple(capability) == sim and sim != (9, 0)


_GENCODE = re.compile(r"^-gencode=arch=compute_\d+a?,code=(?P<kind>sm|compute)_(?P<cc>\d+)a?$")


def flags_for_gpu(flags: list[str], capability: tuple[int, int]) -> list[str]:
    """An exercise's nvcc flags for the GPU at hand: where its `-gencode` list holds SASS for exactly this GPU
    (sm_90a on an H100), only that image is built, as TORCH_CUDA_ARCH_LIST does for the other exercises; the
    others (sm_80 SASS, compute_80 PTX) would never run here and cost most of a build. Without an exact image the
    list is kept whole (the driver runs compatible SASS or compiles the PTX)."""
    sass = f"sm_{capability[0]}{capability[1]}"
    gencodes = {f: m for f in flags if (m := _GENCODE.match(f))}
    if _simulating(capability):  # the list's PTX alone: the GPU at hand compiles what the simulated one runs
        ptx = {f for f, m in gencodes.items() if m["kind"] == "compute"}
        return [f for f in flags if f not in gencodes or f in ptx] if ptx else list(flags)
    exact = {f for f, m in gencodes.items() if f"{m['kind']}_{m['cc']}" == sass}
    return [f for f in flags if f not in gencodes or f in exact] if exact else list(flags)


def extension_name(day: str, unit: str) -> str:
    """The module name of a build unit's extension (build_unit): the same for every version of its code, so that
    the build commands (which define TORCH_EXTENSION_NAME) do not change when the code does."""
    return re.sub(r"\W", "_", f"{day}_{unit}")


def build_unit(ex) -> str:
    """What names an exercise's build (its module, workspaces and keyed folders): the recipe, not the exercise.
    Exercises of a day that compile the same files with the same flags and includes share one build (day 11's
    five steps are one library, day 19's two rings one module): the first check builds it, the others import it.
    The name reads as the first source's stem and a hash of the recipe, stable across versions of the code."""
    recipe = repr((ex.build, list(ex.sources), list(_uses(ex)), list(ex.include_dirs), list(ex.extra_cuda_cflags),
                   _torch_op(ex)))
    return f"{Path(ex.sources[0]).stem}-{hashlib.sha1(recipe.encode()).hexdigest()[:8]}"


def _try_flock(build_dir: Path, wait: bool) -> int | None:
    """An flock on build_dir's `.grader-lock` (released by the kernel when a process dies): its fd, or None where
    wait is False and another process holds it."""
    build_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(build_dir / ".grader-lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


@contextmanager
def _held(build_dir: Path, fd: int):
    """While the flock fd is held: any leftover torch lock belongs to a dead build and is deleted (yields whether
    there was one); the flock is released on leaving."""
    try:
        stale = build_dir / "lock"
        recovered = stale.exists()
        if recovered:
            stale.unlink()
        yield recovered
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


@contextmanager
def build_lock(build_dir: Path):
    """Serialize builds of one folder, and clear a lock torch left behind.

    torch's own lock is a bare file (`<build_dir>/lock`): a build that was killed leaves it, and every later load
    waits for it forever. We hold an flock around every build, so while we hold it any leftover torch lock belongs
    to a dead build and is safe to delete."""
    fd = _try_flock(build_dir, wait=True)
    with _held(build_dir, fd) as recovered:
        yield recovered


class BuildError(Exception):
    def __init__(self, log: str, diagnostics: list[Diagnostic]):
        super().__init__("build failed")
        self.log, self.diagnostics = log, diagnostics


def _error_log(e: BaseException) -> str:
    """What a failed cpp_extension.load said. torch decodes the compiler's output as strict UTF-8, so a source
    with another encoding fails in that decode: the bytes are in the error, decoded here with replacement."""
    if isinstance(e, UnicodeDecodeError) and isinstance(e.object, (bytes, bytearray)):
        return "Error building extension:\n" + bytes(e.object).decode("utf-8", errors="replace")
    return str(e)


def _load(*, name: str, sources: list[Path], include_dirs: list[Path], build_dir: Path,
          extra_cuda_cflags: list[str], capability: tuple[int, int], root: Path,
          folders: dict[Path, Path] | None = None, python_module: bool = True):
    """cpp_extension.load, its failures as BuildError (paths mapped back through folders). The caller holds
    build_lock(build_dir). python_module=False: the library defines torch ops and no Python module; it is loaded
    into the process (torch.ops.load_library) and its path returned."""
    from torch.utils import cpp_extension

    os.environ["TORCH_CUDA_ARCH_LIST"] = arch_list(capability)
    os.environ.setdefault("MAX_JOBS", str(os.cpu_count() or 4))
    # torch renames a module it already built in this process from other sources (name_v1, ...), which changes
    # every command and the library's name: a fresh build of the same name each time.
    versions = getattr(getattr(cpp_extension, "JIT_EXTENSION_VERSIONER", None), "entries", None)
    if isinstance(versions, dict):
        versions.pop(name, None)
    ldflags = list(speed_ldflags(os.environ.get("CXX", "c++"), Paths(root).cache()))
    try:
        return cpp_extension.load(
            name=name, sources=[str(s) for s in sources], build_directory=str(build_dir),
            extra_include_paths=[str(p) for p in include_dirs],
            extra_cflags=list(CXX_FLAGS), extra_cuda_cflags=BASE_CUDA_FLAGS + list(extra_cuda_cflags) + SPEED_CUDA_FLAGS,
            extra_ldflags=ldflags, verbose=False, is_python_module=python_module)
    except (RuntimeError, OSError, ImportError, UnicodeDecodeError) as e:
        log = map_paths(_error_log(e), folders)
        raise BuildError(log, parse_diagnostics(log, root)) from None


def build_extension(*, name: str, sources: list[Path], include_dirs: list[Path], build_dir: Path,
                    extra_cuda_cflags: list[str], capability: tuple[int, int], root: Path):
    """Build (or reuse) and import an extension in a folder of the caller's choosing (not keyed by content: the
    ceilings' benchmark, the sweeps); returns (module, seconds, recovered_lock)."""
    t0 = time.perf_counter()
    with build_lock(build_dir) as recovered:
        module = _load(name=name, sources=sources, include_dirs=include_dirs, build_dir=build_dir,
                       extra_cuda_cflags=extra_cuda_cflags, capability=capability, root=root)
    return module, time.perf_counter() - t0, recovered


# -- exercises: builds keyed by content ----------------------------------------------------------------------------
def _local_headers(src_dir: Path) -> list[str]:
    try:
        return sorted(p.name for p in src_dir.iterdir() if p.suffix in HEADER_SUFFIXES and p.is_file())
    except FileNotFoundError:
        return []


def _uses(ex) -> list[str]:
    return list(getattr(ex, "uses", None) or [])


def _torch_op(ex) -> bool:
    return "::" in getattr(ex, "op", "")


def used_folders(ex, src_dir: Path) -> dict[str, Path]:
    """The earlier days' folders an exercise's `uses:` reads from: beside src_dir (days/day12 for days/day18)."""
    return {day: Path(src_dir).parent / day for day in dict.fromkeys(u.split("/")[0] for u in _uses(ex))}


def compiled_sources(ex) -> list[str]:
    """What the compiler builds, as names in the build's copy: the day's C++/CUDA sources, then the used files
    (`dayNN/file`, in a folder of their own there: two days may both have an attention.cu)."""
    return [s for s in ex.sources if not s.endswith(".py")] + list(_uses(ex))


def source_paths(ex, src_dir: Path) -> list[Path]:
    """compiled_sources as the files they are read from."""
    folders = used_folders(ex, src_dir)
    return [folders[n.split("/")[0]] / n.split("/")[1] if n in _uses(ex) else Path(src_dir) / n
            for n in compiled_sources(ex)]


def files_read(ex, src_dir: Path) -> list[tuple[str, Path, bool]]:
    """(name in the build's copy, file, whether it must exist) of everything a build compiles from src_dir: the
    sources (in their order), then the headers beside them, then the used files of earlier days and the headers
    beside those. `grader check --on slurm` sends exactly these."""
    src_dir = Path(src_dir)
    wanted = [(name, src_dir / name, True) for name in ex.sources]
    wanted += [(name, src_dir / name, False) for name in _local_headers(src_dir)]
    folders = used_folders(ex, src_dir)
    wanted += [(u, folders[u.split("/")[0]] / u.split("/")[1], True) for u in _uses(ex)]
    wanted += [(f"{day}/{h}", folder / h, False) for day, folder in folders.items() for h in _local_headers(folder)]
    return wanted


def _read_files(ex, src_dir: Path, root: Path) -> dict[str, bytes]:
    """name -> bytes of what a build compiles from src_dir (files_read). Read once: the key and the copy that is
    compiled come from the same bytes."""
    files = {}
    for name, path, required in files_read(ex, src_dir):
        if name in files:
            continue
        try:
            files[name] = path.read_bytes()
        except FileNotFoundError:
            if required:
                rel = relative_path(path, root)
                why = "file not found"
                if name in _uses(ex):
                    why += (f" (this exercise also compiles your {name.split('/')[0]}'s {path.name}, from the folder "
                            f"beside this day's)")
                raise BuildError(f"{rel}: {why}", [Diagnostic(rel, 1, "error", why)]) from None
    return files


def source_folders(ex, src: Path, src_dir: Path) -> dict[Path, Path]:
    """The build's copy of the sources (src, with a subfolder per used day) -> the folders they came from."""
    out = {src / day: folder for day, folder in used_folders(ex, src_dir).items()}
    out[src] = Path(src_dir)
    return out


def _key(ex, files: dict[str, bytes], root: Path, capability: tuple[int, int]) -> str:
    import torch

    h = hashlib.sha256()

    def add(*parts):
        for part in parts:
            data = part if isinstance(part, bytes) else str(part).encode()
            h.update(len(data).to_bytes(8, "little"))
            h.update(data)

    add("sources", len(files))
    for name, data in files.items():
        add(name, data)
    # The shared headers (common/) are in every build's includes: an edit to one must not reuse an old module.
    for inc in ex.include_dirs:
        add("include", inc)
        base = root / inc
        headers = sorted(p for p in base.rglob("*") if p.suffix in HEADER_SUFFIXES and p.is_file()) \
            if base.is_dir() else []
        for p in headers:
            add(p.relative_to(base).as_posix(), p.read_bytes())
    add("flags", *flags_for_gpu(ex.extra_cuda_cflags, capability), "base", *BASE_CUDA_FLAGS, "cxx", *CXX_FLAGS)
    add("capability", *capability, "torch", torch.__version__, torch.version.cuda)
    return h.hexdigest()


def build_key(ex, src_dir: Path, root: Path, capability: tuple[int, int]) -> str:
    """sha256 of everything that goes into the exercise's build from src_dir."""
    return _key(ex, _read_files(ex, Path(src_dir), Path(root)), Path(root), capability)


def _keyed_folder(root: Path, day_id: str, unit: str, key: str) -> Path:
    return Paths(root).builds() / f"{day_id}-{unit}-{key[:16]}"


def build_folder(ex, src_dir: Path, root: Path, day_id: str, capability: tuple[int, int]) -> Path:
    """The folder that keeps the module built from src_dir's code (`<day>-<unit>-<key>`): the same for the same
    code in any folder, and for every exercise of the day with the same recipe."""
    return _keyed_folder(Path(root), day_id, build_unit(ex), build_key(ex, src_dir, root, capability))


# Workspaces per build unit. One student builds one at a time and only ever uses the first; builds of one unit
# that run at once (a class graded in parallel, the GPU test suite's workers) each take a free one rather than
# queue behind a single lock. Each keeps its own ninja state, so a workspace's first build compiles everything.
BUILD_SLOTS = 4


def workspace(root: Path, day_id: str, unit: str, slot: int = 0, builds: Path | None = None) -> Path:
    """A folder where versions of one build unit are compiled, one build at a time (ninja's state lives there);
    the sources it compiled last are in its src/. builds: another builds folder than the course's (a sandbox's)."""
    return (builds or Paths(root).builds()) / (f"{day_id}-{unit}-work" + (f".{slot}" if slot else ""))


def workspaces(root: Path, day_id: str, unit: str, builds: Path | None = None) -> list[Path]:
    """Every workspace of the unit (for mapping a tool's paths back: any of them may have compiled the code)."""
    return [workspace(root, day_id, unit, s, builds) for s in range(BUILD_SLOTS)]


@contextmanager
def free_workspace(root: Path, day_id: str, unit: str):
    """Holds the first workspace of the unit that no other build holds, else waits for the first; yields
    (workspace, recovered: whether a dead build's torch lock was cleared)."""
    for slot in range(BUILD_SLOTS):
        work = workspace(root, day_id, unit, slot)
        fd = _try_flock(work, wait=False)
        if fd is not None:
            break
    else:
        work = workspace(root, day_id, unit)
        fd = _try_flock(work, wait=True)
    with _held(work, fd) as recovered:
        yield work, recovered


def sync_sources(files: dict[str, bytes], dst: Path) -> list[str]:
    """Make dst hold exactly `files`, writing only those whose bytes differ (a file left alone keeps its mtime,
    so ninja does not recompile what it feeds); files no longer there are removed. Returns the names written."""
    dst.mkdir(parents=True, exist_ok=True)
    written = []
    for name, data in files.items():
        target = dst / name
        try:
            if target.read_bytes() == data:
                continue
        except OSError:
            pass
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, target)
        written.append(name)
    for p in sorted(dst.rglob("*"), reverse=True):
        rel = p.relative_to(dst).as_posix()
        if p.is_file() and rel not in files:
            p.unlink()
        elif p.is_dir() and not any(p.iterdir()):
            p.rmdir()
    return written


def _publish(built: Path, dst: Path) -> None:
    """Copy a built module into its keyed folder, atomically: a module that is there is whole."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(f".{dst.name}.{os.getpid()}.tmp")
    shutil.copy2(built, tmp)
    os.replace(tmp, dst)


def _mark_used(folder: Path) -> None:
    try:
        (folder / USED_MARKER).touch()
    except OSError:
        pass


def _op_library(path: Path):
    """A library of torch ops (TORCH_LIBRARY, no Python module of its own), loaded into the process; the ops are
    then in torch.ops. What is returned stands in for a module: it names the library's file."""
    import types

    import torch

    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: this code has not been built (run `grader check` first)")
    torch.ops.load_library(str(path))
    return types.SimpleNamespace(__file__=str(path), __name__=path.stem)


def _import_library(name: str, folder: Path, torch_op: bool = False):
    """Import a keyed build's module from its file, without cpp_extension.load (which would run ninja).

    The import name is qualified by the folder (`<folder>.<name>`; the init function is still found by the last
    part): pybind11 keeps one module per import name in a process, so every build of one exercise imported under
    the bare name would be the first one imported."""
    import torch  # noqa: F401 -- the module links against torch's libraries, which importing torch loads

    path = folder / f"{name}{LIB_SUFFIX}"
    if torch_op:
        return _op_library(path)
    qualifier = re.sub(r"\W", "_", folder.name)
    spec = importlib.util.spec_from_file_location(f"{qualifier}.{name}", path)
    if spec is None or not path.is_file():
        raise FileNotFoundError(f"{path} is missing: this code has not been built (run `grader check` first)")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_IMPORTED: dict[str, object] = {}  # keyed folder -> its module, imported in this process (a --serve worker)


def loads_once(ex) -> bool:
    """Whether the exercise's library registers torch ops, which a process can load only once."""
    return ex.build != "python" and _torch_op(ex)


def build_exercise(ex, *, src_dir: Path, root: Path, day_id: str, capability: tuple[int, int]):
    """The exercise's op module, built the way course.yaml says (`build:`); returns (module, seconds, recovered).
    torch_extension: the sources compiled with ninja (reused when the same code was built before, in any
    folder); python: the first source imported as a module."""
    src_dir, root = Path(src_dir), Path(root)
    if ex.build == "python":
        module, secs = load_python_module(name=extension_name(day_id, ex.name), path=src_dir / ex.sources[0],
                                          root=root)
        return module, secs, False
    unit = build_unit(ex)
    name = extension_name(day_id, unit)
    t0 = time.perf_counter()
    files = _read_files(ex, src_dir, root)
    folder = _keyed_folder(root, day_id, unit, _key(ex, files, root, capability))
    lib = folder / f"{name}{LIB_SUFFIX}"
    if str(folder) in _IMPORTED and lib.is_file():  # the same code, already loaded here: nothing to build or import
        _mark_used(folder)
        return _IMPORTED[str(folder)], time.perf_counter() - t0, False
    recovered = False
    module = None
    if not lib.is_file():
        with free_workspace(root, day_id, unit) as (work, recovered):
            if not lib.is_file():  # not built by another process while we waited
                src = work / "src"
                sync_sources(files, src)
                built = _load(name=name, sources=[src / s for s in compiled_sources(ex)],
                              include_dirs=[root / i for i in ex.include_dirs], build_dir=work,
                              extra_cuda_cflags=flags_for_gpu(ex.extra_cuda_cflags, capability),
                              capability=capability, root=root,
                              folders=source_folders(ex, src, src_dir), python_module=not _torch_op(ex))
                _publish(work / f"{name}{LIB_SUFFIX}", lib)
                # A library that registers torch ops (TORCH_LIBRARY) is loaded once per process: loading its keyed
                # copy as well would register the ops again, which torch refuses while loading (an abort).
                if _torch_op(ex):
                    module = types.SimpleNamespace(__file__=str(built), __name__=name)
    _mark_used(folder)
    if module is None:
        try:
            module = _import_library(name, folder, _torch_op(ex))
        except (ImportError, OSError) as e:  # e.g. an undefined symbol: a function declared and never defined
            raise BuildError(str(e), []) from None
    import_registrations(ex, src_dir, root, name)
    _IMPORTED[str(folder)] = module
    return module, time.perf_counter() - t0, recovered


def import_registrations(ex, src_dir: Path, root: Path, name: str) -> None:
    """A torch extension's .py sources, imported once the library is loaded (they register fake and autograd
    implementations of the ops it defines), in their order. An error in one is the student's build error."""
    for s in ex.sources:
        if s.endswith(".py"):
            load_python_module(name=f"{name}__{Path(s).stem}", path=Path(src_dir) / s, root=root)


def load_built(ex, *, src_dir: Path, root: Path, day_id: str, capability: tuple[int, int] | None = None):
    """The module build_exercise built from src_dir's code, imported without running ninja (`grader profile` runs
    this under Nsight Compute, which instruments every process started). capability: the GPU's, asked of torch
    when not given. A Python exercise is simply imported again (its JIT compiles when first called).
    FileNotFoundError when that code has not been built."""
    src_dir, root = Path(src_dir), Path(root)
    if ex.build == "python":
        return load_python_module(name=extension_name(day_id, ex.name), path=src_dir / ex.sources[0], root=root)[0]
    name = extension_name(day_id, build_unit(ex))
    if capability is None:
        import torch

        capability = tuple(torch.cuda.get_device_capability(0))
    folder = build_folder(ex, src_dir, root, day_id, capability)
    lib = folder / f"{name}{LIB_SUFFIX}"
    if not lib.is_file():
        raise FileNotFoundError(f"no build of {relative_path(src_dir, root)}'s {day_id}.{ex.name} as it is now "
                                f"({relative_path(lib, root)} is missing): build it first (grader check)")
    _mark_used(folder)
    module = _import_library(name, folder, _torch_op(ex))
    import_registrations(ex, src_dir, root, name)
    return module


class MissingPackage(Exception):
    """A Python exercise imports a package this machine lacks: the environment's problem, not the student's."""


def load_python_module(*, name: str, path: Path, root: Path):
    """Import a Python exercise's op module from its file (a fresh module per name; returns (module, seconds)).

    A syntax error, or any exception while the module runs its top level, is the student's build error, reported
    as file:line like a compiler diagnostic; a missing third-party package is MissingPackage."""
    t0 = time.perf_counter()
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and some JITs (numba, triton) look the module up by name
    try:
        spec.loader.exec_module(module)
    except ModuleNotFoundError as e:
        sys.modules.pop(name, None)
        top = (e.name or "").split(".")[0]
        # Missing only if the package itself is absent: `import numpy.linalgx` is the student's typo, not a missing
        # numpy (nor is a sibling module of the student's own).
        if top and importlib.util.find_spec(top) is None and not (path.parent / f"{top}.py").exists():
            raise MissingPackage(top) from None
        raise BuildError(traceback.format_exc(), _python_diagnostics(e, path, root)) from None
    except (Exception, SystemExit) as e:  # noqa: BLE001 -- SyntaxError, NameError, sys.exit() at import: the file does not load
        sys.modules.pop(name, None)
        raise BuildError(traceback.format_exc(), _python_diagnostics(e, path, root)) from None
    return module, time.perf_counter() - t0


def _python_diagnostics(e: BaseException, path: Path, root: Path) -> list[Diagnostic]:
    rel = relative_path(path, root)
    if isinstance(e, SyntaxError) and e.lineno:
        return [Diagnostic(rel, e.lineno, "error", f"{type(e).__name__}: {e.msg}")]
    # The deepest frame inside the student's file is where the import went wrong.
    frames = [f for f in traceback.extract_tb(e.__traceback__) if Path(f.filename).resolve() == path.resolve()]
    line = frames[-1].lineno if frames else 1
    return [Diagnostic(rel, line or 1, "error", f"{type(e).__name__}: {e}")]
