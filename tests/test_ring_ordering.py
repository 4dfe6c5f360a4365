"""Day 19's static ordering check (tasks/ring_ordering.py) on the PTX of the solution and of planted ordering bugs:
the bugs the H100 never showed in a test must still fail here, and the solution must pass. The check's findings
come from tests/data/compile-records.json where the inputs (the sources, nvcc, tasks/ring_ordering.py) are
recorded, and from nvcc otherwise; every run recompiles a sample of the records (tests/compile_records.py)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tasks.ring_ordering import analyze, compile_ptx
from tests import compile_records
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


def summarize(ptx: str) -> dict:
    """What the tests assert of a PTX, for each exercise's Flags: the ring_kernel instances checked, the number of
    findings and their distinct reasons (what tests/data/compile-records.json records)."""
    out = {}
    for flags in ("FenceFlags", "AcqRelFlags"):
        checked, findings = analyze(ptx, flags)
        out[flags] = {"checked": checked, "findings": len(findings), "whys": sorted({f.why for f in findings})}
    return out


def _ptx_with_deps(src: Path, depfile: Path | None) -> str:
    """compile_ptx's PTX of src, with nvcc also listing the files it read in depfile (the record's key)."""
    import subprocess

    run = subprocess.run

    def with_depfile(cmd, *args, **kwargs):
        if depfile is not None and cmd[1:2] == ["-ptx"]:
            cmd = [*cmd, "-MD", "-MF", str(depfile)]
        return run(cmd, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(subprocess, "run", with_depfile)
        return compile_ptx((src,), INCLUDE, ARCH)


@pytest.fixture(scope="session")
def ring_findings(tmp_path_factory):
    """summarize() of the solution with a variant's edits (None: the solution itself), each built once a session,
    from the compile records where its inputs are recorded (tests/compile_records.py): ring_attention.cu takes
    20 s of nvcc."""
    code = compile_records.code_closure(summarize, _ptx_with_deps)  # and what they call: compile_ptx, analyze
    done = {}

    def findings(variant: str | None) -> dict:
        if variant not in done:
            text = SOLUTION.read_text()
            for find, replace in VARIANTS.get(variant, []):
                assert find in text, find
                text = text.replace(find, replace)
            folder = tmp_path_factory.mktemp(f"ring-{variant or 'solution'}")
            src = folder / "ring_attention.cu"
            src.write_text(text)
            shutil.copy(SOLUTION.parent / "bindings.cpp", folder / "bindings.cpp")
            unit = compile_records.Unit("ptx-ordering", src, list(INCLUDE), [f"compute_{ARCH[0]}{ARCH[1]}"], code,
                                        lambda depfile: (summarize(_ptx_with_deps(src, depfile)), True))
            done[variant] = compile_records.result(unit)[0]
        return done[variant]

    return findings


@needs_nvcc
def test_the_solution_orders_every_arrival_and_wait(ring_findings):
    for flags, got in ring_findings(None).items():
        assert got["checked"] == 12 and not got["findings"], (flags, got["whys"])


@needs_nvcc
@pytest.mark.parametrize("variant, fence_fails, acqrel_fails, why", [
    ("release", True, True, "no device-scope release"),
    ("acquire", True, True, "no device-scope acquire"),
    ("block_scope", False, True, "device-scope"),
])
def test_a_missing_fence_fails(ring_findings, variant, fence_fails, acqrel_fails, why):
    got = ring_findings(variant)
    for flags, fails in (("FenceFlags", fence_fails), ("AcqRelFlags", acqrel_fails)):
        assert got[flags]["checked"] == 12
        assert bool(got[flags]["findings"]) == fails, (flags, got[flags]["whys"])
        if fails:
            assert all(why in w for w in got[flags]["whys"])


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
