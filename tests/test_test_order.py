"""The suite's own scheduling (tests/conftest.py): `-n auto`'s worker count and the CPU tests' order by the record
of a run's seconds (tests/data/test-seconds.json)."""
import json
import os
from types import SimpleNamespace as NS

from tests import conftest


def test_auto_starts_a_worker_more_than_the_cores_unless_told(monkeypatch):
    config = NS(option=NS(numprocesses="auto"))
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    assert conftest.pytest_xdist_auto_num_workers(config) == (os.cpu_count() or 1) + 1
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "5")
    assert conftest.pytest_xdist_auto_num_workers(config) is None  # xdist's own hook reads the variable
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS")
    assert conftest.pytest_xdist_auto_num_workers(NS(option=NS(numprocesses="logical"))) is None


def test_modules_go_slowest_first_and_stay_together(tmp_path, monkeypatch):
    record = tmp_path / "seconds.json"
    record.write_text(json.dumps({"seconds": {"tests/test_b.py::slow": 90.0, "tests/test_c.py::mid": 20.0,
                                              "tests/test_c.py::other": 3.0}}))
    monkeypatch.setattr(conftest, "TEST_SECONDS", record)
    ids = ["tests/test_a.py::one", "tests/test_b.py::fast", "tests/test_b.py::slow", "tests/test_c.py::mid",
           "tests/test_d.py::x", "tests/test_a.py::two"]
    items = [NS(nodeid=i) for i in ids]
    conftest._slow_modules_first(items)
    assert [it.nodeid for it in items] == ["tests/test_b.py::fast", "tests/test_b.py::slow", "tests/test_c.py::mid",
                                           "tests/test_a.py::one", "tests/test_d.py::x", "tests/test_a.py::two"]


def test_the_committed_record_is_readable():
    """A record that cannot be read orders nothing (no test fails for it, the run only balances worse): the
    committed one is read."""
    seconds = conftest._test_seconds()
    assert seconds and all(s >= conftest.SLOW_TEST_S for s in seconds.values())
