"""nbgrader notebooks: the student version of an instructor's notebook, made by nbgrader itself.

A day lists its notebooks in course.yaml (`notebooks: [analysis.ipynb]`); the source lives in solutions/dayNN/
with nbgrader cell metadata and `### BEGIN SOLUTION` / `### BEGIN HIDDEN TESTS` regions. Rather than re-implement
nbgrader's rules, `release_notebook` runs its `generate_assignment` in a scratch course directory, so the stub
in days/ is exactly what nbgrader would release, and nbgrader's autograde accepts it (tests/test_notebook.py).

nbgrader is an instructor and CI dependency (the `test` extra), not a student one: it is imported only here,
only when a notebook is released.
"""
from __future__ import annotations

import logging
import tempfile
from pathlib import Path

from grader.errors import GraderError
from grader.nbgrader_import import nbgrader_ready

COURSE_ID = "cuda-course"  # the gradebook's course; open it with Gradebook(db_url, COURSE_ID)
INSTALL_HINT = ("nbgrader is needed to release or grade the course's notebooks: pip install nbgrader "
                "(or pip install -e \".[test]\", which CI uses)")


def _nbgrader():
    nbgrader_ready()
    try:
        from nbgrader.converters import GenerateAssignment
        from nbgrader.converters.base import NbGraderException
        from nbgrader.coursedir import CourseDirectory
    except ImportError as e:
        raise GraderError(f"{INSTALL_HINT} ({e})") from None
    return GenerateAssignment, CourseDirectory, NbGraderException


def course_config(course_root: Path):
    """The traitlets config of an nbgrader course directory at course_root (source/, release/, submitted/,
    autograded/ and gradebook.db under it), for nbgrader's converters and tests."""
    from traitlets.config import Config

    c = Config()
    c.CourseDirectory.root = str(course_root)
    c.CourseDirectory.course_id = COURSE_ID
    c.CourseDirectory.db_url = f"sqlite:///{course_root / 'gradebook.db'}"
    return c


class _Errors(logging.Handler):
    """Keeps nbgrader's ERROR records, so that a failure becomes one GraderError that says what nbgrader said
    (its INFO chatter about copying files is dropped: `grader release` only reports what it wrote)."""

    def __init__(self):
        super().__init__(logging.ERROR)
        self.lines: list[str] = []

    def emit(self, record):
        msg = record.getMessage().strip()
        if msg.startswith("Traceback"):
            # keep the exception's own line: its frames are nbgrader's and nbconvert's internals, and lines
            # indented under it continue its message (a cell's source)
            heads = [ln for ln in msg.splitlines()[1:] if ln and not ln[0].isspace()]
            msg = heads[-1] if heads else msg
        if msg and not msg.startswith("Please see") and msg not in self.lines:
            self.lines.append(msg)


def generate_assignment(course_root: Path, assignment: str, database: bool = True,
                        log: logging.Logger | None = None) -> None:
    """Runs nbgrader's generate_assignment for source/<assignment>/ of the course at course_root: writes
    release/<assignment>/ and, with database, records the cells (hidden tests included) in the gradebook, which
    autograde needs. database=False is `nbgrader generate_assignment --no-db`: the same notebook, written
    without creating a gradebook (which costs seconds and runs the `alembic` command)."""
    GenerateAssignment, CourseDirectory, NbGraderException = _nbgrader()
    config = course_config(course_root)
    if not database:
        config.SaveCells.enabled = False
        config.GenerateAssignment.no_database = True
    errors = _Errors()
    if log is None:
        log = logging.getLogger("grader.nbgrader")
        log.propagate = False  # its only handler is the one below: nothing reaches the terminal
    log.addHandler(errors)
    try:
        coursedir = CourseDirectory(config=config, log=log)
        coursedir.assignment_id = assignment
        app = GenerateAssignment(coursedir=coursedir, config=config, log=log)
        app.force = True
        app.start()
    except NbGraderException as e:  # raised once the failure is logged: the log says what went wrong
        said = "\n  ".join(errors.lines or [str(e)])
        raise GraderError(f"nbgrader generate_assignment failed for {assignment}:\n  {said}") from None
    finally:
        log.removeHandler(errors)


# Released notebooks by (assignment, file name, source bytes): a release builds the student repository twice (as of
# today, and as of the last release date for its forecast), and nbgrader takes 0.2 s a notebook.
_released: dict[tuple[str, str, bytes], str] = {}


def release_notebook(src: Path) -> str:
    """The released (student) text of the nbgrader source notebook src: solutions replaced by nbgrader's stub,
    hidden tests and outputs removed, checksums computed. Deterministic: the same source gives the same bytes."""
    src = Path(src)
    if not src.is_file():
        raise GraderError(f"{src} is missing")
    _nbgrader()  # fail with the install hint before making any directory
    assignment = src.parent.name or "assignment"
    key = (assignment, src.name, src.read_bytes())
    if key not in _released:
        _released[key] = _generate(src, assignment, key[2])
    return _released[key]


def _generate(src: Path, assignment: str, data: bytes) -> str:
    with tempfile.TemporaryDirectory(prefix="grader-nbgrader-") as tmp:
        root = Path(tmp)
        (root / "source" / assignment).mkdir(parents=True)
        (root / "source" / assignment / src.name).write_bytes(data)
        generate_assignment(root, assignment, database=False)
        out = root / "release" / assignment / src.name
        if not out.is_file():
            raise GraderError(f"nbgrader generate_assignment wrote no {src.name} for {src}")
        return out.read_text()
