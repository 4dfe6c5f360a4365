"""The day-8 analysis notebook: released by nbgrader, autograded by nbgrader, on the CPU.

One scratch nbgrader course holds three submissions (the instructor's notebook, the untouched stub, the stub
answered with one wrong function) and one autograde run grades them all: each run starts a Python kernel per
notebook, so this is the slow part of the file.
"""
import io
import json
import logging
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from grader.authoring import notebooks  # imports nbgrader only when it is used
from tests.conftest import needs_nbgrader  # a test at a time: the missing-nbgrader test below runs either way
# nbgrader's gradebook trips SQLAlchemy's autoflush warnings while autograding; they are its own and harmless.
pytestmark = pytest.mark.filterwarnings("ignore::Warning:nbgrader.api")

DAY, NAME = "day08", "analysis.ipynb"
POINTS = 10
# Puts a kernel exactly on the ridge on the wrong side: the visible asserts still pass and only a hidden one
# fails, so a score of 9 also shows that autograde put the hidden tests back.
WRONG = {"classify": "def classify(ai, peak_flops, bandwidth):\n"
                     "    return 'memory-bound' if ai <= peak_flops / bandwidth else 'compute-bound'\n"}
WRONG_TEST, WRONG_POINTS = "test_classify", 1


def nbgrader_meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def answered(released, solution, wrong: dict[str, str]):
    """The released notebook with every solution cell filled in from the instructor's, except those in wrong."""
    import nbformat

    answers = {nbgrader_meta(c)["grade_id"]: c.source for c in solution.cells if nbgrader_meta(c).get("solution")}
    nb = nbformat.from_dict(json.loads(json.dumps(released)))  # a deep copy
    for cell in nb.cells:
        gid = nbgrader_meta(cell).get("grade_id")
        if nbgrader_meta(cell).get("solution"):
            cell.source = wrong.get(gid, answers[gid])
    return nb


@pytest.fixture
def jupyter_env(tmp_path, monkeypatch):
    # Pin the kernel to this interpreter (a user-wide "python3" kernelspec could point at another one, without
    # nbgrader's environment), keep Jupyter's and IPython's state out of $HOME, and put this environment's
    # scripts on PATH: nbgrader runs the `alembic` command when it creates a gradebook.
    spec = tmp_path / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    return tmp_path


@needs_nbgrader
def test_ipykernel_is_installed():
    # autograde executes the notebook in a Jupyter kernel; without ipykernel every submission would score 0.
    import ipykernel  # noqa: F401


@needs_nbgrader
def test_autograde_scores_solution_stub_and_one_wrong_answer(root, jupyter_env):
    import nbformat
    from nbgrader.api import Gradebook
    from nbgrader.converters import Autograde
    from nbgrader.converters.base import NbGraderException
    from nbgrader.coursedir import CourseDirectory

    course = jupyter_env / "course"
    (course / "source" / DAY).mkdir(parents=True)
    shutil.copyfile(root / "solutions" / DAY / NAME, course / "source" / DAY / NAME)
    notebooks.generate_assignment(course, DAY)  # with the gradebook, which holds the hidden tests
    released = nbformat.read(course / "release" / DAY / NAME, as_version=4)
    solution = nbformat.read(root / "solutions" / DAY / NAME, as_version=4)
    submissions = {"instructor": solution, "stub": released, "one-wrong": answered(released, solution, WRONG)}
    for student, nb in submissions.items():
        (course / "submitted" / student / DAY).mkdir(parents=True)
        nbformat.write(nb, course / "submitted" / student / DAY / NAME)

    # One autograde run for every student (student_id "*"); its log goes into the failure message.
    log_text = io.StringIO()
    log = logging.getLogger("test_notebook.autograde")
    log.handlers[:] = [logging.StreamHandler(log_text)]
    log.setLevel(logging.INFO)
    log.propagate = False
    config = notebooks.course_config(course)
    config.ExecutePreprocessor.timeout = 120
    coursedir = CourseDirectory(config=config, log=log)
    coursedir.assignment_id, coursedir.student_id = DAY, "*"
    app = Autograde(coursedir=coursedir, config=config, log=log)
    app.force = True
    try:
        app.start()
    except NbGraderException as e:
        pytest.fail(f"nbgrader autograde failed: {e}\n{log_text.getvalue()}")

    with Gradebook(config.CourseDirectory.db_url, notebooks.COURSE_ID) as gb:
        assert gb.find_assignment(DAY).max_score == POINTS
        scores = {s: gb.find_submission(DAY, s).score for s in submissions}
        wrong_cell = gb.find_grade(WRONG_TEST, Path(NAME).stem, DAY, "one-wrong").score
    context = f"scores {scores}\n{log_text.getvalue()}"
    assert scores["instructor"] == POINTS, context
    assert scores["stub"] == 0, context
    assert scores["one-wrong"] == POINTS - WRONG_POINTS and wrong_cell == 0, context


@needs_nbgrader
def test_released_notebook_is_current(root):
    # days/ is generated: the committed stub must be what nbgrader makes from the solution today.
    fresh = notebooks.release_notebook(root / "solutions" / DAY / NAME)
    assert (root / "days" / DAY / NAME).read_text() == fresh, \
        f"days/{DAY}/{NAME} is stale: run `grader release {DAY}`"
    assert notebooks.release_notebook(root / "solutions" / DAY / NAME) == fresh  # deterministic


@needs_nbgrader
def test_released_notebook_gives_nothing_away(root):
    import nbformat

    text = (root / "days" / DAY / NAME).read_text()
    nb = nbformat.reads(text, as_version=4)
    solution = nbformat.read(root / "solutions" / DAY / NAME, as_version=4)
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
        assert marker not in text
    released_code = "\n".join(c.source for c in nb.cells)
    for region in ("SOLUTION", "HIDDEN TESTS"):
        inside = [line.strip() for c in solution.cells
                  for block in re.findall(rf"BEGIN {region}\n(.*?)\n[^\n]*END {region}", c.source, re.DOTALL)
                  for line in block.splitlines() if len(line.strip()) > 12]  # short lines ("n = 4096") may recur
        assert inside and not [line for line in inside if line in released_code], region
    solutions = [c for c in nb.cells if nbgrader_meta(c).get("solution")]
    assert solutions and all("raise NotImplementedError()" in c.source for c in solutions)
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in nb.cells if c.cell_type == "code")
    assert sum(nbgrader_meta(c).get("points", 0) for c in nb.cells) == POINTS


def test_missing_nbgrader_is_an_actionable_error(monkeypatch, tmp_path):
    from grader.errors import GraderError

    monkeypatch.setitem(sys.modules, "nbgrader.converters", None)  # makes the import fail
    src = tmp_path / NAME
    src.write_text("{}")
    with pytest.raises(GraderError, match="pip install nbgrader"):
        notebooks.release_notebook(src)
