"""What a student reads: the verdict, the numbers and a hint, rendered from a result."""
from rich.console import Console

from grader.check import report
from grader.check.verdict import ExerciseResult, hint
from grader.course import load_course
from tests.conftest import ROOT

COURSE = load_course(ROOT / "course.yaml")


def render(res, ex) -> str:
    console = Console(record=True, width=160)
    report.render(console, res, ex, hint(res, ex, COURSE.hints))
    return console.export_text()


def bench_case(i, dtype, label, ms, base_ms, lib_ms):
    t = lambda m: {"median_ms": m, "q1_ms": m, "q3_ms": m, "min_ms": m, "reps": 10, "stable": True}  # noqa: E731
    return dict(index=i, kind="benchmark", dtype=dtype, label=label, ok=True, category="pass", message="",
                time=t(ms), baseline_time=t(base_ms), library_time=t(lib_ms), speedup=base_ms / ms,
                vs_library=lib_ms / ms, gbps=134.2 / ms, pct_of_copy=0.97)


def test_pass_report_shows_speed_table_and_verdict(course):
    ex = course.day("day02").exercises[0]
    res = ExerciseResult("day02", "softmax", "student", "days/day02", 7, status="pass", threshold=8.0,
                         speedup=19.3, message="correct, and 19.30x the baseline (needs 8x)",
                         info={"gpu": "NVIDIA H200", "capability": "9.0"},
                         builds=[{"target": "exercise", "ok": True, "seconds": 4.6}],
                         cases=[dict(index=0, kind="correctness", dtype="fp32", label="1x1", ok=True,
                                     category="pass", message="", rel_l2=1e-7, max_abs=2e-7),
                                bench_case(1, "fp32", "4096x4096", 0.0796, 2.47, 0.058)])
    text = render(res, ex)
    for needle in ("day02 · softmax", "seed 7", "NVIDIA H200 (sm_90)", "built exercise in 4.6 s", "1/1",
                   "baseline: day01 solution", "79.6", "31.03x", "97%", "PASS", "needs 8x"):
        assert needle in text, needle
    assert "hint" not in text


def test_failure_report_lists_cases_and_gives_a_hint(course, tmp_path):
    ex = course.day("day03").exercises[0]
    bad = dict(index=3, kind="correctness", dtype="bf16", label="3x1025", ok=False, category="unwritten",
               message="5 of 3075 output elements (0.16%) were never written; first at [2, 1020]")
    log = tmp_path / "x.log"
    log.write_text("worker output\n")
    res = ExerciseResult("day03", "softmax", "student", "days/day03", 1, status="fail", message="1 case(s) failed",
                         cases=[bad], log=str(log))
    text = render(res, ex)
    assert "bf16 3x1025: 5 of 3075" in text and "FAIL" in text and "ceil-divide" in text
    assert "--seed 1" in text and f"full log: {log}" in text


def test_full_log_only_when_the_log_has_something(course, tmp_path):
    ex = course.day("day03").exercises[0]
    bad = dict(index=0, kind="correctness", dtype="fp32", label="1x1", ok=False, category="mismatch", message="off")
    (tmp_path / "empty.log").write_text("")
    for log in (tmp_path / "empty.log", tmp_path / "missing.log", ""):
        res = ExerciseResult("day03", "softmax", "student", "days/day03", 5, status="fail", message="1 case(s) failed",
                             cases=[bad], log=str(log))
        text = render(res, ex)
        assert "full log" not in text and "reproduce with --seed 5" in text


def _compile_report(**kw):
    return {**dict(file="days/day01/softmax.cu", ok=False, tool="nvcc", diagnostics=[], kernels=[], note="", log=""), **kw}


def test_compile_only_build_error_shows_the_compiler_and_no_log_file(course, tmp_path):
    """No GPU: no worker log to point to; the diagnostics are shown, or else the tail of what the compiler said."""
    ex = course.day("day01").exercises[0]
    log = tmp_path / "worker.log"
    log.write_text("the worker found no GPU\n")
    said = "\n".join(f"nvcc line {i}" for i in range(100)) + "\nnvcc fatal   : something without a file:line"
    for rep, shown, hidden in [
        (_compile_report(diagnostics=["days/day01/softmax.cu:7: error: expected a \";\""], log=said),
         ["softmax.cu:7: error: expected"], ["nvcc line"]),
        (_compile_report(log=said), ["nvcc fatal   : something without", "nvcc line 99", "nvcc line 71"],
         ["nvcc line 70\n"]),
    ]:
        res = ExerciseResult("day01", "softmax", "student", "days/day01", 3, status="build_error",
                             message="the code does not compile", compile=[rep], log=str(log))
        text = render(res, ex)
        assert "does not compile (nvcc)" in text and "BUILD ERROR" in text
        assert "full log" not in text and "--seed" not in text  # the inputs do not matter to a build
        for s in shown:
            assert s in text, (s, text)
        for s in hidden:
            assert s not in text, (s, text)


def test_a_source_refused_before_compiling_says_why(course):
    ex = course.day("day01").exercises[0]
    msg = "the file is 50.0 MiB; sources over 2 MiB are refused (is it a generated or binary file?)"
    rep = _compile_report(tool="-", diagnostics=[f"days/day01/softmax.cu:1: error: {msg}"], note=msg)
    res = ExerciseResult("day01", "softmax", "student", "days/day01", 3, status="build_error",
                         message="the code does not compile", compile=[rep])
    text = render(res, ex)
    assert "softmax.cu: cannot be compiled" in text and f"softmax.cu:1: error: {msg}" in text
    assert "(-)" not in text


def test_a_ranked_report_never_shows_a_seed(course, tmp_path):
    ex = course.day("day02").exercises[0]
    log = tmp_path / "x.log"
    log.write_text("worker output\n")
    cases = [bench_case(1, "fp32", "4096x4096", 0.08, 2.47, 0.058), bench_case(1, "fp32", "4096x4096", 0.09, 2.4, 0.06),
             dict(index=0, kind="correctness", dtype="fp32", label="1x1", ok=False, category="mismatch",
                  message="off by one")]
    for c, run in zip(cases, (1, 2, 2)):
        c["run"] = run
    res = ExerciseResult("day02", "softmax", "student", "days/day02", None, status="fail", message="failed",
                         cases=cases, log=str(log), info={"gpu": "NVIDIA H200", "capability": "9.0"})
    console = Console(record=True, width=160)
    report.render(console, res, ex, None, ranked="1a2b3c4d" + "e" * 56)
    text = console.export_text()
    assert "ranked (seed hash 1a2b3c4d…)" in text and "eeee" not in text
    assert "seed None" not in text and "--seed" not in text and f"full log: {log}" in text
    assert "4096x4096 (run 1)" in text and "4096x4096 (run 2)" in text and "fp32 1x1 (run 2): off by one" in text


def test_not_implemented_is_said_once(course):
    ex = course.day("day01").exercises[0]
    cases = [dict(index=i, kind="correctness", dtype="fp32", label=f"{i}x1", ok=False, category="not_implemented",
                  message="output never written: not implemented yet?") for i in range(5)]
    res = ExerciseResult("day01", "softmax", "student", "days/day01", 1, status="not_implemented",
                         message="the output is never written: not implemented yet", cases=cases)
    text = render(res, ex)
    assert text.count("not implemented yet") == 1 and "YOUR CODE HERE" in text


def test_compile_only_report_shows_resources(course):
    ex = course.day("day01").exercises[0]
    res = ExerciseResult("day01", "softmax", "student", "days/day01", 1, status="no_gpu",
                         message="no CUDA GPU here", compile=[dict(
                             file="days/day01/softmax.cu", ok=True, tool="nvcc", diagnostics=[], note="", log="",
                             kernels=[dict(function="softmax_naive_kernel(float const*, float*, int, int)",
                                           arch="sm_90", registers=30, smem_bytes=0, stack_bytes=0,
                                           spill_stores=0, spill_loads=0)])])
    text = render(res, ex)
    assert "COMPILED ONLY" in text and "softmax_naive_kernel" in text and "30" in text


def test_a_ceiling_only_some_dtypes_have_shows_a_dash_for_the_others(course):
    """Attention's ceiling (SDPA cuDNN) cannot run fp32: that row says '-' instead of breaking the report."""
    ex = course.day("day10").exercises[1]
    fp32 = bench_case(1, "fp32", "2x8x2048x64", 0.548, 2.4, 0.59)
    bf16 = {**bench_case(2, "bf16", "2x8x2048x64", 0.54, 2.4, 0.05), "ceiling": "SDPA cuDNN", "pct_of_ceiling": 0.09}
    for c in (fp32, bf16):
        for k in ("gbps", "pct_of_copy"):
            c.pop(k)
        c["tflops"] = 31.3
    res = ExerciseResult("day10", "flash_attention", "solution", "solutions/day10", 1, status="pass", threshold=2.0,
                         speedup=4.4, message="ok", info={"gpu": "NVIDIA H200", "capability": "9.0"},
                         cases=[fp32, bf16])
    text = render(res, ex)
    assert "% of SDPA cuDNN" in text and "9%" in text
    assert any(line.startswith("2x8x2048x64") and " - " in line for line in text.splitlines())


class _T:  # a timing as the worker's timer returns it
    def __init__(self, ms):
        self.median_ms = ms

    def as_dict(self):
        return {"median_ms": self.median_ms}


def test_each_exercise_is_put_against_its_own_ceiling(course):
    """Day 11's WMMA kernel runs at about twice cuBLAS fp32 (its task's CUDA-core ceiling): the report must put it
    against cuBLAS in its own dtype (`ceiling: library`), never print '208% of peak'. An exercise whose ceiling is
    `none` gets no such column; a dtype its ceiling cannot run shows '-' (test above)."""
    from grader.check.worker import ceiling_fields

    wmma = next(e for e in course.day("day11").exercises if e.name == "matmul_wmma")
    assert wmma.ceiling == "library"
    assert all(e.ceiling == "task" for d in ("day06", "day07", "day08", "day09") for e in course.day(d).exercises)
    fl = 2 * 4096**3
    fp32_gemm, fp16_gemm, kernel = _T(2.98), _T(0.95), _T(1.43)  # ms: cuBLAS fp32, cuBLAS fp16, the WMMA kernel
    got = ceiling_fields(wmma.ceiling, kernel.median_ms, fl, task=("cuBLAS fp32", fp32_gemm),
                         library=("torch.matmul, same dtype", fp16_gemm))
    assert got["ceiling"] == "torch.matmul, same dtype" and round(got["pct_of_ceiling"], 2) == 0.66
    assert round(got["ceiling_tflops"]) == round(fl / 0.95e9)
    # The old choice would have said 208%:
    assert round(ceiling_fields("task", kernel.median_ms, fl, task=("cuBLAS fp32", fp32_gemm))["pct_of_ceiling"], 2) == 2.08
    assert ceiling_fields("none", kernel.median_ms, fl, task=("cuBLAS fp32", fp32_gemm), library=("x", fp16_gemm)) == {}
    assert ceiling_fields("task", kernel.median_ms, fl, task=None, library=("x", fp16_gemm)) == {}

    case = {**bench_case(1, "fp16", "4096x4096x4096", 1.43, 2.9, 0.95), **got, "tflops": fl / 1.43e9}
    for k in ("gbps", "pct_of_copy"):
        case.pop(k)
    res = ExerciseResult("day11", "matmul_wmma", "solution", "solutions/day11", 1, status="pass", threshold=1.5,
                         speedup=2.03, message="ok", info={"gpu": "NVIDIA H100", "capability": "9.0"}, cases=[case])
    text = render(res, wmma)
    assert "% of torch.matmul, same dtype" in text and "66%" in text and "208%" not in text
    bare = {k: v for k, v in case.items() if k not in got}
    res.cases = [bare]
    text = render(res, wmma.model_copy(update={"ceiling": "none"}))
    assert "% of" not in text and "208%" not in text


def _compiled(exercise, report):
    return ExerciseResult("day20", exercise, "student", "days/day20", 1, status="no_gpu", message="no CUDA GPU here",
                          compile=[dict(report)])


def test_a_file_the_exercises_share_is_reported_once_per_check(course):
    """Day 20's four exercises compile one attention_bwd_tc.cu: its ptxas table is printed for the first exercise,
    and each later one names the report in a line. A report that differs (other flags, an edit) is printed again."""
    day = course.day("day20")
    shared = dict(file="days/day20/attention_bwd_tc.cu", ok=True, tool="nvcc", diagnostics=[], note="", log="",
                  kernels=[dict(function="hopper::probe_kernel()", arch="sm_90", registers=8, smem_bytes=0,
                                stack_bytes=0, spill_stores=0, spill_loads=0)])
    console, shown = Console(record=True, width=160), {}
    for i, ex in enumerate(day.exercises):
        report.render(console, _compiled(ex.name, {**shared, "cached": i > 0}), ex, shown=shown)
    text = console.export_text()
    first = day.exercises[0].name
    assert text.count("hopper::probe_kernel()") == 1 and text.count("registers") == 1
    assert text.count(f"attention_bwd_tc.cu: compiles (nvcc), as reported above for {first}") == len(day.exercises) - 1
    changed = {**shared, "kernels": [{**shared["kernels"][0], "registers": 9}]}
    report.render(console, _compiled(first, changed), day.exercises[0], shown=shown)
    assert console.export_text().count("hopper::probe_kernel()") == 1  # export_text cleared the record: printed anew
    # without a check's memory (a single result, as `grader grade` renders it), everything is shown
    assert "hopper::probe_kernel()" in render(_compiled(first, shared), day.exercises[0])
