"""The CLI as a student meets it on a machine without a GPU: clear messages, exit codes, no tracebacks."""
import pytest

from tests.conftest import has_gpu, needs_nvcc, run_grader


def assert_clean(r):
    assert "Traceback" not in r.stdout + r.stderr


@pytest.mark.parametrize("args, code, text", [
    (["check", "day42"], 2, "no day 'day42'"),
    (["check", "day19"], 2, "planned, not ready yet"),
    (["check", "day01", "--dir", "/nonexistent/folder"], 2, "does not exist"),
    (["check", "day01", "--solution", "--dir", "."], 2, "either --solution or --dir"),
    (["check", "day03", "--exercise", "nope"], 2, "has no exercise 'nope'"),
    (["check", "day03", "--dtype", "fp8"], 2, "unknown dtype"),
])
def test_usage_errors(args, code, text):
    r = run_grader(*args)
    assert r.returncode == code and text in r.stdout, r.stdout + r.stderr
    assert_clean(r)


def test_bad_arguments_exit_2():
    r = run_grader("frobnicate")
    assert r.returncode == 2


def test_malformed_course_file(tmp_path):
    (tmp_path / "course.yaml").write_text("title: x\nrepository: y\ndays:\n  - id: day1\n")
    r = run_grader("list", cwd=tmp_path)
    assert r.returncode == 2 and "does not match the course schema" in r.stdout
    assert "days[0] (day1).id: day id must look like day01" in r.stdout
    assert_clean(r)


def test_outside_a_course(tmp_path):
    r = run_grader("list", cwd=tmp_path)
    assert r.returncode == 2 and "course.yaml not found" in r.stdout


def test_missing_source_file(tmp_path):
    (tmp_path / "softmax.cu").write_text("// nothing\n")
    r = run_grader("check", "day01", "--dir", str(tmp_path))
    assert r.returncode == 2 and "lacks bindings.cpp" in r.stdout


def test_list_shows_every_day():
    r = run_grader("list")
    assert r.returncode == 0 and "day20" in r.stdout and "mandatory" in r.stdout


@needs_nvcc
@pytest.mark.skipif(has_gpu(), reason="exercises the no-GPU path")
def test_check_without_gpu_compiles_and_says_so(tmp_path):
    out = tmp_path / "r.json"
    r = run_grader("check", "day02", "--solution", "--json", str(out))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "COMPILED ONLY" in r.stdout and "correctness and speed" in r.stdout and "registers" in r.stdout
    import json

    data = json.loads(out.read_text())
    ex = data["exercises"][0]
    assert ex["status"] == "no_gpu"
    kernels = [k for c in ex["compile"] for k in c["kernels"]]
    assert {k["arch"] for k in kernels} == {"sm_80", "sm_90"}
    assert_clean(r)


@needs_nvcc
@pytest.mark.skipif(has_gpu(), reason="exercises the no-GPU path")
def test_compile_error_without_gpu_points_at_the_line(tmp_path, root):
    for f in ("softmax.cu", "bindings.cpp"):
        (tmp_path / f).write_text((root / "solutions" / "day01" / f).read_text())
    src = (tmp_path / "softmax.cu").read_text().splitlines()
    at = len(src) // 2
    src.insert(at, "this is not C++;")
    (tmp_path / "softmax.cu").write_text("\n".join(src) + "\n")
    r = run_grader("check", "day01", "--dir", str(tmp_path))
    assert r.returncode == 1 and "BUILD ERROR" in r.stdout
    assert f"softmax.cu:{at + 1}: error" in r.stdout, r.stdout
    assert "not run" not in r.stdout
    assert_clean(r)


def test_doctor_reports_and_exits_cleanly():
    r = run_grader("doctor")
    assert r.returncode in (0, 2) and "nvcc" in r.stdout and "torch" in r.stdout
    assert_clean(r)
