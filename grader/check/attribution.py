"""Whose GPU work is it? One call of the op, recorded with torch.profiler outside any timed loop: every kernel,
memcpy and memset it launched, with its stream. The student's kernels are those compiled from the day's sources
(a torch extension: the kernels in its built library; a Python exercise: kernels named after functions defined in
the student's files). Anything else (ATen, cuBLAS, cuDNN, CUTLASS, flash-attention, another module), work on a
stream other than the caller's, and host copies the exercise does not allow are reported by name (memsets and
device-to-device copies are the op's own work)."""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

# Names that only libraries give their kernels: a kernel of the student's own cannot carry these.
LIBRARY_MARKS = re.compile(r"(^|[^\w])(at|c10|cub|cub_\w+|thrust|cutlass|cute|pytorch_flash|cudnn\w*|cublas\w*|"
                           r"cublasLt\w*)::|^(sm\d+_xmma|xmma_|nvjet_|ampere_(s|h|bf)gemm|cutlass_|cudnn_|gemv2[TN]_|"
                           r"gemmSN_|gemmk1_|cublas)", re.I)


@dataclass(frozen=True)
class Launch:
    kind: str  # kernel | memcpy | memset
    name: str
    stream: int


def qualified(name: str) -> str:
    """`void ns::k<float>(float const*, int)` -> `ns::k<float>`: the name without return type and parameters,
    spaces removed, so demanglers that space or order things differently still agree."""
    n = name.strip()
    for prefix in ("void ", "__global__ "):
        n = n.removeprefix(prefix)
    depth = 0
    for i, ch in enumerate(n):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0 and not n.startswith("(anonymous", i):
            n = n[:i]
            break
    return n.replace(" ", "")


def path(name: str) -> str:
    """The kernel's namespaces and identifier, template arguments dropped: `ns::k<float>` -> `ns::k`."""
    return re.sub(r"<.*$", "", qualified(name))


def identifier(name: str) -> str:
    """The kernel's own name: `mod::_softmax_rows[abi:...]` (numba) -> `_softmax_rows`."""
    return re.sub(r"\[abi:.*$", "", path(name)).rsplit("::", 1)[-1]


def _tool(name: str) -> str | None:
    import os

    found = shutil.which(name)
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if home and Path(home, "bin", name).exists():
            return str(Path(home, "bin", name))
    nvcc = shutil.which("nvcc")
    if nvcc and Path(nvcc).with_name(name).exists():
        return str(Path(nvcc).with_name(name))
    return None


def _demangle(names: list[str]) -> list[str]:
    tool = shutil.which("c++filt") or _tool("cu++filt")
    if not tool or not names:
        return names
    p = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True, errors="replace")
    out = p.stdout.splitlines()
    return out if len(out) == len(names) else names


def library_kernels(path: Path) -> set[str]:
    """The kernels compiled into a built library, qualified names: from cuobjdump's per-function listing, else
    (no cuobjdump) from the mangled names the library registers with the CUDA runtime."""
    names: list[str] = []
    tool = _tool("cuobjdump")
    if tool:
        p = subprocess.run([tool, "-res-usage", str(path)], capture_output=True, text=True, errors="replace")
        names = re.findall(r"^\s*Function ([^\s:]+):", p.stdout, re.M)
    if not names:
        data = Path(path).read_bytes()
        names = sorted({m.decode() for m in re.findall(rb"_Z[\w$]{3,}", data)})
    return {qualified(n) for n in _demangle(names)}


def python_kernel_names(files: list[Path]) -> set[str]:
    """Identifiers a Python exercise's kernels can carry: functions and __global__ kernels its files define."""
    found: set[str] = set()
    for f in files:
        try:
            text = f.read_text(errors="replace")
        except OSError:
            continue
        defined = set(re.findall(r"^\s*(?:def|fn)\s+([A-Za-z_]\w*)", text, re.M))
        found |= defined
        if f.suffix == ".mojo":  # Mojo names a kernel's PTX entry <file stem>_<function>_<specialisation>
            found |= {f"{f.stem}_{name}_" for name in defined}
        found |= set(re.findall(r"__global__\s+(?:[\w:<>,\s*&]+?\s+)?([A-Za-z_]\w*)\s*\(", text))
    return found


class Owner:
    """Decides whether a kernel name is the student's."""

    def __init__(self, qualified_names: set[str] = frozenset(), identifiers: set[str] = frozenset(),
                 allow: list[str] = ()):
        self.qualified = set(qualified_names)
        self.paths = {path(q) for q in self.qualified}
        self.identifiers = set(identifiers)
        self.allow = list(allow)

    def owns(self, launch: Launch) -> bool:
        # A memset, and a copy from device memory to device memory, are the op's own work (zeroing an accumulator
        # before C = αAB + βC, a workspace of counters): neither can forge a result, since every timed call gets
        # fresh inputs and its output is checked (a replay fails there, whatever moves the bytes). Copies to or from
        # the host stay foreign unless the exercise allows them.
        if launch.kind == "memset" or (launch.kind == "memcpy" and "DtoD" in launch.name):
            return True
        if launch.kind != "kernel":
            return launch.kind in self.allow
        if any(a in launch.name for a in self.allow if a not in ("memset", "memcpy")):
            return True
        q = qualified(launch.name)
        if q in self.qualified:
            return True
        if LIBRARY_MARKS.search(q):  # a library's namespace: only an exact match above makes it the student's
            return False
        # Demanglers may print template arguments differently: the same namespaces and identifier are enough.
        if path(launch.name) in self.paths:
            return True
        # JIT-compiled kernels carry the Python or CUDA function's name: as it is (Triton, CuPy's extern "C"
        # kernels), under the module's name (numba: `mod::_rows[abi:...]`), mangled (`...18softmax_kernel$241E`)
        # or, from CuTe DSL, after `kernel_cutlass_` and before its specialisation (`kernel_cutlass__gemm_TiledMMA...`).
        # Mojo's: `<file stem>_<function>_<specialisation hash>`, the identifiers ending in "_" (python_kernel_names).
        return any(identifier(launch.name) == i or re.search(rf"\d{re.escape(i)}\$\d+", launch.name)
                   or launch.name.startswith(f"kernel_cutlass_{i}_")
                   or (i.endswith("_") and launch.name.startswith(i)) for i in self.identifiers)


MARKER = "spin_kernel"  # torch.cuda._sleep's kernel: launched on the caller's stream around the call


def record(torch, thunk, stream) -> tuple[list[Launch], int | None]:
    """Every GPU activity of one call of thunk on `stream`, and the profiler's id of `stream` (the stream of the
    marker kernels launched on it just before and after the call; they are left out of the list)."""
    from torch.autograd import DeviceType

    def call():
        torch.cuda.synchronize()
        with torch.cuda.stream(stream):
            torch.cuda._sleep(1)
            thunk()
            torch.cuda._sleep(1)
        torch.cuda.synchronize()

    events = [(e.name, e.device_resource_id) for e in _profiled(torch, call) if e.device_type == DeviceType.CUDA]
    markers = {rid for name, rid in events if MARKER in name}
    mine = next(iter(markers)) if len(markers) == 1 else None
    out = []
    for name, rid in events:
        if MARKER in name and rid == mine:
            continue
        kind = "memcpy" if name.startswith("Memcpy") else "memset" if name.startswith("Memset") else "kernel"
        out.append(Launch(kind, name, rid))
    return out, mine


@dataclass(frozen=True)
class _Event:
    name: str
    device_type: object
    device_resource_id: int


def _profiled(torch, call) -> list[_Event]:
    """The CUDA activity of call(), from Kineto through torch's own bindings. torch.profiler.profile records the
    same events, but its first use in a process imports torch._dynamo and friends (3.5 s on the course's H100, more
    than the rest of an unchanged check), so it is only the fallback for a torch whose bindings differ."""
    try:
        from torch._C import _autograd as ag
        from torch._C._profiler import ProfilerActivity, ProfilerConfig, ProfilerState, _ExperimentalConfig

        cfg = ProfilerConfig(ProfilerState.KINETO, False, False, False, False, False, _ExperimentalConfig())
        ag._prepare_profiler(cfg, {ProfilerActivity.CUDA})
        ag._enable_profiler(cfg, {ProfilerActivity.CUDA})
    except (ImportError, AttributeError, TypeError, RuntimeError):
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            call()
        return [_Event(e.name, e.device_type, e.device_resource_id) for e in prof.events()]
    try:
        call()
    finally:
        result = ag._disable_profiler()
    return [_Event(e.name(), e.device_type(), e.device_resource_id()) for e in result.events()]


def verdict(launches: list[Launch], stream: int | None, owner: Owner) -> tuple[str, str] | None:
    """(category, message) for the first problem: foreign work, then work on another stream; None if clean."""
    from grader.verdicts import Category

    foreign = [x for x in launches if not owner.owns(x)]
    if foreign:
        names = sorted({_short(x) for x in foreign})
        return (Category.FOREIGN_KERNEL, f"the op launched GPU work that is not compiled from your sources: "
                f"{'; '.join(names[:4])}{' …' if len(names) > 4 else ''} (calling the library instead of your kernel "
                "does not count)")
    if stream is not None:
        off = [x for x in launches if x.stream != stream]
        if off:
            return (Category.SIDE_STREAM, f"{_short(off[0])} ran on stream {off[0].stream}, not the caller's current "
                    f"stream ({stream}): launch on the stream PyTorch gives you (at::cuda::getCurrentCUDAStream())")
    return None


def _short(x: Launch) -> str:
    if x.kind == "memcpy":  # the direction is what matters: a copy from or to the host
        return f"a host copy ({x.name[:60]})"
    return x.kind if x.kind != "kernel" else (qualified(x.name)[:90] or x.name[:90])
