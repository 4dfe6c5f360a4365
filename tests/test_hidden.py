"""Hidden cases (grader/classroom/hidden.py): the overlay's schema and errors, where it is found, and that only a ranked run
merges it (run with the scripted worker, no GPU)."""
import json
import os
import shutil

import pytest
import yaml

from grader import cli, sandbox

from grader.classroom import hidden
from grader.course import load_course
from grader.errors import GraderError
from grader.paths import Paths
from tests.conftest import ROOT

SECRET = "hidden-cases-secret-0123456789abcdef"
COURSE = {"title": "h", "repository": "r", "days": [
    {"id": "day01", "title": "one", "track": "softmax", "status": "ready", "exercises": [
        {"name": "softmax", "task": "tasks.softmax", "op": "softmax", "signature": "softmax(x, out)",
         "args": ["x", "out"], "sources": ["softmax.cu", "bindings.cpp"], "dtypes": ["fp32"],
         "correctness": [[1, 1], [3, 5]], "tolerances": {"fp32": {"atol": 1e-8, "rtol": 1e-5, "rel_l2": 1e-5}},
         "points": 10}]},
    {"id": "day02", "title": "two", "track": "softmax", "status": "planned"}]}
OVERLAY = {"day01": {"softmax": {"correctness": [[7, 50021], {"shape": [2, 60013], "offset": 3}],
                                 "seeds": [918273645]}}}


@pytest.fixture
def course_dir(tmp_path, monkeypatch):
    for name in ("GRADER_RANKED_SEED", "GRADER_RANKED_SEED_FILE", hidden.HIDDEN_ENV):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "course.yaml").write_text(yaml.safe_dump(COURSE))
    shutil.copytree(ROOT / "solutions" / "day01", tmp_path / "solutions" / "day01")
    monkeypatch.setattr(cli, "WORKER", "tests.fake_worker")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("FAKE_WORKER", "ok")
    return tmp_path


def write_overlay(where, doc=OVERLAY):
    where.write_text(yaml.safe_dump(doc) if not isinstance(doc, str) else doc)
    return where


def grade(course_dir, *args, json_out=None):
    extra = ["--json", str(json_out)] if json_out else []
    # A ranked run is sandboxed, as by default, where the sandbox works here (tests/test_sandbox.py says why where
    # it does not); the hidden cases are what these tests are about.
    if "--ranked" in args and not sandbox.probe().ok:
        extra.append("--no-sandbox")
    return cli.main(["--course", str(course_dir / "course.yaml"), "check", "day01", "--solution", *args, *extra])


# -- the overlay -----------------------------------------------------------------------------------------------------
def test_the_overlay_loads_and_merges_after_the_exercises_own_shapes(course_dir):
    course = load_course(course_dir / "course.yaml")
    overlay = hidden.load(write_overlay(course_dir / "hidden.yaml"), course)
    cases = hidden.for_exercise(overlay, "day01", "softmax")
    assert cases.seeds == [918273645]
    ex = course.day("day01").exercises[0]
    merged = cases.merged(ex)
    assert [c.label() for c in merged.correctness] == ["1x1", "3x5", "7x50021", "2x60013+3"]
    assert [c.label() for c in ex.correctness] == ["1x1", "3x5"]  # the course's own exercise is untouched
    assert hidden.for_exercise(overlay, "day01", "other").merged(ex) is ex
    assert hidden.for_exercise(None, "day01", "softmax").seeds == []
    assert hidden.load(write_overlay(course_dir / "empty.yaml", ""), course) == {}


@pytest.mark.parametrize("doc, message", [
    ({"day09": {"softmax": {}}}, "day09: not a day of the course"),
    ({"day01": {"matmul": {}}}, "day01.matmul: day01 has no exercise 'matmul' (it has: softmax)"),
    ({"day02": {"softmax": {}}}, "day02.softmax: day02 has no exercise 'softmax' (it has: none)"),
    ({"day01": {"softmax": {"correctness": [[3, 4, 5]]}}},
     "day01.softmax.correctness[0]: [3, 4, 5] has 3 dimension(s), the exercise's shapes have 2"),
    ({"day01": {"softmax": {"correctness": [[0, 5]]}}},
     "day01.softmax.correctness[0].shape: every dimension must be a positive integer"),
    ({"day01": {"softmax": {"seeds": [-1]}}}, "day01.softmax.seeds[0]: a seed is from 0 to 2**63 - 1"),
    ({"day01": {"softmax": {"seeds": ["x"]}}}, "day01.softmax.seeds[0]: Input should be a valid integer"),
    ({"day01": {"softmax": {"shapes": [[1, 1]]}}}, "day01.softmax.shapes: Extra inputs are not permitted"),
    ({"day01": ["softmax"]}, "day01: Input should be a valid dictionary"),
    ("[1, 2]", "expected a mapping of days"),
    ("day01: [", "is not valid YAML"),
])
def test_a_bad_overlay_says_what_and_where(course_dir, doc, message):
    course = load_course(course_dir / "course.yaml")
    with pytest.raises(GraderError) as e:
        hidden.load(write_overlay(course_dir / "hidden.yaml", doc), course)
    assert message in str(e.value)


def test_where_the_overlay_is_found(course_dir, tmp_path):
    course_file = course_dir / "course.yaml"
    assert hidden.locate(course_file, environ={}) is None  # none: normal in a student repository
    beside = write_overlay(course_dir / "hidden.yaml")
    assert hidden.locate(course_file, environ={}) == beside.resolve()
    elsewhere = write_overlay(tmp_path / "elsewhere.yaml")
    assert hidden.locate(course_file, environ={hidden.HIDDEN_ENV: str(elsewhere)}) == elsewhere.resolve()
    given = write_overlay(tmp_path / "given.yaml")
    assert hidden.locate(course_file, str(given), {hidden.HIDDEN_ENV: str(elsewhere)}) == given.resolve()
    with pytest.raises(GraderError, match="--hidden names /nope.yaml, which is not a file"):
        hidden.locate(course_file, "/nope.yaml", {})
    with pytest.raises(GraderError, match=r"\$GRADER_HIDDEN names /nope.yaml, which is not a file"):
        hidden.locate(course_file, None, {hidden.HIDDEN_ENV: "/nope.yaml"})


# -- ranked runs -----------------------------------------------------------------------------------------------------
def test_a_ranked_run_adds_the_hidden_shapes_and_a_run_per_fixed_seed(course_dir, monkeypatch, capsys):
    write_overlay(course_dir / "hidden.yaml")
    monkeypatch.setenv("GRADER_RANKED_SEED", SECRET)
    out = course_dir / "r.json"
    assert grade(course_dir, "--ranked", json_out=out) == 0
    assert "with the hidden cases of hidden.yaml: 2 more shape(s), 1 fixed seed(s)" in capsys.readouterr().out
    (ex,) = json.loads(out.read_text())["exercises"]
    labels = [(c["run"], c["label"]) for c in ex["cases"]]
    four = ["1x1", "3x5", "7x50021", "2x60013+3"]
    assert labels == [(1, x) for x in four] + [(2, x) for x in four] + [(3, x) for x in four]
    assert ex["status"] == "pass" and ex["seed"] is None and "918273645" not in out.read_text()
    assert not list(Paths(course_dir).logs().glob("*.job.json"))  # the job named the hidden cases


def test_an_ordinary_run_never_reads_the_overlay(course_dir, capsys):
    write_overlay(course_dir / "hidden.yaml", "not: [valid")  # would be an error if it were read
    out = course_dir / "r.json"
    assert grade(course_dir, "--seed", "4", json_out=out) == 0
    (ex,) = json.loads(out.read_text())["exercises"]
    assert [c["label"] for c in ex["cases"]] == ["1x1", "3x5"]
    assert grade(course_dir, "--hidden", str(course_dir / "hidden.yaml")) == 2
    assert "--hidden adds the instructor's hidden cases to a ranked run only: add --ranked" in capsys.readouterr().out


def test_a_failing_hidden_case_fails_the_ranked_run(course_dir, monkeypatch, capsys):
    write_overlay(course_dir / "hidden.yaml", {"day01": {"softmax": {"correctness": [[7, 50021]]}}})
    monkeypatch.setenv("GRADER_RANKED_SEED", SECRET)
    monkeypatch.setenv("FAKE_WORKER", "ok,ok,blank")  # the third case, the hidden one
    out = course_dir / "r.json"
    assert grade(course_dir, "--ranked", json_out=out) == 1
    (ex,) = json.loads(out.read_text())["exercises"]
    assert ex["status"] == "fail" and {c["run"] for c in ex["cases"]} == {1}
    assert [c["label"] for c in ex["cases"] if not c["ok"]] == ["7x50021"]


def test_a_ranked_run_without_an_overlay_is_the_usual_one(course_dir, monkeypatch, capsys):
    monkeypatch.setenv("GRADER_RANKED_SEED", SECRET)
    out = course_dir / "r.json"
    assert grade(course_dir, "--ranked", json_out=out) == 0
    assert "with the hidden cases" not in capsys.readouterr().out
    (ex,) = json.loads(out.read_text())["exercises"]
    assert len(ex["cases"]) == 4  # two runs of the two shapes


def test_a_bad_overlay_stops_a_ranked_run_before_it_starts(course_dir, monkeypatch, capsys):
    write_overlay(course_dir / "hidden.yaml", {"day01": {"nope": {}}})
    monkeypatch.setenv("GRADER_RANKED_SEED", SECRET)
    assert grade(course_dir, "--ranked") == 2
    out = capsys.readouterr().out
    assert "does not fit course.yaml" in out and "day01.nope" in out and "PASS" not in out
