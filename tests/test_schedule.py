"""course.yaml's optional release and due dates of a day, and its instructor_only paths: the schema, the errors a
malformed value gets (with its key path), and which days a release on a given date holds."""
from datetime import date

import pytest
import yaml

from grader.authoring.course_files import matches, released_days, why_left_out
from grader.course import INSTRUCTOR_ONLY_PATHS, load_course
from grader.errors import GraderError
from tests import release_course as rc


def write(tmp_path, doc, text=None):
    p = tmp_path / "course.yaml"
    p.write_text(text if text is not None else yaml.safe_dump(doc, sort_keys=False))
    return p


def test_dates_are_optional_and_read_as_dates(tmp_path):
    course = load_course(write(tmp_path, rc.course_doc()))
    assert course.day("day01").release == rc.LONG_AGO and course.day("day01").due == rc.PAST
    assert course.day("day05").release is None and course.day("day05").due is None
    doc = rc.course_doc()
    doc["days"][0]["release"] = "WHEN"
    text = yaml.safe_dump(doc, sort_keys=False).replace("release: WHEN", "release: '2020-01-31'")
    assert load_course(write(tmp_path, None, text)).day("day01").release == date(2020, 1, 31)  # quoted: still a date


@pytest.mark.parametrize("change, message", [
    ({"release": date(2026, 3, 10), "due": date(2026, 3, 1)},
     "days[0] (day01).due: the due date must come after the release date (2026-03-10)"),
    ({"release": date(2026, 3, 10), "due": date(2026, 3, 10)}, "days[0] (day01).due: the due date must come after"),
    ({"release": 20260301}, "days[0] (day01).release: expected a date as YYYY-MM-DD, got 20260301"),
    ({"due": "2026-3-1"}, "days[0] (day01).due: expected a date as YYYY-MM-DD, got '2026-3-1'"),
    ({"due": "2026-02-30"}, "days[0] (day01).due: '2026-02-30' is not a date of the calendar"),
    ({"due": "next friday"}, "days[0] (day01).due: expected a date as YYYY-MM-DD"),
    ({"release": "2026-03-01T09:00:00"}, "days[0] (day01).release: expected a date as YYYY-MM-DD"),
])
def test_bad_dates_name_the_key(tmp_path, change, message):
    doc = rc.course_doc()
    doc["days"][0].update(change)
    with pytest.raises(GraderError, match="does not match the course schema") as e:
        load_course(write(tmp_path, doc))
    assert message in str(e.value)


def test_a_timestamp_in_yaml_is_not_a_date(tmp_path):
    doc = rc.course_doc()
    doc["days"][0]["due"] = "WHEN"
    text = yaml.safe_dump(doc, sort_keys=False).replace("due: WHEN", "due: 2026-03-01 09:00:00")
    with pytest.raises(GraderError, match=r"days\[0\] \(day01\).due: give a date without a time, as YYYY-MM-DD"):
        load_course(write(tmp_path, None, text))


def test_released_days_are_the_ready_ones_whose_date_has_come(tmp_path):
    course = load_course(write(tmp_path, rc.course_doc()))
    assert released_days(course, rc.TODAY) == ["day01", "day02", "day05"]
    assert released_days(course, rc.PAST) == ["day01", "day02", "day05"]  # the release day itself counts
    assert released_days(course, date(1970, 1, 1)) == ["day05"]
    assert released_days(course, rc.LATER) == ["day01", "day02", "day03", "day05"]  # day04 is planned


def test_instructor_only_defaults_and_patterns(tmp_path):
    course = load_course(write(tmp_path, rc.course_doc()))
    assert course.instructor_only == list(INSTRUCTOR_ONLY_PATHS)
    days = ["day01"]
    assert why_left_out("tests/known_wrong.yaml", course, days, set()) == "instructor_only: tests/"
    assert why_left_out("solutions/day01/k.cu", course, days, set()) == "solutions"
    assert why_left_out("hidden.yaml", course, days, {"hidden.yaml"}) == "hidden cases"
    assert why_left_out("days/day02/README.md", course, days, set()).startswith("days released later (day02 on")
    assert why_left_out("days/day04/README.md", course, days, set()) == "days not ready"
    assert why_left_out("days/day77/README.md", course, days, set()) == "days/ of no day in course.yaml"
    assert why_left_out("days/day01/README.md", course, days, set()) is None
    assert why_left_out("days/README.md", course, days, set()) is None
    assert why_left_out("testsuite.md", course, days, set()) is None
    for path, pattern, hit in [("tests/a.py", "tests/", True), ("tests2/a.py", "tests/", False),
                               ("a/b.md", "*.md", False), ("b.md", "*.md", True), ("a/b/c.md", "a/**.md", True),
                               ("c.md", "**/c.md", True), ("x/y/c.md", "**/c.md", True), ("x/yc.md", "**/c.md", False),
                               ("tests/t1.py", "tests/t?.py", True), ("tests/t10.py", "tests/t?.py", False)]:
        assert matches(path, pattern) is hit, (path, pattern)


@pytest.mark.parametrize("value, message", [
    (["/etc/passwd"], "instructor_only: [0] '/etc/passwd': give a path inside the course"),
    (["ok/", "../up"], "instructor_only: [1] '../up': give a path inside the course"),
    ([""], "instructor_only: [0] '': give a path inside the course"),
    (["a\\b"], "with forward slashes"),
    ("tests/", "instructor_only: Input should be a valid list"),
])
def test_bad_instructor_only_paths(tmp_path, value, message):
    doc = rc.course_doc()
    doc["instructor_only"] = value
    with pytest.raises(GraderError) as e:
        load_course(write(tmp_path, doc))
    assert message in str(e.value)
