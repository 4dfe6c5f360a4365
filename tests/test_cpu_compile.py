"""Python routes whose kernels compile without a GPU (course.yaml `cpu_compile:`, e.g. day 13's CuTe DSL softmax):
the compile-only check calls the file's function per dtype in a process of its own; a failure is the student's
build error at its line, a missing package is said, not failed."""
import importlib.util

import pytest

from grader.check.compile_check import compile_python_kernels
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


@pytest.mark.skipif(importlib.util.find_spec("cutlass") is None, reason="CuTe DSL not installed (pip install -e \".[cute]\")")
@pytest.mark.parametrize("folder", ["solutions", "days"])
def test_day13s_cute_softmax_compiles_without_a_gpu(folder):
    r = compile_python_kernels(ROOT / folder / "day13" / "softmax_cute.py", "compile_for", ["fp32", "fp16", "bf16"],
                               ROOT)
    assert r.ok and r.note == "kernels compiled (fp32, fp16, bf16)", r.log


@pytest.mark.skipif(importlib.util.find_spec("mojo") is None, reason="Mojo not installed (pip install -e \".[mojo]\")")
@pytest.mark.parametrize("folder", ["solutions", "days"])
def test_day13s_mojo_softmax_compiles_without_a_gpu(folder):
    r = compile_python_kernels(ROOT / folder / "day13" / "softmax_mojo.py", "compile_for", ["fp32", "fp16", "bf16"],
                               ROOT)
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
