"""The lesson tools beside the course (scripts/lessons/): day 11's CUTLASS GEMM compiles with the measuring
script's own flags against the headers of the `nvidia-cutlass` wheel, and its table renders with and without a
GPU's rows; day 13's Thunder note says what happened, a failure included."""
import importlib.util
import inspect
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import compile_records
from tests.conftest import ROOT, needs_nvcc

sys.path.insert(0, str(ROOT / "scripts" / "lessons"))
measure = importlib.import_module("cutlass_measure")


@needs_nvcc
@pytest.mark.skipif(importlib.util.find_spec("cutlass_library") is None,
                    reason="nvidia-cutlass is not installed (pip install -e '.[cutlass]')")
def test_the_cutlass_gemm_compiles_without_serializing_its_wgmma(tmp_path):
    """From the compile records where its inputs are recorded (CUTLASS's headers in an environment of their own):
    the compile takes 50 s of nvcc."""
    includes = measure.cutlass_include()
    unit = compile_records.Unit(
        "nvcc", measure.SOURCE, includes,
        [*measure.FLAGS, *(compile_records._path_id(i, measure.SOURCE) for i in includes)],
        (inspect.getsource(_cutlass_compile),), lambda depfile: _cutlass_compile(includes, tmp_path, depfile),
        environment="nvcc+cutlass")
    got, _ = compile_records.result(unit)
    assert got["ok"], got["log"]
    assert not got["c7510"]  # the warning -DNDEBUG removes: wgmma serialized at a call


def _cutlass_compile(includes: list, tmp: Path, depfile: Path) -> tuple[dict, bool]:
    """nvcc on the lesson's CUTLASS GEMM with the measuring script's flags: (whether it compiled, whether ptxas
    serialized a wgmma (C7510), the log's end where it failed; kept: always)."""
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    r = subprocess.run([nvcc, "-c", *measure.FLAGS, *[f"-I{i}" for i in includes], str(measure.SOURCE),
                        "-o", str(tmp / "g.o"), "-MD", "-MF", str(depfile)], capture_output=True, text=True)
    return {"ok": r.returncode == 0, "c7510": "C7510" in r.stdout + r.stderr,
            "log": "" if r.returncode == 0 else r.stderr[-3000:]}, True


def test_the_table_says_what_was_measured_and_where():
    data = {"nvcc": "13.0", "cpu": "some CPU", "cores": 2, "flags": ["-O3"], "repeats": 2,
            "compile": [{"what": "a", "code_lines": 50, "kernels": 1, "seconds": 40.04},
                        {"what": "b", "code_lines": 300, "kernels": 7, "seconds": 12.0}]}
    text = measure.table(data)
    assert "| a | 50 | 1 | 40.0 |" in text and "2 cores of some CPU" in text and "No GPU" in text
    data.update(gpu="H", torch="2", runs=[{"shape": [8, 8, 8], "cutlass_ms": 2.0, "cublas_ms": 1.0,
                                           "cutlass_tflops": 1.0, "cublas_tflops": 2.0, "rel_l2": 1e-3}])
    assert "| 8×8×8 | 1 | 2 | 0.50 | 1.0e-03 |" in measure.table(data)


def test_the_cute_table_says_what_was_built_where_and_that_no_gpu_ran_it():
    cute = importlib.import_module("cute_measure")
    data = {"nvcc": "13.0", "dsl": "4.8.1", "cpu": "some CPU", "cores": 2, "flags": ["-O3"], "repeats": 3,
            "course": {"what": "a", "code_lines": 545, "kernels": 7, "seconds": 4.06},
            "cute": {"what": "b", "code_lines": 145, "kernels": 2, "import_s": 2.1,
                     "compile_s": {"float16": 0.8, "bfloat16": 0.7}},
            "ptx": {"float16": {"target": "sm_90a", "wgmma": ["m64n256k16.f32.f16.f16"], "wgmma_count": 4,
                                "tma_count": 5, "threads": 384, "ptxas": {"registers": 168, "spill_bytes": 0}}}}
    text = cute.table(data)
    assert "| a | 545 | 7 | 4.1 |" in text and "| b | 145 | 2 | 1.5 (+ 2.1 to import the DSL) |" in text
    assert "| float16 | sm_90a | m64n256k16.f32.f16.f16 | 4 | 5 | 384 | 168 | 0 |" in text
    assert "2 cores of some CPU, no GPU" in text and "No GPU ran either here" in text


def test_python_code_lines_leave_out_comments_docstrings_and_blanks(tmp_path):
    cute = importlib.import_module("cute_measure")
    f = tmp_path / "k.py"
    f.write_text('"""Doc\nstring."""\nimport x  # why\n\n# a comment\ndef f(a,\n      b):\n    """One."""\n    return a\n')
    assert cute.python_code_lines(f) == 4  # import, def (two lines), return


def test_the_thunder_note_says_what_happened_when_it_did_not_run():
    thunder = importlib.import_module("thunder_measure")
    failed = {"torch": "2.13.0+cpu", "thunder": "0.2.6", "gpu": None, "status": "does not import",
              "why": "AttributeError: x"}
    assert "**does not import**" in thunder.table(failed) and "`AttributeError: x`" in thunder.table(failed)
    ran = {**failed, "gpu": "H100", "status": "runs", "device": "cuda", "correct": True, "first_call_s": 3.25,
           "executors": ["nvFusion"], "rows": [{"shape": [8, 4], "thunder_ms": 2.0, "torch_ms": 1.0}]}
    text = thunder.table(ran)
    assert "on H100" in text and "3.2 s" in text and "nvFusion" in text and "| 8 × 4 | 2.000 | 1.000 | 0.50 |" in text
