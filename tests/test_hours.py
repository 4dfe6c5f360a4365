"""Each day's `hours:` in course.yaml (a strong student's hours for the day's mandatory path): the schema takes only a
positive number, every ready day has one (one over a day's work says why on its line), and the syllabus shows it."""
import copy
import re

import pytest
import yaml

from grader.authoring.syllabus import render
from grader.course import load_course
from grader.errors import GraderError

A_DAYS_WORK = 8  # hours; a day over it gives the basis of its estimate in a comment on its `hours:` line


def _load_with(tmp_path, root, hours):
    raw = copy.deepcopy(yaml.safe_load((root / "course.yaml").read_text()))
    raw["days"][15]["hours"] = hours
    p = tmp_path / "course.yaml"
    p.write_text(yaml.safe_dump(raw))
    return load_course(p)


@pytest.mark.parametrize("hours, expected", [
    (0, "days[15] (day16).hours: hours must be a positive number: a strong student's hours for the day's mandatory "
        "path (about 8 is a day's work) (got 0)"),
    (-3, "hours must be a positive number"),
    (float("nan"), "hours must be a positive number"),
    (float("inf"), "hours must be a positive number"),
    (True, "days[15] (day16).hours: Input should be a valid number (got True)"),  # not read as 1 hour
    ("8", "days[15] (day16).hours: Input should be a valid number (got '8')"),
])
def test_hours_must_be_a_positive_number(tmp_path, root, hours, expected):
    with pytest.raises(GraderError) as e:
        _load_with(tmp_path, root, hours)
    assert expected in str(e.value)


def test_hours_may_be_a_fraction(tmp_path, root):
    assert _load_with(tmp_path, root, 5.5).day("day16").hours == 5.5


def test_every_ready_day_has_hours_and_one_over_a_days_work_says_why(course, root):
    assert [d.id for d in course.days if d.status == "ready" and d.hours is None] == []
    lines = {m.group(1): m for m in re.finditer(r"^  - id: (day\d\d)\n(?:    .*\n)*?    hours: ([\d.]+)(.*)$",
                                                (root / "course.yaml").read_text(), re.M)}
    for d in course.days:
        if d.hours is not None and d.hours > A_DAYS_WORK:
            why = lines[d.id].group(3).strip()
            assert why.startswith("#") and len(why.lstrip("# ")) > 20, (
                f"{d.id}: hours {d.hours:g} is over a day's work ({A_DAYS_WORK}): say the basis in a comment on its "
                "`hours:` line")


def _hours_column(text: str) -> dict[str, str]:
    """day -> the hours cell of the syllabus's table of days."""
    head = next(line for line in text.splitlines() if line.startswith("| day | title |"))
    at = [c.strip() for c in head.strip("|").split("|")].index("hours")
    out = {}
    for line in text.splitlines():
        m = re.match(r"\| \[?(day\d\d)\]?(?:\([^)]*\))? \|", line)
        if m and "`" not in line:  # the exercises' table has signatures in code spans
            out[m.group(1)] = [c.strip() for c in line.strip("|").split("|")][at]
    return out


def test_the_syllabus_shows_each_days_hours(course):
    shown = _hours_column(render(course))
    assert shown == {d.id: f"{d.hours:g}" for d in course.days}
    assert "a day's work is about 8" in render(course)


def test_a_day_without_hours_shows_none_in_the_syllabus(tmp_path, root):
    raw = copy.deepcopy(yaml.safe_load((root / "course.yaml").read_text()))
    raw["days"][15].pop("hours", None)
    p = tmp_path / "course.yaml"
    p.write_text(yaml.safe_dump(raw))
    shown = _hours_column(render(load_course(p)))
    assert shown["day16"] == "-" and shown["day15"] != "-"
