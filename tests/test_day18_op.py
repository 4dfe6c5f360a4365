"""Day 18 on a CPU build of torch: the schemas in the solution's C++ file, defined here with CPU implementations
(fp64 math), and the solution's Python registrations (fake implementations, the autograd formula) put through the
exercise's own checks: opcheck, torch.compile(fullgraph=True), and the gradients against the fp64 reference.
Known-wrong registrations fail: no register_fake, a fake lse of the wrong dtype, no autograd formula.

Each test defines the ops in a namespace of its own (torch's registry is per process)."""
from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]
CPP = ROOT / "solutions" / "day18" / "flash_attention_op.cpp"
PY = ROOT / "solutions" / "day18" / "flash_attention.py"
_ns = itertools.count()


def schemas(cpp_text: str) -> list[str]:
    """The schema strings of the m.def calls (adjacent string literals joined, as C++ does)."""
    return ["".join(re.findall(r'"([^"]*)"', m)) for m in re.findall(r'm\.def\(((?:\s*"[^"]*")+)\s*\)', cpp_text)]


def _cpu_forward(q, k, v, causal):
    from tasks.attention import reference

    with torch.no_grad():  # opaque to autograd, as a CUDA kernel is
        o, lse = reference(q, k, v, causal)
    return o.to(q.dtype), lse.float()


def _cpu_backward(dout, q, k, v, o, lse, causal):
    from tasks.attention_bwd import reference

    grads = reference(q, k, v, o, lse, dout, causal)  # fp64 autograd inside; the results carry no graph
    return tuple(g.detach().to(q.dtype) for g in grads)


def define(py_text: str, tmp_path: Path, keep=None):
    """A fresh namespace with the solution's schemas, CPU implementations, and `py_text` imported as the student's
    registration file; returns (the op packet, the library object that keeps the definitions alive)."""
    ns = f"course_t{next(_ns)}"
    lib = torch.library.Library(ns, "DEF")
    found = schemas(CPP.read_text())
    assert [s.split("(")[0] for s in found] == ["flash_attention", "flash_attention_backward"]
    for s in found:
        lib.define(s)
    lib.impl("flash_attention", _cpu_forward, "CPU")
    lib.impl("flash_attention_backward", _cpu_backward, "CPU")
    f = tmp_path / f"{ns}.py"
    f.write_text(py_text.replace("course::", f"{ns}::").replace("torch.ops.course.", f"torch.ops.{ns}."))
    from grader.check.build import load_python_module

    load_python_module(name=ns, path=f, root=tmp_path)
    return getattr(torch.ops, ns).flash_attention, lib


def _ctx(fn, causal=True, shape=(1, 2, 37, 64)):
    from grader.course import load_course
    from grader.protocol import CheckContext, Task

    ex = load_course(ROOT / "course.yaml").day("day18").exercises[0]
    task = Task.load(ex.task)
    case = task.materialize(torch, shape=shape, dtype="bf16", params={"causal": causal}, seed=7, device="cpu")
    return task, CheckContext(task, fn, case, ex, task.call(fn, case, ex)), ex


def test_the_solution_registers_fake_and_autograd_that_pass_opcheck_compile_and_the_reference(tmp_path):
    fn, _lib = define(PY.read_text(), tmp_path)
    task, ctx, ex = _ctx(fn)
    got = ctx.call()
    results = task.check(got, ctx.case, ex)
    assert [r.name for r in results] == ["o", "lse", "dq", "dk", "dv"] and all(r.ok for r in results), results
    checks = task.module.CHECKS
    r = checks["opcheck"](ctx)
    assert r.ok, r.message
    r = checks["torch_compile"](ctx)
    assert r.ok, r.message


@pytest.mark.parametrize("edit, expected", [
    # the fake implementations gone: opcheck's fake-tensor test fails
    (lambda s: re.sub(r"@torch\.library\.register_fake\([^)]*\)\n", "", s), "test_faketensor"),
    # lse faked in q's dtype (the real one is fp32)
    (lambda s: s.replace("q.new_empty((b, h, n), dtype=torch.float32)", "q.new_empty((b, h, n))"),
     "test_faketensor"),
])
def test_known_wrong_registrations_fail_opcheck_with_the_test_they_break(tmp_path, edit, expected):
    text = edit(PY.read_text())
    assert text != PY.read_text()
    fn, _lib = define(text, tmp_path)
    task, ctx, _ = _ctx(fn)
    r = task.module.CHECKS["opcheck"](ctx)
    assert not r.ok and r.category == "opcheck" and expected in r.message, r.message


def test_an_op_without_an_autograd_formula_is_named_as_such(tmp_path):
    from grader.protocol import OpContractError

    text = PY.read_text().replace('torch.library.register_autograd("course::flash_attention", _backward, '
                                  'setup_context=_setup_context)', "")
    fn, _lib = define(text, tmp_path)
    _, ctx, _ = _ctx(fn)
    with pytest.raises(OpContractError, match="no autograd formula is registered"):
        ctx.call()


def test_the_released_stub_registers_nothing_and_imports_cleanly(tmp_path):
    stub = ROOT / "days" / "day18" / "flash_attention.py"
    text = stub.read_text()
    assert "@torch.library.register_fake(" not in text and "YOUR CODE HERE" in text
    fn, _lib = define(text, tmp_path)
    _, ctx, _ = _ctx(fn)
    from grader.protocol import OpContractError

    with pytest.raises(OpContractError, match="no autograd formula"):
        ctx.call()
