"""Day 11's CUTLASS table: one Hopper GEMM from CUTLASS's builders (scripts/lessons/cutlass_gemm.cu) beside the
course's own wgmma kernels (solutions/day11/matmul_wgmma.cu): lines of code, the time nvcc takes to compile each
(on the machine that runs this), and, where there is a GPU, its speed against cuBLAS on the same bf16 inputs.

    python3 scripts/lessons/cutlass_measure.py OUT_DIR          # measure: OUT_DIR/cutlass.json and cutlass.md
    python3 scripts/lessons/cutlass_measure.py --insert measured/cutlass-compile.json   # its table into day 11

CUTLASS comes from the registry as `nvidia-cutlass` (its wheel carries the C++ headers): pip install nvidia-cutlass.
Without a GPU only the compile rows are measured."""
from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lesson_table import ROOT  # noqa: E402
from lesson_table import main as lesson_main  # noqa: E402
from lesson_table import median_event_ms  # noqa: E402

SOURCE = ROOT / "scripts" / "lessons" / "cutlass_gemm.cu"
COURSE = ROOT / "solutions" / "day11" / "matmul_wgmma.cu"
# The build both get: the course's flags for day 11's wgmma image. -DNDEBUG matters to CUTLASS: with its device
# asserts compiled in, ptxas serializes the wgmma pipeline (warning C7510) at every call they leave in the loop.
FLAGS = ["-O3", "-std=c++17", "-DNDEBUG", "--expt-relaxed-constexpr", "-gencode=arch=compute_90a,code=sm_90a"]
SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192)]


def cutlass_include() -> list[Path]:
    try:
        import cutlass_library
    except ImportError:
        sys.exit("CUTLASS's headers are not installed: pip install nvidia-cutlass (the wheel carries them)")
    src = Path(cutlass_library.__file__).parent / "source"
    return [src / "include", src / "tools" / "util" / "include"]


def code_lines(path: Path) -> int:
    """Lines that are neither blank nor comments."""
    return sum(1 for ln in path.read_text().splitlines() if ln.strip() and not ln.strip().startswith("//"))


def compile_seconds(src: Path, includes: list[Path], repeats: int) -> tuple[float, int]:
    """The fastest of `repeats` nvcc runs, source to object, and how many kernels it compiled (ptxas's entries)."""
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    best, kernels = float("inf"), 0
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeats):
            t0 = time.perf_counter()
            r = subprocess.run([nvcc, "-c", *FLAGS, "-Xptxas", "-v", *[f"-I{i}" for i in includes], str(src), "-o",
                                f"{tmp}/x.o"], check=True, capture_output=True, text=True)
            best = min(best, time.perf_counter() - t0)
            kernels = len(re.findall(r"Compiling entry function", r.stdout + r.stderr))
    return best, kernels


def nvcc_version() -> str:
    out = subprocess.run([shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc", "--version"], capture_output=True,
                         text=True).stdout
    m = re.search(r"release ([\d.]+)", out)
    return m.group(1) if m else "unknown"


def cpu_name() -> str:
    try:
        for ln in Path("/proc/cpuinfo").read_text().splitlines():
            if ln.startswith("model name"):
                return ln.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


BINDING = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
extern "C" size_t cutlass_gemm_workspace(int m, int n, int k);
extern "C" int cutlass_gemm_bf16(const void* a, const void* b, void* c, int m, int n, int k, void* workspace,
                                 cudaStream_t stream);
void gemm(torch::Tensor a, torch::Tensor b, torch::Tensor c, torch::Tensor workspace) {
  int m = a.size(0), k = a.size(1), n = b.size(1);
  TORCH_CHECK(workspace.numel() >= (int64_t)cutlass_gemm_workspace(m, n, k), "workspace too small");
  int s = cutlass_gemm_bf16(a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k, workspace.data_ptr(),
                            at::cuda::getCurrentCUDAStream());
  TORCH_CHECK(s == 0, "CUTLASS status ", s);
}
size_t workspace_bytes(int m, int n, int k) { return cutlass_gemm_workspace(m, n, k); }
PYBIND11_MODULE(TORCH_EXTENSION_NAME, mod) {
  mod.def("gemm", &gemm);
  mod.def("workspace_bytes", &workspace_bytes);
}
"""


def gpu_rows(includes: list[Path]) -> list[dict]:
    import torch
    from torch.utils.cpp_extension import load

    build = Path(tempfile.mkdtemp(prefix="cutlass-lesson-"))
    (build / "binding.cpp").write_text(BINDING)
    ext = load(name="cutlass_lesson", sources=[str(SOURCE), str(build / "binding.cpp")], build_directory=str(build),
               extra_include_paths=[str(i) for i in includes], extra_cuda_cflags=FLAGS, verbose=False)
    rows = []
    g = torch.Generator(device="cuda").manual_seed(11)
    for m, n, k in SHAPES:
        a = torch.randn(m, k, device="cuda", generator=g).bfloat16()
        b = torch.randn(k, n, device="cuda", generator=g).bfloat16()
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        ws = torch.empty(ext.workspace_bytes(m, n, k), dtype=torch.uint8, device="cuda")
        ext.gemm(a, b, c, ws)
        ref = a.float() @ b.float()
        rel = float((c.float() - ref).norm() / ref.norm())
        flop = 2 * m * n * k
        ms_cutlass = median_event_ms(torch, lambda: ext.gemm(a, b, c, ws), reps=30)  # noqa: B023
        ms_cublas = median_event_ms(torch, lambda: torch.matmul(a, b), reps=30)  # noqa: B023
        rows.append({"shape": [m, n, k], "rel_l2": rel, "cutlass_ms": ms_cutlass, "cublas_ms": ms_cublas,
                     "cutlass_tflops": flop / ms_cutlass / 1e9, "cublas_tflops": flop / ms_cublas / 1e9})
    return rows


def measure(a) -> dict:
    includes = cutlass_include()
    common = [ROOT / "common"]
    data = {"nvcc": nvcc_version(), "cpu": cpu_name(), "cores": os.cpu_count(), "flags": FLAGS, "repeats": a.repeats,
            "compile": []}
    for what, src, inc in (("CUTLASS builders (scripts/lessons/cutlass_gemm.cu)", SOURCE, includes),
                           ("day 11's wgmma kernels (solutions/day11/matmul_wgmma.cu)", COURSE, common)):
        seconds, kernels = compile_seconds(src, inc, a.repeats)
        data["compile"].append({"what": what, "code_lines": code_lines(src), "kernels": kernels, "seconds": seconds})
    try:
        import torch
        has_gpu = torch.cuda.is_available()
    except ImportError:
        has_gpu = False
    if has_gpu:
        data["gpu"] = torch.cuda.get_device_name()
        data["torch"] = torch.__version__
        data["runs"] = gpu_rows(includes)
    return data


def shown(what: str) -> str:
    """A source as the lesson names it: what it is, without where it lives (scripts/ and solutions/ are not in a
    student repository); the record keeps the path."""
    return re.sub(r"\s*\((?:scripts|solutions)/[^)]*\)", "", what)


def table(data: dict) -> str:
    lines = [f"Compiled with nvcc {data['nvcc']} on {data['cores']} cores of "
             f"{data['cpu']} (`{' '.join(data['flags'])}`, source to object, the fastest of {data['repeats']} runs):", "",
             "| source | lines of code | kernels | compile s |", "|---|---:|---:|---:|"]
    lines += [f"| {shown(c['what'])} | {c['code_lines']} | {c['kernels']} | {c['seconds']:.1f} |" for c in data["compile"]]
    if data.get("runs"):
        lines += ["", f"On {data['gpu']} (torch {data['torch']}), bf16, median of 30 calls:", "",
                  "| M×N×K | CUTLASS TFLOP/s | cuBLAS TFLOP/s | CUTLASS × cuBLAS | rel L2 vs fp32 |",
                  "|---|---:|---:|---:|---:|"]
        lines += [f"| {'×'.join(map(str, r['shape']))} | {r['cutlass_tflops']:.0f} | {r['cublas_tflops']:.0f} | "
                  f"{r['cublas_ms'] / r['cutlass_ms']:.2f} | {r['rel_l2']:.1e} |" for r in data["runs"]]
    else:
        lines += ["", "No GPU on that machine: the speed rows come from a GPU run of the same script."]
    return "\n".join(lines)


def main() -> int:
    return lesson_main(name="cutlass", lesson="day11", block="cutlass-measured", measure=measure, table=table,
                       add_arguments=lambda p: p.add_argument("--repeats", type=int, default=2))


if __name__ == "__main__":
    sys.exit(main())
