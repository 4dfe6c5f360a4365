"""`grader check dayNN --on slurm`: the same check, run as one Slurm job on the class's GPUs, for a student whose own
machine has none.

The job is asked for as `grader grade --executor slurm` asks for its tasks (executors.SlurmExecutor, through
submitit, from the same settings: slurm_settings.py) and grades as each of those tasks does (grade_task.attempt:
`grader check --dir` in a process group of its own, killed at 90% of the job's time limit, its JSON written by
rename). It sends the files job_sources.py picks; the grader and the course are the cluster's install.

While it waits it says what Slurm says: queued (and why), running on NODE with which GPU, then the check's own lines
as the node writes them, its paths named as the student's folders. The verdict, the JSON and the exit code are those
of the check on that node. A job that ends without a result (held, never able to start, cancelled, preempted, past
its time, its node lost) gets an ENVIRONMENT ERROR verdict saying which, and Ctrl-C cancels it (scancel): no wait is
unbounded and nothing is left running."""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

from rich.text import Text

from grader.check import job_sources, report, slurm_settings
from grader.classroom import executors, grade_task
from grader.errors import GraderError
from grader.paths import relative_path
from grader.results import write_json
from grader.verdicts import Status

FILE_POLL_S = 0.25  # the job's files (its output, its result) are looked at this often; squeue every poll_s
UNANSWERED_S = 120.0  # squeue failing this long: Slurm is not answering, and waiting on would be blind
CANCEL_WAIT_S = 30.0  # after scancel, how long to wait to see the job leave the queue
KEEP_JOB_FOLDERS_S = 7 * 86400  # a failed job's folder is kept (its output is evidence) this long
NODE_NOTE = "node.json"  # where the job says which node and GPUs it got
FINISHED = {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "PREEMPTED", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL",
            "DEADLINE", "SPECIAL_EXIT"}

# Reasons for which Slurm keeps a job pending that waiting does not clear (squeue %r): the job is cancelled and the
# verdict says which.
NEVER_STARTS = {
    "BadConstraints": "its constraints (sbatch: constraint) match no node",
    "DependencyNeverSatisfied": "it depends on a job that failed",
    "InvalidAccount": "the account is not valid (account:)",
    "InvalidQOS": "the QOS is not valid (qos:)",
    "JobHeldAdmin": "an administrator holds it",
    "JobHeldUser": "it is held (sbatch's --hold, or scontrol hold)",
    "PartitionConfig": "the partition cannot give it what it asks for (GPUs, CPUs, memory)",
    "PartitionNodeLimit": "it asks for more than the partition allows",
    "PartitionTimeLimit": "timeout_min is over the partition's time limit",
    "QOSMaxWallDurationPerJobLimit": "timeout_min is over the QOS's time limit",
    "launch failed requeued held": "Slurm could not launch it on its node",
}
WAITING = {"Priority": "jobs of a higher priority go first", "Resources": "waiting for a node with what it asks for",
           "BeginTime": "waiting for its start time", "Reservation": "waiting for its reservation",
           "ReqNodeNotAvail": "the nodes it could run on are down, drained or reserved"}
# Slurm's own line in a job's output when it ends the job: `*** JOB 12 ON n1 CANCELLED AT <time> DUE TO TIME LIMIT ***`
ENDED = re.compile(r"\*\*\* (?:JOB|STEP) [\d._]+ ON \S+ CANCELLED AT \S+(?: DUE TO (?P<why>[A-Z ]+?))? \*\*\*")
ENDED_WHY = {"TIME LIMIT": "the job ran past its time limit (timeout_min: {timeout_min}): ask for more in your "
                           "slurm.yaml",
             "PREEMPTION": "the job was preempted by another job: run the check again",
             "NODE FAILURE": "the job lost its node: run the check again",
             "JOB REQUEUE": "Slurm put the job back in the queue (preempted, or requeued by an administrator), so it "
                            "was cancelled: run the check again"}
BY_STATE = {"TIMEOUT": ENDED_WHY["TIME LIMIT"], "PREEMPTED": ENDED_WHY["PREEMPTION"],
            "NODE_FAIL": ENDED_WHY["NODE FAILURE"], "BOOT_FAIL": "the job's node could not start",
            "OUT_OF_MEMORY": "the job ran out of memory: ask for more (mem_gb) in your slurm.yaml",
            "DEADLINE": "the job missed its deadline",
            "CANCELLED": "the job was cancelled (scancel, by you or an administrator)"}


# -- on the node --------------------------------------------------------------------------------------------------
def _gpus() -> list[str]:
    """The names of the GPUs this job was given (those of $CUDA_VISIBLE_DEVICES, where Slurm set it)."""
    smi = shutil.which("nvidia-smi")
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if smi is None or visible in ("", "-1", "NoDevFiles"):
        return []
    cmd = [smi, "--query-gpu=name", "--format=csv,noheader"] + (["-i", visible] if visible else [])
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.strip() for line in out.splitlines() if line.strip()]


def on_node(task: grade_task.Task, env: dict) -> str | None:
    """What the job runs, on its node and in the cluster's install: a note of where it runs (for the student's
    terminal), then the grading each task of `grader grade` runs. None once the result is written, else why not."""
    write_json(Path(task.result).with_name(NODE_NOTE),
               {"host": os.uname().nodename, "gpus": _gpus(), "started": time.time()})
    return grade_task.attempt(task, 1, env)


# -- on the login node --------------------------------------------------------------------------------------------
def _options(args, variant: str) -> tuple[str, ...]:
    """The student's options that the check on the node takes (the rest are this side's: where the JSON goes)."""
    out = [f"--variant={variant}"]  # each value joined to its option: a value may begin with "-"
    out += [f"--exercise={args.exercise}"] if args.exercise else []
    out += [f"--dtype={d}" for d in args.dtype or []] + [f"--case={c}" for c in args.case or []]
    out += [f"--seed={args.seed}"] if args.seed is not None else []
    out += ["--correctness-only"] * bool(args.correctness_only) + ["--ranked"] * bool(args.ranked)
    out += [f"--timeout={args.timeout!r}"] if args.timeout else []
    out += [f"--hidden={Path(args.hidden).resolve()}"] if args.hidden else []
    out += ["--timings"] * bool(args.timings)
    return tuple(out)


class PathNames:
    """The job's copies of the student's folders, named as the student's folders: as a local check names them (a file
    inside one relative to the course, the folder itself as given)."""

    def __init__(self, folders: dict[Path, Path], root: Path, install_root: Path):
        self.to = {}
        for job, mine in folders.items():
            spellings = {os.path.abspath(job), os.path.realpath(job)}
            inside = relative_path(job, install_root)
            if not os.path.isabs(inside):  # the install prints paths inside it relative to it
                spellings.add(inside)
            for s in spellings:
                self.to[s.rstrip(os.sep)] = (relative_path(mine, root), str(mine))
        alternatives = "|".join(re.escape(s) for s in sorted(self.to, key=len, reverse=True))
        self.rx = re.compile(f"(?P<folder>{alternatives})(?:(?P<slash>/)|(?![\\w-]))") if self.to else None

    def __call__(self, text: str) -> str:
        if self.rx is None:
            return text
        return self.rx.sub(lambda m: self.to[m["folder"]][0] + "/" if m["slash"] else self.to[m["folder"]][1], text)

    def doc(self, value):
        if isinstance(value, str):
            return self(value)
        if isinstance(value, list):
            return [self.doc(v) for v in value]
        if isinstance(value, dict):
            return {k: self.doc(v) for k, v in value.items()}
        return value


class Relay:
    """The check's output on the node, line by line as it is written (a file on the shared filesystem). Its first
    line is the command that ran; a file written afresh (the job started again) is read from its start."""

    def __init__(self, path: Path, show):
        self.path, self.show = path, show
        self.offset, self.partial, self.first = 0, b"", True

    def poll(self, final: bool = False) -> None:
        try:
            size = self.path.stat().st_size
        except OSError:
            return
        if size < self.offset:
            self.offset, self.partial, self.first = 0, b"", True
        if size > self.offset:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read(min(size - self.offset, 1 << 20))
            self.offset += len(data)
            lines = (self.partial + data).split(b"\n")
            self.partial = lines.pop()
            for line in lines:
                self._one(line)
        if final and self.partial:
            self._one(self.partial)
            self.partial = b""

    def _one(self, raw: bytes) -> None:
        line = raw.decode("utf-8", errors="replace").rstrip("\r")
        first, self.first = self.first, False
        if not (first and line.startswith("$ ")):
            self.show(line)


def squeue(job_id: str) -> tuple[str, str, str] | str | None:
    """(state, reason, node) while the job is queued or running; "gone" once it has left the queue (or finished:
    "gone:STATE"); None when squeue did not answer."""
    try:
        p = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T|%r|%N"], capture_output=True, text=True,
                           timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if p.returncode != 0:
        return "gone" if "Invalid job id" in p.stderr else None
    lines = [ln for ln in p.stdout.splitlines() if ln.strip()]
    if not lines:
        return "gone"
    state, reason, node = (lines[0].split("|") + ["", ""])[:3]
    return f"gone:{state}" if state in FINISHED else (state, reason, node)


def cancel(job_id: str) -> bool:
    """scancel, then wait (bounded) for the job to leave the queue: whether it has."""
    try:
        subprocess.run(["scancel", job_id], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        pass
    end = time.monotonic() + CANCEL_WAIT_S
    while time.monotonic() < end:
        state = squeue(job_id)
        if isinstance(state, str):
            return True
        time.sleep(0.5)
    return False


def _output(job) -> str:
    try:
        return Path(job.paths.stdout).read_text(errors="replace")
    except OSError:
        return ""


def ended_by_slurm(job, timeout_min: int) -> str | None:
    """Why Slurm ended the job, from its own line in the job's output (None: no such line). Its SIGTERM reaches the
    check first, so a job ended this way may still have returned: this is the reason to give."""
    ended = list(ENDED.finditer(_output(job)))
    if not ended:
        return None
    due = ended[-1]["why"]
    if not due:
        return BY_STATE["CANCELLED"]
    return ENDED_WHY.get(due, f"Slurm ended the job ({due.lower()})").format(timeout_min=timeout_min)


def why_gone(job, state: str | None, timeout_min: int) -> str:
    """Why a job that left the queue has no result: Slurm's own line in its output, else its last state as squeue
    saw it, else the end of its output."""
    said = ended_by_slurm(job, timeout_min)
    if said:
        return said
    if state in BY_STATE:
        return BY_STATE[state].format(timeout_min=timeout_min)
    text = _output(job)
    if re.search(r"oom[-_ ]kill", text, re.I):
        return BY_STATE["OUT_OF_MEMORY"]
    tail = [ln for ln in text.splitlines() if ln.strip()][-3:]
    return ("the job left the queue without a result" + (f" (state {state})" if state else "")
            + (f"; its output ends: {' | '.join(tail)}" if tail else "; it wrote no output"))


def _outcome(job, timeout_min: int) -> str | None:
    """What the function on the node returned: None (the result is written) or why not."""
    try:
        why = job.result()
    except Exception as e:
        last = executors.node_error(e)
        if "timed-out" in last:  # submitit's handler of Slurm's warning signal, near the time limit
            return ENDED_WHY["TIME LIMIT"].format(timeout_min=timeout_min)
        return f"the job failed on its node: {last}"
    if why is not None and (said := ended_by_slurm(job, timeout_min)):
        return said
    if why and why.startswith("did not finish"):  # grade_task's own limit, 90% of the job's
        return (f"the check {why}: a check may take 90% of the job's time limit (timeout_min: {timeout_min}); ask "
                "for more time in your slurm.yaml")
    return why


@contextlib.contextmanager
def _interrupts(deferred: bool):
    """deferred: Ctrl-C (and SIGTERM, SIGHUP) are noted in the list yielded, for the caller to act on after the
    block (sbatch must not be cut off between making a job and saying its id). Otherwise SIGTERM and SIGHUP interrupt
    as Ctrl-C does, so that a closed terminal cancels the job too. Outside the main thread, signals are left alone."""
    caught: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield caught
        return
    names = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def handler(signum, frame):
        if deferred:
            caught.append(signum)
        else:
            raise KeyboardInterrupt(signal.Signals(signum).name)

    old = {s: signal.signal(s, handler) for s in names if deferred or s != signal.SIGINT}
    try:
        yield caught
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _job_folder(folder: Path, day_id: str) -> Path:
    jobs = folder / "jobs"
    try:
        jobs.mkdir(parents=True, exist_ok=True)
        for old in jobs.iterdir():  # failed jobs' folders, kept a while
            with contextlib.suppress(OSError):
                if time.time() - old.stat().st_mtime > KEEP_JOB_FOLDERS_S:
                    shutil.rmtree(old, ignore_errors=True)
        job = jobs / f"{day_id}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
        job.mkdir()
    except OSError as e:
        raise GraderError(f"cannot make a job folder in {jobs}: {e.strerror or e} (set `folder:` in your slurm.yaml "
                          "to a folder you can write that the nodes see too)") from None
    return job


class Watch:
    """One job from submission to its end, saying what happens on the way."""

    def __init__(self, job, task: grade_task.Task, settings, names: PathNames, console):
        self.job, self.task, self.config, self.console = job, task, settings.config, console
        self.id = str(job.job_id)
        self.node_note = Path(task.result).with_name(NODE_NOTE)
        self.relay = Relay(Path(task.log), lambda line: console.print(Text(names(line)), highlight=False))
        self.submitted = time.monotonic()
        self.started: float | None = None  # when the job began to run (this side's clock)
        self.deadline = float("inf")  # past it the job would have outrun its time limit (suspensions not counted)
        self.reason = None
        self.state: str | None = None  # the last state squeue showed

    def say(self, text: str) -> None:
        self.console.print(Text(text, style="dim"))

    def _node(self) -> None:
        """Once the job runs: where, with which GPU."""
        if self.started is not None:
            return
        try:
            note = json.loads(self.node_note.read_text())
        except (OSError, ValueError):
            return
        self.started = time.monotonic()
        c = self.config
        self.deadline = self.started + c.timeout_min * 60 + c.grace_s + 60
        gpus, asked = note.get("gpus") or [], self.config.gpus_per_task
        if asked == 0:
            with_what = " (no GPU asked for: the check compiles only)"
        elif gpus:
            with_what = " with " + ", ".join(f"{n}× {g}" if n > 1 else g
                                             for g, n in {g: gpus.count(g) for g in gpus}.items())
        else:
            with_what = ", but no GPU is visible there (nvidia-smi shows none): the check will compile only"
        waited = self.started - self.submitted
        self.say(f"running on {note.get('host', '?')}{with_what} "
                 f"(Slurm job {self.id}, after {waited:.1f} s in the queue)")

    def run(self) -> str | None:
        """None once the job has left its result; else why not (the job cancelled first where it may still run)."""
        c = self.config
        last_poll, left_at, unanswered = float("-inf"), None, None
        while True:
            now = time.monotonic()
            self._node()
            self.relay.poll()
            if Path(self.job.paths.result_pickle).exists():
                self.relay.poll(final=True)
                why = _outcome(self.job, c.timeout_min)
                if why is not None and isinstance(squeue(self.id), tuple):  # requeued after its check was ended
                    cancel(self.id)
                return why
            if now - last_poll >= c.poll_s:
                if self.state == "SUSPENDED":  # Slurm's clock stopped too
                    self.deadline += now - last_poll
                last_poll = now
                state = squeue(self.id)
                unanswered = (unanswered or now) if state is None else None
                if unanswered is not None and now - unanswered > UNANSWERED_S:
                    cancel(self.id)
                    return (f"the job could not be followed: Slurm has not answered squeue for {UNANSWERED_S:.0f} s "
                            "(it was cancelled, if it still ran)")
                if isinstance(state, str):
                    self.state = state.partition(":")[2] or self.state
                    left_at = left_at or now
                    if now - left_at >= c.grace_s:  # time for a result written on the node to show here
                        self.relay.poll(final=True)
                        return why_gone(self.job, self.state, c.timeout_min)
                elif state is not None:
                    left_at = None
                    why = self._queued(state, now) if state[0] in ("PENDING", "REQUEUED") else None
                    if why:
                        return why
                    if state[0] == "SUSPENDED" and self.state != "SUSPENDED":
                        self.say(f"Slurm job {self.id} is suspended (preempted): it goes on when Slurm resumes it")
                    self.state = state[0]
            if now > self.deadline:
                cancel(self.id)  # Slurm's own limit should have ended it: never wait past it
                return f"the job still ran {c.timeout_min} min after it started, past its time limit: it was cancelled"
            time.sleep(FILE_POLL_S)

    def _queued(self, state: tuple[str, str, str], now: float) -> str | None:
        _, reason, _ = state
        if self.started is not None:  # requeued: a check started again would start from scratch
            cancel(self.id)
            return ENDED_WHY["JOB REQUEUE"]
        if reason != self.reason:
            self.reason = reason
            words = WAITING.get(reason, NEVER_STARTS.get(reason, reason))
            self.say(f"queued as Slurm job {self.id}" + (f": {words}" if reason and reason != "None" else ""))
        if reason in NEVER_STARTS:
            cancel(self.id)
            return f"the job could not start: Slurm keeps it queued because {NEVER_STARTS[reason]} (reason " \
                   f"{reason}); it was cancelled"
        c = self.config
        if c.max_wait_min and self.started is None and now - self.submitted > c.max_wait_min * 60:
            cancel(self.id)
            return f"the job did not start within max_wait_min ({c.max_wait_min:g} min; Slurm's reason: {reason}): " \
                   "it was cancelled"
        return None


def _failure(args, day, exercises, variant: str, src_dir: Path, message: str) -> dict:
    """The result of a check whose job left none: every exercise an environment error that says why."""
    from grader.check.verdict import ExerciseResult

    mark = {"ranked": True, "seed": None} if args.ranked else {"ranked": False}
    out = [{**ExerciseResult(day.id, ex.name, variant, str(src_dir), args.seed, status=Status.ENV_ERROR,
                             message=message, threshold=ex.threshold).as_dict(), **mark} for ex in exercises]
    return {"day": day.id, "variant": variant, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "ranked": bool(args.ranked), **({} if args.ranked else {"seed": args.seed}), "exercises": out}


def check(args, *, course_path: Path, root: Path, day, exercises: list, src_dir: Path, variant: str,
          console) -> tuple[dict, bool]:
    """The day's check as one Slurm job: (the document `grader check --json` writes, whether it is the check's own
    result; False: the job left none, and the document says why)."""
    from grader.classroom.executors import SlurmExecutor

    settings = slurm_settings.load(course_path, args.slurm_config)  # a bad file is said first, wherever this runs
    why = slurm_settings.slurm_missing()
    if why:
        raise GraderError(why)
    job_dir = _job_folder(settings.folder, day.id)
    folders = job_sources.send(day.id, exercises, src_dir, job_dir / "days", root)
    names = PathNames(folders, root, settings.course_file.parent)
    task = grade_task.Task(variant, day.id, str(job_dir / "days" / day.id), str(job_dir / "result.json"),
                           str(job_dir / "check.log"), str(settings.course_file), settings.config.task_timeout_s,
                           grade_task.COMMAND or (settings.python, "-m", "grader"), _options(args, variant),
                           job_dir.name)
    env = {"GRADER_STATE": str(settings.folder / "state")}  # the job's builds and logs, kept between checks
    executor = SlurmExecutor(settings.config, job_dir / "slurm")
    # submitit also prints sbatch's complaint to stderr; the error raised says it once
    with _interrupts(deferred=True) as caught, contextlib.redirect_stderr(io.StringIO()):
        job = executor.submit(on_node, task, env, name=f"grader-check-{day.id}")
    console.print(Text(f"submitted Slurm job {job.job_id}: {settings.describe()}", style="dim"))
    watch = Watch(job, task, settings, names, console)
    try:
        if caught:
            raise KeyboardInterrupt
        with _interrupts(deferred=False):
            why = watch.run()
    except KeyboardInterrupt:
        try:
            gone = cancel(watch.id)
        except KeyboardInterrupt:  # Ctrl-C again while waiting to see it go: scancel was sent, stop waiting
            gone = False
        console.print(Text(f"cancelled Slurm job {watch.id} (scancel): " + (
            "it has left the queue, and nothing of this check runs on the cluster" if gone else
            f"Slurm has not yet taken it out of the queue; `squeue -j {watch.id}` shows it"), style="yellow"))
        raise
    ran = f", {time.monotonic() - watch.started:.1f} s running" if watch.started else ", never ran"
    waited = (watch.started or time.monotonic()) - watch.submitted
    console.print(Text(f"Slurm job {watch.id}: {waited:.1f} s queued{ran}", style="dim"))
    doc = grade_task.read_result(Path(task.result), day.id) if why is None else None
    if doc is None:
        why = names(why or "the job ended without writing a result")
        output = f" (the job's output: {job.paths.stdout})" if Path(job.paths.stdout).exists() else ""
        message = f"Slurm job {watch.id}: {why}{output}"
        doc = _failure(args, day, exercises, variant, src_dir, message)
        for ex in doc["exercises"]:
            console.print(Text.assemble((report.LABEL[Status.ENV_ERROR], report.STYLE[Status.ENV_ERROR]),
                                        f"  {day.id}.{ex['exercise']}: {message}"))
        return doc, False
    for key in ("submission", "grade"):  # grade_task's own record: not part of a check's result
        doc.pop(key, None)
    shutil.rmtree(job_dir, ignore_errors=True)
    return names.doc(doc), True
