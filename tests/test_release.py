import pytest

from grader.authoring import release
from grader.errors import GraderError
from tests.conftest import run_grader

SOLUTION = """\
__global__ void k(const float* x, float* y, int n) {
    // BEGIN SOLUTION
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
    // END SOLUTION
}
int launch() {
  return 0;
}
"""


def test_regions_become_one_indented_placeholder(tmp_path):
    stub = release.strip_solutions(SOLUTION, tmp_path / "k.cu")
    assert stub.splitlines()[1] == "    // YOUR CODE HERE"
    assert "threadIdx" not in stub and "BEGIN" not in stub and "int launch() {" in stub


def test_python_files_get_python_comments(tmp_path):
    stub = release.strip_solutions("def f():\n    # BEGIN SOLUTION\n    return 1\n    # END SOLUTION\n",
                                   tmp_path / "f.py")
    assert stub == "def f():\n    # YOUR CODE HERE\n"


@pytest.mark.parametrize("text, msg", [
    ("// BEGIN SOLUTION\nx\n", "k.cu:1: `BEGIN SOLUTION` is never closed"),
    ("x\n// END SOLUTION\n", "k.cu:2: `END SOLUTION` without a matching"),
    ("// BEGIN SOLUTION\n// BEGIN SOLUTION\n// END SOLUTION\n", "k.cu:2: `BEGIN SOLUTION` inside the region"),
])
def test_unbalanced_markers_are_reported_with_file_and_line(tmp_path, text, msg):
    with pytest.raises(GraderError, match=msg.replace("`", ".")):
        release.strip_solutions(text, tmp_path / "k.cu")


def test_every_solution_has_a_student_part_and_its_stub_differs(course, root):
    plan = release.release_plan(course, root)
    assert plan, "no ready day?"
    for day in (d for d in course.days if d.status == "ready"):
        kernels = [p for p in plan if p.target.parent.name == day.id and p.target.suffix == ".cu"]
        assert kernels and all(release.has_placeholder(p.text) for p in kernels), day.id


def test_days_folder_matches_release(root):
    # The generated stubs are committed; this is the check CI relies on.
    r = run_grader("release", "--check", cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr


def test_release_backs_up_what_it_replaces(course, root, tmp_path):
    plan = release.release_plan(course, root, ["day01"])
    moved = [release.Planned(p.source, tmp_path / "days" / "day01" / p.target.name, p.text) for p in plan]
    moved[0].target.parent.mkdir(parents=True)
    moved[0].target.write_text("student work in progress\n")
    written, saved = release.write(moved, tmp_path / "backup")
    assert set(written) == {p.target for p in moved}
    assert len(saved) == 1 and saved[0].read_text() == "student work in progress\n"
    assert release.write(moved, tmp_path / "backup2") == ([], [])  # idempotent


def test_syllabus_matches_course_yaml(root):
    r = run_grader("syllabus", "--check", cwd=root)
    assert r.returncode == 0, r.stdout
