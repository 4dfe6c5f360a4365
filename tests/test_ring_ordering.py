"""Day 19's static ordering check (tasks/ring_ordering.py) on the PTX of the solution and of planted ordering bugs:
the bugs the H100 never showed in a test must still fail here, and the solution must pass."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tasks.ring_ordering import analyze, compile_ptx
from tests.conftest import ROOT, needs_nvcc

SOLUTION = ROOT / "solutions" / "day19" / "ring_attention.cu"
INCLUDE = (ROOT / "common",)
ARCH = (8, 0)

# Each variant breaks one rule in both exercises' Flags at once (one compile each).
VARIANTS = {
    "release": [("    __threadfence();\n    atomicAdd(counter, 1u);", "    atomicAdd(counter, 1u);"),
                ("c.fetch_add(1u, cuda::memory_order_release);", "c.fetch_add(1u, cuda::memory_order_relaxed);")],
    "acquire": [("backoff.pause();\n    __threadfence();", "backoff.pause();"),
                ("c.load(cuda::memory_order_acquire)", "c.load(cuda::memory_order_relaxed)")],
    "block_scope": [("cuda::thread_scope_device", "cuda::thread_scope_block")],
}


def _ptx(tmp_path: Path, edits) -> str:
    text = SOLUTION.read_text()
    for find, replace in edits:
        assert find in text, find
        text = text.replace(find, replace)
    src = tmp_path / "ring_attention.cu"
    src.write_text(text)
    shutil.copy(SOLUTION.parent / "bindings.cpp", tmp_path / "bindings.cpp")
    return compile_ptx((src,), INCLUDE, ARCH)


@needs_nvcc
def test_the_solution_orders_every_arrival_and_wait(tmp_path):
    ptx = _ptx(tmp_path, [])
    for flags in ("FenceFlags", "AcqRelFlags"):
        checked, findings = analyze(ptx, flags)
        assert checked == 12 and not findings, findings[:2]


@needs_nvcc
@pytest.mark.parametrize("variant, fence_fails, acqrel_fails, why", [
    ("release", True, True, "no device-scope release"),
    ("acquire", True, True, "no device-scope acquire"),
    ("block_scope", False, True, "device-scope"),
])
def test_a_missing_fence_fails(tmp_path, variant, fence_fails, acqrel_fails, why):
    ptx = _ptx(tmp_path, VARIANTS[variant])
    for flags, fails in (("FenceFlags", fence_fails), ("AcqRelFlags", acqrel_fails)):
        checked, findings = analyze(ptx, flags)
        assert checked == 12
        assert bool(findings) == fails, (flags, findings[:2])
        if fails:
            assert all(why in f.why for f in findings)


@needs_nvcc
def test_ptx_is_kept_by_the_content_of_its_inputs(tmp_path, monkeypatch):
    """A second exercise with the same sources (day 19's two rings), or a re-check of unchanged code, reads the kept
    PTX instead of running nvcc; an edit to the source or to a header beside it compiles again."""
    import tasks.ring_ordering as ro

    src = tmp_path / "k.cu"
    src.write_text('#include "h.cuh"\n__global__ void k(int* p) { p[0] = VALUE; }\n')
    (tmp_path / "h.cuh").write_text("#define VALUE 1\n")
    cache_dir = tmp_path / "cache"
    first = compile_ptx((src,), INCLUDE, ARCH, cache_dir)
    assert len(list((cache_dir / "ptx").glob("*.ptx"))) == 1
    compile_ptx.cache_clear()  # a new process: only the kept file remains
    real_run = ro.subprocess.run
    monkeypatch.setattr(ro.subprocess, "run", lambda *a, **k: pytest.fail("nvcc ran for unchanged inputs"))
    assert compile_ptx((src,), INCLUDE, ARCH, cache_dir) == first
    monkeypatch.setattr(ro.subprocess, "run", real_run)
    (tmp_path / "h.cuh").write_text("#define VALUE 2\n")
    compile_ptx.cache_clear()
    second = compile_ptx((src,), INCLUDE, ARCH, cache_dir)
    assert second != first and len(list((cache_dir / "ptx").glob("*.ptx"))) == 2
