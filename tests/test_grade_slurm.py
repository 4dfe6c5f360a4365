"""`grader grade --executor slurm` end to end on a real single-node Slurm (the session's, tests/slurm_cluster.py):
a job array through submitit, compile-only gradings of day 1 (a solution, a stub in a student repository's layout,
a compile error), the results gathered and summarized; then a task that crashes and one that is cancelled while it
runs (as a preemption would) are retried once in a second array and recorded as errors.

In CI (CI=true) the cluster must start; elsewhere the test skips, saying why, when it cannot. Every wait is bounded."""
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from grader import cli

from grader.classroom import grade_task
from tests.conftest import ROOT, needs_nvcc
from tests.slurm_cluster import SLURM_CMD_S, alarm

GRADE_S = 480  # one `grader grade` over the cluster; the three compile-only gradings take about 30 s on 2 cores
RESUME_S = 60  # a `grader grade` that finds every result and submits nothing: 0.9 s here
CANCEL_POLL_S = 0.3  # how often the cancelling thread looks for the hung task's new Slurm job
CONFIG = "gpus_per_task: 0\ncpus_per_task: 1\ntimeout_min: 5\npoll_s: 1\ngrace_s: 3\nmax_wait_min: 4\n"


@pytest.fixture(autouse=True)
def time_limit():
    yield from alarm()


def submission(root: Path, name: str, source: Path, layout_days: bool = False) -> Path:
    d = root / name / ("days" if layout_days else "") / "day01"
    shutil.copytree(source, d)
    return d


@needs_nvcc
def test_a_class_graded_through_a_slurm_job_array(slurm_cluster, tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    submission(subs, "ada", ROOT / "solutions" / "day01")
    submission(subs, "bo", ROOT / "days" / "day01", layout_days=True)  # a student repository: days/day01
    broken = submission(subs, "cy", ROOT / "solutions" / "day01")
    cu = broken / "softmax.cu"
    cu.write_text(cu.read_text().replace("{", "{ this is not C++;", 1))
    config = tmp_path / "slurm.yaml"
    config.write_text(CONFIG)
    env = {**os.environ, "SLURM_CONF": str(slurm_cluster),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    cmd = [sys.executable, "-m", "grader", "grade", str(subs), "--days", "day01", "--out", str(out),
           "--executor", "slurm", "--slurm-config", str(config)]
    t0 = time.monotonic()
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=GRADE_S)
    took = time.monotonic() - t0
    text = r.stdout + r.stderr
    assert r.returncode == 0, text
    assert "Traceback" not in text and "3 to grade, 0 already graded" in text, text
    assert "slurm: partition (default), 0 GPU(s) and 1 CPU(s) per task" in text

    expect = {"ada": "no_gpu", "bo": "no_gpu", "cy": "build_error"}
    for name, status in expect.items():
        doc = json.loads((out / name / "day01.json").read_text())
        assert doc["day"] == "day01" and doc["variant"] == doc["submission"] == name
        assert [e["status"] for e in doc["exercises"]] == [status], doc["exercises"][0]["message"]
        assert doc["grade"]["attempt"] == 1 and doc["grade"]["host"]
        assert (out / name / "day01.log").read_text().startswith("$ ")
    cy = json.loads((out / "cy" / "day01.json").read_text())["exercises"][0]
    assert any("softmax.cu" in d and "error" in d for r in cy["compile"] for d in r["diagnostics"])
    # One array of three tasks ran them, through sbatch (submitit's folders: <array>_<task>).
    tasks = sorted(p.name for p in (out / ".submitit").iterdir() if p.is_dir() and "_" in p.name)
    assert len(tasks) == 3 and len({t.split("_")[0] for t in tasks}) == 1, tasks
    summary = json.loads((out / "summary.json").read_text())
    assert {n: summary[n]["day01"]["cell"] for n in expect} == {"ada": "COMPILED", "bo": "COMPILED",
                                                                "cy": "BUILD ERROR"}
    for name, cell in (("ada", "COMPILED"), ("cy", "BUILD ERROR")):
        assert any(name in line and cell in line for line in text.splitlines()), text
    print(f"\nthree compile-only gradings through Slurm took {took:.1f} s")

    # Resumed: nothing is submitted again.
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=RESUME_S)
    assert r.returncode == 0 and "0 to grade, 3 already graded" in r.stdout, r.stdout + r.stderr


def test_a_crashed_or_cancelled_task_is_retried_once_then_recorded(slurm_cluster, tmp_path, capsys, monkeypatch):
    """Each grading is tests/fake_check.py here (the command travels with the task to the node): one crashes, one
    hangs and is cancelled by scancel once it runs (as a preemption without requeue ends it), one crashes only on
    its first attempt."""
    monkeypatch.setattr(grade_task, "COMMAND", (sys.executable, "-m", "tests.fake_check"))
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    subs, out = tmp_path / "subs", tmp_path / "out"
    for name, marker in (("crashy", "CRASH"), ("cancelled", "HANG"), ("flaky", "FLAKY")):
        d = subs / name / "day01"
        d.mkdir(parents=True)
        for f in (marker, "softmax.cu", "bindings.cpp"):  # day01's sources too: a folder without one is not graded
            (d / f).write_text("")
    config = tmp_path / "slurm.yaml"
    config.write_text(CONFIG)

    stop, cancelled = threading.Event(), []

    def cancel_when_running():  # the hung task's Slurm job, each time one starts, as a preemption would end it
        calls = subs / "cancelled" / "day01" / "calls"
        while not stop.is_set():
            for line in calls.read_text().splitlines() if calls.exists() else []:
                job = line.split()[1]
                if job not in cancelled:
                    cancelled.append(job)
                    subprocess.run(["scancel", job], capture_output=True, timeout=SLURM_CMD_S)
            time.sleep(CANCEL_POLL_S)

    watcher = threading.Thread(target=cancel_when_running, daemon=True)
    watcher.start()
    try:
        code = cli.main(["--course", str(ROOT / "course.yaml"), "grade", str(subs), "--days", "day01", "--out",
                         str(out), "--executor", "slurm", "--slurm-config", str(config)])
    finally:
        stop.set()
        watcher.join(timeout=SLURM_CMD_S + CANCEL_POLL_S + 1)  # its last scancel, its last look
    text = capsys.readouterr().out
    assert code == 1, text
    assert "3 grading(s) failed: trying each once more" in text and "2 grading(s) failed twice" in text, text
    assert len(cancelled) == 2 and all(j != "-" for j in cancelled), cancelled

    crashy = json.loads((out / "crashy" / "day01.json").read_text())
    assert crashy["grade"]["attempts"] == 2 and "killed by signal 11" in crashy["grade"]["error"], crashy["grade"]
    assert crashy["exercises"][0]["status"] == "env_error"
    gone = json.loads((out / "cancelled" / "day01.json").read_text())
    # Slurm's SIGTERM reaches the grading first (then the task reports it), or the task is gone before it can.
    assert any(w in gone["grade"]["error"] for w in ("killed by signal 15", "left the queue without a result"))
    flaky = json.loads((out / "flaky" / "day01.json").read_text())
    assert flaky["grade"]["attempt"] == 2 and flaky["exercises"][0]["status"] == "no_gpu"
    arrays = {p.name.split("_")[0] for p in (out / ".submitit").iterdir() if p.is_dir() and "_" in p.name}
    assert len(arrays) == 2  # the first round, and one array for the retries

    # --regrade: flaky's earlier result is not taken for this run's (each result names the run that made it).
    (subs / "crashy" / "day01" / "CRASH").unlink()
    (subs / "cancelled" / "day01" / "HANG").unlink()
    before = flaky["grade"]["run"]
    code = cli.main(["--course", str(ROOT / "course.yaml"), "grade", str(subs), "--days", "day01", "--out",
                     str(out), "--executor", "slurm", "--slurm-config", str(config), "--regrade"])
    text = capsys.readouterr().out
    assert code == 0 and "3 to grade, 0 already graded" in text, text
    runs = {json.loads((out / n / "day01.json").read_text())["grade"]["run"] for n in ("crashy", "cancelled", "flaky")}
    assert len(runs) == 1 and before not in runs
    assert len((subs / "flaky" / "day01" / "calls").read_text().splitlines()) == 3
