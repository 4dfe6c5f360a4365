"""The semester's calendar: where each day stands (grader/authoring/semester.py) from course.yaml's dates and a
student repository's release, as `grader calendar`, `grader list`, the syllabus and the site show it; the course's
own calendar; $GRADER_TODAY."""
import json
from datetime import date, timedelta

import pytest

from grader import cli, clock
from grader.authoring import semester, syllabus
from grader.commands.calendar import today_row
from grader.course import load_course
from grader.errors import GraderError
from tests import release_course as rc
from tests.conftest import ROOT, run_grader


@pytest.fixture
def course_file(tmp_path, monkeypatch):
    monkeypatch.delenv("GRADER_HIDDEN", raising=False)
    return rc.make(tmp_path / "instructor")


@pytest.fixture
def student(course_file, tmp_path):
    """(the instructor's course.yaml, a student repository released from it today: day01, day02 and day05)."""
    dest = tmp_path / "student"
    assert cli.main(["--course", str(course_file), "release", "--to", str(dest)]) == 0
    return course_file, dest


def by_day(states):
    return {s.day.id: s.label for s in states}


# -- where a day stands ---------------------------------------------------------------------------------------------
def test_the_dates_alone_in_the_course_repository(course_file):
    course = load_course(course_file)
    assert by_day(semester.states(course, rc.TODAY, None)) == {
        "day01": "due (its solution may be published)", "day02": "released",
        "day03": f"not released yet (on {rc.LATER.isoformat()})", "day04": "planned", "day05": "released"}
    before = rc.LONG_AGO - timedelta(days=1)
    assert by_day(semester.states(course, before, None))["day01"] == f"not released yet (on {rc.LONG_AGO})"
    assert by_day(semester.states(course, rc.LONG_AGO, None))["day01"] == "released"  # the release day counts
    assert by_day(semester.states(course, rc.PAST, None))["day01"] == "released"  # so does the due day
    # no date to compare with (the syllabus): the dates order nothing, so nothing is due
    assert by_day(semester.states(course, None, None))["day01"] == "released"


def test_a_student_repository_says_what_its_release_holds(course_file):
    course = load_course(course_file)
    manifest = {"days": ["day01", "day05"], "published": {"day01": {}}}
    got = by_day(semester.states(course, rc.TODAY, manifest))
    assert got["day01"] == "published" and got["day05"] == "released"
    # day02's date has come but the release does not hold it (held back, or the release is older than its date)
    assert got["day02"] == f"not released yet (on {rc.PAST}; held back until a later release)"
    assert got["day03"] == f"not released yet (on {rc.LATER})" and got["day04"] == "planned"
    assert by_day(semester.states(course, rc.TODAY, {"days": ["day01"]}))["day01"] == "due (solution not published yet)"
    assert not semester.state(course.day("day03"), rc.TODAY, manifest).released
    assert semester.state(course.day("day01"), rc.TODAY, manifest).released


# -- grader calendar ------------------------------------------------------------------------------------------------
def test_calendar_from_the_dates(course_file, capsys):
    capsys.readouterr()
    assert cli.main(["--course", str(course_file), "calendar"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("│")]
    cells = [[c.strip() for c in r.strip("│").split("│")] for r in rows]
    assert [c[0] for c in cells] == ["day01", "day02", "today", "day03", "day04", "day05"]  # today after day02
    assert cells[0][2:] == [rc.LONG_AGO.isoformat(), rc.PAST.isoformat(), "due (its solution may be published)"]
    assert cells[2][2] == rc.TODAY.isoformat()
    assert cells[3][2:] == [rc.LATER.isoformat(), "-", f"not released yet (on {rc.LATER})"]
    assert "course.yaml's dates" in out


def test_calendar_of_a_release_with_to_and_as_json(student, tmp_path, capsys):
    course_file, dest = student
    assert cli.main(["--course", str(course_file), "publish", "day01", "--to", str(dest)]) == 0
    capsys.readouterr()
    assert cli.main(["--course", str(course_file), "calendar", "--to", str(dest), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["today"] == rc.TODAY.isoformat() and doc["repository"] == str(dest)
    assert {d["day"]: d["status"] for d in doc["days"]} == {
        "day01": "published", "day02": "released", "day03": "not released yet", "day04": "planned",
        "day05": "released"}
    assert doc["days"][2]["why"] == f"on {rc.LATER}" and doc["days"][0]["release"] == rc.LONG_AGO.isoformat()
    out = tmp_path / "cal.json"
    assert cli.main(["--course", str(course_file), "calendar", "--to", str(dest), "--json", str(out)]) == 0
    assert json.loads(out.read_text()) == doc


def test_calendar_in_the_student_repository_reads_its_own_release(student):
    _, dest = student
    r = run_grader("calendar", cwd=dest)  # the student's own course.yaml, found from the folder
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"not released yet (on {rc.LATER})" in r.stdout and f"the release in {dest}" in r.stdout
    r = run_grader("calendar", "--json", cwd=dest, env={clock.TODAY_ENV: rc.LATER.isoformat()})
    doc = json.loads(r.stdout)
    assert doc["today"] == rc.LATER.isoformat()  # day03's date has come, but this release does not hold it
    assert doc["days"][2]["why"] == f"on {rc.LATER}; held back until a later release"


def test_calendar_of_another_course_s_release_says_so(student, capsys):
    course_file, dest = student
    doc = json.loads((dest / ".release.json").read_text())
    (dest / ".release.json").write_text(json.dumps({**doc, "course": "Another course"}))
    capsys.readouterr()
    assert cli.main(["--course", str(course_file), "calendar", "--to", str(dest)]) == 0
    assert f"{dest} is a release of 'Another course', not of 't'" in " ".join(capsys.readouterr().out.split())


def test_the_today_row_follows_the_dates(course_file, capsys):
    course = load_course(course_file)
    states = semester.states(course, rc.TODAY, None)
    assert today_row(states, rc.LONG_AGO - timedelta(days=1)) == 0  # before the first release: first
    assert today_row(states, rc.LONG_AGO) == 1 and today_row(states, rc.TODAY) == 2
    assert today_row(states, rc.LATER) == 3  # after day03, the last day with a date (day04 is planned, day05 has none)


@pytest.mark.parametrize("what, message", [
    ("missing", "does not exist: give the folder `grader release --to` wrote"),
    ("file", "is a file, not a student repository"),
    ("empty", "is not a student repository written by `grader release --to` (it has no .release.json)"),
    ("corrupt", "is not a release manifest"),
])
def test_calendar_refuses_a_bad_to(course_file, tmp_path, capsys, what, message):
    bad = tmp_path / "bad"
    if what == "file":
        bad.write_text("x")
    elif what in ("empty", "corrupt"):
        bad.mkdir()
        if what == "corrupt":
            (bad / ".release.json").write_text("{not json")
    capsys.readouterr()
    assert cli.main(["--course", str(course_file), "calendar", "--to", str(bad)]) == 2
    out = " ".join(capsys.readouterr().out.split())
    assert message in out and "Traceback" not in out


# -- grader list, the syllabus and the site in a student repository --------------------------------------------------
def test_list_in_a_student_repository_says_when_a_day_comes(student, capsys):
    course_file, dest = student
    capsys.readouterr()
    assert cli.main(["--course", str(dest / "course.yaml"), "list"]) == 0
    rows = {line.split("│")[1].strip(): line for line in capsys.readouterr().out.splitlines()
            if line.startswith("│") and "day0" in line}
    assert f"not released yet (on {rc.LATER})" in rows["day03"] and "ready" not in rows["day03"]
    assert "ready" in rows["day01"] and "planned" in rows["day04"]
    # in the course repository every ready day is there to work on
    assert cli.main(["--course", str(course_file), "list"]) == 0
    assert "not released" not in capsys.readouterr().out


def test_check_of_a_day_not_in_the_release_says_when_it_comes(student, capsys):
    """A student who runs `grader check` on a day the release does not hold yet is told when it comes (not to run
    `grader release`, an instructor's command), with exit 2."""
    course_file, dest = student
    capsys.readouterr()
    assert cli.main(["--course", str(dest / "course.yaml"), "check", "day03"]) == 2
    said = capsys.readouterr()
    err = said.out + said.err
    assert f"day03 is not released yet (on {rc.LATER})" in err and "grader release" not in err


def test_the_syllabus_shows_dates_and_no_lesson_a_student_repository_lacks(student):
    course_file, dest = student
    course = load_course(course_file)
    mine = syllabus.render(course)
    assert f"| [day03](days/day03/README.md) | three | x | ready | {rc.LATER} | - |" in mine
    assert f"| [day01](days/day01/README.md) | one | x | ready | {rc.LONG_AGO} | {rc.PAST} |" in mine
    theirs = syllabus.render(course, semester.manifest_of(dest))
    assert f"| day03 | three | x | not released yet (on {rc.LATER}) | {rc.LATER} | - |" in theirs
    assert "days/day03/README.md" not in theirs and "(days/day01/README.md)" in theirs
    assert syllabus.render(course, semester.manifest_of(dest)) == theirs  # no date of today in it


def test_the_site_says_when_a_day_comes_in_a_student_repository(student, tmp_path):
    from grader.site.generate import generate

    course_file, dest = student
    g = generate(dest, load_course(dest / "course.yaml"), tmp_path / "site")
    page = (g.docs / "days/day03.md").read_text()
    assert f"not released yet (on {rc.LATER})" in page and "Not released yet" in page and "not written" not in page
    assert f"out {rc.LONG_AGO} · due {rc.PAST}" in (g.docs / "days/day01.md").read_text()
    assert "03 · three (not released yet)" in g.config.read_text()
    ours = generate(course_file.parent, load_course(course_file), tmp_path / "site2")  # the course repository
    assert "not released" not in (ours.docs / "days/day03.md").read_text()


# -- the clock --------------------------------------------------------------------------------------------------------
def test_grader_today_sets_the_day_for_a_process(monkeypatch):
    monkeypatch.undo()  # the real clock.today, not the suite's held one
    monkeypatch.setenv(clock.TODAY_ENV, "2027-03-22")
    assert clock.today() == date(2027, 3, 22)
    monkeypatch.setenv(clock.TODAY_ENV, "")
    assert clock.today() == date.today()
    for bad in ("22/03/2027", "2027-02-30", "tomorrow"):
        monkeypatch.setenv(clock.TODAY_ENV, bad)
        with pytest.raises(GraderError, match=r"\$GRADER_TODAY is .* not a date as YYYY-MM-DD"):
            clock.today()


def test_a_bad_grader_today_is_a_usage_error(course_file):
    r = run_grader("--course", str(course_file), "calendar", env={clock.TODAY_ENV: "soon"})
    assert r.returncode == 2 and "$GRADER_TODAY is 'soon'" in r.stdout and "Traceback" not in r.stderr


# -- the course's own calendar ----------------------------------------------------------------------------------------
def test_every_day_of_the_course_has_its_dates_in_order(course):
    ready = [d for d in course.days if d.status == "ready"]
    assert all(d.release and d.due for d in ready)
    for a, b in zip(ready, ready[1:]):
        # publishing what is due can come before the next release, which may hold an earlier day's answers
        assert a.due < b.release, (a.id, b.id)
    weeks = {d.id: (d.due - d.release).days + 1 for d in ready}
    light = min(weeks.values())
    for d in ready:  # the mandatory milestones and the heavy days get more time than the lightest
        if d.mandatory or d.id in ("day11", "day12", "day19"):
            assert weeks[d.id] >= 2 * light, (d.id, weeks[d.id])


def test_the_course_calendar_prints(course):
    r = run_grader("calendar", "--json", cwd=ROOT, env={clock.TODAY_ENV: course.days[0].release.isoformat()})
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert [d["day"] for d in doc["days"]] == [d.id for d in course.days]
    assert doc["days"][0]["status"] == "released" and doc["days"][1]["status"] == "not released yet"


def test_doctor_in_a_student_repository_counts_what_its_release_holds(student, capsys):
    course_file, dest = student
    capsys.readouterr()
    cli.main(["--course", str(dest / "course.yaml"), "doctor"])  # its exit code is the machine's (no GPU here)
    out = " ".join(capsys.readouterr().out.split())
    assert "5 days, 3 released so far, 1 to come (`grader calendar` says when)" in out, out
