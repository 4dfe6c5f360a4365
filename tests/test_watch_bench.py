"""scripts/watch_bench.py, the parts a machine without a GPU can run: parsing watch's lines, the table, the private
course root, and one timed edit under `grader watch` (compile-only here)."""
import importlib.util
import shutil
import sys

import pytest

from tests.conftest import ROOT, needs_nvcc

spec = importlib.util.spec_from_file_location("watch_bench", ROOT / "scripts" / "watch_bench.py")
wb = importlib.util.module_from_spec(spec)
sys.modules["watch_bench"] = wb  # its dataclasses look their module up by name
spec.loader.exec_module(wb)


@pytest.mark.parametrize("line, yes", [
    ("07:03:12 ✓ day03.softmax: correct (24 cases)  [1.9 s]", True),
    ("07:03:12 ✗ day03.softmax: 2 of 24 correctness cases failed; first: ...", True),
    ("07:03:12 … day03.softmax: NOT IMPLEMENTED: the output is never written", True),
    ("07:03:12 ✓ day04.softmax: correct (24 cases)", False),
    ("07:03:12 changed: days/day03/softmax.cu", False),
    ("watching days/day03 (seed 3; worker log .grader/logs/watch-day03.log); Ctrl-C stops", False),
])
def test_verdict_lines_are_told_from_the_rest(line, yes):
    assert wb.is_verdict(line, "day03") is yes


def test_the_speed_line_ends_a_timed_verdict():
    assert wb.is_last_line("  PASS speed: 1.21x library (needs 0.5x), geomean of 6 shapes")
    assert not wb.is_last_line("07:03:12 ✓ day03.softmax: correct (24 cases)")


def test_the_table_shows_medians_and_what_went_wrong():
    text = wb.table("t", [wb.Step("a", [3.0, 1.0, 2.0], "exit 0"), wb.Step("b", [], "no verdict in 9 s")])
    assert "median of 3, 1.0–3.0; exit 0" in text and " 2.0 " in text
    assert "b" in text and "no verdict in 9 s" in text


def test_the_course_root_is_private(tmp_path):
    root = wb.course_root(tmp_path)
    assert (root / "course.yaml").read_text() == (ROOT / "course.yaml").read_text()
    assert (root / "solutions").resolve() == (ROOT / "solutions").resolve() and not (root / ".grader").exists()
    assert wb.kernel_file("day03", tmp_path / "x") == tmp_path / "x" / "softmax.cu"


def test_a_rebuild_is_split_into_ninja_steps_and_nvcc_phases(tmp_path):
    work = tmp_path / "state" / "builds" / "day03" / "w0"
    work.mkdir(parents=True)
    (work / ".ninja_log").write_text("# ninja log v5\n0\t1700\t1\tsoftmax.cuda.o\tab\n1700\t1800\t1\tx.so\tcd\n"
                                     "5\t1505\t2\tsoftmax.cuda.o\tef\nnot a row\n")
    assert wb.ninja_steps(tmp_path / "state") == {"softmax.cuda.o": [1.7, 1.5], "x.so": [0.1]}
    csv = tmp_path / "t.csv"
    csv.write_text("source file name , phase name , phase input files , phase output file , arch , tool, metric , unit\n"
                   "a.cu , cicc , a.ii , a.ptx , compute_90 , nvcc , 221.5 , ms\n"
                   "a.cu , cicc , a.ii , a.ptx , compute_90 , nvcc , 200.0 , ms\n"
                   "a.cu , nvcc (driver) ,  , a.o ,  , nvcc , 0.5 , ms\n")
    phases = wb.nvcc_phases(csv)
    assert phases == {"cicc": [0.2215, 0.2], "nvcc (driver)": [0.0005]}
    assert "cicc" in wb.breakdown("t", phases) and "none" in wb.breakdown("t", {})
    assert wb.nvcc_phases(tmp_path / "missing.csv") == {}


@needs_nvcc
def test_one_edit_under_watch_is_timed(tmp_path):
    root = wb.course_root(tmp_path)
    folder = tmp_path / "day01"
    shutil.copytree(ROOT / "solutions" / "day01", folder)
    log = tmp_path / "watch.log"
    first, verdict, speed = wb.bench_watch(root, "day01", folder, folder / "softmax.cu", 3, 1, 300, 120, log)
    assert len(first.seconds) == 1 and len(verdict.seconds) == 1, log.read_text()
    assert "changed:" in log.read_text() and "watch_bench edit 0" in (folder / "softmax.cu").read_text()
    from grader.paths import Paths

    assert (Paths(root).state / "logs" / "watch-day01.log").exists()  # the state folder the grader used
