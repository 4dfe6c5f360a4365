"""Where `grader grade` runs its gradings: `local` (a pool of worker threads, each grading one pair at a time in a
process of its own, one per GPU) or `slurm` (a job array through submitit, one task per pair).

Each grading is `grader check --sandbox` (unless `grade --no-sandbox`): on Slurm the sandbox is made inside the job,
on the node, as it is locally (README, "The sandbox", says why).

An executor runs one round: `run(tasks, attempt, done)` calls done(task, None) when the task left a complete result
and done(task, why) when it did not, exactly once per task, and returns when every task is accounted for. Retrying is
the caller's (grader/grade.py): a round of the failed tasks, once."""
from __future__ import annotations

import logging
import os
import queue
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from grader.classroom import grade_task
from grader.errors import GraderError
from grader.yaml_file import read_yaml

Done = Callable[[grade_task.Task, "str | None"], None]


# -- local --------------------------------------------------------------------------------------------------
def gpu_count() -> int:
    """GPUs this machine shows (CUDA_VISIBLE_DEVICES, when set, narrows them), 0 without nvidia-smi."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([v for v in visible.split(",") if v.strip() and v.strip() != "-1"])
    smi = shutil.which("nvidia-smi")
    if not smi:
        return 0
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(line.startswith("GPU ") for line in out.splitlines())


def node_error(e: BaseException) -> str:
    """The last line of the node's traceback in submitit's error for a job that raised (the traceback sits between
    lines of dashes, log paths after it), else the error's own last line."""
    parts = re.split(r"\n-{10,}\n", str(e))
    lines = [ln for ln in (parts[1] if len(parts) > 2 else str(e)).splitlines() if ln.strip()]
    return lines[-1] if lines else type(e).__name__


class LocalExecutor:
    """One worker per GPU, each pinned to its GPU (CUDA_VISIBLE_DEVICES); without a GPU every grading is compile-only
    and one worker per core runs."""

    def __init__(self, workers: int | None = None):
        self.gpus = gpu_count()
        self.workers = workers or self.gpus or os.cpu_count() or 1

    def describe(self) -> str:
        if self.gpus:
            return f"local: {self.workers} worker(s) over {self.gpus} GPU(s)"
        return f"local: {self.workers} worker(s), no GPU (compile-only)"

    def run(self, tasks: list[grade_task.Task], attempt: int, done: Done) -> None:
        slots: queue.Queue = queue.Queue()
        for k in range(self.workers):
            slots.put(k % self.gpus if self.gpus else None)

        def one(task):
            gpu = slots.get()
            try:
                why = grade_task.attempt(task, attempt, {"CUDA_VISIBLE_DEVICES": str(gpu)} if gpu is not None else None)
            except Exception as e:  # never lost: a failure of the grading machinery is this task's failure too
                why = f"{type(e).__name__}: {e}"
            finally:
                slots.put(gpu)
            done(task, why)

        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            for f in [pool.submit(one, t) for t in tasks]:
                f.result()


# -- slurm --------------------------------------------------------------------------------------------------
class SlurmConfig(BaseModel):
    """The `--slurm-config` YAML: where and with what each task runs."""
    model_config = ConfigDict(extra="forbid")

    partition: str | None = None  # default: the cluster's default partition
    gpus_per_task: int = Field(1, ge=0)  # 0: compile-only gradings on CPU nodes
    cpus_per_task: int = Field(4, ge=1)
    mem_gb: float | None = Field(None, gt=0)
    timeout_min: int = Field(30, ge=1)  # Slurm's limit of one task; the grading itself gets 90% of it
    array_parallelism: int = Field(256, ge=1)  # tasks of the array running at once
    max_array_size: int = Field(1000, ge=1)  # more pairs than this go in several arrays (Slurm's MaxArraySize)
    account: str | None = None
    qos: str | None = None
    setup: list[str] = []  # shell lines before the task (module load …, source venv/bin/activate)
    sbatch: dict[str, str | int | bool] = {}  # any other sbatch option, e.g. {constraint: h100}
    use_srun: bool = True
    python: str | None = None  # the Python on the nodes (default: this one; the nodes must see the same files)
    poll_s: float = Field(10.0, gt=0)  # how often the queue is looked at
    grace_s: float = Field(30.0, ge=0)  # how long a result may take to appear after its task left the queue
    max_wait_min: float | None = Field(None, gt=0)  # give up on a round's tasks after this long (queue included)

    @property
    def task_timeout_s(self) -> float:
        return self.timeout_min * 60 * 0.9


def read_settings(path: Path, what: str) -> dict:
    """A file of Slurm settings as a mapping (empty for an empty file); what names it in every message."""
    data = read_yaml(path, f"{what} {path}")
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise GraderError(f"{what} {path} should be a mapping of settings (partition: …, gpus_per_task: …), not "
                          f"a {type(data).__name__}")
    return data


def load_slurm_config(path: str | None) -> SlurmConfig:
    if path is None:
        return SlurmConfig()
    data = read_settings(Path(path).expanduser(), "--slurm-config:")
    try:
        return SlurmConfig.model_validate(data)
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(map(str, err['loc'])) or '(top)'}: {err['msg']}" for err in e.errors())
        raise GraderError(f"--slurm-config: {path}: {problems}") from None


QUEUED = "PENDING,RUNNING,CONFIGURING,COMPLETING,REQUEUED,RESIZING,SUSPENDED"


def _queued(array_ids: list[str]) -> set[str] | None:
    """The array tasks (ARRAY_TASK, e.g. 12_3) still queued or running; None when squeue could not tell."""
    try:
        p = subprocess.run(["squeue", "-h", "-r", "-o", "%i", f"--states={QUEUED}", "-j", ",".join(array_ids)],
                           capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if p.returncode != 0:
        return set() if "Invalid job id" in p.stderr else None  # every job has left, or slurmctld did not answer
    return {line.strip() for line in p.stdout.splitlines() if line.strip()}


def _cancel(job_ids: list[str]) -> None:
    if job_ids:
        subprocess.run(["scancel", *job_ids], capture_output=True, timeout=60)


class SlurmExecutor:
    """A job array through submitit, watched with squeue (sacct needs accounting, which a small cluster may lack):
    a task is done when its result file is complete; it failed when it has left the queue without one."""

    def __init__(self, config: SlurmConfig, folder: Path):
        try:
            import submitit
        except ImportError:
            raise GraderError("--executor slurm needs submitit: pip install -e '.[slurm]'") from None
        if shutil.which("sbatch") is None or shutil.which("squeue") is None:
            raise GraderError("--executor slurm needs Slurm's commands (sbatch, squeue) on PATH: run `grader grade` "
                              "on a login node of the cluster")
        logging.getLogger("submitit").setLevel(logging.ERROR)
        self.submitit, self.config, self.folder = submitit, config, folder

    def describe(self) -> str:
        c = self.config
        return (f"slurm: partition {c.partition or '(default)'}, {c.gpus_per_task} GPU(s) and {c.cpus_per_task} "
                f"CPU(s) per task, {c.timeout_min} min each")

    def _executor(self):
        c = self.config
        ex = self.submitit.SlurmExecutor(folder=str(self.folder / "%j"), python=c.python)
        # ntasks_per_node: one grading per job, said outright; Slurm refuses --gpus-per-task without a task count
        params = {"job_name": "grader-grade", "time": c.timeout_min, "cpus_per_task": c.cpus_per_task,
                  "ntasks_per_node": 1, "array_parallelism": c.array_parallelism, "use_srun": c.use_srun,
                  "stderr_to_stdout": True,
                  # submitit's warning signal comes 5% before the limit: the grading's own 90% ends first
                  "signal_delay_s": min(90, max(3, c.timeout_min * 3))}
        for key, value in (("partition", c.partition), ("account", c.account), ("qos", c.qos),
                           ("gpus_per_task", c.gpus_per_task or None),
                           ("mem", f"{c.mem_gb:g}GB" if c.mem_gb else None)):
            if value is not None:
                params[key] = value
        if c.setup:
            params["setup"] = list(c.setup)
        if c.sbatch:
            params["additional_parameters"] = dict(c.sbatch)
        ex.update_parameters(**params)
        return ex

    def submit(self, fn, *args, name: str):
        """One job running fn(*args), asked for as each task of an array is (`grader check --on slurm`): its
        submitit Job."""
        executor = self._executor()
        executor.update_parameters(job_name=name)
        try:
            return executor.submit(fn, *args)
        except Exception as e:  # sbatch refused (a partition that does not exist, a limit)
            raise GraderError(f"Slurm refused the job: {str(e).strip()[-2000:]}") from None

    def run(self, tasks: list[grade_task.Task], attempt: int, done: Done) -> None:
        if not tasks:
            return
        executor, size, jobs = self._executor(), self.config.max_array_size, []
        try:
            for k in range(0, len(tasks), size):
                chunk = tasks[k:k + size]
                jobs += executor.map_array(grade_task.attempt, chunk, [attempt] * len(chunk))
        except Exception as e:  # sbatch refused (a partition that does not exist, a limit)
            _cancel(sorted({j.job_id.split("_")[0] for j in jobs}))  # all or nothing: no array left behind
            raise GraderError(f"Slurm refused the job array: {str(e).strip()[-2000:]}") from None
        pending = {job.job_id: (job, task) for job, task in zip(jobs, tasks)}
        try:
            self._watch(pending, done)
        except KeyboardInterrupt:  # stopped by hand: nothing keeps running on the cluster (a later run resumes)
            _cancel(list(pending))
            raise

    def _watch(self, pending: dict, done: Done) -> None:
        arrays = sorted({jid.split("_")[0] for jid in pending})
        left_at: dict[str, float] = {}
        deadline = time.monotonic() + self.config.max_wait_min * 60 if self.config.max_wait_min else None
        while pending:
            queued = _queued(arrays)
            now = time.monotonic()
            for jid, (job, task) in list(pending.items()):
                if grade_task.finished(task):
                    del pending[jid]
                    done(task, None)
                elif queued is not None and jid not in queued:
                    left_at.setdefault(jid, now)
                    if now - left_at[jid] >= self.config.grace_s or job.paths.result_pickle.exists():
                        del pending[jid]
                        done(task, self._why(job))
            if pending and deadline is not None and now > deadline:
                _cancel(list(pending))
                for jid, (_, task) in list(pending.items()):
                    del pending[jid]
                    done(task, f"not finished within max_wait_min ({self.config.max_wait_min:g} min): cancelled")
            if pending:
                leaving = any(jid in left_at for jid in pending)  # look again soon for their results
                time.sleep(min(self.config.poll_s, 1.0) if leaving else self.config.poll_s)

    @staticmethod
    def _why(job) -> str:
        """Why a task that left the queue has no result: the exception its grading raised, else its log."""
        if job.paths.result_pickle.exists():
            try:
                why = job.result()
            except Exception as e:
                why = node_error(e)
            if why:
                return f"Slurm task {job.job_id}: {why}"
        return (f"Slurm task {job.job_id} left the queue without a result (killed, out of time or memory, or "
                f"preempted); its output: {job.paths.stdout}")
