"""Kernel grades into a real nbgrader gradebook, read back through `nbgrader export`'s CSV beside a notebook's score."""
import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, needs_nbgrader, run_grader

pytestmark = needs_nbgrader

COURSE = str(ROOT / "course.yaml")  # day01: one exercise, softmax, 10 points


def _doc(ok16=True, when="2026-11-19T10:00:00Z"):
    cases = [{"kind": "correctness", "dtype": "fp32", "label": "4x8", "ok": True, "message": "ok"},
             {"kind": "correctness", "dtype": "fp16", "label": "4x8", "ok": ok16, "message": "ok" if ok16 else "wrong"}]
    return {"day": "day01", "variant": "student", "when": when, "ranked": False, "seed": 1, "exercises": [
        {"exercise": "softmax", "status": "pass" if ok16 else "fail", "message": "", "speedup": 1.5 if ok16 else None,
         "cases": cases}]}


def _put(root: Path, who: str, doc, name="day01.json"):
    p = root / who / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc))


def _notebook_gradebook(db: Path):
    """What nbgrader leaves after grading day01's notebook: alice scored 4 of 5."""
    from nbgrader.api import Gradebook

    gb = Gradebook(f"sqlite:///{db}")
    try:
        gb.add_assignment("day01")
        gb.update_or_create_notebook("analysis", "day01")
        gb.update_or_create_grade_cell("q1", "analysis", "day01", max_score=5.0, cell_type="code")
        gb.update_or_create_student("alice")
        gb.update_or_create_submission("day01", "alice")
        gb.find_grade("q1", "analysis", "day01", "alice").manual_score = 4.0
        gb.db.commit()
    finally:
        gb.close()


def _export(db: Path, cwd: Path) -> dict[tuple[str, str], dict]:
    exe = shutil.which("nbgrader", path=str(Path(sys.executable).parent)) or shutil.which("nbgrader")
    out = cwd / "grades.csv"
    p = subprocess.run([exe, "export", "--db", f"sqlite:///{db}", "--to", str(out)], cwd=cwd, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    with open(out, newline="") as f:
        return {(r["assignment"], r["student_id"]): r for r in csv.DictReader(f)}


@pytest.fixture
def results(tmp_path):
    r = tmp_path / "results"
    _put(r, "alice", _doc())
    _put(r, "bob", _doc(ok16=False))  # fp16 wrong: half the points, as on Gradescope
    _put(r, "bob", _doc(ok16=False, when="2026-11-01T10:00:00Z") | {"exercises": []}, "old.json")  # not a result
    _put(r, "carol", "{broken")
    return r


def test_kernel_grades_export_beside_the_notebooks(tmp_path, results):
    db = tmp_path / "gradebook.db"
    _notebook_gradebook(db)
    p = run_grader("--course", COURSE, "gradebook", str(results), "--db", str(db), cwd=tmp_path)
    assert p.returncode == 1, p.stdout + p.stderr  # two files skipped: said, and the exit code says so
    assert "skipped" in p.stdout and "carol" in p.stdout and "not JSON" in p.stdout and "2 skipped" in p.stdout
    rows = _export(db, tmp_path)
    assert (rows[("day01", "alice")]["score"], rows[("day01", "alice")]["max_score"]) == ("4.0", "5.0")
    assert (rows[("day01-kernels", "alice")]["score"], rows[("day01-kernels", "alice")]["max_score"]) == ("10.0", "10.0")
    assert rows[("day01-kernels", "bob")]["score"] == "5.0"
    assert rows[("day01-kernels", "alice")]["timestamp"].startswith("2026-11-19 10:00:00")
    assert not any(s == "carol" for _, s in rows)
    # again, with bob's fp16 fixed: his grade is replaced, nothing is added twice
    _put(results, "bob", _doc(when="2026-11-20T10:00:00Z"))
    assert run_grader("--course", COURSE, "gradebook", str(results), "--db", str(db), cwd=tmp_path).returncode == 1
    rows = _export(db, tmp_path)
    assert rows[("day01-kernels", "bob")]["score"] == "10.0"
    assert sorted(rows) == [("day01", "alice"), ("day01", "bob"), ("day01-kernels", "alice"), ("day01-kernels", "bob")]
    assert rows[("day01", "bob")]["score"] == "0.0"  # the export lists every student for every assignment


def test_kernels_can_join_the_days_notebook_assignment(tmp_path, results):
    db = tmp_path / "gradebook.db"
    _notebook_gradebook(db)
    p = run_grader("--course", COURSE, "gradebook", str(results / "alice"), str(results / "bob" / "day01.json"),
                   "--db", str(db), "--assignment", "{day}", cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    rows = _export(db, tmp_path)
    assert (rows[("day01", "alice")]["score"], rows[("day01", "alice")]["max_score"]) == ("14.0", "15.0")
    assert rows[("day01", "bob")]["score"] == "5.0"  # no notebook submitted: the kernels alone


@pytest.mark.parametrize("args,code,text", [
    (["--assignment", "kernels"], 2, "must contain {day}"),
    (["--db", "/no/such/dir/gb.db"], 2, "cannot open the gradebook"),
])
def test_bad_arguments_get_a_message(tmp_path, results, args, code, text):
    argv = ["--db", str(tmp_path / "gb.db"), *args] if args[0] != "--db" else args
    p = run_grader("--course", COURSE, "gradebook", str(results / "alice"), *argv, cwd=tmp_path)
    assert p.returncode == code and text in p.stdout and "Traceback" not in p.stdout + p.stderr, p.stdout


def test_nothing_to_write_is_an_error(tmp_path, results):
    p = run_grader("--course", COURSE, "gradebook", str(results / "carol"), "--db", str(tmp_path / "gb.db"),
                   cwd=tmp_path)
    assert p.returncode == 2 and "0 result(s) written" in p.stdout and not (tmp_path / "gb.db").exists()


def test_an_optional_step_is_extra_credit_never_part_of_the_maximum(tmp_path):
    """Day 11's Hopper track (optional, graded on sm_90 only): a student who earns it gets its points on top; the
    maximum is the mandatory steps', so a class on A100s reaches full marks without it."""
    from grader.course import load_course

    day = load_course(ROOT / "course.yaml").day("day11")
    ok = [{"kind": "correctness", "dtype": "fp16", "label": "64x64x64", "ok": True, "message": "ok"}]

    def ex(name, status="pass"):
        return {"exercise": name, "status": status, "message": "", "speedup": 1.5, "cases": ok}

    mandatory = [e.name for e in day.exercises if not e.optional]
    hopper = next(e for e in day.exercises if e.optional and e.points)
    r = tmp_path / "results"
    for who, extra in (("alice", [ex(hopper.name)]), ("bob", [])):
        _put(r, who, {"day": "day11", "variant": "student", "when": "2027-03-10T10:00:00Z", "ranked": False,
                      "seed": 1, "exercises": [ex(n) for n in mandatory] + extra}, "day11.json")
    db = tmp_path / "gradebook.db"
    p = run_grader("--course", COURSE, "gradebook", str(r), "--db", str(db), cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    rows = _export(db, tmp_path)
    top = float(sum(e.points for e in day.exercises if not e.optional))
    assert float(rows[("day11-kernels", "bob")]["max_score"]) == top
    assert float(rows[("day11-kernels", "bob")]["score"]) == top
    assert float(rows[("day11-kernels", "alice")]["score"]) == top + hopper.points
