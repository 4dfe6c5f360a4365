"""`grader release --to DIR`: the student repository, with no solution text, no marker lines and no hidden cases in
it; reproducible; written only into a new or empty folder or over an earlier release."""
import argparse
import json
import os
import shutil
import subprocess

import pytest
import yaml

from grader import cli
from grader.authoring import leaks, release, student_repo
from grader.course import load_course
from grader.errors import GraderError
from tests import release_course as rc
from tests.conftest import ROOT, run_grader


@pytest.fixture
def course_file(tmp_path, monkeypatch):
    monkeypatch.delenv("GRADER_HIDDEN", raising=False)
    return rc.make(tmp_path / "instructor")


def release_to(course_file, dest, *extra):
    return cli.main(["--course", str(course_file), "release", "--to", str(dest), *extra])


def tree_of(dest):
    """{relative path: bytes} of every file under dest but .git."""
    return {p.relative_to(dest).as_posix(): p.read_bytes() for p in sorted(dest.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(dest).parts}


def test_the_student_repository_holds_the_released_days_and_the_public_files(course_file, tmp_path, capsys):
    dest = tmp_path / "student"
    assert release_to(course_file, dest) == 0
    out = capsys.readouterr().out
    assert sorted(tree_of(dest)) == [
        ".release.json", "README.md", "common/helper.cuh", "course.yaml",
        "days/day01/README.md", "days/day01/bindings.cpp", "days/day01/k.cu",
        "days/day02/README.md", "days/day02/bindings.cpp", "days/day02/fix.cu", "days/day02/k.cu",
        "days/day05/README.md", "days/day05/bindings.cpp", "days/day05/k.cu",
        "grader/README.md", "tools/run.sh"]
    assert "released 3 day(s) (day01 … day05)" in out and f"not yet released: day03 ({rc.LATER.isoformat()})" in out
    assert "solutions (9)" in out and "hidden cases (1)" in out and "instructor_only: tests/ (2)" in out
    assert "days released later (1)" in out and "days not ready (1)" in out
    # the stubs are generated from solutions/ (the stale days/day01/k.cu in the instructor's repository is not copied)
    stub = (dest / "days/day01/k.cu").read_text()
    assert stub == release.make_stub(rc.kernel("day01"), "k.cu")
    assert "// YOUR CODE HERE: the body" in stub and "#define TILE 32" in stub
    assert "planted_index <= n" in (dest / "days/day02/fix.cu").read_text()  # the bug is planted
    assert os.access(dest / "tools/run.sh", os.X_OK) and not os.access(dest / "README.md", os.X_OK)
    # course.yaml: the same course without the planted edit (which would give the fix away); comments kept
    text = (dest / "course.yaml").read_text()
    assert text.startswith("# the course\n") and "plant" not in text
    raw = yaml.safe_load(text)
    assert raw["days"][1]["exercises"][1]["stub"] == {"fails_as": "mismatch"}
    assert load_course(dest / "course.yaml").day("day02").due == rc.SOON
    manifest = json.loads((dest / ".release.json").read_text())
    assert manifest["days"] == ["day01", "day02", "day05"] and manifest["published"] == {}
    assert set(manifest["files"]) == set(tree_of(dest)) - {".release.json"}
    assert "timed against a solution the student repository gets only with `grader publish`" in out
    assert "day02.k, against day01" in out


def test_no_solution_text_marker_line_or_hidden_case_reaches_the_release(course_file, tmp_path):
    dest = tmp_path / "student"
    assert release_to(course_file, dest) == 0
    secrets = rc.secrets_of(course_file.parent)
    assert len(secrets) > 10
    for rel, data in tree_of(dest).items():
        text = data.decode()
        for s in secrets:
            assert s not in text, f"{rel} holds {s!r}"
        for marker in ("BEGIN SOLUTION", "END SOLUTION", "INSTRUCTOR ONLY", "HIDDEN"):
            assert marker not in text, f"{rel} holds {marker!r}"
    assert not (dest / "solutions").exists() and not (dest / "hidden.yaml").exists()
    assert not (dest / "tests").exists()


def test_a_release_is_reproducible_and_a_second_one_rewrites_nothing(course_file, tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    assert release_to(course_file, a) == 0 and release_to(course_file, b) == 0
    assert tree_of(a) == tree_of(b)
    assert {p: os.stat(a / p).st_mode for p in tree_of(a)} == {p: os.stat(b / p).st_mode for p in tree_of(b)}
    capsys.readouterr()
    assert release_to(course_file, a) == 0
    assert "0 file(s) written, 0 removed, 15 unchanged" in capsys.readouterr().out


def test_a_later_release_updates_an_earlier_one_and_keeps_what_is_not_its_own(course_file, tmp_path, capsys):
    dest = tmp_path / "student"
    assert release_to(course_file, dest) == 0
    rc.write(dest, ".github/workflows/classroom.yml", "on: push\n")  # the instructor's own addition
    (dest / "days/day05/README.md").write_text("edited in the student repository\n")
    root = course_file.parent
    doc = rc.course_doc()
    doc["days"][4]["release"] = rc.LATER  # day05 moves to later
    rc.write(root, "course.yaml", yaml.safe_dump(doc, sort_keys=False))
    (root / "solutions/day01/bindings.cpp").write_text(rc.BINDINGS + "int more();\n")
    rc.git(root, "commit", "-qam", "day05 later")
    capsys.readouterr()
    assert release_to(course_file, dest) == 0
    out = capsys.readouterr().out
    files = tree_of(dest)
    assert not any(p.startswith("days/day05/") for p in files) and not (dest / "days/day05").exists()
    assert files[".github/workflows/classroom.yml"] == b"on: push\n"
    assert files["days/day01/bindings.cpp"].endswith(b"int more();\n")
    assert "3 removed" in out and "1 file(s) of the previous release were edited" in out
    assert json.loads(files[".release.json"])["days"] == ["day01", "day02"]


@pytest.mark.parametrize("prepare, message", [
    (lambda d: (d / "notes.txt").write_text("mine"), "is not empty (1 file(s), e.g. notes.txt) and is not a previous release"),
    (lambda d: (d / "x").write_text("") or None, "is not a previous release (it has no .release.json)"),
])
def test_a_folder_that_is_not_a_release_is_refused(course_file, tmp_path, capsys, prepare, message):
    dest = tmp_path / "student"
    dest.mkdir()
    prepare(dest)
    assert release_to(course_file, dest) == 2
    assert message in capsys.readouterr().out
    assert not (dest / ".release.json").exists()


def test_an_empty_git_repository_is_a_fine_target(course_file, tmp_path):
    dest = tmp_path / "student"
    dest.mkdir()
    rc.git(dest, "init", "-q")
    assert release_to(course_file, dest) == 0
    assert (dest / ".git").is_dir() and (dest / "days/day01/k.cu").is_file()


def test_refusals_of_a_previous_release_say_why(course_file, tmp_path, capsys):
    dest = tmp_path / "student"
    assert release_to(course_file, dest) == 0
    (dest / "hidden.yaml").write_text(rc.HIDDEN)
    assert release_to(course_file, dest) == 2
    assert "hidden.yaml is a file of hidden cases, and a student repository must not hold one" in capsys.readouterr().out
    (dest / "hidden.yaml").unlink()
    rc.write(dest, "solutions/day01/k.cu", "x")
    assert release_to(course_file, dest) == 2
    assert "solutions/day01/k.cu is a solution that `grader publish` did not put there" in capsys.readouterr().out
    shutil.rmtree(dest / "solutions")
    (dest / "days/day05/k.cu").unlink()
    rc.write(dest, "days/day05/k.cu", "mine")  # the release's own file, edited: replaced (with a note)
    rc.write(dest, "days/day05/extra.cu", "x")
    assert release_to(course_file, dest) == 0
    (dest / ".release.json").write_text("{not json")
    assert release_to(course_file, dest) == 2
    assert ".release.json is not a release manifest" in capsys.readouterr().out


def test_a_file_the_release_would_overwrite_that_is_not_its_own_is_refused(course_file, tmp_path, capsys):
    dest = tmp_path / "student"
    assert release_to(course_file, dest) == 0
    manifest = json.loads((dest / ".release.json").read_text())
    del manifest["files"]["README.md"]
    (dest / ".release.json").write_text(json.dumps(manifest))
    assert release_to(course_file, dest) == 2
    assert "README.md is not from the previous release and would be overwritten" in capsys.readouterr().out


@pytest.mark.parametrize("where, message", [
    (lambda root, tmp: root, "holds the course itself"),
    (lambda root, tmp: root.parent, "holds the course itself"),
    (lambda root, tmp: root / "days", "holds files of the course (tracked by git)"),
    (lambda root, tmp: root / "README.md", "exists and is not a folder"),
])
def test_the_course_itself_is_never_a_target(course_file, tmp_path, capsys, where, message):
    assert release_to(course_file, where(course_file.parent, tmp_path)) == 2
    assert message in capsys.readouterr().out


def test_a_folder_that_cannot_be_made_is_an_error_not_a_traceback(course_file, tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    assert release_to(course_file, tmp_path / "afile" / "student") == 2
    out = capsys.readouterr().out
    assert "--to: cannot write into" in out and "internal error" not in out


@pytest.mark.parametrize("args, message", [
    (["release", "day01", "--to", "x"], "--to writes every day released by today"),
    (["release", "--check", "--to", "x"], "--check compares days/ with what solutions/ generate"),
    (["release", "--hidden", "h.yaml"], "--hidden names the hidden cases a release to a student repository"),
])
def test_release_options_that_do_not_combine(course_file, capsys, args, message):
    assert cli.main(["--course", str(course_file), *args]) == 2
    assert message in capsys.readouterr().out


def test_a_course_outside_git_and_an_untracked_solution_are_explained(tmp_path, course_file, capsys):
    loose = tmp_path / "loose"
    shutil.copytree(course_file.parent, loose, ignore=shutil.ignore_patterns(".git"))
    assert release_to(loose / "course.yaml", tmp_path / "s1") == 2
    assert "is not in a git repository" in capsys.readouterr().out
    root = course_file.parent
    rc.git(root, "rm", "-q", "--cached", "solutions/day05/k.cu")
    assert release_to(course_file, tmp_path / "s2") == 2
    assert "solutions/day05/k.cu is not tracked by git" in capsys.readouterr().out
    assert not (tmp_path / "s2").exists()


def test_the_hidden_cases_stay_out_wherever_they_live(course_file, tmp_path, monkeypatch):
    root = course_file.parent
    rc.git(root, "mv", "hidden.yaml", "grader/cases.yaml")
    rc.git(root, "commit", "-qm", "moved")
    monkeypatch.setenv("GRADER_HIDDEN", str(root / "grader/cases.yaml"))
    dest = tmp_path / "student"
    assert release_to(course_file, dest) == 0
    assert "grader/cases.yaml" not in tree_of(dest)
    monkeypatch.delenv("GRADER_HIDDEN")  # without saying where it is, a copy under another name is still found
    rc.git(root, "rm", "-q", "--cached", "grader/cases.yaml")
    rc.write(root, "grader/notes.yaml", rc.HIDDEN)
    rc.git(root, "add", "grader/notes.yaml")
    assert release_to(course_file, tmp_path / "s2", "--hidden", str(root / "grader/cases.yaml")) == 2


def test_a_stub_that_would_leak_stops_the_release_before_anything_is_written(course_file, tmp_path, monkeypatch,
                                                                             capsys):
    monkeypatch.setattr(release, "make_stub", lambda text, path, plants=(): text)  # a broken stub pipeline
    dest = tmp_path / "student"
    assert release_to(course_file, dest) == 2
    out = capsys.readouterr().out
    assert "would hold instructor-only text, so nothing was written" in out
    assert "days/day01/k.cu:7: a marker line" in out and "from a solution region of solutions/day01/k.cu" in out
    assert not dest.exists()


def test_a_public_file_with_a_marker_line_stops_the_release(course_file, tmp_path, capsys):
    root = course_file.parent
    rc.write(root, "common/helper.cuh", "#pragma once\n  // BEGIN SOLUTION\nint x;\n  // END SOLUTION\n")
    assert release_to(course_file, tmp_path / "student") == 2
    assert "common/helper.cuh:2: a marker line the release should have removed" in capsys.readouterr().out


def test_instructor_only_paths_come_from_course_yaml(course_file, tmp_path, capsys):
    root = course_file.parent
    doc = rc.course_doc()
    doc["instructor_only"] = ["tools/*.sh", "tests/known_wrong.yaml", "**/README.md"]
    rc.write(root, "course.yaml", yaml.safe_dump(doc, sort_keys=False))
    dest = tmp_path / "student"
    assert release_to(course_file, dest) == 0
    files = tree_of(dest)
    assert "tests/test_x.py" in files and "tests/known_wrong.yaml" not in files and "tools/run.sh" not in files
    # the lessons and the instructor's README stay out; the README the release writes for students is its own
    assert [p for p in files if p.endswith("README.md")] == ["README.md"] and b"## What is allowed" in files["README.md"]
    assert "note: 1 tracked file(s) have uncommitted changes" in capsys.readouterr().out  # course.yaml
    (root / "tools/run.sh").write_text("# not released: not worth a note\n")
    assert release_to(course_file, dest) == 0
    assert "note: 1 tracked file(s) have uncommitted changes" in capsys.readouterr().out
    (root / "solutions/day01/k.cu").write_text(rc.kernel("day01") + "// edited\n")  # its stub is released
    assert release_to(course_file, dest) == 0
    assert "note: 2 tracked file(s) have uncommitted changes" in capsys.readouterr().out


def test_a_lesson_that_quotes_a_holes_answer_stops_the_release_unless_allowed_with_a_reason(course_file, tmp_path,
                                                                                           capsys):
    root = course_file.parent
    line = "float secret_day01_value = x[i] * 17.0f + 0.day01f;"
    (root / "days/day01/README.md").write_text(f"```cuda\n{line}\n```\n")
    assert release_to(course_file, tmp_path / "student") == 2
    out = " ".join(capsys.readouterr().out.split())
    assert "days/day01/README.md:2: line from a solution region of solutions/day01/k.cu" in out and "allow_leak" in out
    assert not (tmp_path / "student").exists()
    doc = rc.course_doc()
    doc["allow_leak"] = [{"text": line, "reason": "the lesson's worked example, on purpose"}]
    rc.write(root, "course.yaml", yaml.safe_dump(doc, sort_keys=False))
    assert release_to(course_file, tmp_path / "student") == 0
    doc["allow_leak"] = [{"text": line, "reason": ""}]  # a reason is required
    rc.write(root, "course.yaml", yaml.safe_dump(doc, sort_keys=False))
    assert release_to(course_file, tmp_path / "again") == 2 and "reason" in capsys.readouterr().out


def test_a_shared_file_of_answers_waits_for_its_day_and_holds_back_the_days_that_include_it(course_file, tmp_path,
                                                                                            capsys):
    """course.yaml's `answers:`: a shared header that holds day01's answers stays out until day01's solution is
    published in the target, and day02, whose code includes it, waits with it; then both go out."""
    root = course_file.parent
    rc.write(root, "common/answers.cuh", "#pragma once\n// day 01's helpers, written out\n")
    sol = root / "solutions/day02/k.cu"
    sol.write_text('#include "answers.cuh"\n' + sol.read_text())
    rc.git(root, "add", "-A")
    doc = rc.course_doc()
    doc["answers"] = {"common/answers.cuh": "day01"}
    rc.write(root, "course.yaml", yaml.safe_dump(doc, sort_keys=False))
    dest = tmp_path / "student"
    assert release_to(course_file, dest) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert ("day02 held back: it includes common/answers.cuh, which holds day01's answers (course.yaml's `answers:`); "
            "it goes out once day01 is published (`grader publish day01 --to") in out
    files = tree_of(dest)
    assert "common/answers.cuh" not in files and not any(p.startswith("days/day02/") for p in files)
    assert json.loads(files[".release.json"])["days"] == ["day01", "day05"]
    assert cli.main(["--course", str(course_file), "publish", "day01", "--to", str(dest)]) == 0
    assert release_to(course_file, dest) == 0
    files = tree_of(dest)
    assert "common/answers.cuh" in files and "days/day02/k.cu" in files
    assert json.loads(files[".release.json"])["days"] == ["day01", "day02", "day05"]
    doc["answers"] = {"common/answers.cuh": "day02"}  # day02 would hold back itself: a course error
    rc.write(root, "course.yaml", yaml.safe_dump(doc, sort_keys=False))
    assert release_to(course_file, tmp_path / "other") == 2
    assert "holds day02's own answers" in " ".join(capsys.readouterr().out.split())


def test_an_include_in_instructor_only_lines_holds_no_day_back(course_file, tmp_path, capsys):
    """An instructors' kernel may build on a later day's header of answers (`#include` on an INSTRUCTOR ONLY line):
    neither the stub nor the published solution carries that line, so the day goes out on its date."""
    root = course_file.parent
    rc.write(root, "common/answers.cuh", "#pragma once\n// day 05's helpers, written out\n")
    sol = root / "solutions/day01/k.cu"
    sol.write_text('#include "answers.cuh"  // INSTRUCTOR ONLY\n' + sol.read_text())
    rc.git(root, "add", "-A")
    doc = rc.course_doc()
    doc["answers"] = {"common/answers.cuh": "day05"}
    rc.write(root, "course.yaml", yaml.safe_dump(doc, sort_keys=False))
    dest = tmp_path / "student"
    assert release_to(course_file, dest) == 0
    assert "held back" not in " ".join(capsys.readouterr().out.split())
    files = tree_of(dest)
    assert "days/day01/k.cu" in files and "answers.cuh" not in files["days/day01/k.cu"].decode()
    assert "common/answers.cuh" not in files


# -- the scanner --------------------------------------------------------------------------------------------------
def test_solution_lines_leave_out_stub_material_and_short_lines():
    sol = {"solutions/day01/a.cu": "int given_helper_function(int x);\n// BEGIN SOLUTION\n"
                                   "int given_helper_function(int x);\n  return secret_value_of_x + 1;  // why\n}\n"
                                   "// END SOLUTION\nint tuning_knob_of_the_day = 3;  // INSTRUCTOR ONLY\n"}
    got = leaks.solution_lines(sol)
    assert got == {"return secret_value_of_x + 1;": "solutions/day01/a.cu", "int tuning_knob_of_the_day = 3;":
                   "solutions/day01/a.cu"}
    assert leaks.solution_lines(sol, public={"int tuning_knob_of_the_day = 3;"}) == {
        "return secret_value_of_x + 1;": "solutions/day01/a.cu"}
    found = leaks.scan({"x.cu": b"  return  secret_value_of_x + 1;   // reworded comment\n"}, got)
    assert [str(f) for f in found] == ["x.cu:1: line from a solution region of solutions/day01/a.cu: "
                                       "return secret_value_of_x + 1;"]


def test_notebook_cells_are_scanned_line_by_line():
    nb = {"cells": [{"cell_type": "code", "source": ["x = 1\n", "    ### BEGIN SOLUTION\n",
                                                        "answer_of_the_notebook = 42\n", "### END SOLUTION\n"]}]}
    text = json.dumps(nb, indent=1)
    secrets = leaks.solution_lines({"solutions/day08/a.ipynb": text})
    assert secrets == {"answer_of_the_notebook = 42": "solutions/day08/a.ipynb"}
    found = [str(f) for f in leaks.scan({"days/day08/a.ipynb": text.encode()}, secrets)]
    assert any("a marker line" in f for f in found) and any("cell line" in f for f in found)


# -- the course itself ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def committed_course(tmp_path_factory):
    """The course as committed (HEAD), cloned: what a release from a clean checkout gives."""
    where = tmp_path_factory.mktemp("course") / "course"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(where)], check=True, capture_output=True)
    return where


def test_the_course_releases_without_solution_text(committed_course, tmp_path):
    pytest.importorskip("nbgrader")  # day 8's notebook is released by nbgrader
    root = committed_course
    course = load_course(root / "course.yaml")
    from datetime import date

    far = date(9999, 1, 1)
    tree = student_repo.build(root, root / "course.yaml", course, far)
    student_repo.write(tree, tmp_path / "a", root, course, {"hidden.yaml"})
    again = student_repo.build(root, root / "course.yaml", course, far)
    assert {p: e.data for p, e in again.files.items()} == {p: e.data for p, e in tree.files.items()}
    files = tree_of(tmp_path / "a")
    assert not any(p.startswith(("solutions/", "tests/")) for p in files) and "hidden.yaml" not in files
    assert set(tree.days) == {p.split("/")[1] for p in files if p.startswith("days/day")}  # each with its stubs
    # An independent look: every non-trivial line of every solution region, except those a stub hands out
    # (outside the regions) and course.yaml's allow_leak (each with its reason), must be absent from every released
    # file, lessons and shared headers included (no hole's answer anywhere), and so must every marker line.
    sol = {p.relative_to(root).as_posix(): p.read_text() for p in (root / "solutions").rglob("*")
           if p.is_file() and p.suffix in (".cu", ".cuh", ".cpp", ".h", ".py", ".ipynb")}
    allowed = {leaks.code_of(a.text, prefix) for a in course.allow_leak for prefix in ("//", "#")}
    secrets = {c for c in leaks.solution_lines(sol) if c not in allowed}
    assert len(secrets) > 500 and all(a.reason for a in course.allow_leak)
    bodies = secrets
    for rel, data in files.items():
        if rel == ".release.json" or rel.endswith((".png", ".svg", ".jpg")):  # a figure holds no code
            continue
        text = data.decode("utf-8")
        for n, line in enumerate(leaks.lines_of(rel, text), 1):
            assert leaks.code_of(line, "#" if rel.endswith((".py", ".ipynb")) else "//") not in bodies, f"{rel}:{n}"
        for n, line in enumerate(text.splitlines(), 1):
            assert not leaks.MARKER_LINE.search(line), f"{rel}:{n}: {line}"
    assert "plant:" not in files["course.yaml"].decode()


def test_release_to_from_the_command_line(committed_course, tmp_path):
    pytest.importorskip("nbgrader")
    course = str(committed_course / "course.yaml")  # the grader of this checkout, the course as committed
    # the first day of the course's semester, whatever today is: the release holds day 01 then
    first = {"GRADER_TODAY": load_course(committed_course / "course.yaml").days[0].release.isoformat()}
    r = run_grader("--course", course, "release", "--to", str(tmp_path / "s"), env=first)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "released 1 day(s) (day01)" in r.stdout and "left out:" in r.stdout and "Traceback" not in r.stderr
    r = run_grader("--course", course, "release", "--to", str(tmp_path / "s"), env=first)
    assert r.returncode == 0 and " 0 file(s) written" in r.stdout


def test_the_released_syllabus_says_when_each_day_comes_and_links_only_released_lessons(committed_course):
    """On the first day a class has one lesson: the syllabus it receives links that one, and every other day says
    when it comes (the instructor's syllabus.md links all twenty)."""
    pytest.importorskip("nbgrader")
    course = load_course(committed_course / "course.yaml")
    first = course.days[0].release
    tree = student_repo.build(committed_course, committed_course / "course.yaml", course, first)
    text = tree.files["syllabus.md"].data.decode()
    assert tree.days == ["day01"] and "(days/day01/README.md)" in text
    assert "days/day02/README.md" not in text
    assert f"not released yet (on {course.day('day02').release.isoformat()})" in text


def test_refused_writes_are_grader_errors(course_file, tmp_path):
    root = course_file.parent
    course = load_course(course_file)
    tree = student_repo.build(root, course_file, course, rc.TODAY)
    with pytest.raises(GraderError, match="holds the course itself"):
        student_repo.write(tree, root, root, course, {"hidden.yaml"})


def test_the_released_readme_is_the_students_and_everything_it_names_is_there(committed_course):
    """The README a class receives is written for students: every path and link it names is in the release (dayNN
    standing for each released day), every `grader` command it shows is one the grader has, and nothing of the
    instructor's side (tests, scripts, CI, solutions) is mentioned."""
    import re
    from datetime import date

    pytest.importorskip("nbgrader")
    root = committed_course
    course = load_course(root / "course.yaml")
    tree = student_repo.build(root, root / "course.yaml", course, date(9999, 1, 1))
    readme = tree.files["README.md"].data.decode()
    files = set(tree.files)
    folders = {"/".join(p.split("/")[:i]) + "/" for p in files for i in range(1, p.count("/") + 1)}
    assert readme.startswith(f"# {course.title}\n") and "## What is allowed" in readme
    named = set(re.findall(r"`((?:days|common|tasks|grader)/[\w./-]*|[\w-]+\.(?:md|yaml))`", readme))
    named |= set(re.findall(r"\]\(([^)#]+)\)", readme))
    assert len(named) >= 5
    for path in named:
        for day in (tree.days if "dayNN" in path else [None]):
            p = path.replace("dayNN", day) if day else path
            assert p in files or p in folders or p.rstrip("/") + "/" in folders, path
    subcommands = {a for act in cli.parser()._actions if isinstance(act, argparse._SubParsersAction) for a in act.choices}
    code = re.findall(r"```bash\n(.*?)```", readme, re.S) + re.findall(r"`([^`\n]+)`", readme)
    shown = {m for c in code for m in re.findall(r"(?m)(?:^|&& )grader (\w+)", c)}
    assert shown and shown <= subcommands, shown - subcommands
    for day in tree.days:  # the table names each released day's exercises as --exercise takes them
        assert all(e.name in readme for e in course.day(day).exercises)
    for instructors in ("tests/", "scripts/", ".ci/", "solutions/", "pytest", "device_run"):
        assert instructors not in readme, instructors
