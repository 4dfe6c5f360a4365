"""A pytest plugin for one collection that says which tests carry which of the suite's marks:
`python -m pytest -p tests.collect_marks --collect-only -m gpu` writes {nodeid: [marks]} as JSON to the file
$GRADER_COLLECT_MARKS names. gpu_marks() runs it (tests/conftest.py's gpu_marks fixture: once per test run)."""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

MARKS = ("gpu", "gpu_alone", "multi_gpu")


def pytest_collection_finish(session):
    path = os.environ.get("GRADER_COLLECT_MARKS")
    if path:
        with open(path, "w") as f:
            json.dump({it.nodeid: [m for m in MARKS if m in it.keywords] for it in session.items}, f)


def gpu_marks(root: Path) -> dict[str, list[str]]:
    """{nodeid: marks} of every GPU test as a collection sees them (no shard's selection)."""
    env = {k: v for k, v in os.environ.items() if k not in ("GRADER_TEST_SHARD", "GRADER_TEST_SHARD_WORKERS")}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "marks.json"
        r = subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.collect_marks", "-m", "gpu", "--collect-only",
                            "-q", "-p", "no:cacheprovider", "tests"], cwd=root, capture_output=True, text=True,
                           env=env | {"GRADER_COLLECT_MARKS": str(out)}, timeout=600)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        return json.loads(out.read_text())
