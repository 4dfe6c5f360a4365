"""A semester of the course as committed, on the CPU: course.yaml's calendar walked date by date into one student
repository, as an instructor and a class live it.

On each date of the calendar (each release date, and the day after each due date), with the clock held there:
1. the instructor publishes every day that is due and not published yet (`grader publish`, never --force; a day
   is refused on its own due date and accepted from the day after);
2. releases into the same student repository (`grader release --to`, an update) and commits it;
3. a student pulls it and commits the solutions of the days now due, as published, into days/;
4. the class is graded (`grader grade`, compile-only without a GPU, the path tests/test_class_dry_run.py takes) on
   the first day due, the leaderboard and the gradebook read the results.

After every step: the released days are exactly those whose release date has come (the calendar publishes every
earlier day before a later day comes out, so no day waits on another: a day held back is a failure, named with the
release's reason); the exact-line leak scan (grader/authoring/leaks.py) finds no line of a solution not yet
published and no marker line in any file the releases wrote (everything but the published solutions), nor does the
release's own rule over normalised code (student_repo.unpublished_answers) find an answer to such a day; every
released day's lesson and sources are there, and every path, command and image a released page names
(tests/test_released_references.py), or the page says when its day comes; `grader calendar --to` says the same. The release is built by
`grader release --to`, so whatever holds days back there (grader/authoring/student_repo.py) is what this walks
through.

Grading compiles with nvcc, which dominates a CPU run: only the first day due is graded (the same flow on a GPU,
graded day by day, is scripts/semester_demo.py)."""
import functools
import json
import os
import shutil
import subprocess
import sys
from datetime import date, timedelta
from pathlib import Path

import pytest

import grader.course as course_module
from grader import cli, clock, sandbox
from grader.authoring import leaks, publish, semester, student_repo
from grader.course import load_course
from grader.errors import GraderError
from tests.conftest import ROOT, needs_nbgrader, needs_nvcc
from tests.test_released_references import broken_references

GRADED = 1  # how many of the first days due the class is graded on (each a compile of the student's sources)
PUBLISHED_BY_COMMAND = "day11"  # also refused by `grader publish` itself on its due date (issue 63 found it refused
#                                 on any date: "no due date … give --force")


def git(where: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false",
                           *args], cwd=where, check=True, capture_output=True, text=True).stdout


def grader(*args: str, today: date, cwd: Path) -> subprocess.CompletedProcess:
    """The grader as its own process, as of today (a grading runs in processes of its own anyway)."""
    p = subprocess.run([sys.executable, "-m", "grader", *args], cwd=cwd, capture_output=True, text=True, timeout=900,
                       env={**os.environ, clock.TODAY_ENV: today.isoformat()})
    assert "Traceback" not in p.stdout + p.stderr, p.stdout + p.stderr
    return p


def events(course) -> list[date]:
    """The calendar's dates: each release date, and the first day a due day may be published."""
    ready = [d for d in course.days if d.status == "ready"]
    return sorted({d.release for d in ready if d.release} | {d.due + timedelta(days=1) for d in ready if d.due})


def secrets(solutions: dict[str, str], published: set[str], course) -> dict[str, str]:
    """What no file a release writes may hold: each line of a solution region of a day not published yet that no stub
    shows outside a region, less course.yaml's allow_leak (each with its reason)."""
    allowed = {leaks.code_of(a.text, prefix) for a in course.allow_leak for prefix in ("//", "#")}
    given_away_nowhere = leaks.solution_lines(solutions)
    unpublished = leaks.solution_lines({p: t for p, t in solutions.items() if p.split("/")[1] not in published},
                                       allowed)
    return {c: p for c, p in unpublished.items() if c in given_away_nowhere}


def files_of(dest: Path) -> dict[str, bytes]:
    return {p.relative_to(dest).as_posix(): p.read_bytes() for p in dest.rglob("*")
            if p.is_file() and ".git" not in p.relative_to(dest).parts and p.name != ".release.json"}


@needs_nvcc
@needs_nbgrader  # day 8's notebook is released by nbgrader, and the gradebook is nbgrader's
def test_a_semester_release_by_release(tmp_path, monkeypatch, capsys):
    instructor = tmp_path / "instructor"
    git(tmp_path, "clone", "-q", "--no-hardlinks", str(ROOT), str(instructor))
    course_file = instructor / "course.yaml"
    course = load_course(course_file)
    # The course does not change during the walk: each command reads it once parsed (a parse is a quarter second,
    # and the walk runs some fifty commands), and each release writes the student's course.yaml made once (most of
    # a release's own time).
    monkeypatch.setattr(course_module, "load_course",
                        lambda path: course if Path(path) == course_file else load_course(path))
    monkeypatch.setattr(student_repo, "student_course_yaml", functools.lru_cache(student_repo.student_course_yaml))
    dates = events(course)
    assert dates, "course.yaml gives no day a release or due date: there is no semester to walk"
    solutions = {p.relative_to(instructor).as_posix(): p.read_text() for p in (instructor / "solutions").rglob("*")
                 if p.is_file() and p.suffix in (".cu", ".cuh", ".cpp", ".h", ".py", ".ipynb")}
    dest, student, subs = tmp_path / "student-repo", tmp_path / "subs" / "alice", tmp_path / "subs"
    results, board, db = tmp_path / "results", tmp_path / "board", tmp_path / "gradebook.db"
    boxed = [] if sandbox.probe().ok else ["--no-sandbox"]
    due_seen: list[str] = []
    for today in dates:
        monkeypatch.setattr(clock, "today", lambda today=today: today)
        manifest = json.loads((dest / ".release.json").read_text()) if dest.is_dir() else {"days": [], "published": {}}

        # 1. publish what is due: refused on its due date, accepted from the day after, never forced
        due = [d for d in manifest["days"] if course.day(d).due < today and d not in manifest["published"]]
        for day in due:
            last = course.day(day).due
            with pytest.raises(GraderError, match=f"{day} is due on {last.isoformat()}"):
                publish.check_due(course.day(day), last, force=False)
            if day == PUBLISHED_BY_COMMAND:
                monkeypatch.setattr(clock, "today", lambda last=last: last)
                assert cli.main(["--course", str(course_file), "publish", day, "--to", str(dest)]) == 2
                assert f"{day} is due on {last.isoformat()}" in capsys.readouterr().out
                monkeypatch.setattr(clock, "today", lambda today=today: today)
            assert cli.main(["--course", str(course_file), "publish", day, "--to", str(dest)]) == 0, (today, day)
        capsys.readouterr()

        # 2. release into the same repository, committed as the class will pull it
        assert cli.main(["--course", str(course_file), "release", "--to", str(dest)]) == 0, capsys.readouterr().out
        said = capsys.readouterr().out
        if not (dest / ".git").is_dir():
            git(dest, "init", "-q")
        git(dest, "add", "-A")
        git(dest, "commit", "-q", "--allow-empty", "-m", f"release of {today}")
        manifest = json.loads((dest / ".release.json").read_text())
        published = set(manifest["published"])
        expected = [d.id for d in course.days if d.status == "ready" and d.release <= today]
        held = [line for line in said.splitlines() if "held back" in line]
        assert manifest["days"] == expected, (today, held or said)
        assert "but waits for" not in said, said  # the release's forecast: the calendar publishes each wait in time
        assert published == {d for d in expected if course.day(d).due < today}, today

        # the student repository holds no answer to a day not published yet, and every released day's lesson
        tree = files_of(dest)
        released = {p: data for p, data in tree.items() if p in manifest["files"]}  # all but the published solutions
        assert set(tree) - set(released) <= {p for d in published for p in manifest["published"][d]}, today
        found = leaks.scan(released, secrets(solutions, published, course))
        assert not found, (today, [str(f) for f in found[:5]])
        # and by the release's rule over normalised code (grader/authoring/copies.py), beyond exact lines
        assert student_repo.unpublished_answers(dest, course_file, course) == [], today
        # every path, command and image the released pages name is there, or the page says when its day comes
        bad = broken_references(course_file.parent, dest, expected)
        assert bad == [], (today, len(bad), bad[:5])
        for day in expected:
            assert f"days/{day}/README.md" in tree, (today, day)
            for ex in course.day(day).exercises:
                assert all(f"days/{day}/{s}" in tree for s in ex.sources), (today, day, ex.name)
        assert not any(p.startswith("solutions/") and p.split("/")[1] not in published for p in tree), today
        cal = {s.day.id: s.status for s in semester.states(course, today, manifest)}  # as `grader calendar --to`
        assert {d for d, s in cal.items() if s == semester.PUBLISHED} == published, today
        assert {d for d, s in cal.items() if s == semester.NOT_RELEASED} == {d.id for d in course.days} - set(expected)

        # 3. the student pulls the release and commits the solutions of the days due, as published
        if not student.is_dir():
            git(tmp_path, "clone", "-q", str(dest), str(student))
        git(student, "pull", "-q", "--no-rebase", "--no-edit")
        for day in due:
            for src in (dest / "solutions" / day).iterdir():
                if (student / "days" / day / src.name).is_file():  # the files the day's stub gave to complete
                    shutil.copyfile(src, student / "days" / day / src.name)
            git(student, "add", "-A")
            git(student, "commit", "-q", "--allow-empty", "-m", f"{day}")
        due_seen += due

        # 4. grade the class on the first days due; the leaderboard and the gradebook read the results
        graded = [d for d in due if d in due_seen[:GRADED]]
        if not graded:
            continue
        p = grader("--course", str(course_file), "grade", str(subs), "--days", *graded, "--out", str(results), *boxed,
                   today=today, cwd=instructor)
        assert p.returncode == 0, p.stdout + p.stderr
        for day in graded:
            doc = json.loads((results / "alice" / f"{day}.json").read_text())
            assert {e["status"] for e in doc["exercises"]} == {"no_gpu"}, (day, doc["exercises"])  # it compiled
        assert cli.main(["leaderboard", "build", str(results), "--out", str(board)]) == 0
        assert "| alice/day01.json | compiled only |" in (board / "leaderboard.md").read_text()
        assert cli.main(["--course", str(course_file), "gradebook", str(results), "--db", str(db)]) == 0
        out = " ".join(capsys.readouterr().out.split())
        for day in graded:  # compile-only earns nothing yet: the points come with a GPU's verdict
            assert f"alice: {day}-kernels 0 of {sum(e.points for e in course.day(day).exercises)}" in out, out

    # the walk reached the end of the semester: every day out and published, the student's work all committed
    assert manifest["days"] == [d.id for d in course.days if d.status == "ready"] == sorted(published)
    assert cli.main(["--course", str(course_file), "calendar", "--to", str(dest), "--json"]) == 0
    assert {d["status"] for d in json.loads(capsys.readouterr().out)["days"]} == {semester.PUBLISHED}
    assert len(git(student, "log", "--oneline").splitlines()) > len(dates)
