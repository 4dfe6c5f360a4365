"""`grader publish dayNN --to DIR`: a day's solution goes into a student repository after its due date, not before
(unless forced), and the student repository's grader then finds it; what a student meets before that."""
import json

import pytest
import yaml

from grader.check import day_check
from grader import cli
from grader.authoring import release
from grader.course import load_course
from tests import release_course as rc


@pytest.fixture
def student(tmp_path, monkeypatch):
    """(the instructor's course.yaml, a student repository released from it today)."""
    monkeypatch.delenv("GRADER_HIDDEN", raising=False)
    course_file = rc.make(tmp_path / "instructor")
    dest = tmp_path / "student"
    assert cli.main(["--course", str(course_file), "release", "--to", str(dest)]) == 0
    return course_file, dest


def publish(course_file, day, dest, *extra):
    return cli.main(["--course", str(course_file), "publish", day, "--to", str(dest), *extra])


def test_a_day_past_its_due_date_is_published_without_markers_or_instructor_only_lines(student, capsys):
    course_file, dest = student
    capsys.readouterr()
    assert publish(course_file, "1", dest) == 0
    assert "published day01's solution into" in capsys.readouterr().out
    k = (dest / "solutions/day01/k.cu").read_text()
    assert k == ('#include "helper.cuh"\n#define TILE 32\n__global__ void k(const float* x, float* y, int n) {\n'
                 "  int i = blockIdx.x * TILE + threadIdx.x;\n"
                 "  float secret_day01_value = x[i] * 17.0f + 0.day01f;\n"
                 "  if (i < n) y[i] = secret_day01_value;  // keep the day01 guard\n}\n")
    assert (dest / "solutions/day01/bindings.cpp").read_text() == rc.BINDINGS
    manifest = json.loads((dest / ".release.json").read_text())
    assert sorted(manifest["published"]["day01"]) == ["solutions/day01/bindings.cpp", "solutions/day01/k.cu"]
    # a later release keeps it, and publishing again changes nothing
    assert cli.main(["--course", str(course_file), "release", "--to", str(dest)]) == 0
    assert (dest / "solutions/day01/k.cu").read_text() == k
    capsys.readouterr()
    assert publish(course_file, "day01", dest) == 0
    assert "0 file(s) written, 0 removed, 2 unchanged" in capsys.readouterr().out


def test_a_day_not_due_yet_is_refused_with_its_date_unless_forced(student, capsys):
    course_file, dest = student
    capsys.readouterr()
    assert publish(course_file, "day02", dest) == 2
    out = capsys.readouterr().out
    after = rc.SOON.toordinal() + 1
    from datetime import date

    assert (f"day02 is due on {rc.SOON.isoformat()}: its solution can be published from "
            f"{date.fromordinal(after).isoformat()} on (today is {rc.TODAY.isoformat()}); give --force") in out
    assert not (dest / "solutions").exists()
    assert publish(course_file, "day02", dest, "--force") == 0
    out = capsys.readouterr().out
    assert "published before it is due (--force): day02 is due on" in out
    # the published solution is the real one, not the stub with its planted bug
    assert "planted_index < n" in (dest / "solutions/day02/fix.cu").read_text()


def test_a_day_without_a_due_date_needs_force(student, capsys):
    course_file, dest = student
    assert publish(course_file, "day05", dest) == 2
    assert "day05 has no due date in course.yaml (`due: YYYY-MM-DD`); give --force" in capsys.readouterr().out
    assert publish(course_file, "day05", dest, "--force") == 0


@pytest.mark.parametrize("day, target, message", [
    ("day03", None, "day03 is not released in"),
    ("day04", None, "day04 is planned, not ready: there is no solution to publish"),
    ("day42", None, "no day 'day42' in course.yaml"),
    ("day01", "elsewhere", "is not a student repository written by `grader release --to`"),
])
def test_publish_refusals_say_why(student, tmp_path, capsys, day, target, message):
    course_file, dest = student
    if target:
        dest = tmp_path / target
        dest.mkdir()
    capsys.readouterr()
    assert publish(course_file, day, dest, "--force") == 2
    out = capsys.readouterr().out
    assert message in out and "Traceback" not in out


def test_a_file_dropped_from_the_solution_is_dropped_from_the_published_one(student, capsys):
    course_file, dest = student
    assert publish(course_file, "day01", dest) == 0
    root = course_file.parent
    rc.write(root, "solutions/day01/notes.md", "how it works\n")
    rc.git(root, "add", "solutions/day01/notes.md")
    rc.git(root, "rm", "-q", "solutions/day01/bindings.cpp")
    rc.write(root, "solutions/day01/bindings.cpp", rc.BINDINGS)  # back, untracked: not part of the course
    capsys.readouterr()
    assert publish(course_file, "day01", dest) == 0
    assert "1 file(s) written, 1 removed, 1 unchanged" in capsys.readouterr().out
    assert not (dest / "solutions/day01/bindings.cpp").exists() and (dest / "solutions/day01/notes.md").is_file()


def test_published_solution_keeps_the_code_and_reports_bad_markers(tmp_path):
    text = "a\n  # BEGIN SOLUTION: why\n  b = 1\n  # END SOLUTION\nc = 2  # INSTRUCTOR ONLY\n"
    assert release.published_solution(text, tmp_path / "f.py") == "a\n  b = 1\n"
    with pytest.raises(release.GraderError, match="never closed"):
        release.published_solution("// BEGIN SOLUTION\nx\n", tmp_path / "k.cu")


# -- the student repository's grader -------------------------------------------------------------------------------
def check(dest, *args):
    return cli.main(["--course", str(dest / "course.yaml"), "check", *args])


def test_a_day_released_later_is_explained_in_the_student_repository(student, capsys):
    _, dest = student
    capsys.readouterr()
    assert check(dest, "day03") == 2
    assert f"day03 is not released yet (on {rc.LATER.isoformat()}); its folder comes with the release" in capsys.readouterr().out
    assert check(dest, "day01", "--solution") == 2
    assert ("a day's solution appears once the instructor publishes it (after its due date, "
            f"{rc.PAST.isoformat()})") in capsys.readouterr().out


def test_a_baseline_that_is_not_published_yet_is_explained_then_found(student, capsys):
    """Before the baseline is published the exercise is still checked: correctness (compile-only without a GPU),
    with a note; a ranked run, which is timed, is refused; once published the exercise is timed again."""
    course_file, dest = student
    capsys.readouterr()
    course = load_course(dest / "course.yaml")
    notes = day_check.unpublished_baselines(course.day("day02").exercises, course, dest)
    assert notes["k"] == ("k is timed against day01's solution, which this repository does not have yet "
                          "(solutions/day01/ arrives when the instructor publishes it, after day01 is due "
                          f"({rc.PAST.isoformat()})): its correctness is checked now, its speed once it arrives")
    assert check(dest, "day02", "--exercise", "k") != 2  # checked, not refused
    out = " ".join(capsys.readouterr().out.split())
    assert "its correctness is checked now" in out and "timed against day01's solution" in out
    assert check(dest, "day02", "--exercise", "k", "--ranked") == 2
    assert "a ranked run is timed, so it waits for that solution" in " ".join(capsys.readouterr().out.split())
    assert publish(course_file, "day01", dest) == 0
    assert day_check.unpublished_baselines(course.day("day02").exercises, course, dest) == {}


def test_dates_survive_the_release(student):
    _, dest = student
    raw = yaml.safe_load((dest / "course.yaml").read_text())
    assert [d.get("due") for d in raw["days"]] == [rc.PAST, rc.SOON, None, None, None]


def test_a_solution_that_cannot_be_written_is_an_error_not_a_traceback(student, capsys):
    course_file, dest = student
    (dest / "solutions").write_text("a file where the folder goes")
    capsys.readouterr()
    assert publish(course_file, "day01", dest) == 2
    out = capsys.readouterr().out
    assert "--to: cannot write into" in out and "internal error" not in out


def test_a_published_notebook_keeps_its_solutions_and_never_its_hidden_tests():
    """nbgrader's hidden tests grade every submission, late ones too: `grader publish` hands out a notebook's
    solutions (day 08's), never its hidden tests, and no marker line a release would refuse."""
    import json as _json

    from grader.authoring import leaks
    from grader.authoring.publish import published_notebook
    from tests.conftest import ROOT

    src = (ROOT / "solutions" / "day08" / "analysis.ipynb").read_bytes()
    assert b"HIDDEN TESTS" in src
    out = published_notebook(src, "solutions/day08/analysis.ipynb")
    text = "\n".join(leaks.notebook_lines(out.decode()))
    assert "softmax_intensity(3, 7, 8)" in src.decode() and "softmax_intensity(3, 7, 8)" not in text
    assert "return 5 * elems / (2 * elems * bytes_per_elem)" in text  # the solution itself
    assert "assert isclose(softmax_intensity(4096, 4096, 4), 0.625" in text  # the tests students always had
    assert not any(leaks.MARKER_LINE.search(line) for line in text.splitlines())
    assert all(c.get("outputs", []) == [] for c in _json.loads(out)["cells"] if c["cell_type"] == "code")
