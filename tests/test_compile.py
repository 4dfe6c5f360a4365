"""Compile-only checks of every kernel and bindings file, stubs and solutions (what CI can do without a GPU).

The reports of the course's own files come from tests/data/compile-records.json where their inputs are recorded, and
from the compiler otherwise; every run recompiles a sample of the records and fails on one that differs
(tests/compile_records.py). The tests of the compile-only check itself, at the end, always run the compiler."""
import re
import shutil
from pathlib import Path

import pytest

from tests import compile_records
from tests.conftest import ROOT, lesson_table, needs_nvcc


def _compile(sources, include_dirs, extra_flags, request):
    """The compile reports of sources; how each was had goes to the test's properties ($GRADER_TEST_TIMES)."""
    hows = []
    reports = compile_records.compile_sources(sources, include_dirs, extra_flags, hows)
    request.node.user_properties.append(("compile_records", " ".join(f"{f}:{how}" for f, how in hows)))
    return reports


def _sources():
    from grader.course import load_course

    course = load_course(ROOT / "course.yaml")
    for day in course.days:
        for ex in day.exercises:
            for where in ("solutions", "days"):
                yield pytest.param(day.id, ex, where, id=f"{where}-{day.id}-{ex.name}")


@needs_nvcc
@pytest.mark.parametrize("day, ex, where", list(_sources()))
def test_compiles_for_sm80_and_sm90_without_spills(day, ex, where, request):
    reports = _compile([ROOT / where / day / s for s in ex.sources], [ROOT / i for i in ex.include_dirs],
                       ex.extra_cuda_cflags, request)
    for r in reports:
        assert r.ok, f"{r.file}: {r.note}\n" + "\n".join(r.diagnostics) + r.log[-3000:]
        if r.tool == "nvcc":
            # A stub may launch nothing, so its templates are never instantiated: no kernels is fine there.
            if where == "solutions" or r.kernels:
                # plus any image the exercise's own flags add (days 11 and 12: sm_90a, the only one with wgmma)
                extra = {f"sm_{a}" for f in ex.extra_cuda_cflags for a in re.findall(r"code=sm_(\w+)", f)}
                assert {k["arch"] for k in r.kernels} == {"sm_80", "sm_90"} | extra, r.file
            for k in r.kernels:
                assert k["spill_stores"] == 0 and k["spill_loads"] == 0, (r.file, k)
        warnings = [d for d in r.diagnostics if ": warning:" in d]
        assert not warnings, warnings


def _published():
    """Each exercise of a day whose solution has instructor-only lines: what `grader publish` hands the class differs
    from what the test above compiles."""
    from grader.course import load_course

    course = load_course(ROOT / "course.yaml")
    for day in course.days:
        folder = ROOT / "solutions" / day.id
        if day.status == "ready" and any("INSTRUCTOR ONLY" in f.read_text(errors="replace")
                                         for f in folder.glob("*") if f.is_file()):
            for ex in day.exercises:
                yield pytest.param(day.id, ex, id=f"published-{day.id}-{ex.name}")


@needs_nvcc
@pytest.mark.parametrize("day, ex", list(_published()))
def test_published_solution_builds_without_its_instructor_only_lines(day, ex, tmp_path, request):
    """The published solution is the solution less its instructor-only lines; it must still build by itself (day
    05's packed kernel once called helpers that only an instructor-only region defined, so the class's copy failed
    to compile)."""
    from grader.authoring.publish import solution_files
    from grader.course import load_course

    for rel, entry in solution_files(ROOT, load_course(ROOT / "course.yaml").day(day)).items():
        dest = tmp_path / Path(rel).relative_to("solutions")
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(entry.data)
    reports = _compile([tmp_path / day / s for s in ex.sources], [ROOT / i for i in ex.include_dirs],
                       ex.extra_cuda_cflags, request)
    for r in reports:
        assert r.ok, f"published {r.file}: {r.note}\n" + "\n".join(r.diagnostics) + r.log[-3000:]


# ptxas's "Potential Performance Loss: wgmma.mma_async instructions are serialized" (C7510 to C7515) makes each wgmma
# of a kernel wait for the one before: the kernel stays correct, so no GPU test can see it, and a Hopper kernel loses
# the overlap it is written for (measured/NOTES.md: day 20's reorderings that ptxas serialised). The pipelined Hopper
# kernels, and the knobs kept for timing beside them, must compile without it; each build names its kernels by a
# pattern (day 11's kernel 3a is also built without its overlap, kAsync false, on purpose).
HOPPER_BUILDS = [
    ("day11", "matmul_wgmma", [], r"tma_kernel|kernel<[^>]*, true>"),
    ("day11", "matmul_wgmma", ["TC_WG_PERSISTENT=0"], r"tma_kernel"),
    ("day11", "matmul_wgmma", ["TC_WG_EDGE=0"], r"tma_kernel<"),  # step 11e's own kernel 3b, the holes' code
    ("day12", "flash_attention_mma", [], r"flash_wgmma_kernel"),
    ("day20", "attention_bwd_tc", [], r"dkdv_wgmma_kernel"),
    ("day20", "attention_bwd_tc", ["FA20_WG_KV_REGS=0"], r"dkdv_wgmma_kernel"),
    ("day20", "attention_bwd_tc", ["FA20_WG_DQ_STORER=0"], r"dkdv_wgmma_kernel"),
]

def _build_with_defines(day, name, defines, request):
    """The compile reports of exercise `name`'s solution built with the macros `defines` (each NAME=VALUE)."""
    from grader.course import load_course

    ex = next(e for e in load_course(ROOT / "course.yaml").day(day).exercises if e.name == name)
    src = lesson_table().solution_with_defines(day, defines)  # with defines, a fresh copy in a folder of its own
    try:
        reports = _compile([src / s for s in ex.sources], [ROOT / i for i in ex.include_dirs], ex.extra_cuda_cflags,
                           request)
    finally:
        if not src.resolve().is_relative_to(ROOT):  # the copy, never the checkout's own solutions/
            shutil.rmtree(src.parent)
    assert all(r.ok for r in reports), [(r.file, r.note, r.diagnostics[:3]) for r in reports if not r.ok]
    return reports


def _build_ids(builds):
    return [f"{d}-{n}" + "".join(f"-{m}" for m in ms) for d, n, ms, _ in builds]


@needs_nvcc
@pytest.mark.parametrize("day, name, defines, kernels", HOPPER_BUILDS, ids=_build_ids(HOPPER_BUILDS))
def test_hopper_kernels_keep_wgmma_asynchronous(day, name, defines, kernels, request):
    reports = _build_with_defines(day, name, defines, request)
    hopper = [k for r in reports for k in r.kernels
              if k["arch"].startswith("sm_90") and re.search(kernels, k["function"])]
    assert hopper, f"no sm_90a kernel of {day} matches {kernels!r}: the test names kernels that no longer exist"
    assert not [(k["function"], k["wgmma_serialized"]) for k in hopper if k["wgmma_serialized"]]
    assert not [k["function"] for k in hopper if k["spill_stores"] or k["spill_loads"]]


# Knobs kept for timing beside their defaults outside the Hopper pipelines above (the default's measured baseline):
# each must still build, without spills, so that the comparison measured/NOTES.md describes can be run again.
KNOB_BUILDS = [
    ("day05", "softmax", ["SOFTMAX_ONEPASS_SMEM=0"]),
    ("day05", "softmax", ["SOFTMAX_EXP_ONCE=1"]),
]


@needs_nvcc
@pytest.mark.parametrize("day, name, defines", KNOB_BUILDS,
                         ids=[f"{d}-{n}-" + "-".join(ms) for d, n, ms in KNOB_BUILDS])
def test_knobs_kept_for_timing_still_build_without_spills(day, name, defines, request):
    reports = _build_with_defines(day, name, defines, request)
    kernels = [k for r in reports for k in r.kernels]
    assert kernels, f"{day}.{name} with {defines}: no kernels compiled"
    assert not [(k["function"], k["arch"]) for k in kernels if k["spill_stores"] or k["spill_loads"]]


def test_serialized_wgmma_is_read_from_the_ptxas_report():
    from grader.check.compile_check import parse_ptxas

    log = ("ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized due to non "
           "wgmma instructions defining accumulator registers of a wgmma between start and end of the pipeline stage "
           "in the function '_Z1kILb1EEvv'\n"
           "ptxas info    : (C7512) Potential Performance Loss: wgmma.mma_async instructions are serialized due to "
           "insufficient register resources for the function '_Z1jv'\n"
           "ptxas info    : (C7519) warpgroup.arrive is injected in around line 12 by compiler to allow use of "
           "registers in GMMA in function '_Z1kILb0EEvv'\n"
           "ptxas info    : Compiling entry function '_Z1kILb1EEvv' for 'sm_80'\n"
           "ptxas info    : Compiling entry function '_Z1kILb1EEvv' for 'sm_90a'\n"
           "ptxas info    : Compiling entry function '_Z1kILb0EEvv' for 'sm_90a'\n"
           "ptxas info    : Compiling entry function '_Z1jv' for 'sm_90a'\n")
    got = {(k.function, k.arch): k.wgmma_serialized for k in parse_ptxas(log)}
    assert got == {("_Z1kILb1EEvv", "sm_80"): "", ("_Z1kILb1EEvv", "sm_90a"): "C7515",
                   ("_Z1kILb0EEvv", "sm_90a"): "", ("_Z1jv", "sm_90a"): "C7512"}


def test_ptxas_report_reads_smem_after_a_stack_size():
    from grader.check.compile_check import parse_ptxas

    log = ("ptxas info    : Compiling entry function '_Z1kPf' for 'sm_90'\n"
           "ptxas info    : Function properties for _Z1kPf\n"
           "    72 bytes stack frame, 68 bytes spill stores, 76 bytes spill loads\n"
           "ptxas info    : Used 128 registers, used 1 barriers, 72 bytes cumulative stack size, 32768 bytes smem\n")
    (k,) = parse_ptxas(log)
    assert (k.registers, k.smem_bytes, k.stack_bytes, k.spill_stores, k.spill_loads) == (128, 32768, 72, 68, 76)


# -- compiler output that is not UTF-8 -------------------------------------------------------------------------
# The sources below are not UTF-8 on purpose (compile_sources refuses such files before compiling, so the compilers
# are called directly): the compilers quote the bytes back, and the output is decoded with replacement.
BAD_BYTES = b'#error caf\xe9 \xff\xfe\nint x = "unterminated \xe9;\n'


@needs_nvcc
def test_nvcc_output_with_invalid_bytes_is_decoded_with_replacement(tmp_path):
    from grader.check.compile_check import compile_cuda

    src = tmp_path / "k.cu"
    src.write_bytes(BAD_BYTES)
    r = compile_cuda(src, [], [], tmp_path)
    assert not r.ok and r.diagnostics and r.diagnostics[0].startswith("k.cu:1: error")
    assert "\ufffd" in r.log


def test_host_compiler_output_with_invalid_bytes_is_decoded_with_replacement(tmp_path):
    import shutil

    from grader.check.compile_check import compile_host

    if shutil.which("c++") is None and shutil.which("g++") is None:
        pytest.skip("no C++ compiler")
    pytest.importorskip("torch")
    src = tmp_path / "bindings.cpp"
    src.write_bytes(BAD_BYTES)
    r = compile_host(src, [], tmp_path)
    assert not r.ok and any(d.startswith("bindings.cpp:1:") for d in r.diagnostics), r.diagnostics
    assert "\ufffd" in r.log


@needs_nvcc
def test_a_compiler_that_runs_too_long_is_stopped_with_a_note(tmp_path):
    from grader.check.compile_check import compile_sources

    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(float* x) { x[0] = 1; }\n")
    (r,) = compile_sources([src], [], [], tmp_path, timeout_s=0.01)
    assert not r.ok and r.note == "nvcc did not finish in 0.01 s"


@needs_nvcc
def test_compile_reports_are_cached_by_content(tmp_path):
    """An unchanged file is not compiled again; an edit to it, or to a header it can include, is."""
    from grader.check.compile_check import compile_sources

    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "scale.cuh").write_text("#pragma once\n#define SCALE 2.0f\n")
    src = tmp_path / "k.cu"
    src.write_text('#include "scale.cuh"\n__global__ void k(float* x) { x[threadIdx.x] *= SCALE; }\n')
    run = lambda: compile_sources([src], [tmp_path / "inc"], [], tmp_path)[0]  # noqa: E731
    first = run()
    assert first.ok and not first.cached and first.kernels
    again = run()
    assert again.cached and (again.ok, again.kernels, again.diagnostics) == (first.ok, first.kernels, first.diagnostics)
    (tmp_path / "inc" / "scale.cuh").write_text("#pragma once\n#define SCALE 2.0f +\n")  # now a syntax error
    broken = run()
    assert not broken.cached and not broken.ok and any("k.cu:2" in d for d in broken.diagnostics)
    assert run().cached and not run().ok  # a failure is a result too
    src.write_text(src.read_text().replace("*=", "+="))
    assert not run().cached
    # The same file beside the same headers in another folder (a stub identical to its solution) is not compiled
    # again, and its report names its own folder.
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "k.cu").write_text(src.read_text().replace('#include "scale.cuh"\n', "#define SCALE 3\n") + "x;\n")
    a, b = (compile_sources([tmp_path / d / "k.cu"], [], [], tmp_path)[0] for d in ("a", "b"))
    assert not a.cached and b.cached and not b.ok and b.file == "b/k.cu"
    assert [x.replace("a/", "b/") for x in a.diagnostics] == b.diagnostics and any(x.startswith("b/k.cu:3") for x in b.diagnostics)


def test_a_serialised_wgmma_is_shown_beside_the_ptxas_table_and_in_the_short_verdict():
    import io
    from types import SimpleNamespace

    from rich.console import Console

    from grader.check.report import compact, render_compile
    from grader.verdicts import Status

    kernel = {"function": "void walk<__half, true>(float*)", "arch": "sm_90a", "registers": 168, "smem_bytes": 0,
              "stack_bytes": 0, "spill_stores": 0, "spill_loads": 0, "wgmma_serialized": "C7514"}
    report = {"file": "solutions/day20/k.cu", "ok": True, "tool": "nvcc", "note": "", "diagnostics": [],
              "kernels": [kernel, {**kernel, "function": "void other(float*)", "wgmma_serialized": ""}]}
    out = io.StringIO()
    render_compile(Console(file=out, width=200), [report])
    lines = [x for x in out.getvalue().splitlines() if "serialised" in x]
    assert len(lines) == 1 and "walk<__half, true> (C7514)" in lines[0] and "still correct" in lines[0]
    res = SimpleNamespace(day="day20", exercise="walk", status=Status.NO_GPU, compile=[report])
    (line,) = compact(res, None)
    assert "no spills; wgmma serialised in walk<__half, true> (C7514)" in line
