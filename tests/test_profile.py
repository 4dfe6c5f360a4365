"""`grader profile`: reading ncu's raw CSV, the roofline summary, the plot, the table, and the CLI's errors on a
machine without a GPU. The GPU test at the end profiles real solutions (it needs ncu and counter permissions)."""
import json
import math
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from grader.profile import ncu, roofline
from grader.profile import report as profile_report
from grader.paths import Paths
from grader.profile.command import analyze, draw, parse_shape, targets
from tests.conftest import ROOT, SHARED_STATE, has_gpu, run_grader

FIXTURE = (Path(__file__).parent / "data" / "ncu_raw_two_kernels.csv").read_text()
CEILINGS = {"gpu": "NVIDIA H200", "capability": "9.0", "memory_Bps": 4.4e12, "ffma_flops": 6.0e13,
            "cublas_flops": 5.1e13}
SOFTMAX = "_Z19softmax_warp_kernelIfLi4EEvPKT_PS0_ii"
PTXAS = {
    SOFTMAX: {"function": SOFTMAX, "arch": "sm_90", "registers": 40, "smem_bytes": 0, "stack_bytes": 0,
              "spill_stores": 0, "spill_loads": 0,
              "demangled": "void softmax_warp_kernel<float, 4>(float const*, float*, int, int)"},
    "_Z16matmul_2d_kernelILi128ELi128ELi8ELi8ELi8EEvPKfS1_Pfiii": {
        "function": "_Z16matmul_2d_kernelILi128ELi128ELi8ELi8ELi8EEvPKfS1_Pfiii", "arch": "sm_90", "registers": 128,
        "smem_bytes": 16384, "stack_bytes": 24, "spill_stores": 16, "spill_loads": 24,
        "demangled": "void matmul_2d_kernel<128, 128, 8, 8, 8>(float const*, float const*, float*, int, int, int)"},
}


def assert_clean(r):
    assert "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr


# -- the raw page -------------------------------------------------------------------------------------------
def test_raw_csv_two_kernels_in_base_units():
    ks = ncu.parse_raw_csv(FIXTURE)
    assert [k["id"] for k in ks] == [0, 1]
    assert ks[0]["name"] == SOFTMAX and ks[1]["name"].startswith("void matmul_2d_kernel<128, 128, 8, 8, 8>(")
    a, b = ks[0]["metrics"], ks[1]["metrics"]
    assert a["gpu__time_duration.sum"] == pytest.approx(31.07e-6)
    assert ks[0]["units"]["gpu__time_duration.sum"] == "second"
    assert b["gpu__time_duration.sum"] == pytest.approx(3100.5e-6)  # "3,100.50" usecond
    assert a["dram__bytes_read.sum"] == pytest.approx(67.11e6) and ks[0]["units"]["dram__bytes_read.sum"] == "byte"
    assert b["sm__sass_thread_inst_executed_op_ffma_pred_on.sum"] == 68_719_476_736
    assert b["launch__shared_mem_per_block_dynamic"] == pytest.approx(16380)  # 16.38 Kbyte/block
    assert ks[1]["units"]["launch__shared_mem_per_block_dynamic"] == "byte/block"
    assert a["launch__grid_size"] == 1024
    assert a["sm__sass_thread_inst_executed_op_hadd_pred_on.sum"] is None  # n/a
    assert b["sm__maximum_warps_per_active_cycle_pct"] is None
    assert a["dram__throughput.avg.pct_of_peak_sustained_elapsed"] == pytest.approx(89.52)
    # Descriptions are kept apart from the metrics.
    assert ks[0]["info"]["device__attribute_display_name"] == "NVIDIA H200"
    assert ks[0]["info"]["Block Size"] == "(128, 1, 1)"
    assert "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg" in ks[0]["info"]


def test_raw_csv_without_header_is_an_error():
    with pytest.raises(ValueError, match="no CSV header"):
        ncu.parse_raw_csv("==ERROR== something went wrong\n")


@pytest.mark.parametrize("text, value", [("1,234.5", 1234.5), ("68,719,476,736", 68719476736.0), ("0", 0.0),
                                         ("-3", -3.0), ("1e3", 1000.0), (".5", 0.5), ("n/a", None), ("", None),
                                         ("(256, 1, 1)", None), ("12,34", None)])
def test_parse_number(text, value):
    assert ncu.parse_number(text) == value


@pytest.mark.parametrize("value, unit, want", [
    (12.5, "usecond", (12.5e-6, "second")), (5, "ns", (5e-9, "second")), (2, "msecond", (2e-3, "second")),
    (3.2, "Tbyte/second", (3.2e12, "byte/second")), (900, "GB/s", (9e11, "byte/second")),
    (48, "Kbyte/block", (48e3, "byte/block")), (1, "KiB", (1024, "byte")),
    (40, "register/thread", (40, "register/thread")),
    (89.5, "%", (89.5, "%")), (7, "", (7, "")), (3, "furlong", (3, "furlong")),
])
def test_units_are_normalized(value, unit, want):
    got = ncu.to_base_units(value, unit)
    assert got[0] == pytest.approx(want[0]) and got[1] == want[1]


@pytest.mark.parametrize("name, short", [
    ("void softmax_warp_kernel<float, 4>(const T1 *, T1 *, int, int)", "softmax_warp_kernel<float, 4>"),
    ("kernel(float const*, float*)", "kernel"),
    ("void (anonymous namespace)::k<(int)4>(int)", "(anonymous namespace)::k<(int)4>"),
    (SOFTMAX, SOFTMAX),
])
def test_short_name(name, short):
    assert ncu.short_name(name) == short


def test_profile_command_filters_on_the_nvtx_range():
    cmd = ncu.profile_command("/opt/ncu", Path("/tmp/r.ncu-rep"), ["python", "-m", "grader.profile.target", "{}"])
    joined = " ".join(cmd)
    assert cmd[0] == "/opt/ncu" and cmd[-4:] == ["python", "-m", "grader.profile.target", "{}"]
    assert "--nvtx --nvtx-include grader_op/" in joined and "--clock-control none" in joined
    assert "--target-processes all" in joined and "--export /tmp/r.ncu-rep" in joined
    for s in ("SpeedOfLight", "Occupancy", "LaunchStats", "MemoryWorkloadAnalysis"):
        assert f"--section {s}" in joined
    metrics = cmd[cmd.index("--metrics") + 1].split(",")
    assert "sm__sass_thread_inst_executed_op_ffma_pred_on.sum" in metrics and "gpu__time_duration.sum" in metrics
    imp = ncu.import_command("/opt/ncu", Path("/tmp/r.ncu-rep"))
    assert imp[imp.index("--page") + 1] == "raw" and "--csv" in imp


def test_ncu_failures_get_explanations(tmp_path):
    perm = "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters"
    msg = ncu.explain_failure(perm, tmp_path / "log")
    assert "NVreg_RestrictProfilingToAdminUsers=0" in msg and "sudo" in msg
    assert ncu.explain_failure("==WARNING== No kernels were profiled.", tmp_path / "log") == "no_kernels"
    assert "does not know a metric" in ncu.explain_failure("==ERROR== Failed to find metric foo__bar.sum", tmp_path)
    assert ncu.explain_failure("==PROF== Disconnected from process 1", tmp_path / "log") is None


def test_ncu_not_found_says_where_it_usually_is(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    for var in ("NSIGHT_COMPUTE", "CUDA_HOME", "CUDA_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(ncu, "_USUAL", ())
    with pytest.raises(Exception, match="/usr/local/cuda/bin/ncu") as e:
        ncu.find_ncu()
    assert "--ncu" in str(e.value) and "NSIGHT_COMPUTE" in str(e.value)
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("NSIGHT_COMPUTE", str(tmp_path))  # the folder is accepted too
    assert ncu.find_ncu() == str(fake)


# -- the roofline summary -----------------------------------------------------------------------------------
def test_analysis_places_each_kernel_on_its_side_of_the_ridge():
    soft, mm = analyze(FIXTURE, CEILINGS, PTXAS)
    c = roofline.Ceilings.from_dict(CEILINGS)
    assert c.ridge == pytest.approx(13.636, rel=1e-3)

    flops = 2 * 33_554_432 + 16_777_216 + 16_777_216  # FFMA counts twice; the n/a FP16 counter counts as nothing
    s = soft["summary"]
    assert s["flops"] == flops and s["dram_bytes"] == pytest.approx(134.22e6)
    assert s["ai"] == pytest.approx(flops / 134.22e6) and s["bound"] == "memory"
    assert s["flop_per_s"] == pytest.approx(flops / 31.07e-6)
    assert s["dram_Bps"] == pytest.approx(134.22e6 / 31.07e-6)
    assert s["pct_of_memory"] == pytest.approx(134.22e6 / 31.07e-6 / 4.4e12)
    assert s["pct_of_roof"] == pytest.approx(s["pct_of_memory"])  # below the ridge the roof is the bandwidth
    assert soft["short"] == "softmax_warp_kernel<float, 4>" or not shutil.which("c++filt")
    assert soft["ptxas"]["registers"] == 40 and "memory-bound side" in soft["verdict"]

    m = mm["summary"]
    assert m["flops"] == 2 * 68_719_476_736 + 16_777_216 and m["bound"] == "compute"
    assert m["flop_per_s"] == pytest.approx(m["flops"] / 3100.5e-6)
    assert m["pct_of_ffma"] == pytest.approx(m["flop_per_s"] / 6.0e13)
    assert m["pct_of_cublas"] == pytest.approx(m["flop_per_s"] / 5.1e13)
    assert mm["short"] == "matmul_2d_kernel<128, 128, 8, 8, 8>"
    assert mm["ptxas"]["spill_stores"] == 16  # matched by its demangled name: ncu gave no mangled one
    assert "compute-bound side" in mm["verdict"] and "of cuBLAS fp32" in mm["verdict"]
    json.dumps([soft, mm])  # JSON-ready: no infinities, no objects


def test_summary_edge_cases():
    c = roofline.Ceilings("gpu", memory_Bps=1e12, ffma_flops=1e13)
    t = {"gpu__time_duration.sum": 1e-3}
    no_dram = roofline.summarize({**t, "sm__sass_thread_inst_executed_op_ffma_pred_on.sum": 1e9,
                                  "dram__bytes_read.sum": 0, "dram__bytes_write.sum": 0}, c)
    assert no_dram.bound == "compute" and math.isinf(no_dram.ai) and no_dram.as_dict()["ai"] is None
    copy = roofline.summarize({**t, "sm__sass_thread_inst_executed_op_fadd_pred_on.sum": 0,
                               "dram__bytes.sum": 9e8}, c)
    assert copy.bound == "memory" and copy.ai == 0 and copy.pct_of_memory == pytest.approx(0.9)
    unknown = roofline.summarize(t, c)
    assert unknown.bound == "unknown" and "cannot place" in roofline.verdict(unknown, c)
    slow = roofline.summarize({**t, "sm__sass_thread_inst_executed_op_ffma_pred_on.sum": 5e7,
                               "dram__bytes.sum": 1e8}, c)  # AI 1, 0.1 TFLOP/s under a 1 TFLOP/s roof
    assert slow.bound == "memory" and slow.pct_of_roof == pytest.approx(0.1)
    assert "neither roof is the limit" in roofline.verdict(slow, c)


def test_roofline_png_is_written(tmp_path):
    res = {"day": "day08", "exercise": "matmul_2d", "variant": "solution", "dtype": "fp32", "shape": [4096, 4096, 4096],
           "gpu": "NVIDIA H200", "ceilings": CEILINGS, "kernels": analyze(FIXTURE, CEILINGS, PTXAS),
           "paths": {"roofline": None}}
    res["kernels"].append({"short": "no_flops_kernel", "summary": {"ai": None, "flop_per_s": None}})
    png = tmp_path / "roof.png"
    draw(res, png)
    assert "plot_error" not in res and res["paths"]["roofline"] == str(png)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    assert any("no_flops_kernel" in n for n in res["notes"])


def test_table_from_fixture():
    res = {"day": "day08", "exercise": "matmul_2d", "variant": "solution", "dtype": "fp32", "shape": [4096, 4096, 4096],
           "gpu": "NVIDIA H200", "capability": "9.0", "ceilings": CEILINGS,
           "kernels": analyze(FIXTURE, CEILINGS, PTXAS),
           "paths": {"report": "r.ncu-rep", "roofline": "r.png", "json": "r.json"}, "notes": []}
    res["kernels"][1]["ptxas"] = None
    con = Console(record=True, width=200)
    profile_report.render(con, res, str)
    text = con.export_text()
    assert "matmul_2d_kernel<128, 128, 8, 8, 8>" in text and "31.1 µs" in text and "3.10 ms" in text
    assert "89.5 %" in text and "81.5 % / 100.0 %" in text and "16.0 KiB" in text
    assert "0 B st / 0 B ld" in text and "? (not in ptxas report)" in text
    assert "memory-bound side" in text and "compute-bound side" in text and "ridge 13.6 FLOP/B" in text


# -- choosing what to profile -------------------------------------------------------------------------------
def test_defaults_and_shapes(course):
    day05 = course.day("day05")
    full = [e for e in day05.exercises if e.name == "softmax"]  # 05c; day 05's first two steps have shapes of their own
    (t,) = targets(day05, full, None, None)
    assert t.dtype == "fp32" and t.shape == tuple(full[0].benchmark[0].shape)
    (t,) = targets(day05, full, "bf16", "8192x1024")
    assert t.dtype == "bf16" and t.shape == (8192, 1024)
    day09 = course.day("day09")
    assert parse_shape("4096,4096,4096", day09.exercises[0]) == (4096, 4096, 4096)
    with pytest.raises(Exception, match="takes 3 positive sizes"):
        parse_shape("4096,4096", day09.exercises[0])
    with pytest.raises(Exception, match="takes 2 positive sizes"):
        parse_shape("0,5", day05.exercises[0])


# -- the CLI without a GPU ----------------------------------------------------------------------------------
@pytest.mark.parametrize("args, text", [
    (["profile", "day99"], "no day 'day99'"),
    (["profile", "day05", "--ncu", "/nonexistent"], "not an executable ncu"),
    (["profile", "day05", "--shape", "1,2,3", "--ncu", "/nonexistent"], "takes 2 positive sizes"),
    (["profile", "day01", "--dtype", "fp16"], "runs in fp32, not fp16"),
    (["profile", "day05", "--exercise", "nope"], "has no exercise 'nope'"),
])
def test_profile_usage_errors(args, text):
    r = run_grader(*args)
    assert r.returncode == 2 and text in r.stdout, r.stdout + r.stderr
    assert_clean(r)


def test_profile_of_a_planned_day(planned_course):
    r = run_grader("--course", str(planned_course), "profile", "day21")
    assert r.returncode == 2 and "planned, not ready yet" in r.stdout, r.stdout + r.stderr
    assert_clean(r)


@pytest.mark.skipif(has_gpu(), reason="exercises the no-GPU path")
def test_profile_without_gpu_says_it_needs_one(tmp_path):
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    r = run_grader("profile", "day05", "--solution", "--ncu", str(fake))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "profiling needs a CUDA GPU" in r.stdout and "grader check day05" in r.stdout
    assert_clean(r)


# -- on a GPU -----------------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.gpu_alone  # beside other GPU work a kernel's DRAM share drops and a memory-bound one reads compute-bound
# day 05: step 05b, the row read once (about 2.4 FLOP/B, far under any GPU's ridge). Step 05a, the day's first
# exercise, reads its row twice with two exps per value: 15.5 FLOP/B, under the H100's ridge of 21.9 but close to
# it, and an H200's faster memory lowers the ridge: there it read compute-bound (2026-11-27) though nothing was wrong.
# day 09: step 09a, the day's first exercise, the one the assertions read (exercises[0]); the day's other three steps
# were profiled too, in the suite's alone phase, and nothing read them.
@pytest.mark.parametrize("day, bound, only", [("day05", "memory", ["--exercise", "softmax_regs"]),
                                              ("day09", "compute", ["--exercise", "matmul_vec"])],
                         ids=["day05-memory", "day09-compute"])
def test_profile_solution_on_gpu(day, bound, only, tmp_path):
    if not (ROOT / "solutions" / day).is_dir():
        pytest.skip(f"no solutions/{day} yet")
    try:
        ncu.find_ncu()
    except Exception as e:
        pytest.skip(f"Nsight Compute not installed: {e}")
    out = tmp_path / "p.json"
    r = run_grader("profile", day, *only, "--solution", "--json", str(out), state=SHARED_STATE)  # the suite's builds
    assert_clean(r)
    if "ERR_NVGPUCTRPERM" in r.stdout:
        pytest.skip("no permission to read GPU performance counters here")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "DRAM throughput" in r.stdout and "roofline:" in r.stdout
    ex = json.loads(out.read_text())["exercises"][0]
    assert ex["kernels"] and Path(ex["paths"]["roofline"]).read_bytes()[:4] == b"\x89PNG"
    assert Path(ex["paths"]["report"]).is_file()
    c = ex["ceilings"]
    assert 5e11 < c["memory_Bps"] < 2e13 and 5e12 < c["ffma_flops"] < 3e14
    main = max(ex["kernels"], key=lambda k: k["summary"]["duration_s"] or 0)
    assert main["summary"]["bound"] == bound and main["ptxas"] is not None


# -- the whole flow, with the GPU processes faked -----------------------------------------------------------
class FakeProcesses:
    """Stands in for the prepare process, ncu and `ncu --import`: writes what they would, per scenario."""

    def __init__(self, prepare=None, profile=None, ncu_output="==PROF== Disconnected", report=True):
        self.prepare = prepare or {"status": "ok", "gpu": "NVIDIA H200", "capability": "9.0", "sms": 132,
                                   "ceilings": CEILINGS, "ceilings_measured": True}
        self.profile, self.ncu_output, self.report = profile or {"status": "ok"}, ncu_output, report
        self.commands = []

    def run(self, cmd, log, cwd, timeout_s):
        self.commands.append(cmd)
        spec = json.loads(cmd[-1])
        under_ncu = cmd[0] != __import__("sys").executable
        Path(spec["result"]).write_text(json.dumps(self.profile if under_ncu else self.prepare))
        if under_ncu and self.report:
            Path(cmd[cmd.index("--export") + 1]).write_bytes(b"NCU report")
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(self.ncu_output)
        return self.ncu_output

    def install(self, monkeypatch):
        import grader.profile.command as p

        monkeypatch.setattr(p.ncu, "run_logged", self.run)
        monkeypatch.setattr(p.ncu, "raw_csv", lambda ncu_path, report: FIXTURE)
        monkeypatch.setattr(p, "kernel_resources", lambda *a, **k: PTXAS)


def _profile(tmp_path, course, day="day05", exercise="softmax", **kw):
    import argparse

    from grader.profile.command import run_profile

    d = course.day(day)
    args = argparse.Namespace(**{"dtype": None, "shape": None, "ncu": None, "remeasure_ceilings": False, "json": None,
                                 **kw})
    con = Console(record=True, width=200)
    code = run_profile(args, con, root=tmp_path, course=course, day=d,
                       exercises=[e for e in d.exercises if e.name == exercise], src_dir=ROOT / "solutions" / day,
                       variant="solution",
                       placeholders=lambda ex: ["days/day05/softmax.cu:171"], rel=str)
    return code, con.export_text()


@pytest.fixture
def fake_ncu_path(monkeypatch, tmp_path):
    fake = tmp_path / "bin" / "ncu"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("NSIGHT_COMPUTE", str(fake))
    return fake


def test_flow_writes_report_json_and_png(monkeypatch, tmp_path, course, fake_ncu_path):
    fake = FakeProcesses()
    fake.install(monkeypatch)
    out = tmp_path / "out.json"
    code, text = _profile(tmp_path, course, json=str(out))
    assert code == 0, text
    prepare, profile = fake.commands
    assert json.loads(prepare[-1])["mode"] == "prepare" and json.loads(profile[-1])["mode"] == "profile"
    spec = json.loads(profile[-1])
    first = next(e for e in course.day("day05").exercises if e.name == "softmax").benchmark[0]
    assert spec["shape"] == list(first.shape) and spec["dtype"] == "fp32" and profile[0] == str(fake_ncu_path)
    stem = Paths(tmp_path).profiles() / "day05-softmax-solution"
    assert Path(f"{stem}-roofline.png").read_bytes()[:4] == b"\x89PNG"
    saved = json.loads(Path(f"{stem}.json").read_text())
    assert saved["kernels"][0]["summary"]["bound"] == "memory" and saved["paths"]["report"] == f"{stem}.ncu-rep"
    assert json.loads(out.read_text())["exercises"][0]["ceilings"] == CEILINGS
    assert "DRAM throughput" in text and "roofline:" in text and "measured now and cached" in text
    assert "softmax_warp_kernel<float, 4>" in text or not shutil.which("c++filt")


@pytest.mark.parametrize("fake, code, text", [
    (FakeProcesses(prepare={"status": "not_implemented"}), 2, "not implemented yet (YOUR CODE HERE still at"),
    (FakeProcesses(prepare={"status": "missing_op", "op": "softmax"}), 2, "has no function `softmax`"),
    (FakeProcesses(prepare={"status": "build_error", "diagnostics": ["days/day05/softmax.cu:12: error: x[i] bad"]}),
     1, "softmax.cu:12: error: x[i] bad"),
    (FakeProcesses(prepare={"status": "op_error", "message": "x must be 2-D [rows, cols]"}), 2, "[rows, cols]"),
    (FakeProcesses(ncu_output="==WARNING== No kernels were profiled.", report=False), 2, "no kernel was captured"),
    (FakeProcesses(profile={"status": "op_error", "message": "illegal memory access"}), 2, "illegal memory access"),
])
def test_flow_problems_with_one_exercise(monkeypatch, tmp_path, course, fake_ncu_path, fake, code, text):
    fake.install(monkeypatch)
    got, out = _profile(tmp_path, course)
    assert got == code and text in out, out


@pytest.mark.parametrize("fake, text", [
    (FakeProcesses(prepare={"status": "no_gpu", "torch": "2.13.0+cpu", "cuda": None}), "profiling needs a CUDA GPU"),
    (FakeProcesses(ncu_output="==ERROR== ERR_NVGPUCTRPERM - The user does not have permission"),
     "NVreg_RestrictProfilingToAdminUsers=0"),
])
def test_flow_environment_errors_stop_everything(monkeypatch, tmp_path, course, fake_ncu_path, fake, text):
    fake.install(monkeypatch)
    with pytest.raises(Exception, match=text.replace("(", r"\(")):
        _profile(tmp_path, course)


def test_flow_ncu_timeout(monkeypatch, tmp_path, course, fake_ncu_path):
    fake = FakeProcesses()
    fake.install(monkeypatch)
    real = fake.run
    monkeypatch.setattr("grader.profile.ncu.run_logged",
                        lambda cmd, log, cwd, t: None if "--export" in cmd else real(cmd, log, cwd, t))
    code, out = _profile(tmp_path, course)
    assert code == 2 and "did not finish in 600 s" in out and "smaller --shape" in out


def test_ptxas_resources_come_from_the_image_this_gpu_runs(monkeypatch, tmp_path):
    """An exercise that adds sm_80 and sm_90a images: on a 9.0 GPU the sm_90a figures are the real ones."""
    import subprocess
    from types import SimpleNamespace

    from grader.profile import ptxas_report

    def entry(arch, regs):
        return (f"ptxas info    : Compiling entry function '_Z1kPf' for '{arch}'\n"
                f"ptxas info    : Used {regs} registers, used 1 barriers, 1024 bytes smem\n")
    log = entry("sm_80", 100) + entry("sm_90a", 168) + entry("sm_90", 4)
    monkeypatch.setattr(ptxas_report, "nvcc_path", lambda: "nvcc")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: SimpleNamespace(stdout=log, stderr="", returncode=0))
    monkeypatch.setattr(ptxas_report, "demangle", lambda names: {n: n for n in names})
    src = tmp_path / "k.cu"
    src.write_text("")
    res = ptxas_report.kernel_resources([src], [], ["-gencode=arch=compute_90a,code=sm_90a"], (9, 0))
    assert res["_Z1kPf"]["arch"] == "sm_90a" and res["_Z1kPf"]["registers"] == 168
    res80 = ptxas_report.kernel_resources([src], [], [], (8, 0))
    assert res80["_Z1kPf"]["registers"] == 100


def test_tensor_core_work_is_named_not_called_memory_bound():
    """A wgmma GEMM shows (almost) no FP32/FP16 FLOPs: with the task's FLOP count the profile says where they went
    instead of placing the kernel on the memory side."""
    from grader.profile.command import tensor_core_note

    soft, mm = analyze(FIXTURE, CEILINGS, PTXAS)
    counted = soft["summary"]["flops"] + mm["summary"]["flops"]
    assert tensor_core_note([soft, mm], counted) is None  # the counters saw all the work: nothing to say
    assert tensor_core_note([soft, mm], None) is None      # a task without flops()
    task = 20 * counted
    note = tensor_core_note([soft, mm], task)
    assert note.startswith("the counters saw 5% of the task's") and "tensor cores" in note
    assert soft["summary"]["bound"] == "tensor cores (not counted)" and soft["summary"]["pct_of_roof"] is None
    assert "tensor-core work" in soft["verdict"]
