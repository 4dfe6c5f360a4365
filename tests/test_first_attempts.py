"""tests/first_attempts.yaml still describes real attempts: each names an exercise of its day, says what it
expects, and its edits apply to the current solution exactly once (a solution that moved on makes the entry stale,
loudly). Whether each attempt passes its bar is a benchmark on the GPU (scripts/first_attempts.py), not a test."""
from __future__ import annotations

import sys

import pytest
import yaml

from grader.verdicts import Category
from tests.conftest import ROOT, has_gpu, needs_nvcc

sys.path.insert(0, str(ROOT / "scripts"))
import first_attempts  # noqa: E402

ENTRIES = yaml.safe_load((ROOT / "tests" / "first_attempts.yaml").read_text())


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["name"] for e in ENTRIES])
def test_an_attempt_names_its_exercise_and_applies_to_the_solution(entry, tmp_path):
    from grader.course import load_course

    assert entry["expect"] in ("pass", "fail") and entry.get("why") and entry["edits"]
    assert "fails_as" not in entry or (entry["expect"] == "fail" and entry["fails_as"] in vars(Category).values())
    day = load_course(ROOT / "course.yaml").day(entry["day"])
    ex = next((e for e in day.exercises if e.name == entry["exercise"]), None)
    assert ex is not None and ex.threshold is not None, f"{entry['day']} has no timed exercise {entry['exercise']}"
    assert first_attempts.apply(entry, tmp_path) is None
    assert (tmp_path / entry["day"] / entry["edits"][0]["file"]).read_text() != \
        (ROOT / "solutions" / entry["day"] / entry["edits"][0]["file"]).read_text()


def test_a_stale_edit_is_reported_not_applied(tmp_path):
    entry = {**ENTRIES[0], "edits": [{"file": ENTRIES[0]["edits"][0]["file"], "find": "no such text", "replace": ""}]}
    assert "occurs 0 times" in first_attempts.apply(entry, tmp_path)
    row = first_attempts.run(entry, seed=1)
    assert row["verdict"] == "stale" and row["as_expected"] is False
    assert "NO" in first_attempts.table([row])


def test_a_copy_adds_a_new_file_and_never_overwrites_one(tmp_path):
    day = ENTRIES[0]["day"]
    name = ENTRIES[0]["edits"][0]["file"]
    entry = {**ENTRIES[0], "edits": [{"file": "earlier.cuh", "copy_of": name}]}
    assert first_attempts.apply(entry, tmp_path / "a") is None
    assert (tmp_path / "a" / day / "earlier.cuh").read_text() == (tmp_path / "a" / day / name).read_text()
    clash = {**ENTRIES[0], "edits": [{"file": name, "copy_of": name}]}
    assert "must be a new file" in first_attempts.apply(clash, tmp_path / "b")


@needs_nvcc
@pytest.mark.skipif(has_gpu(), reason="the compile-only path; on a GPU the script times the attempt")
def test_without_a_gpu_an_attempt_is_compiled_and_left_unjudged():
    row = first_attempts.run(ENTRIES[0], seed=1)
    assert row["verdict"] == "compiled only" and row["as_expected"] is None, row


def test_an_attempt_that_fails_before_timing_must_fail_the_way_its_entry_says():
    entry = {"expect": "fail", "fails_as": "mismatch"}
    case = lambda cat: {"ok": False, "category": cat}  # noqa: E731
    assert first_attempts.as_expected(entry, {"status": "fail", "speedup": None, "cases": [case("mismatch")]})
    assert not first_attempts.as_expected(entry, {"status": "fail", "speedup": None, "cases": [case("crash")]})
    assert not first_attempts.as_expected(entry, {"status": "pass", "speedup": 1.0, "cases": []})
    plain = {"expect": "fail"}  # no fails_as: a failure before timing is not what the entry measures
    assert not first_attempts.as_expected(plain, {"status": "fail", "speedup": None, "cases": [case("mismatch")]})
    assert first_attempts.as_expected(plain, {"status": "fail", "speedup": 0.1, "cases": []})
