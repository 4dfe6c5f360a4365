"""Building an exercise as a torch extension (ninja, one build folder per day and variant), and making build
errors readable: file:line in the student's own file, the compiler's noise dropped."""
from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import os
import re
import sys
import time
import traceback
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

# PyTorch compiles with these; kernels must build the same way everywhere (the compile-only check too).
TORCH_CUDA_DEFINES = ["-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
                      "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__"]
BASE_CUDA_FLAGS = ["-O3", "-std=c++17", "-lineinfo"]

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


def parse_diagnostics(log: str, root: Path) -> list[Diagnostic]:
    """Compiler diagnostics from a build log, paths made relative to the course root, duplicates dropped."""
    seen, out = set(), []
    for raw in log.splitlines():
        line = raw.strip()
        m = _NVCC_DIAG.match(line) or _GCC_DIAG.match(line)
        if not m:
            continue
        d = Diagnostic(relative_path(Path(m["file"]), root), int(m["line"]), "error" if "error" in m["kind"] else "warning", m["msg"].strip())
        if d not in seen:
            seen.add(d)
            out.append(d)
    return out


def arch_list(capability: tuple[int, int]) -> str:
    """TORCH_CUDA_ARCH_LIST for the GPU at hand only: faster builds than torch's every-arch default."""
    return f"{capability[0]}.{capability[1]}"


def extension_name(day: str, exercise: str, variant: str) -> str:
    return re.sub(r"\W", "_", f"{day}_{exercise}_{variant}")


def variant_for_dir(src_dir: Path, root: Path) -> str:
    """student / solution for the course's own folders, else a short hash of the folder (--dir)."""
    src_dir = src_dir.resolve()
    for name, base in (("student", root / "days"), ("solution", root / "solutions")):
        if src_dir.parent == base.resolve():
            return name
    return "dir" + hashlib.sha1(str(src_dir).encode()).hexdigest()[:10]


@contextmanager
def build_lock(build_dir: Path):
    """Serialize builds of one folder, and clear a lock torch left behind.

    torch's own lock is a bare file (`<build_dir>/lock`): a build that was killed leaves it, and every later load
    waits for it forever. We hold an flock (released by the kernel when a process dies) around every build, so
    while we hold it any leftover torch lock belongs to a dead build and is safe to delete."""
    build_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(build_dir / ".grader-lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        stale = build_dir / "lock"
        recovered = stale.exists()
        if recovered:
            stale.unlink()
        yield recovered
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


class BuildError(Exception):
    def __init__(self, log: str, diagnostics: list[Diagnostic]):
        super().__init__("build failed")
        self.log, self.diagnostics = log, diagnostics


def build_extension(*, name: str, sources: list[Path], include_dirs: list[Path], build_dir: Path,
                    extra_cuda_cflags: list[str], capability: tuple[int, int], root: Path):
    """Build (or reuse) and import the extension; returns (module, seconds, recovered_lock)."""
    from torch.utils import cpp_extension

    os.environ["TORCH_CUDA_ARCH_LIST"] = arch_list(capability)
    os.environ.setdefault("MAX_JOBS", str(os.cpu_count() or 4))
    t0 = time.perf_counter()
    with build_lock(build_dir) as recovered:
        try:
            module = cpp_extension.load(
                name=name, sources=[str(s) for s in sources], build_directory=str(build_dir),
                extra_include_paths=[str(p) for p in include_dirs],
                extra_cflags=["-O3"], extra_cuda_cflags=BASE_CUDA_FLAGS + list(extra_cuda_cflags), verbose=False)
        except (RuntimeError, OSError, ImportError) as e:
            log = str(e)
            raise BuildError(log, parse_diagnostics(log, root)) from None
    return module, time.perf_counter() - t0, recovered


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
    except (Exception, SystemExit) as e:  # SyntaxError, NameError, sys.exit() at import: the file does not load
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


def relative_path(path: Path, root: Path) -> str:
    """path relative to the course root where it is inside it (for messages), else as given."""
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def build_dir(root: Path, day_id: str, ex_name: str, variant: str) -> Path:
    """The folder an exercise's extension is built in (`grader profile` loads the module from there)."""
    return root / ".grader" / "build" / f"{day_id}-{ex_name}-{variant}"


def build_exercise(ex, *, src_dir: Path, root: Path, day_id: str, variant: str, capability: tuple[int, int]):
    """The exercise's op module, built the way course.yaml says (`build:`); returns (module, seconds, recovered).
    torch_extension: the sources compiled with ninja; python: the first source imported as a module."""
    name = extension_name(day_id, ex.name, variant)
    if ex.build == "python":
        module, secs = load_python_module(name=name, path=src_dir / ex.sources[0], root=root)
        return module, secs, False
    return build_extension(name=name, sources=[src_dir / s for s in ex.sources],
                           include_dirs=[root / i for i in ex.include_dirs],
                           build_dir=build_dir(root, day_id, ex.name, variant),
                           extra_cuda_cflags=ex.extra_cuda_cflags, capability=capability, root=root)
