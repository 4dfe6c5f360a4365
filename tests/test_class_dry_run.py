"""A class from start to finish on the CPU, as an instructor runs it: the release, three students' clones (the
solution's text, the untouched stub, a kernel that does not compile), their commits, `grader grade` over the
class, the leaderboard, then the gradebook. Without a GPU every grading is compile-only; the same flow with
verdicts on a GPU is scripts/device_run.sh's GRADE_DAYS step."""
import json
import shutil
import subprocess
import sys

from grader import cli, clock, sandbox
from grader.authoring import leaks
from grader.course import load_course
from tests.conftest import ROOT, needs_nbgrader, needs_nvcc


def git(where, *args):
    return subprocess.run(["git", "-C", str(where), *args], check=True, capture_output=True, text=True)


def grader(*args, cwd):
    """The student repository's grader, as its users run it (its own course.yaml)."""
    p = subprocess.run([sys.executable, "-m", "grader", *args], cwd=cwd, capture_output=True, text=True, timeout=900)
    assert "Traceback" not in p.stdout + p.stderr, p.stdout + p.stderr
    return p


@needs_nvcc
@needs_nbgrader  # the release makes day 8's notebook with it, and the gradebook is nbgrader's
def test_a_class_from_release_to_gradebook(tmp_path, monkeypatch):
    # The class's first day, whatever today is: the release holds day 01 from then on (course.yaml's calendar).
    first = load_course(ROOT / "course.yaml").day("day01").release
    monkeypatch.setattr(clock, "today", lambda: first)
    monkeypatch.setenv(clock.TODAY_ENV, first.isoformat())
    course = tmp_path / "instructor"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(course)], check=True, capture_output=True)
    student_repo = tmp_path / "student-repo"
    assert cli.main(["--course", str(course / "course.yaml"), "release", "--to", str(student_repo)]) == 0
    git(student_repo, "init", "-q")
    git(student_repo, "add", "-A")
    git(student_repo, "-c", "user.name=staff", "-c", "user.email=staff@example.org", "commit", "-qm", "release")

    subs = tmp_path / "subs"
    solution = "\n".join(line for line in (course / "solutions/day01/softmax.cu").read_text().splitlines()
                         if not leaks.MARKER_LINE.search(line)) + "\n"
    work = {"alice": solution,  # the solution's text, as a student who solved it would have it
            "bob": None,  # the stub as released
            "carol": "__global__ void softmax_naive_kernel(const float* x, float* y, int rows, int cols) {\n"
                     "  y[0] = undefined_name;\n}\n"}  # a wrong kernel: it does not even compile
    for name, text in work.items():
        mine = subs / name
        subprocess.run(["git", "clone", "-q", str(student_repo), str(mine)], check=True, capture_output=True)
        if text is not None:
            (mine / "days/day01/softmax.cu").write_text(text)
        git(mine, "-c", f"user.name={name}", "-c", f"user.email={name}@example.org", "commit", "-qam", "day 01",
            "--allow-empty")
        # in the student's own repository the check gives the same verdict the class grading will
        assert grader("check", "day01", cwd=mine).returncode == (1 if name == "carol" else 2)

    results = tmp_path / "results"
    # In the sandbox, as `grader grade` does by default; where it cannot work here (no bwrap, or no user
    # namespaces in this container: tests/test_sandbox.py skips, saying so), the class is graded without it.
    boxed = [] if sandbox.probe().ok else ["--no-sandbox"]
    p = grader("--course", str(course / "course.yaml"), "grade", str(subs), "--days", "day01", "--out",
               str(results), *boxed, cwd=course)
    assert p.returncode == 0, p.stdout + p.stderr
    status = {n: json.loads((results / n / "day01.json").read_text())["exercises"][0]["status"] for n in work}
    assert status == {"alice": "no_gpu", "bob": "no_gpu", "carol": "build_error"}, status
    carol = json.loads((results / "carol" / "day01.json").read_text())["exercises"][0]
    assert any("undefined_name" in d for r in carol["compile"] for d in r["diagnostics"])

    board = tmp_path / "board"
    p = grader("leaderboard", "build", str(results), "--out", str(board), cwd=course)
    assert p.returncode == 0, p.stdout + p.stderr
    out = " ".join(p.stdout.split())
    assert "0 result(s) ranked" in out and "1 rejected, 2 not entered" in out, out  # carol's run was not ranked
    md = (board / "leaderboard.md").read_text()
    assert "| alice/day01.json | compiled only |" in md and "| carol/day01.json | not_ranked |" in md

    db = tmp_path / "gradebook.db"
    p = grader("--course", str(course / "course.yaml"), "gradebook", str(results), "--db", str(db), cwd=course)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "3 result(s) written" in " ".join(p.stdout.split())
    for name in work:  # compile-only earns nothing yet: the points come with a GPU's verdict
        assert f"{name}: day01-kernels 0 of 10" in p.stdout, p.stdout
    shutil.rmtree(course)
