"""The no_local_memory check reads ptxas's report of the exercise's own kernels: day 14's spill solution keeps its
array in registers, its released stub (a trip count known only at run time) puts it on the stack."""
from types import SimpleNamespace

from grader import protocol
from tests.conftest import ROOT, needs_nvcc


def _check(course, src_dir):
    ex = next(e for e in course.day("day14").exercises if e.name == "spill")
    assert "no_local_memory" in ex.checks
    ctx = SimpleNamespace(exercise=ex, src_dir=src_dir, root=ROOT, capability=(9, 0))
    return protocol.CHECKS["no_local_memory"](ctx)


@needs_nvcc
def test_the_solution_has_no_local_memory_and_the_stub_has_a_stack_frame(course):
    good = _check(course, ROOT / "solutions" / "day14")
    assert good.ok and good.category == "pass" and "no stack frame and no spills" in good.message
    bad = _check(course, ROOT / "days" / "day14")
    assert not bad.ok and bad.category == "local_memory"
    assert "softmax_cached_kernel" in bad.message and "128 bytes of stack" in bad.message


def test_without_nvcc_the_check_fails_and_says_what_is_missing(course, monkeypatch):
    import grader.check.compile_check as cc

    protocol._ptxas_resources.cache_clear()
    monkeypatch.setattr(cc, "nvcc_path", lambda: None)
    r = _check(course, ROOT / "solutions" / "day14")
    protocol._ptxas_resources.cache_clear()
    assert not r.ok and "nvcc" in r.message and r.category == "check_failed"


def test_a_check_without_the_build_folder_is_not_run():
    ctx = SimpleNamespace(exercise=None, src_dir=None, root=None, capability=(0, 0))
    assert protocol.CHECKS["no_local_memory"](ctx) is None
