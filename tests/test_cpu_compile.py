"""Python routes whose kernels compile without a GPU (course.yaml `cpu_compile:`, e.g. day 13's CuTe DSL softmax and
day 11's CuTe GEMM): the compile-only check calls the file's function per dtype in a process of its own; a failure is
the student's build error at its line, a missing package is said, not failed."""
import importlib.util
import os
import subprocess
import sys

import pytest

from grader.check.compile_check import compile_python_kernels
from tests import compile_records
from tests.conftest import ROOT

ROUTE = """import torch

def compile_for(dtype, device):
    assert device == "cpu"
    if dtype == torch.float16:
        raise TypeError("this kernel has no fp16 path")
"""


def test_a_compile_error_is_the_students_at_its_line(tmp_path):
    f = tmp_path / "route.py"
    f.write_text(ROUTE)
    ok = compile_python_kernels(f, "compile_for", ["fp32", "bf16"], tmp_path)
    assert ok.ok and ok.note == "kernels compiled (fp32, bf16)"
    bad = compile_python_kernels(f, "compile_for", ["fp32", "fp16"], tmp_path)
    assert not bad.ok and bad.diagnostics == ["route.py:6: error: TypeError: this kernel has no fp16 path"]


def test_a_route_without_its_compile_function_is_told_which_one(tmp_path):
    f = tmp_path / "route.py"
    f.write_text("import torch\n\ndef compile_for_me(dtype, device):\n    pass\n")
    r = compile_python_kernels(f, "compile_for", ["fp32"], tmp_path)
    assert not r.ok and r.diagnostics == [
        "route.py:1: error: the file defines no function `compile_for(dtype, device)`, which builds its kernels for a "
        "dtype (the compile-only check calls it with device \"cpu\"); the stub has its signature"]


def test_a_route_whose_package_is_missing_is_checked_for_syntax_only(tmp_path):
    f = tmp_path / "route.py"
    f.write_text("import no_such_dsl_package_here\n\ndef compile_for(dtype, device):\n    pass\n")
    r = compile_python_kernels(f, "compile_for", ["fp32"], tmp_path)
    assert r.ok and "`no_such_dsl_package_here` is not installed here (syntax checked only)" in r.note


def test_cpu_compile_belongs_to_python_exercises():
    from pydantic import ValidationError

    from grader.course import Exercise, load_course

    ex = next(e for e in load_course(ROOT / "course.yaml").day("day13").exercises if e.name == "softmax_cute")
    data = {**ex.model_dump(exclude_defaults=True), "build": "torch_extension", "sources": ["s.cu", "b.cpp"]}
    with pytest.raises(ValidationError, match="cpu_compile names a function of a `build: python`"):
        Exercise.model_validate(data)


needs_cute = pytest.mark.skipif(importlib.util.find_spec("cutlass") is None,
                                reason="CuTe DSL not installed (pip install -e \".[cute]\")")


@needs_cute
@pytest.mark.parametrize("folder", ["solutions", "days"])
def test_day13s_cute_softmax_compiles_without_a_gpu(folder):
    r, _ = compile_records.python_kernels(ROOT / folder / "day13" / "softmax_cute.py", "compile_for",
                                          ["fp32", "fp16", "bf16"], "cute")
    assert r.ok and r.note == "kernels compiled (fp32, fp16, bf16)", r.log


@needs_cute
@pytest.mark.parametrize("folder", ["solutions", "days"])
def test_day11s_cute_gemm_compiles_without_a_gpu(folder):
    """Step 11f's solution and its stub (two holes, so nothing is written) both build for sm_90a here."""
    r, _ = compile_records.python_kernels(ROOT / folder / "day11" / "matmul_cute.py", "compile_for", ["fp16", "bf16"],
                                          "cute")
    assert r.ok and r.note == "kernels compiled (fp16, bf16)", r.log


@needs_cute
@pytest.mark.parametrize("dtype,ptx_type", [("float16", "f16"), ("bfloat16", "bf16")])
def test_day11s_cute_gemm_is_wgmma_fed_by_tma(tmp_path, dtype, ptx_type):
    """The PTX the DSL keeps (CUTE_DSL_KEEP=ptx) holds what the lesson says the kernel is: wgmma m64n256k16 with
    fp32 accumulators, TMA tile copies, mbarriers and the producer's register hand-over."""
    code = ("import importlib.util, sys, torch\n"
            "spec = importlib.util.spec_from_file_location('m', sys.argv[1])\n"
            "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
            f"m.compile_for(torch.{dtype}, 'cpu')\n")
    env = {**os.environ, "CUTE_DSL_KEEP": "ptx", "CUTE_DSL_DUMP_DIR": str(tmp_path)}
    r = subprocess.run([sys.executable, "-c", code, str(ROOT / "solutions" / "day11" / "matmul_cute.py")], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    (ptx,) = [p.read_text() for p in tmp_path.glob("*.ptx")]
    assert ".target sm_90a" in ptx
    assert f"wgmma.mma_async.sync.aligned.m64n256k16.f32.{ptx_type}.{ptx_type}" in ptx
    assert "cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes" in ptx
    assert "mbarrier.try_wait.parity" in ptx and "setmaxnreg.inc.sync.aligned.u32" in ptx


@needs_cute
def test_day11s_cute_gemm_refuses_bad_input_with_a_message():
    spec = importlib.util.spec_from_file_location("matmul_cute", ROOT / "solutions" / "day11" / "matmul_cute.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    import torch

    a, b, c = (torch.zeros(shape, dtype=torch.float16) for shape in ((4, 8), (8, 16), (4, 16)))
    with pytest.raises(TypeError, match="fp16 or bf16"):
        m.matmul_cute(a.float(), b.float(), c.float())
    with pytest.raises(TypeError, match="fp16 or bf16"):
        m.compile_for(torch.float32, "cpu")
    with pytest.raises(ValueError, match=r"\(4, 8\) @ \(7, 16\) -> \(4, 16\) do not match"):
        m.matmul_cute(a, b[:7], c)
    with pytest.raises(ValueError, match="contiguous"):
        m.matmul_cute(a, b.t().contiguous().t(), c)
    with pytest.raises(ValueError, match="one CUDA device"):
        m.matmul_cute(a, b, c)


@pytest.mark.skipif(importlib.util.find_spec("mojo") is None, reason="Mojo not installed (pip install -e \".[mojo]\")")
@pytest.mark.parametrize("folder", ["solutions", "days"])
def test_day13s_mojo_softmax_compiles_without_a_gpu(folder):
    r, _ = compile_records.python_kernels(ROOT / folder / "day13" / "softmax_mojo.py", "compile_for",
                                          ["fp32", "fp16", "bf16"], "mojo")
    assert r.ok and r.note == "kernels compiled (fp32, fp16, bf16)", r.log


@pytest.mark.skipif(importlib.util.find_spec("mojo") is None, reason="Mojo not installed (pip install -e \".[mojo]\")")
def test_a_mojo_compile_error_is_reported_at_its_line_in_the_mojo_file(tmp_path):
    for f in ("softmax_mojo.py", "softmax_mojo.mojo"):
        (tmp_path / f).write_text((ROOT / "solutions" / "day13" / f).read_text())
    mojo = tmp_path / "softmax_mojo.mojo"
    text = mojo.read_text()
    assert text.count("var inv = 1.0 / s") == 1
    mojo.write_text(text.replace("var inv = 1.0 / s", "var inv = 1.0 / s_total"))
    line = next(n for n, ln in enumerate(mojo.read_text().splitlines(), 1) if "s_total" in ln)
    r = compile_python_kernels(tmp_path / "softmax_mojo.py", "compile_for", ["fp32"], tmp_path)
    assert not r.ok and f"softmax_mojo.mojo:{line}:" in r.diagnostics[0], r.diagnostics


def test_a_mojo_source_is_not_handed_to_the_cpp_compiler(tmp_path):
    from grader.check.compile_check import compile_sources

    f = tmp_path / "k.mojo"
    f.write_text("def main():\n    print(1)\n")
    assert compile_sources([f], [], [], tmp_path) == []  # read (source_problem), then left to cpu_compile
    f.write_bytes(b"\0")
    (r,) = compile_sources([f], [], [], tmp_path)
    assert not r.ok and "NUL bytes" in r.note


def test_the_compile_only_verdict_names_a_python_route_once(tmp_path):
    """The route's compile step imports the file, so it has checked the syntax too: the report has one line for the
    file (its kernels compiled, or why not), not a syntax line and a kernels line."""
    import json

    from grader import cli

    out = tmp_path / "r.json"
    cli.main(["check", "day13", "--exercise", "softmax_cute", "--solution", "--json", str(out)])
    (ex,) = json.loads(out.read_text())["exercises"]
    files = [c["file"] for c in ex["compile"]]
    assert files == ["solutions/day13/softmax_cute.py"], files
    assert ex["compile"][0]["note"].startswith("kernels "), ex["compile"][0]


TRIPWIRE_PROBE = """import importlib.util, json, sys, torch
import grader.check.worker, grader.check.compare, grader.protocol  # what the worker has loaded when it arms
from grader.check.tamper import Tripwire
wire = Tripwire(torch)
out = {}
for path, fn, dtypes in json.loads(sys.argv[1]):
    spec = importlib.util.spec_from_file_location("route_" + str(len(out)), path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    for d in dtypes:
        getattr(m, fn)(getattr(torch, d), "cpu")
    out[path] = wire.changed()
print(json.dumps(out))
"""


def test_the_routes_packages_leave_the_tripwire_quiet():
    """The CuTe DSL and Mojo routes import packages that could patch torch or the grader at import or at compile;
    the worker's tripwire (grader/check/tamper.py) would then fail a correct solution as `tampered`. Each route with a
    cpu_compile function is imported and compiled after the tripwire is armed, as the worker does, and nothing may
    have changed. (Its GPU run is the GPU suite's.)"""
    from grader.course import load_course

    names = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}
    routes = []
    for day in load_course(ROOT / "course.yaml").days:
        for ex in day.exercises:
            if ex.cpu_compile:
                dtypes = [k for k, v in names.items() if v in ex.dtypes]
                routes.append([str(ROOT / "solutions" / day.id / ex.sources[0]), ex.cpu_compile, dtypes])
    missing = [p for p in ("cutlass", "mojo") if importlib.util.find_spec(p) is None]
    if missing and os.environ.get("CI") != "true":
        pytest.skip(f"not installed here: {', '.join(missing)} (pip install -e \".[cute,mojo]\")")
    assert len(routes) >= 3, routes
    import json

    # 7 s alone on CI's machine (the three routes' imports and compiles); the limit only stops a hang, with the
    # margin of this file's other DSL compiles for a loaded machine
    r = subprocess.run([sys.executable, "-c", TRIPWIRE_PROBE, json.dumps(routes)], cwd=ROOT, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    changed = json.loads(r.stdout.strip().splitlines()[-1])
    assert set(changed) == {p for p, _, _ in routes} and not any(changed.values()), changed
