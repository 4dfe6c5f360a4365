"""scripts/edge_bench.py (issue 37's timing outside the grader): without a GPU it says what it needs and exits 2;
its table reads a saved run."""
import importlib.util
import subprocess
import sys

import pytest

from tests.conftest import ROOT, has_gpu

spec = importlib.util.spec_from_file_location("edge_bench", ROOT / "scripts" / "edge_bench.py")
edge = importlib.util.module_from_spec(spec)
spec.loader.exec_module(edge)


@pytest.mark.skipif(has_gpu(), reason="exercises the no-GPU path")
def test_without_a_gpu_it_says_so_and_exits_2(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "edge_bench.py"), str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "needs a CUDA GPU" in r.stderr and "Traceback" not in r.stderr


def test_the_table_gives_rates_and_ratios_of_a_saved_run():
    ours, lib = {"do_bench_ms": 2.0, "events_ms": 2.1}, {"do_bench_ms": 1.5, "events_ms": 1.5}
    row = edge._row("attention_bwd", "4x16x4096x128", "bf16", ours, {"flash": lib, "cudnn": None}, 4e12, "TFLOP/s", 0.02)
    assert row["ours_rate"] == pytest.approx(2000) and row["x_flash"] == pytest.approx(0.75) and "x_cudnn" not in row
    text = edge.table({"gpu": "G", "torch": "t", "date": "d", "rows": [row]})
    assert "| attention_bwd | 4x16x4096x128 | bf16 | 2.000 | 2000 TFLOP/s | 0.75 | - | 1.05 | 2.0e-02 |" in text


def test_a_define_builds_the_days_solution_from_a_copy_that_starts_with_the_macros(monkeypatch):
    monkeypatch.setitem(edge.DEFINES, "day05", ["SOFTMAX_CLUSTER=1", "SOFTMAX_CLUSTER_THREADS=512"])
    src = edge._source("day05")
    assert src != ROOT / "solutions" / "day05"
    assert (src / "softmax.cu").read_text().startswith("#define SOFTMAX_CLUSTER 1\n#define SOFTMAX_CLUSTER_THREADS 512\n")
    assert edge._source("day11") == ROOT / "solutions" / "day11"  # no macros for that day: the solution itself
    text = edge.table({"gpu": "G", "torch": "t", "date": "d", "defines": dict(edge.DEFINES), "rows": []})
    assert "day05 built with SOFTMAX_CLUSTER=1, SOFTMAX_CLUSTER_THREADS=512" in text.splitlines()[0]


def test_a_malformed_define_is_a_usage_error(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "edge_bench.py"), str(tmp_path), "--define", "day05"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "give DAY:MACRO=V" in r.stderr and "Traceback" not in r.stderr


def test_a_define_alone_times_only_its_days_part_and_a_day_without_one_is_a_usage_error(tmp_path):
    assert edge.parts_to_time(None, {"day05": ["SOFTMAX_CLUSTER=1"]}) == ["softmax"]
    assert edge.parts_to_time(None, {}) == list(edge.PARTS) and edge.parts_to_time(["gemm"], {"day05": []}) == ["gemm"]
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "edge_bench.py"), str(tmp_path), "--define", "day07:X=1"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "times no solution of day07" in r.stderr and "Traceback" not in r.stderr


def test_quick_names_the_parts_that_run_on_one_shape():
    assert not edge.quick_part(None, "softmax")  # no --quick: every shape
    assert edge.quick_part([], "bwd") and edge.quick_part([], "softmax")  # --quick alone: every part
    assert edge.quick_part(["softmax"], "softmax") and not edge.quick_part(["softmax"], "bwd")


def test_outputs_start_as_nan_so_an_unwritten_element_shows_in_the_max_diff():
    torch = pytest.importorskip("torch")
    ref = torch.zeros(3, 4, dtype=torch.bfloat16)
    out = edge.nan_like(ref)
    assert out.dtype == ref.dtype and out.shape == ref.shape and bool(torch.isnan(out).all())
    out[:, :3] = 0  # a kernel that skipped the last column
    assert torch.isnan((out.float() - ref.float()).abs().max())


def test_a_wrong_output_is_judged_by_the_exercises_widened_tolerance_and_marked_in_both_tables():
    # A knob that breaks the kernel at the bench's sizes (day 11's ping-pong did, at 4096³, while passing every
    # correctness case) must not leave a fast row that reads as evidence.
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(3)
    a, b = (torch.randn(64, 64, generator=g) for _ in range(2))
    ref = (a.double() @ b.double()).half()
    close = ref + (torch.randn(ref.shape, generator=g) * 1e-3).half()  # a rounding's worth
    off = ref.clone()
    off[5:9, 40:] = 0  # one tile's worth written wrong
    assert edge.wrong("gemm", "float16", {"c": (close, ref)}) is None
    assert edge.wrong("gemm", "float16", {"c": (off, ref)}).startswith("c: ")
    assert edge.wrong("gemm", "float16", {"c": (edge.nan_like(ref), ref)}) is not None  # never written
    assert edge.wrong("gemm", "float16", {"c": (off, None)}) is None  # no library result: not judged
    ours, lib = {"do_bench_ms": 1.0, "events_ms": 1.0}, {"do_bench_ms": 1.2, "events_ms": 1.2}
    good, bad = (edge._row("gemm", "64x64x64", "float16", ours, {"cublas": lib}, 1e9, "TFLOP/s", d, w)
                 for d, w in ((0.0, None), (2.5, "c: 16 of 4096 elements off")))
    assert "**WRONG**" not in edge.table({"gpu": "G", "torch": "t", "date": "d", "rows": [good]})
    assert "2.5e+00 **WRONG** (c: 16 of 4096 elements off) |" in edge.table(
        {"gpu": "G", "torch": "t", "date": "d", "rows": [bad]})
    side = edge.compare({"gpu": "G", "date": "d", "rows": [good]}, {"gpu": "G", "date": "d", "rows": [bad]})
    assert side.splitlines()[-1].endswith("**WRONG** (c: 16 of 4096 elements off) |")


def test_compare_puts_two_saved_runs_side_by_side_case_by_case(tmp_path):
    ours_a, ours_b = {"do_bench_ms": 2.0, "events_ms": 2.0}, {"do_bench_ms": 1.6, "events_ms": 1.6}
    copy = {"do_bench_ms": 1.5, "events_ms": 1.5}
    a = edge._row("softmax", "64x262144", "float16", ours_a, {"copy": copy, "torch_softmax": None}, 4e9, "GB/s", 1e-7)
    b = edge._row("softmax", "64x262144", "float16", ours_b, {"copy": copy, "torch_softmax": None}, 4e9, "GB/s", 2e-7)
    only_a = edge._row("softmax", "4096x4096", "float16", ours_a, {"copy": copy}, 4e9, "GB/s", 0.0)
    base = {"gpu": "G", "date": "d1", "defines": {}, "rows": [a, only_a]}
    knob = {"gpu": "G", "date": "d2", "defines": {"day05": ["K=1"]}, "rows": [b]}
    text = edge.compare(base, knob)
    assert "A = the defaults, B = day05 with K=1" in text.splitlines()[0]
    assert "| softmax | 64x262144 | float16 | 2000 GB/s | 2500 GB/s | 1.250 | 0.75 | 0.94 | 2.0e-07 |" in text
    assert "4096x4096" not in text  # a case only one run has is left out
    for f, doc in (("a.json", base), ("b.json", knob)):
        (tmp_path / f).write_text(__import__("json").dumps(doc))
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "edge_bench.py"), "--compare", str(tmp_path / "a.json"),
                        str(tmp_path / "b.json")], capture_output=True, text=True)
    assert r.returncode == 0 and "| 1.250 |" in r.stdout


def test_compare_of_an_unreadable_run_and_a_run_without_a_folder_are_usage_errors(tmp_path):
    script = str(ROOT / "scripts" / "edge_bench.py")
    r = subprocess.run([sys.executable, script, "--compare", str(tmp_path / "none.json"), str(tmp_path / "x.json")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "cannot read a saved run" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, script], capture_output=True, text=True)
    assert r.returncode == 2 and "give OUT_DIR" in r.stderr and "Traceback" not in r.stderr


NCU_HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
              '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value","Rule Name","Rule Type",'
              '"Rule Description","Estimated Speedup Type","Estimated Speedup"')


def _ncu_row(kernel, section, name, unit, value, rule=""):
    cells = ["0", "1", "python3", "host", kernel, "1", "7", "(384, 1, 1)", "(512, 1, 1)", "0", "9.0", section, name,
             unit, value, rule, "", "", "", ""]
    return ",".join(f'"{c}"' for c in cells)


def test_ncu_summary_reads_columns_by_name_and_ranks_each_kernels_stalls(tmp_path):
    k = "void dkdv_wgmma_kernel<__half, 128, 1>(const float *, int)"
    text = "\n".join([
        "==PROF== Connected to process 1",
        '{"kind": "attention_bwd"}',  # the bench's own output, interleaved
        NCU_HEADER,
        _ncu_row(k, "GPU Speed Of Light Throughput", "Duration", "ns", "2,900,256", rule="SOLBottleneck"),
        _ncu_row(k, "Command line profiler metrics", "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
                 "%", "50.09"),
        _ncu_row(k, "Command line profiler metrics", "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
                 "inst", "1.11"),
        _ncu_row(k, "Command line profiler metrics",
                 "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", "inst", "2.00"),
        _ncu_row(k, "Launch Statistics", "Grid Size", "", "512"),  # the launch's shape, to set beside the library's
        _ncu_row(k, "Launch Statistics", "Function Cache Configuration", "", "CachePreferNone"),  # not kept
    ])
    out = edge.ncu_summary(text).splitlines()
    assert out == ["void dkdv_wgmma_kernel<__half, 128, 1>",
                   "  Duration: 2,900,256 ns",
                   "  sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active: 50.09 %",
                   "  Grid Size: 512",
                   "  stall long_scoreboard: 2.00",
                   "  stall barrier: 1.11"]
    assert "no kernel" in edge.ncu_summary("==PROF== Disconnected\n")
    script = str(ROOT / "scripts" / "edge_bench.py")
    r = subprocess.run([sys.executable, script, "--ncu-summary", str(tmp_path / "none.csv")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "cannot read" in r.stderr and "Traceback" not in r.stderr
