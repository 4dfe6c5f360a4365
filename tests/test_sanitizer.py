"""compute-sanitizer's reports read into errors at the student's file:line, and the runner's rerun of a failed case
under a fake compute-sanitizer (no GPU, no CUDA toolkit needed)."""
import os
import stat
import sys
import time
from pathlib import Path

import pytest

from grader.check import runner, sanitizer
from grader.check.job import make_job
from grader.check.runner import run_job
from grader.check.sanitizer import (find_sanitizer, headline, parse_report, sanitize_command, summary,
                                    worker_command)
from grader.paths import Paths
from tests.conftest import ROOT

# -- reports, in the shape each tool prints them (short lines of real output, arranged for each test) -----------
ROOT_T = Path("/course")
BUILT = ROOT_T / ".grader/build/day02-softmax-work/src"
FOLDERS = {BUILT: ROOT_T / "days/day02"}

MEMCHECK = f"""\
========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 4 bytes
=========     at softmax_kernel(const float *, float *, int, int)+0x1b0 in {BUILT}/softmax.cu:42
=========     by thread (31,0,0) in block (3,0,0)
=========     Access to 0x7f5e4c000ffc is out of bounds
=========     and is 4 bytes after the nearest allocation at 0x7f5e4c000000 of size 4,092 bytes
=========
program: a line the kernel printed
========= Invalid __global__ read of size 4 bytes
=========     at softmax_kernel(const float *, float *, int, int)+0x1b0 in {BUILT}/softmax.cu:42
=========     by thread (63,0,0) in block (3,0,0)
=========     Address 0x7f5e4c001000 is out of bounds
=========     and is 8 bytes after the nearest allocation at 0x7f5e4c000000 of size 4092 bytes
=========
========= Invalid __global__ write of size 4 bytes
=========     at softmax_kernel(const float *, float *, int, int)+0x2c0 in {BUILT}/softmax.cu:57
=========     by thread (0,0,0) in block (9,0,0)
=========     Address 0x7f5e4c003000 is out of bounds
=========
========= ERROR SUMMARY: 3 errors
"""

MEMCHECK_NO_LINEINFO = """\
========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 16 bytes
=========     at void tiled_matmul<(int)64>(const float *, const float *, float *, int, int, int)+0x9f0
=========     by thread (5,2,0) in block (0,1,0)
=========     Address 0x7fa2c8000400 is out of bounds
=========
========= ERROR SUMMARY: 1 error
"""

MEMCHECK_INLINED = f"""\
========= Invalid __shared__ write of size 4 bytes
=========     at warp_reduce_sum(float)+0x70 in {BUILT}/softmax.cu:31
=========     by thread (7,0,0) in block (0,0,0)
=========     Address 0x400 is out of bounds
=========     Device Frame: softmax_kernel(const float *, float *, int, int)+0x310 in {BUILT}/softmax.cu:66
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: [0x2f1a3f] in libcuda.so.1
=========
========= ERROR SUMMARY: 1 error
"""

INITCHECK = f"""\
========= COMPUTE-SANITIZER
========= Uninitialized __global__ memory read of size 4 bytes
=========     at block_sum(const float *, float *, int)+0x150 in {BUILT}/reduce.cu:18
=========     by thread (0,0,0) in block (0,0,0)
=========     Address 0x7fc406200400
=========
========= ERROR SUMMARY: 1 error
"""

RACECHECK = f"""\
========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at tile_kernel(float *)+0x90 in {BUILT}/tile.cu:40
=========     and Read access at tile_kernel(float *)+0x1a0 in {BUILT}/tile.cu:45 [128 hazards]
=========
========= Warning: Race reported between Read access at tile_kernel(float *)+0x200 in {BUILT}/tile.cu:50 \
and Write access at tile_kernel(float *)+0x90 in {BUILT}/tile.cu:40 [4 hazards]
=========
========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)
"""

# The older form: a hazard per pair of threads, locations as "pc in file:line:kernel".
RACECHECK_HAZARD = f"""\
========= ERROR: Potential WAW hazard detected at __shared__ 0x0 in block (0, 0, 0) :
=========     Write Thread (31, 0, 0) at 0x00000070 in {BUILT}/tile.cu:12:tile_kernel(int*)
=========     Write Thread (0, 0, 0) at 0x00000070 in {BUILT}/tile.cu:12:tile_kernel(int*)
=========     Current Value : 0, Incoming Value : 0
=========
========= ERROR SUMMARY: 1 error
"""

SYNCCHECK = f"""\
========= COMPUTE-SANITIZER
========= Barrier error detected. Divergent thread(s) in block.
=========     at block_reduce(float *, int)+0x8f0 in {BUILT}/reduce.cu:20
=========     by thread (63,0,0) in block (0,0,0)
=========
========= ERROR SUMMARY: 1 error
"""

CLEAN = """\
========= COMPUTE-SANITIZER
program: done
========= ERROR SUMMARY: 0 errors
"""

# compute-sanitizer 2025.x by default: bare file names; the tool's own troubles as "Error: ..." lines; a summary of
# what --print-limit held back.
STRIPPED = """\
========= COMPUTE-SANITIZER
========= Barrier error detected. Divergent thread(s) in warp.
=========     at block_reduce(float *, int)+0x70 in softmax.cu:24
=========     by thread (0,0,0) in block (0,0,0)
=========
========= Barrier error detected. Divergent thread(s) in warp.
=========     at block_reduce(float *, int)+0x70 in softmax.cu:24
=========     by thread (1,0,0) in block (0,0,0)
=========
========= Barrier error detected. Divergent thread(s) in warp.
=========     at block_reduce(float *, int)+0x70 in cuda_fp16.hpp:24
=========     by thread (1,0,0) in block (0,0,0)
=========
========= Error: process didn't terminate successfully
========= Error: Target application terminated before first instrumented API call
========= Target application returned an error
========= ERROR SUMMARY: 16 errors
========= ERROR SUMMARY: 13 errors were not printed. Use --print-limit option to adjust the number of printed errors
"""

LIBRARY_AND_API = """\
========= Program hit CUDA_ERROR_INVALID_VALUE (error 1) due to "invalid argument" on CUDA API call to cuGetProcAddress.
=========     Saved host backtrace up to driver entry point at error
=========         Host Frame: [0x2f1a3f] in libcuda.so.1
=========
========= Uninitialized __global__ memory read of size 4 bytes
=========     at void at::native::reduce_kernel<(int)512, (int)1>(at::native::ReduceOp<float>)+0x1c0
=========     by thread (0,0,0) in block (0,0,0)
=========     Address 0x7f0000000000
=========
========= Target application returned an error
========= ERROR SUMMARY: 1 error
"""


def test_memcheck_errors_name_the_students_file_and_line():
    errs = parse_report(MEMCHECK, FOLDERS, root=ROOT_T)
    assert [(e.kind, e.file, e.line, e.count) for e in errs] == [
        ("Invalid __global__ read of size 4 bytes", "days/day02/softmax.cu", 42, 2),
        ("Invalid __global__ write of size 4 bytes", "days/day02/softmax.cu", 57, 1)]
    e = errs[0]
    assert (e.tool, e.kernel, e.thread, e.block, e.address) == (
        "memcheck", "softmax_kernel", "(31,0,0)", "(3,0,0)", "0x7f5e4c000ffc")  # the first report of the line
    assert e.in_sources and "is 4 bytes after the nearest allocation" in e.message
    assert e.describe() == ("Invalid __global__ read of size 4 bytes at days/day02/softmax.cu:42 "
                            "(softmax_kernel, thread (31,0,0) block (3,0,0), 2 reports)")
    assert summary("memcheck", errs).endswith("(and 1 more)")


def test_without_root_the_path_is_the_students_absolute_one():
    (e, *_) = parse_report(MEMCHECK, FOLDERS)
    assert e.file == "/course/days/day02/softmax.cu" and e.in_sources


def test_an_error_without_line_information_still_parses():
    (e,) = parse_report(MEMCHECK_NO_LINEINFO, FOLDERS, root=ROOT_T)
    assert (e.kind, e.kernel, e.file, e.line) == ("Invalid __global__ read of size 16 bytes", "tiled_matmul<(int)64>",
                                                  None, None)
    assert (e.thread, e.block) == ("(5,2,0)", "(0,1,0)") and not e.in_sources
    assert e.describe().startswith("Invalid __global__ read of size 16 bytes at kernel tiled_matmul<(int)64>")
    assert headline([e]) is e  # not a library's kernel: worth naming


def test_an_error_in_an_inlined_device_function_names_its_line_and_the_kernel():
    (e,) = parse_report(MEMCHECK_INLINED, FOLDERS, root=ROOT_T)
    assert (e.kind, e.file, e.line, e.kernel) == ("Invalid __shared__ write of size 4 bytes", "days/day02/softmax.cu",
                                                  31, "softmax_kernel")


def test_initcheck():
    (e,) = parse_report(INITCHECK, FOLDERS, tool="initcheck", root=ROOT_T)
    assert (e.tool, e.kind, e.file, e.line, e.kernel, e.address) == (
        "initcheck", "Uninitialized __global__ memory read of size 4 bytes", "days/day02/reduce.cu", 18, "block_sum",
        "0x7fc406200400")


def test_racecheck_both_accesses_on_one_line_or_two():
    a, b = parse_report(RACECHECK, FOLDERS, tool="racecheck", root=ROOT_T)
    assert (a.kind, a.file, a.line, a.kernel) == ("Race reported between Write access and Read access",
                                                  "days/day02/tile.cu", 40, "tile_kernel")
    assert "days/day02/tile.cu:45" in a.message and "[128 hazards]" in a.message
    assert (b.kind, b.line) == ("Race reported between Read access and Write access", 50)
    assert b.message.startswith("warning: ") and "days/day02/tile.cu:40" in b.message


def test_racecheck_hazard_form():
    (e,) = parse_report(RACECHECK_HAZARD, FOLDERS, tool="racecheck", root=ROOT_T)
    assert (e.kind, e.file, e.line, e.kernel, e.block, e.thread, e.address) == (
        "Potential WAW hazard on __shared__ memory", "days/day02/tile.cu", 12, "tile_kernel", "(0,0,0)", "(31,0,0)",
        "0x0")


def test_synccheck():
    (e,) = parse_report(SYNCCHECK, FOLDERS, tool="synccheck", root=ROOT_T)
    assert (e.kind, e.file, e.line, e.kernel, e.thread) == (
        "Barrier error detected. Divergent thread(s) in block", "days/day02/reduce.cu", 20, "block_reduce", "(63,0,0)")


def test_a_clean_run_has_no_errors():
    assert parse_report(CLEAN, FOLDERS) == []
    assert sanitizer.error_count(CLEAN) == 0 and sanitizer.error_count(MEMCHECK) == 3
    assert parse_report("", FOLDERS) == [] and sanitizer.error_count("") is None


def test_bare_file_names_are_found_in_the_students_folder(tmp_path):
    (tmp_path / "days/day02").mkdir(parents=True)
    (tmp_path / "days/day02/softmax.cu").write_text("// the student's\n")
    folders = {tmp_path / ".grader/build/day02-softmax-work/src": tmp_path / "days/day02"}
    a, b = parse_report(STRIPPED, folders, tool="synccheck", root=tmp_path)
    assert (a.kind, a.file, a.line, a.count, a.in_sources) == (
        "Barrier error detected. Divergent thread(s) in warp", "days/day02/softmax.cu", 24, 2, True)
    assert (b.file, b.in_sources) == ("cuda_fp16.hpp", False)  # no such file there: left as it is
    assert sanitizer.error_count(STRIPPED) == 16


def test_api_errors_and_library_kernels_are_not_the_students():
    (e,) = parse_report(LIBRARY_AND_API, FOLDERS, tool="initcheck", root=ROOT_T)
    assert e.kernel == "at::native::reduce_kernel<(int)512, (int)1>" and e.file is None
    assert headline([e]) is None and summary("initcheck", [e]) is None


def test_the_command_line():
    cmd = sanitize_command("memcheck", ["python", "-m", "w", "job.json", "--only", "3"], sanitizer="/cs",
                           log_file=Path("/tmp/r"))
    assert cmd[:3] == ["/cs", "--tool", "memcheck"] and cmd[-6:] == ["python", "-m", "w", "job.json", "--only", "3"]
    opts = dict(zip(cmd[1:-6:2], cmd[2:-6:2]))
    assert opts == {"--tool": "memcheck", "--error-exitcode": "99", "--print-limit": "20", "--show-backtrace": "device",
                    "--target-processes": "all", "--report-api-errors": "no", "--strip-paths": "no",
                    "--leak-check": "no", "--log-file": "/tmp/r"}
    assert "--leak-check" not in sanitize_command("racecheck", ["x"], sanitizer="/cs")
    with pytest.raises(ValueError):
        sanitize_command("leakcheck", ["x"])
    assert worker_command(Path("j.json"), 4)[-5:] == ["grader.check.worker", "j.json", "--sanitized", "--only", "4"]


def _executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_finding_the_tool(monkeypatch, tmp_path):
    monkeypatch.setattr(sanitizer, "CUDA_BIN_DIRS", [])
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "none"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert find_sanitizer() is None
    beside = _executable(tmp_path / "toolkit/bin/compute-sanitizer", "#!/bin/sh\n")
    _executable(tmp_path / "toolkit/bin/nvcc", "#!/bin/sh\n")
    monkeypatch.setenv("PATH", str(tmp_path / "toolkit/bin"))
    assert find_sanitizer() == str(beside)  # on PATH
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "toolkit"))
    assert find_sanitizer() == str(beside)  # in $CUDA_HOME/bin
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "none"))
    monkeypatch.setattr(sanitizer, "CUDA_BIN_DIRS", [tmp_path / "toolkit/bin"])
    assert find_sanitizer() == str(beside)  # the usual place
    monkeypatch.setattr(sanitizer, "CUDA_BIN_DIRS", [])
    (tmp_path / "links").mkdir()
    (tmp_path / "links/nvcc").symlink_to(tmp_path / "toolkit/bin/nvcc")
    monkeypatch.setenv("PATH", str(tmp_path / "links"))
    assert find_sanitizer() == str(beside)  # beside nvcc (where its link leads)


# -- the runner's rerun, with a fake compute-sanitizer ---------------------------------------------------------
FAKE_SANITIZER = """\
#!{python}
# A stand-in for compute-sanitizer: notes its command line, writes the report prepared for its --tool (to its
# --log-file), then runs the program after its options, as the real one does.
import os, sys, time
args = sys.argv[1:]
with open({calls!r}, "a") as f:
    f.write(" ".join(args) + "\\n")
opts = {{}}
while args and args[0].startswith("--"):
    opts[args[0]], args = args[1], args[2:]
report = os.path.join({reports!r}, opts["--tool"] + ".txt")
text = open(report).read() if os.path.exists(report) else "========= ERROR SUMMARY: 0 errors\\n"
with open(opts["--log-file"], "w") if "--log-file" in opts else sys.stdout as out:
    out.write(text)
time.sleep(float(os.environ.get("FAKE_SANITIZER_SLEEP", "0")))
os.execv(args[0], args)
"""


@pytest.fixture(autouse=True)
def _sanitize_on(monkeypatch):
    monkeypatch.delenv("GRADER_SANITIZE", raising=False)


@pytest.fixture
def fake_sanitizer(monkeypatch, tmp_path):
    """A fake compute-sanitizer first on PATH; returns (reports folder: <tool>.txt is what that tool reports,
    calls file: one line per run)."""
    reports, calls = tmp_path / "reports", tmp_path / "calls.txt"
    reports.mkdir()
    _executable(tmp_path / "bin/compute-sanitizer",
                FAKE_SANITIZER.format(python=sys.executable, calls=str(calls), reports=str(reports)))
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    return reports, calls


def run(course, monkeypatch, behaviour, **kw):
    monkeypatch.setenv("FAKE_WORKER", behaviour)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    day = course.day("day01")
    job = make_job(course=course, root=ROOT, day=day, ex=day.exercises[0], src_dir=ROOT / "solutions" / "day01",
                   seed=1, correctness_only=True)
    return run_job(job, variant="fake-sanitize", correctness_only=True, worker="tests.fake_worker", **kw)


def built(course, name="softmax.cu") -> str:
    """Where the build compiles day01's source (build.py's workspace): the path in the tool's reports."""
    from grader.check.build import build_unit, workspace

    ex = course.day("day01").exercises[0]
    return str(workspace(ROOT, "day01", build_unit(ex)) / "src" / name)


def test_a_nonfinite_case_is_rerun_under_memcheck_and_names_the_line(course, monkeypatch, fake_sanitizer):
    reports, calls = fake_sanitizer
    (reports / "memcheck.txt").write_text(MEMCHECK.replace(f"{BUILT}/softmax.cu", built(course)))
    res = run(course, monkeypatch, "ok,nan")  # cases 1, 3, 5, ... fail: only the first is rerun
    case = res.cases[1]
    assert case["category"] == "nonfinite" and res.status == "fail"
    want = ("compute-sanitizer memcheck: Invalid __global__ read of size 4 bytes at solutions/day01/softmax.cu:42 "
            "(softmax_kernel, thread (31,0,0) block (3,0,0), 2 reports)")
    assert case["message"].startswith("NaN/inf where the reference is finite: 3 of 64; " + want)
    assert want in res.message and "hint_category" not in case
    assert [(e["tool"], e["line"]) for e in case["sanitizer"]] == [("memcheck", 42), ("memcheck", 57)]
    assert all("sanitizer" not in c for c in res.cases if c is not case)
    (call,) = calls.read_text().splitlines()  # memcheck found it: no initcheck
    assert "--tool memcheck" in call and "--leak-check no" in call and call.endswith("--only 1 --fd " + call.split()[-1])
    ex = course.day("day01").exercises[0]
    log = (Paths(ROOT).logs() / f"day01-{ex.name}-fake-sanitize.memcheck.log").read_text()
    assert "'case_start'" in log and "Invalid __global__ read" in log  # its events and the report, on their own


def test_memcheck_finding_nothing_hands_over_to_initcheck(course, monkeypatch, fake_sanitizer):
    reports, calls = fake_sanitizer
    (reports / "memcheck.txt").write_text(CLEAN)
    (reports / "initcheck.txt").write_text(INITCHECK.replace(f"{BUILT}/reduce.cu", built(course)))
    res = run(course, monkeypatch, "ok,ok,blank,ok")  # a blank case beside passing ones: unwritten
    case = res.cases[2]
    assert case["category"] == "unwritten"
    assert case["message"].endswith("compute-sanitizer initcheck: Uninitialized __global__ memory read of size 4 "
                                    "bytes at solutions/day01/softmax.cu:18 (block_sum, thread (0,0,0) block (0,0,0))")
    assert [line.split()[1] for line in calls.read_text().splitlines()] == ["memcheck", "initcheck"]
    assert [e["tool"] for e in case["sanitizer"]] == ["initcheck"]


def test_a_crashed_case_is_rerun_too(course, monkeypatch, fake_sanitizer):
    reports, calls = fake_sanitizer
    (reports / "memcheck.txt").write_text(MEMCHECK.replace(f"{BUILT}/softmax.cu", built(course)))
    res = run(course, monkeypatch, "ok,crash" + ",ok" * 20)
    assert res.cases[1]["category"] == "crash" and "softmax.cu:42" in res.cases[1]["message"]
    assert "--only 1" in calls.read_text()


def test_nothing_found_leaves_the_message_alone(course, monkeypatch, fake_sanitizer):
    reports, calls = fake_sanitizer
    (reports / "memcheck.txt").write_text(LIBRARY_AND_API)  # only PyTorch's kernels: not the student's to fix
    res = run(course, monkeypatch, "ok,nan,ok")
    assert res.cases[1]["message"] == "NaN/inf where the reference is finite: 3 of 64"
    assert len(res.cases[1]["sanitizer"]) == 1 and len(calls.read_text().splitlines()) == 2


def test_a_passing_run_never_starts_the_sanitizer(course, monkeypatch, fake_sanitizer):
    _, calls = fake_sanitizer
    res = run(course, monkeypatch, "ok")
    assert res.status == "pass" and not calls.exists() and all("sanitizer" not in c for c in res.cases)


def test_failures_it_cannot_explain_are_not_rerun(course, monkeypatch, fake_sanitizer):
    _, calls = fake_sanitizer
    res = run(course, monkeypatch, "blank")  # nothing written anywhere: not implemented, not a memory bug
    assert res.status == "not_implemented" and not calls.exists()


def test_turned_off_it_does_not_run(course, monkeypatch, fake_sanitizer):
    _, calls = fake_sanitizer
    res = run(course, monkeypatch, "ok,nan,ok", sanitize_failures=False)
    assert res.cases[1]["category"] == "nonfinite" and not calls.exists()
    monkeypatch.setenv("GRADER_SANITIZE", "0")
    run(course, monkeypatch, "ok,nan,ok")
    assert not calls.exists()


def test_no_sanitizer_means_no_rerun_and_no_error(course, monkeypatch, tmp_path):
    monkeypatch.setattr(sanitizer, "CUDA_BIN_DIRS", [])
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "none"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    res = run(course, monkeypatch, "ok,nan,ok")
    assert res.status == "fail" and res.cases[1]["message"] == "NaN/inf where the reference is finite: 3 of 64"
    assert "sanitizer" not in res.cases[1]


def test_a_sanitizer_run_past_its_limit_is_stopped(course, monkeypatch, fake_sanitizer):
    reports, calls = fake_sanitizer
    (reports / "memcheck.txt").write_text(CLEAN)
    monkeypatch.setenv("FAKE_SANITIZER_SLEEP", "60")
    monkeypatch.setattr(runner, "SANITIZE_MAX_S", 1.0)
    t0 = time.monotonic()
    res = run(course, monkeypatch, "ok,nan,ok")
    assert time.monotonic() - t0 < 30
    assert res.cases[1]["message"] == "NaN/inf where the reference is finite: 3 of 64"
    assert res.cases[1]["sanitizer"] == [] and len(calls.read_text().splitlines()) == 1  # initcheck would stall too


# -- an exercise that must be clean under a tool (`sanitize:` in course.yaml) ------------------------------------
def run_required(course, monkeypatch, behaviour, tools=("racecheck",), **more):
    monkeypatch.setenv("FAKE_WORKER", behaviour)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    day = course.day("day01")
    ex = day.exercises[0].model_copy(update={"sanitize": list(tools), **more})
    job = make_job(course=course, root=ROOT, day=day, ex=ex, src_dir=ROOT / "solutions" / "day01", seed=1,
                   correctness_only=True)
    return job, run_job(job, variant="fake-required", correctness_only=True, worker="tests.fake_worker")


def test_a_required_tool_runs_every_first_dtype_correctness_case_once_and_a_clean_report_passes(
        course, monkeypatch, fake_sanitizer):
    reports, calls = fake_sanitizer
    (reports / "racecheck.txt").write_text(CLEAN)
    job, res = run_required(course, monkeypatch, "ok")
    assert res.status == "pass", res.message
    (check,) = [c for c in res.cases if c["kind"] == "sanitizer"]
    assert check["ok"] and check["label"] == "racecheck" and "clean under compute-sanitizer racecheck" in check["message"]
    first = job.cases[0].dtype
    want = [c.index for c in job.cases if c.kind == "correctness" and c.dtype == first and c.probe is None]
    (call,) = calls.read_text().splitlines()
    assert "--tool racecheck" in call and "--sanitized" in call
    assert f"--only {','.join(map(str, want))} " in call


def test_sanitize_shapes_limit_the_tool_to_those_shapes(course, monkeypatch, fake_sanitizer):
    from grader.course import Case

    reports, calls = fake_sanitizer
    (reports / "racecheck.txt").write_text(CLEAN)
    pick = course.day("day01").exercises[0].correctness[1]
    job, res = run_required(course, monkeypatch, "ok", sanitize_shapes=[Case(shape=pick.shape, offset=pick.offset)])
    assert res.status == "pass", res.message
    first = job.cases[0].dtype
    want = [c.index for c in job.cases if c.kind == "correctness" and c.dtype == first and c.probe is None
            and c.case.shape == pick.shape and c.case.offset == pick.offset]
    (call,) = calls.read_text().splitlines()
    assert want and f"--only {','.join(map(str, want))} " in call


def test_a_required_tool_that_finds_an_error_in_the_students_code_fails_the_exercise(course, monkeypatch,
                                                                                      fake_sanitizer):
    reports, _ = fake_sanitizer
    (reports / "racecheck.txt").write_text(RACECHECK.replace(f"{BUILT}/tile.cu", built(course)))
    _, res = run_required(course, monkeypatch, "ok")
    (check,) = [c for c in res.cases if c["kind"] == "sanitizer"]
    assert res.status == "fail" and not check["ok"] and check["category"] == "sanitizer"
    assert "compute-sanitizer racecheck: Race reported between Write access and Read access at " \
           "solutions/day01/softmax.cu:40" in check["message"]
    assert check["message"] in res.message


def test_a_required_tool_runs_even_when_a_case_failed_and_replaces_the_memcheck_rerun(course, monkeypatch,
                                                                                     fake_sanitizer):
    reports, calls = fake_sanitizer
    (reports / "racecheck.txt").write_text(RACECHECK.replace(f"{BUILT}/tile.cu", built(course)))
    _, res = run_required(course, monkeypatch, "ok,nan")
    assert {c["category"] for c in res.cases if not c["ok"]} == {"nonfinite", "sanitizer"}
    assert [ln.split()[1] for ln in calls.read_text().splitlines()] == ["racecheck"]


def test_sanitize_off_skips_a_required_tool_only_once_a_case_has_failed(course, monkeypatch, fake_sanitizer):
    """GRADER_SANITIZE=0: a failed case already decides the verdict, and the tool could only add to it; on a
    passing run it still decides, so it still runs."""
    reports, calls = fake_sanitizer
    (reports / "racecheck.txt").write_text(RACECHECK.replace(f"{BUILT}/tile.cu", built(course)))
    monkeypatch.setenv("GRADER_SANITIZE", "0")
    _, res = run_required(course, monkeypatch, "ok,nan")
    assert res.status == "fail" and not [c for c in res.cases if c["kind"] == "sanitizer"]
    assert not calls.exists()
    _, res = run_required(course, monkeypatch, "ok")
    (check,) = [c for c in res.cases if c["kind"] == "sanitizer"]
    assert res.status == "fail" and check["category"] == "sanitizer"
    assert [ln.split()[1] for ln in calls.read_text().splitlines()] == ["racecheck"]


def test_a_required_tool_that_is_missing_fails_the_exercise_with_a_way_out(course, monkeypatch, tmp_path):
    monkeypatch.setattr(sanitizer, "CUDA_BIN_DIRS", [])
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "none"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    _, res = run_required(course, monkeypatch, "ok", tools=("memcheck", "initcheck"))
    checks = [c for c in res.cases if c["kind"] == "sanitizer"]
    assert res.status == "fail" and [c["label"] for c in checks] == ["memcheck", "initcheck"]
    assert all(not c["ok"] and "compute-sanitizer is not installed" in c["message"] and "CUDA_HOME" in c["message"]
               for c in checks)


def test_a_required_tool_that_runs_out_of_time_is_no_clean_verdict(course, monkeypatch, fake_sanitizer):
    reports, _ = fake_sanitizer
    (reports / "synccheck.txt").write_text(CLEAN)
    monkeypatch.setenv("FAKE_SANITIZER_SLEEP", "60")
    monkeypatch.setattr(runner, "SANITIZE_CHECK_MAX_S", 1.0)
    _, res = run_required(course, monkeypatch, "ok", tools=("synccheck",))
    (check,) = [c for c in res.cases if c["kind"] == "sanitizer"]
    assert res.status == "fail" and check["category"] == "timeout" and "did not finish" in check["message"]


def test_the_worker_takes_a_list_of_cases_and_a_sanitized_run_times_nothing():
    import argparse

    from grader.check.worker import _indices

    assert _indices("3,5,7") == {3, 5, 7} and _indices("4") == {4}
    with pytest.raises(argparse.ArgumentTypeError):
        _indices("3,x")
    assert worker_command(Path("j.json"), [1, 2])[-3:] == ["--sanitized", "--only", "1,2"]
    assert worker_command(Path("j.json"), None)[-1] == "--sanitized"


# -- grader sanitize ---------------------------------------------------------------------------------------------
def test_grader_sanitize_without_the_tool_says_where_to_get_it(monkeypatch, tmp_path):
    from tests.conftest import run_grader

    env_path = str(Path(sys.executable).parent)  # python only: no compute-sanitizer, no nvcc
    monkeypatch.setenv("PATH", env_path)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "none"))
    r = run_grader("sanitize", "day14", "--solution")
    assert r.returncode == 2 and "Traceback" not in r.stdout + r.stderr
    assert "compute-sanitizer was not found" in r.stdout and "CUDA_HOME" in r.stdout
    from grader.doctor import _has_driver

    if not _has_driver():  # a student's laptop: the GPU comes before any tool to install
        assert "needs a GPU machine" in " ".join(r.stdout.split())


def test_grader_profile_without_ncu_on_a_machine_without_a_gpu_says_it_needs_one(monkeypatch, tmp_path):
    from grader.doctor import _has_driver
    from tests.conftest import run_grader

    if _has_driver():
        pytest.skip("this machine has an NVIDIA driver: the message names the tool only")
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "none"))
    monkeypatch.delenv("NSIGHT_COMPUTE", raising=False)
    from grader.errors import GraderError
    from grader.profile import ncu

    try:
        pytest.skip(f"ncu is installed here ({ncu.find_ncu()}): nothing to say it lacks")
    except GraderError:
        pass
    r = run_grader("profile", "day01", "--solution")
    text = " ".join(r.stdout.split())
    assert r.returncode == 2 and "Traceback" not in r.stdout + r.stderr, text
    assert "ncu) was not found" in text and "`grader profile` runs your kernels, so it needs a GPU machine" in text


def test_grader_sanitize_on_a_machine_without_a_gpu_says_so(monkeypatch, tmp_path, fake_sanitizer):
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is here: the GPU suite runs grader sanitize for real")
    from tests.conftest import run_grader

    r = run_grader("sanitize", "day14", "--solution", "--exercise", "race", "--seed", "3")
    assert r.returncode == 2 and "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
    assert "race" in r.stdout and "racecheck" in r.stdout and "no CUDA GPU here" in r.stdout
