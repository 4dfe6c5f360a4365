"""The single-node Slurm the Slurm tests share (tests/test_grade_slurm.py, tests/test_check_on_slurm.py): Debian's
slurm-wlm and munge, started by scripts/slurm_single_node.sh as plain daemons and stopped by their PIDs. One cluster
for the whole test session (the `slurm_cluster` fixture of tests/conftest.py; one per xdist worker that runs a Slurm
test): each test submits, follows and cancels only its own jobs, so they need no cluster of their own.

In CI (CI=true) the cluster must start; elsewhere the tests skip, saying why, when it cannot (not root, slurm-wlm not
installed, submitit missing). Every wait is bounded."""
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.processes import time_limit

SCRIPT = ROOT / "scripts" / "slurm_single_node.sh"
IN_CI = os.environ.get("CI", "").lower() == "true"
NODE_WAIT_S = 60  # the script's wait for the node to be idle (it took under 1 s here: 0.2-0.4 s of fixture setup)
START_S = 300  # the script installs slurm-wlm and munge when they are missing (about a minute), then waits NODE_WAIT_S
# The script's stop: scancel (≤ 10 s), then each of the three daemons SIGTERM and ≤ 10 s to end before SIGKILL.
# It took 5.2-6.0 s here.
STOP_S = 10 + 3 * 10 + 30
TEST_S = 420  # any one Slurm test, whatever happens: a SIGALRM ends it, and the cluster is stopped all the same
# One squeue, scancel or scontrol: each message to slurmctld is bounded by Slurm's MessageTimeout (10 s by default);
# three of them. They answered in well under a second here.
SLURM_CMD_S = 3 * 10


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


def alarm():
    """Any one test ends within TEST_S (a fixture's body: `yield from alarm()`)."""
    yield from time_limit(TEST_S)


def single_node_slurm(folder: Path):
    """A single-node Slurm whose files go to folder: its slurm.conf's path; its daemons stopped, by PID, afterwards."""
    why = unavailable()
    if why:
        not_available(why)
    sys.path.insert(0, str(ROOT / "scripts"))
    from slurm_gpu_compare import free_port_pair  # the one the GPU comparison uses

    # A CI runner that gives up on the job sends SIGTERM: end the way Ctrl-C does, so the daemons are stopped.
    term = signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt("SIGTERM")))
    env = {**os.environ, "GRADER_SLURM_PORT": str(free_port_pair()), "GRADER_SLURM_WAIT_S": str(NODE_WAIT_S)}
    if not list(Path("/dev").glob("nvidia[0-9]*")):  # a stand-in GPU, so that jobs asking for one are scheduled
        env.update(GRADER_SLURM_GPUS="1", GRADER_SLURM_GPU_FILES="/dev/null")
    try:
        r = subprocess.run(["bash", str(SCRIPT), "start", str(folder)], capture_output=True, text=True, env=env,
                           timeout=START_S)
    except subprocess.TimeoutExpired:
        r = None
    pids = {}
    if (folder / "pids").exists():
        pids = dict(line.split() for line in (folder / "pids").read_text().splitlines())
    try:
        if r is None or r.returncode != 0:
            not_available("the single-node Slurm did not start: "
                          + ("timed out" if r is None else (r.stdout + r.stderr)[-2000:]))
        yield folder / "slurm.conf"
    finally:
        s = subprocess.run(["bash", str(SCRIPT), "stop", str(folder)], capture_output=True, text=True,
                           timeout=STOP_S)
        assert s.returncode == 0, s.stdout + s.stderr
        signal.signal(signal.SIGTERM, term)
        for name, pid in pids.items():  # what it started is gone; nothing else was touched
            assert not Path(f"/proc/{pid}").exists(), f"{name} (pid {pid}) still runs"


def slurm_env(cluster: Path) -> dict:
    """This process's environment, with Slurm's commands pointed at the cluster."""
    return {**os.environ, "SLURM_CONF": str(cluster)}


def in_queue(cluster: Path, job_id: str) -> bool:
    """Whether the job is still in the cluster's queue."""
    p = subprocess.run(["squeue", "-h", "-o", "%A", "-j", job_id], capture_output=True, text=True,
                       env=slurm_env(cluster), timeout=SLURM_CMD_S)
    return job_id in p.stdout.split()


def config_seconds(cluster: Path, key: str) -> float:
    """A time of the cluster's running configuration (`scontrol show config`), e.g. KillWait: '30 sec'."""
    p = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, env=slurm_env(cluster),
                       timeout=SLURM_CMD_S, check=True)
    for line in p.stdout.splitlines():
        name, _, value = line.partition("=")
        if name.strip() == key:
            return float(value.split()[0])
    raise AssertionError(f"scontrol show config has no {key}: {p.stdout[-2000:]}")
