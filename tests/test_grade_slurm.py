"""`grader grade --executor slurm` end to end on a real single-node Slurm (Debian's slurm-wlm and munge, started by
scripts/slurm_single_node.sh as plain daemons and stopped by their PIDs): a job array through submitit, compile-only
gradings of day 1 (a solution, a stub in a student repository's layout, a compile error), the results gathered and
summarized; then a task that crashes and one that is cancelled while it runs (as a preemption would) are retried once
in a second array and recorded as errors.

In CI (CI=true) the cluster must start; elsewhere the test skips, saying why, when it cannot (not root, slurm-wlm not
installed, submitit missing). Every wait is bounded."""
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from grader import cli

from grader.classroom import grade_task
from tests.conftest import ROOT, needs_nvcc

SCRIPT = ROOT / "scripts" / "slurm_single_node.sh"
sys.path.insert(0, str(ROOT / "scripts"))
from slurm_gpu_compare import free_port_pair  # noqa: E402  (the one the GPU comparison uses)
IN_CI = os.environ.get("CI", "").lower() == "true"
START_S = 300  # the script installs slurm-wlm and munge when they are missing (about a minute), then waits ≤ 60 s
GRADE_S = 480  # one `grader grade` over the cluster; the three compile-only gradings take about 30 s on 2 cores
TEST_S = 420  # any one test, whatever happens: a SIGALRM ends it, and the cluster is stopped all the same
CONFIG = "gpus_per_task: 0\ncpus_per_task: 1\ntimeout_min: 5\npoll_s: 1\ngrace_s: 3\nmax_wait_min: 4\n"


def unavailable() -> str | None:
    """Why this machine cannot run the cluster (None: it can)."""
    if os.geteuid() != 0:
        return "starting Slurm's daemons needs root"
    try:
        import submitit  # noqa: F401
    except ImportError:
        return "submitit is not installed (pip install -e '.[test]')"
    if not IN_CI and not (shutil.which("slurmctld") and shutil.which("slurmd") and shutil.which("munged")):
        return "slurm-wlm and munge are not installed (apt-get install slurm-wlm munge, or run with CI=true)"
    if IN_CI and not shutil.which("apt-get") and not shutil.which("slurmctld"):
        return "slurm-wlm is not installed and there is no apt-get to install it"
    return None


def not_available(why: str):
    if IN_CI:
        pytest.fail(f"CI must run the Slurm test, but {why}")
    pytest.skip(why)


@pytest.fixture(autouse=True)
def time_limit():
    yield from alarm()


def alarm():
    """Any one test ends within TEST_S (tests/test_check_on_slurm.py uses it too)."""
    def expire(*_):
        raise TimeoutError(f"the test ran past {TEST_S} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(TEST_S)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from single_node_slurm(tmp_path_factory)


def single_node_slurm(tmp_path_factory):
    """A single-node Slurm for a test module: its slurm.conf's path; its daemons stopped, by PID, afterwards."""
    why = unavailable()
    if why:
        not_available(why)
    state = tmp_path_factory.mktemp("slurm")
    # A CI runner that gives up on the job sends SIGTERM: end the way Ctrl-C does, so the daemons are stopped.
    term = signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt("SIGTERM")))
    env = {**os.environ, "GRADER_SLURM_PORT": str(free_port_pair()), "GRADER_SLURM_WAIT_S": "60"}
    if not list(Path("/dev").glob("nvidia[0-9]*")):  # a stand-in GPU, so that jobs asking for one are scheduled
        env.update(GRADER_SLURM_GPUS="1", GRADER_SLURM_GPU_FILES="/dev/null")
    try:
        r = subprocess.run(["bash", str(SCRIPT), "start", str(state)], capture_output=True, text=True, env=env,
                           timeout=START_S)
    except subprocess.TimeoutExpired:
        r = None
    pids = {}
    if (state / "pids").exists():
        pids = dict(line.split() for line in (state / "pids").read_text().splitlines())
    try:
        if r is None or r.returncode != 0:
            not_available("the single-node Slurm did not start: "
                          + ("timed out" if r is None else (r.stdout + r.stderr)[-2000:]))
        yield state / "slurm.conf"
    finally:
        s = subprocess.run(["bash", str(SCRIPT), "stop", str(state)], capture_output=True, text=True, timeout=120)
        assert s.returncode == 0, s.stdout + s.stderr
        signal.signal(signal.SIGTERM, term)
        for name, pid in pids.items():  # what it started is gone; nothing else was touched
            assert not Path(f"/proc/{pid}").exists(), f"{name} (pid {pid}) still runs"


def submission(root: Path, name: str, source: Path, layout_days: bool = False) -> Path:
    d = root / name / ("days" if layout_days else "") / "day01"
    shutil.copytree(source, d)
    return d


@needs_nvcc
def test_a_class_graded_through_a_slurm_job_array(cluster, tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    submission(subs, "ada", ROOT / "solutions" / "day01")
    submission(subs, "bo", ROOT / "days" / "day01", layout_days=True)  # a student repository: days/day01
    broken = submission(subs, "cy", ROOT / "solutions" / "day01")
    cu = broken / "softmax.cu"
    cu.write_text(cu.read_text().replace("{", "{ this is not C++;", 1))
    config = tmp_path / "slurm.yaml"
    config.write_text(CONFIG)
    env = {**os.environ, "SLURM_CONF": str(cluster),
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
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "0 to grade, 3 already graded" in r.stdout, r.stdout + r.stderr


def test_a_crashed_or_cancelled_task_is_retried_once_then_recorded(cluster, tmp_path, capsys, monkeypatch):
    """Each grading is tests/fake_check.py here (the command travels with the task to the node): one crashes, one
    hangs and is cancelled by scancel once it runs (as a preemption without requeue ends it), one crashes only on
    its first attempt."""
    monkeypatch.setattr(grade_task, "COMMAND", (sys.executable, "-m", "tests.fake_check"))
    monkeypatch.setenv("SLURM_CONF", str(cluster))
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
                    subprocess.run(["scancel", job], capture_output=True, timeout=30)
            time.sleep(0.3)

    watcher = threading.Thread(target=cancel_when_running, daemon=True)
    watcher.start()
    try:
        code = cli.main(["--course", str(ROOT / "course.yaml"), "grade", str(subs), "--days", "day01", "--out",
                         str(out), "--executor", "slurm", "--slurm-config", str(config)])
    finally:
        stop.set()
        watcher.join(timeout=10)
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
