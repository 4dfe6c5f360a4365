"""The warm worker on a GPU (grader/check/resident.py): a re-check in it gives the same verdict as a check in fresh
processes, and a kernel that crashes the CUDA context or hangs gets its verdict there too, after which the next
check starts a new worker and passes. The seconds each check took are kept with the test (where the student's loop
goes: scripts/gpu_suite.py), never asserted."""
import json
import os
import shutil
import signal
import subprocess
import time

import pytest
import yaml

from tests.conftest import ROOT, run_grader, socket_dir

pytestmark = pytest.mark.gpu

BUGS = {b["name"]: b for b in yaml.safe_load((ROOT / "tests" / "known_wrong.yaml").read_text())}


@pytest.fixture
def warm(tmp_path):
    # a short folder for the sockets: under xdist's tmp_path the socket's path passed 107 bytes from worker gw10 on
    # (H100 suite, 2026-12-06), and the check then ran without a warm worker, as it should, failing this test
    run = socket_dir(tmp_path)
    env = {"GRADER_RESIDENT": "1", "GRADER_RESIDENT_IDLE_S": "120", "XDG_RUNTIME_DIR": str(run),
           "GRADER_STATE": str(tmp_path / "state")}
    yield env
    r = subprocess.run(["pgrep", "-f", f"listen {run}/"], capture_output=True, text=True)
    for pid in r.stdout.split():
        os.killpg(int(pid), signal.SIGKILL)
    shutil.rmtree(run, ignore_errors=True)


def _check(day, src, env, tmp_path, record_property, *extra):
    out = tmp_path / f"{day}-{time.monotonic_ns()}.json"
    t0 = time.perf_counter()
    r = run_grader("check", day, "--dir", str(src), "--correctness-only", "--seed", "7", "--timings",
                   "--json", str(out), *extra, env=env)
    record_property(f"{day} {src.name} seconds", round(time.perf_counter() - t0, 2))
    assert "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
    return r, json.loads(out.read_text())


def _planted(tmp_path, bug) -> object:
    src = tmp_path / f"{bug['name']}" / bug["day"]
    shutil.copytree(ROOT / "solutions" / bug["day"], src)
    f = src / bug["file"]
    f.write_text(f.read_text().replace(bug["find"], bug["replace"]))
    return src


@pytest.mark.parametrize("bug,extra", [("out_of_bounds_crash", []), ("hang", ["--timeout", "5"])])
def test_a_broken_kernel_in_the_warm_worker_then_the_solution(bug, extra, warm, tmp_path, record_property):
    bug = BUGS[bug]
    day = bug["day"]
    solution = tmp_path / "solution" / day
    shutil.copytree(ROOT / "solutions" / day, solution)
    r, first = _check(day, solution, warm, tmp_path, record_property)
    assert r.returncode == 0 and "warm worker started" in r.stderr, r.stdout + r.stderr
    r, again = _check(day, solution, warm, tmp_path, record_property)
    assert r.returncode == 0 and "warm worker found" in r.stderr, r.stdout + r.stderr
    assert [e["status"] for e in first["exercises"]] == [e["status"] for e in again["exercises"]] == ["pass"] * len(
        first["exercises"])
    r, broken = _check(day, _planted(tmp_path, bug), warm, tmp_path, record_property, "--exercise",
                       first["exercises"][0]["exercise"], *extra)
    assert r.returncode == 1, r.stdout
    cases = [c for e in broken["exercises"] for c in e["cases"] if not c["ok"]]
    assert any(c["category"] == bug["category"] for c in cases), [(c["category"], c["message"]) for c in cases]
    r, after = _check(day, solution, warm, tmp_path, record_property)
    assert r.returncode == 0, r.stdout  # a new worker, as the broken kernel took the old one with it
    assert "warm worker started" in r.stderr, r.stderr
