import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The grader's state (builds, logs, results, caches) goes to a temporary folder of this test process, never into
# the checkout's .grader/ (a student's own results and builds). Set at import, so the grader run in-process and
# every `grader` subprocess (run_grader) both see it; each xdist worker gets its own.
STATE = Path(tempfile.mkdtemp(prefix=f"grader-test-state-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-"))
os.environ["GRADER_STATE"] = str(STATE)
atexit.register(shutil.rmtree, STATE, ignore_errors=True)


def has_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    if has_gpu():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def course():
    from grader.course import load_course

    return load_course(ROOT / "course.yaml")


def run_grader(*args, cwd=ROOT, timeout=900):
    """The grader as a user runs it: a separate process, output captured."""
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(),
                                reason="nvcc not installed")


@pytest.fixture(scope="session")
def planned_course(tmp_path_factory) -> Path:
    """The course with one extra day that is planned, not ready (every real day is ready): for the messages a
    planned day gets. Written beside a link to the repository's folders, so paths resolve as in the checkout."""
    root = tmp_path_factory.mktemp("planned-course")
    for name in ("days", "solutions", "tasks", "common"):
        (root / name).symlink_to(ROOT / name)
    text = (ROOT / "course.yaml").read_text()
    (root / "course.yaml").write_text(text.rstrip("\n") + "\n  - id: day21\n    title: A planned day\n"
                                      "    track: attention\n    status: planned\n")
    return root / "course.yaml"
