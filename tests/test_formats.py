"""Results for Gradescope, JUnit and GitHub Classroom, checked against the structure each documents, on check results
of every kind: a pass, one dtype failing, a speedup under the threshold (no failing case), a build error (no cases)."""
import json
from xml.etree import ElementTree as ET

import pytest

from grader.classroom import formats
from tests.conftest import needs_modules, run_grader

pytestmark = needs_modules("jsonschema")  # the formats are exercised fully on CPU CI


def validate(instance, schema) -> None:
    import jsonschema

    jsonschema.validate(instance, schema)

_VIS = {"enum": ["hidden", "after_due_date", "after_published", "visible"]}
# Gradescope's autograder specification (results.json).
GRADESCOPE = {
    "type": "object", "required": ["tests"],
    "properties": {
        "score": {"type": "number"}, "output": {"type": "string"},
        "output_format": {"enum": ["text", "html", "simple_format", "md", "ansi"]}, "visibility": _VIS,
        "extra_data": {"type": "object"},
        "tests": {"type": "array", "items": {
            "type": "object", "required": ["name", "score", "max_score"], "additionalProperties": False,
            "properties": {"name": {"type": "string"}, "score": {"type": "number"}, "max_score": {"type": "number"},
                           "status": {"enum": ["passed", "failed"]}, "output": {"type": "string"},
                           "output_format": {"enum": ["text", "html", "simple_format", "md", "ansi"]},
                           "visibility": _VIS, "number": {"type": "string"}, "tags": {"type": "array"},
                           "extra_data": {"type": "object"}}}},
        "leaderboard": {"type": "array", "items": {
            "type": "object", "required": ["name", "value"], "additionalProperties": False,
            "properties": {"name": {"type": "string"}, "value": {"type": ["number", "string"]},
                           "order": {"enum": ["asc", "desc"]}}}},
    },
}
# GitHub Classroom's autograding result (one per test step).
CLASSROOM = {
    "type": "object", "required": ["version", "status", "max_score", "tests"],
    "properties": {
        "version": {"const": 1}, "status": {"enum": ["pass", "fail", "error"]}, "max_score": {"type": "number"},
        "tests": {"type": "array", "items": {
            "type": "object", "required": ["name", "status"],
            "properties": {"name": {"type": "string"}, "status": {"enum": ["pass", "fail", "error"]},
                           "score": {"type": "number"}, "message": {"type": "string"},
                           "line_no": {"type": "integer"}, "execution_time": {"type": "string"}}}},
    },
}


def _case(dtype, ok, label="4x8", msg="ok"):
    return {"kind": "correctness", "dtype": dtype, "label": label, "ok": ok, "message": msg}


DOC = {"day": "day07", "variant": "student", "ranked": False, "seed": 3, "exercises": [
    {"exercise": "fast", "status": "pass", "message": "correct, and 1.9x the baseline", "speedup": 1.9,
     "info": {"gpu": "NVIDIA H100", "torch": "2.11"}, "cases": [_case("fp32", True), _case("fp16", True)]},
    {"exercise": "half_wrong", "status": "fail", "message": "1 case(s) failed", "speedup": None,
     "cases": [_case("fp32", True), _case("fp16", False, "64x64", "wrong values")]},
    {"exercise": "slow", "status": "fail", "message": "correct, but 0.7x (needs 1.2x)", "speedup": 0.7,
     "cases": [_case("fp32", True), _case("fp16", True)]},
    {"exercise": "broken", "status": "build_error", "message": "softmax.cu:3: error", "cases": []},
]}
POINTS = {"fast": 10, "half_wrong": 10, "slow": 6, "broken": 4}


def test_gradescope_results_follow_its_specification_and_split_points_by_dtype():
    r = formats.gradescope(DOC, POINTS)
    validate(r, GRADESCOPE)
    by = {t["name"]: t for t in r["tests"]}
    assert by["day07.fast [fp16]"]["score"] == 5 and by["day07.fast [fp16]"]["status"] == "passed"
    assert by["day07.half_wrong [fp32]"]["score"] == 5 and by["day07.half_wrong [fp16]"]["score"] == 0
    assert "64x64: wrong values" in by["day07.half_wrong [fp16]"]["output"]
    # under the threshold: no case failed, but neither dtype earns its points
    assert by["day07.slow [fp32]"]["score"] == by["day07.slow [fp16]"]["score"] == 0
    assert by["day07.broken [all]"]["max_score"] == 4 and by["day07.broken [all]"]["status"] == "failed"
    assert r["score"] == 15 and sum(t["max_score"] for t in r["tests"]) == 30
    assert {e["name"]: e["value"] for e in r["leaderboard"]} == {"day07.fast speedup": 1.9, "day07.slow speedup": 0.7}


def test_junit_xml_has_one_suite_per_exercise_and_a_failure_per_lost_test():
    root = ET.fromstring(formats.junit(DOC, POINTS))
    assert root.tag == "testsuites" and root.get("tests") == "7" and root.get("failures") == "4"
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["day07.fast", "day07.half_wrong", "day07.slow", "day07.broken"]
    for s in suites:
        cases = s.findall("testcase")
        assert int(s.get("tests")) == len(cases) and int(s.get("failures")) == sum(
            c.find("failure") is not None for c in cases)
        assert all(c.get("name") and c.get("classname") == s.get("name") for c in cases)
    fail = root.find(".//testcase[@name='day07.broken [all]']/failure")
    assert fail.get("type") == "build_error" and "softmax.cu:3" in fail.get("message")


def test_classroom_result_follows_its_format():
    r = formats.classroom(DOC, POINTS)
    validate(r, CLASSROOM)
    assert r["status"] == "fail" and r["max_score"] == 30
    ok = formats.classroom({**DOC, "exercises": DOC["exercises"][:1]}, POINTS)
    assert ok["status"] == "pass" and [t["score"] for t in ok["tests"]] == [5, 5]


def test_grader_check_writes_all_three_and_refuses_format_without_a_folder(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "res"
    r = run_grader("check", "day01", "--solution", "--results-dir", str(out))
    assert "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["classroom.json", "junit.xml", "results.json"]
    validate(json.loads((out / "results.json").read_text()), GRADESCOPE)
    validate(json.loads((out / "classroom.json").read_text()), CLASSROOM)
    ET.parse(out / "junit.xml")
    r = run_grader("check", "day01", "--solution", "--format", "junit")
    assert r.returncode == 2 and "give --results-dir" in r.stdout + r.stderr


def test_an_optional_step_is_extra_credit_and_untouched_it_fails_nothing():
    """Day 11's Hopper track: a passed optional exercise scores on top of a maximum of 0; one left as released, or
    skipped on a GPU that does not grade it, is skipped in every format, not failed."""
    doc = {"day": "day11", "variant": "student", "ranked": False, "seed": 3, "exercises": [
        DOC["exercises"][0],
        {"exercise": "hopper_a", "status": "pass", "message": "correct", "speedup": 1.4,
         "cases": [_case("fp16", True), _case("bf16", True)]},
        {"exercise": "hopper_b", "status": "skipped", "message": "an optional step that runs on compute capability "
         "9.0 only; this GPU (NVIDIA A100) is 8.0: skipped, not graded here and not failed", "cases": []},
    ]}
    points, optional = {"fast": 10, "hopper_a": 5, "hopper_b": 5}, frozenset({"hopper_a", "hopper_b"})
    gs = formats.gradescope(doc, points, optional=optional)
    validate(gs, GRADESCOPE)
    assert gs["score"] == 15.0 and sum(t["max_score"] for t in gs["tests"]) == 10.0
    assert all(t["status"] == "passed" for t in gs["tests"])
    cl = formats.classroom(doc, points, optional)
    validate(cl, CLASSROOM)
    assert cl["status"] == "pass" and cl["max_score"] == 10.0
    root = ET.fromstring(formats.junit(doc, points, optional))
    assert root.get("failures") == "0"
    skipped = root.findall(".//testcase[skipped]")
    assert [c.get("name") for c in skipped] == ["day11.hopper_b [all]"]
    # without the optional set, the same exercises are mandatory: the skip costs their points
    assert formats.classroom(doc, points)["max_score"] == 20.0
