"""The processes of an exercise that runs as a process group (course.yaml `processes: N`, e.g. a ring over NCCL).

Rank 0 is the worker the runner started: its events, its time limits, its process group. It starts ranks 1 … N − 1
itself, as children in that same process group, so the runner's kill of a hung worker's group ends every rank, and
the event pipe stays one process's. Every rank runs the same job case by case: the task's call gathers each call's
outputs to every rank (and raises on every rank when the op raised on one), so all ranks judge the same bits and
take the same path through the cases; only rank 0's events are sent.

One process per GPU (rank r on cuda:r, NCCL); for a job on the CPU (the protocol's own tests, CI), CPU processes
over gloo. A machine with fewer GPUs than the exercise's processes skips it: `shortfall` says what it needs.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

WORKER = "grader.check.worker"
# NVLink multicast (NVLS) stays off: the course's machines may not allow it, and point-to-point rings never use it.
NCCL_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}
INIT_MIN_S = 60.0  # the other ranks import torch before they join: seconds on a cold disk


class JoinError(Exception):
    """The ranks could not form their process group (a backend that would not start, a rank that never came)."""


@dataclass(frozen=True)
class Member:
    """This process's place in the group: its rank, the group's size, and where the ranks meet (a FileStore)."""
    rank: int
    world: int
    rendezvous: str


def shortfall(torch, processes: int, device: str) -> str | None:
    """Why this machine cannot run an exercise of `processes` processes, or None: one GPU per process on CUDA; the
    CPU (gloo) runs any number."""
    if processes == 1 or device != "cuda":
        return None
    have = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if have >= processes:
        return None
    return (f"runs in {processes} processes, one per GPU (NCCL), and this machine has {have} GPU(s): not checked "
            f"here. Check it on a machine with {processes} GPUs or more; meanwhile `grader check DAY --on cpu` runs "
            f"it in {processes} CPU processes over gloo, a check of its protocol and its math")


class Ranks:
    """Rank 0's side of the group: the other ranks, started and watched."""

    def __init__(self, job_path: Path, world: int, *, start: int, had_failure: bool):
        self.tmp = tempfile.mkdtemp(prefix="grader-ranks-")
        self.member = Member(0, world, f"file://{self.tmp}/store")
        tail = ["--start", str(start)] + (["--had-failure"] if had_failure else [])
        self.procs: list[subprocess.Popen] = []
        try:
            for r in range(1, world):
                # Not a session of its own: the child stays in the worker's process group, which the runner kills.
                self.procs.append(subprocess.Popen(
                    [sys.executable, "-m", WORKER, str(job_path), *tail, "--rank", str(r), "--world", str(world),
                     "--rendezvous", self.member.rendezvous], stdin=subprocess.DEVNULL))
        except BaseException:
            self.close(wait_s=0)
            raise

    def lost(self, grace_s: float = 0.0) -> str | None:
        """Which rank's process has ended, and how; None while all run. grace_s: how long to watch for one ending
        (a rank's sockets close, and its peers' transfers fail, a moment before its exit can be seen)."""
        end = time.monotonic() + grace_s
        while True:
            for r, p in enumerate(self.procs, 1):
                code = p.poll()
                if code is not None:
                    why = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
                    return f"rank {r}'s process died ({why}); see the log"
            if time.monotonic() >= end:
                return None
            time.sleep(0.05)

    def close(self, wait_s: float = 30.0) -> None:
        """Waits for the other ranks to finish the job (they end with it), then ends any left."""
        for p in self.procs:
            try:
                p.wait(timeout=wait_s)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


def _die_with_parent() -> None:
    """A rank other than 0 ends when rank 0 does (PR_SET_PDEATHSIG on Linux), whatever ends rank 0: a crash must not
    leave a process holding a GPU, waiting for a transfer that never comes."""
    parent = os.getppid()
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # rank 0 ended before the signal was armed
        os._exit(1)


def join(torch, member: Member, device: str, timeout_s: float) -> None:
    """Joins the group: rank r on cuda:r with NCCL, or a CPU process with gloo."""
    import torch.distributed as dist

    if member.rank > 0:
        _die_with_parent()
    if device == "cuda":
        for k, v in NCCL_ENV.items():
            os.environ.setdefault(k, v)
        torch.cuda.set_device(member.rank)
        backend = "nccl"
    else:
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # every rank is on this host
        # The ranks share the cores: a rank's threads spinning for cores another rank holds slow both many times.
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // member.world))
        backend = "gloo"
    dist.init_process_group(backend, init_method=member.rendezvous, rank=member.rank, world_size=member.world,
                            timeout=timedelta(seconds=max(INIT_MIN_S, timeout_s)))
    _warm_up(torch, dist, member, device)


def _warm_up(torch, dist, member: Member, device: str) -> None:
    """One element around the ring and a barrier, before the first case: NCCL builds its communicators (and their
    connections between GPUs) at the first collective and the first send/receive pair, seconds on a busy machine,
    which would otherwise count against the first case's time limit."""
    dev = torch.device("cuda", member.rank) if device == "cuda" else torch.device("cpu")
    out, into = torch.zeros(1, device=dev), torch.empty(1, device=dev)
    succ, pred = (member.rank + 1) % member.world, (member.rank - 1) % member.world
    for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, out, succ), dist.P2POp(dist.irecv, into, pred)]):
        w.wait()
    dist.barrier()


@contextlib.contextmanager
def group(torch, processes: int, device: str, *, job_path: Path | None, member: Member | None, start: int,
          had_failure: bool, timeout_s: float):
    """For the length of a job: nothing for a one-process exercise (yields None); else the group joined, yielding
    rank 0's Ranks (None on the other ranks). Rank 0 starts the others first; on the way out it waits for them."""
    if processes == 1:
        yield None
        return
    ranks = None
    if member is None:
        if job_path is None:
            raise RuntimeError("a job of several processes needs its job file, which the other ranks read")
        ranks = Ranks(job_path, processes, start=start, had_failure=had_failure)
        member = ranks.member
    try:
        join(torch, member, device, timeout_s)
    except BaseException as e:
        if ranks is not None:
            ranks.close(wait_s=0)
        if isinstance(e, Exception):
            raise JoinError(str(e) or type(e).__name__) from e
        raise
    try:
        yield ranks
    finally:
        if ranks is not None:
            ranks.close()
