"""The integrity rules that need no GPU: whose kernel a profiler name is, work on another stream, and rates no
GPU can reach. (The exploits themselves run as known-wrong tests on the GPU: tests/known_wrong.yaml.)"""
from grader.check.attribution import Launch, Owner, python_kernel_names, qualified, verdict
from grader.check.physical import peak_tflops, too_fast
from grader.verdicts import Category

# What cuobjdump + c++filt give for a student's library, and how the profiler (CUPTI) prints the same kernels.
STUDENT = {qualified(n) for n in ("void softmax_kernel<float>(float const*, float*, int, int)",
                                  "void flash::flash_kernel<float, 64, true>(float const*, float*, int)",
                                  "(anonymous namespace)::helper(float*)", "cfun")}
ATEN_FILL = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int)"
ATEN_SOFTMAX = "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false, false>(float*, int)"
CUBLAS = "sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x16_warpgroupsize1x1x1_execute_segment_k_off_kernel"
SDPA_FLASH = "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::half_t>>(Params)"


def k(name, stream=7):
    return Launch("kernel", name, stream)


def test_the_students_kernels_are_recognised_whatever_the_demangler_spacing():
    o = Owner(STUDENT)
    assert o.owns(k("void softmax_kernel<float>(const float *, float *, int, int)"))
    assert o.owns(k("void flash::flash_kernel<__half, 64, true>(__half const*, __half*, int)"))  # other instance
    assert o.owns(k("(anonymous namespace)::helper(float*)")) and o.owns(k("cfun"))


def test_library_kernels_are_foreign_even_with_a_lookalike_name():
    o = Owner(STUDENT | {qualified("void at::native::vectorized_elementwise_kernel<2, Dummy>(int)")})
    for name in (ATEN_SOFTMAX, CUBLAS, SDPA_FLASH, "nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTN", ATEN_FILL):
        assert not o.owns(k(name)), name


def test_memsets_and_device_copies_are_the_ops_own_work_host_copies_need_allowing():
    """A launcher that zeroes its output before a kernel accumulates into it (C = αAB + βC) is honest: a memset or a
    device-to-device copy cannot forge a result (fresh inputs and checked outputs stop a replay, whatever moves
    the bytes). A copy from or to the host is not the op's work unless the exercise allows it."""
    assert Owner(STUDENT).owns(Launch("memset", "Memset (Device)", 7))
    assert Owner(STUDENT).owns(Launch("memcpy", "Memcpy DtoD (Device -> Device)", 7))
    assert not Owner(STUDENT).owns(Launch("memcpy", "Memcpy HtoD (Pageable -> Device)", 7))
    assert Owner(STUDENT, allow=["memcpy"]).owns(Launch("memcpy", "Memcpy HtoD (Pageable -> Device)", 7))


def test_python_exercises_own_the_functions_their_files_define(tmp_path):
    f = tmp_path / "softmax_numba.py"
    f.write_text("from numba import cuda\n@cuda.jit\ndef _softmax_rows(x, y):\n    pass\n\ndef softmax(x, out):\n    pass\n")
    cu = tmp_path / "k.cu"
    cu.write_text('extern "C" __global__ void softmax_kernel(const float* x, float* y) {}\n')
    o = Owner(identifiers=python_kernel_names([f, cu]))
    assert o.owns(k("day13_softmax_numba::_softmax_rows[abi:cw51cXTLSUwv1sDUaKthqaNgoKmjgEhasCBDCg1bcED]"))
    assert o.owns(k("_ZN6cudapy8__main__18_softmax_rows$241E5ArrayIfLi2E1C7mutable7alignedE"))
    assert o.owns(k("softmax_kernel"))
    assert not o.owns(k(ATEN_SOFTMAX))  # `def softmax` does not make ATen's softmax kernels the student's
    # CuTe DSL names a kernel after its function, between `kernel_cutlass_` and the specialisation (the PTX entry).
    assert o.owns(k("kernel_cutlass__softmax_rows_tensorptrbf16genericalign16oi641_tensorptrbf16genericalign16oi641_0"))
    assert not o.owns(k("kernel_cutlass__softmax_rows2_tensorptrf32_0"))  # another function's kernel


def test_a_mojo_kernel_is_its_files_by_the_entry_name_mojo_gives_it(tmp_path):
    # Mojo names a kernel's PTX entry <file stem>_<function>_<specialisation hash> (mojo 1.2, day 13's route 5).
    f = tmp_path / "softmax_mojo.mojo"
    f.write_text("@always_inline\ndef merge(a: Float32) -> Float32:\n    return a\n\n"
                 "def softmax_rows[dtype: DType](x: Float32):\n    pass\n")
    o = Owner(identifiers=python_kernel_names([f]))
    assert o.owns(k("softmax_mojo_softmax_rows_DTy6A6AcB6A6A_9494c78a106dfb37"))
    assert not o.owns(k("softmax_mojo_softmax_rows2_DTy6A6AcB6A6A_9494c78a106dfb37"))  # another function's kernel
    assert not o.owns(k("other_softmax_rows_DTy6A6AcB6A6A_9494c78a106dfb37"))  # another file's
    assert not o.owns(k(ATEN_SOFTMAX))


def test_verdict_names_foreign_work_first_then_another_stream():
    o = Owner(STUDENT)
    cat, msg = verdict([k("cfun"), k(CUBLAS)], 7, o)
    assert cat == Category.FOREIGN_KERNEL and "sm90_xmma_gemm" in msg
    cat, msg = verdict([k("cfun", stream=13)], 7, o)
    assert cat == Category.SIDE_STREAM and "stream 13" in msg
    assert verdict([k("cfun")], 7, o) is None


def test_rates_above_what_the_gpu_can_do_are_impossible():
    h100 = peak_tflops((9, 0), 132, 1.98, "bf16")
    assert 1000 < h100 < 1100 and peak_tflops((9, 0), 132, 1.98, "fp32") == h100 / 2
    assert too_fast(pct_of_copy=1.02) is None and "copy" in too_fast(pct_of_copy=27.9)
    assert too_fast(tflops=600, peak=h100) is None and "peak" in too_fast(tflops=5000, peak=h100)


def test_every_known_wrong_edit_still_finds_its_text_in_the_solution():
    """The GPU suite plants each known-wrong bug by a find/replace in the solution; a solution edited since then
    would leave the bug unplanted. Caught here, without a GPU, before a GPU run is spent on it."""
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parents[1]
    stale = [bug["name"] for bug in yaml.safe_load((root / "tests" / "known_wrong.yaml").read_text())
             for e in bug.get("edits") or [bug]
             if (root / "solutions" / bug["day"] / e["file"]).read_text().count(e["find"]) < 1]
    assert not stale, f"known-wrong edits whose `find` is no longer in the solution: {stale}"


def test_every_known_wrong_python_file_still_parses(tmp_path):
    """A planted bug in a Python route must be the bug it names, not a syntax error: a replacement whose YAML block
    lost its indentation turns a tamper test into a build error, found only on the GPU (it was, once)."""
    import ast

    from tests.known_wrong import KNOWN_WRONG, plant

    broken = []
    for i, bug in enumerate(b for b in KNOWN_WRONG if any(e["file"].endswith(".py") for e in b.get("edits") or [b])):
        if Category.BUILD_ERROR in (bug["category"] if isinstance(bug["category"], list) else [bug["category"]]):
            continue  # a planted build error is meant not to parse
        src = plant(bug, tmp_path / str(i))
        for e in bug.get("edits") or [bug]:
            if e["file"].endswith(".py"):
                try:
                    ast.parse((src / e["file"]).read_text(), e["file"])
                except SyntaxError as err:
                    broken.append(f"{bug['name']}: {err}")
    assert not broken, broken


def test_every_case_a_known_wrong_names_is_a_case_of_its_exercises(course):
    """A known-wrong entry's `cases:` (run with `grader check --case`) must name a case of every exercise it
    checks, in its dtype if it names one: a typo would otherwise be a usage error on the GPU, found only there."""
    from pathlib import Path

    import yaml

    from grader.check.plan import plan

    root = Path(__file__).resolve().parents[1]
    missing = []
    for bug in yaml.safe_load((root / "tests" / "known_wrong.yaml").read_text()):
        exercises = [e for e in course.day(bug["day"]).exercises if bug.get("exercise") in (None, e.name)]
        dtypes = [bug["dtype"]] if "dtype" in bug else None
        for ex in exercises if bug.get("cases") else []:
            names = [c.named for c in plan(ex, dtypes, benchmark=bool(bug.get("timed")))]
            missing += [(bug["name"], ex.name, text) for text in bug["cases"] if not any(text in n for n in names)]
    assert not missing, missing
