"""One submission × day of `grader grade`: checked by `grader check` in a process of its own, with a time limit.

Each pair's result is OUT/<submission>/<day>.json, the document `grader check --json` writes (with "variant" set to
the submission's name and a "grade" record of how it was graded), written by rename so that a file that exists is
complete. A pair whose grading crashed or ran out of time twice gets a result too, every exercise an env_error, marked
"grade": {"error": …}; a later run grades those again and skips every other pair that has a result."""
from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from grader.results import write_json
from grader.verdicts import Status

LOG_TAIL_CHARS = 2000  # of a failed grading's output, quoted in its error record


@dataclasses.dataclass(frozen=True)
class Task:
    """One submission × day: what a worker (a thread here, a Slurm task elsewhere) needs to grade it. Plain data, so
    that it pickles for submitit; every path absolute."""
    submission: str
    day: str
    src_dir: str
    result: str  # OUT/<submission>/<day>.json
    log: str  # the output of `grader check`
    course: str  # the instructor's course.yaml
    timeout_s: float
    command: tuple[str, ...]  # `grader` as a command (tests substitute a scripted one)
    options: tuple[str, ...] = ()  # passed on to `grader check`: --correctness-only, --ranked
    run: str = ""  # the `grader grade` run that made the task, kept in the result: a result of this run

    @property
    def name(self) -> str:
        return f"{self.submission}/{self.day}"


class GradingFailed(Exception):
    """A grading that gave no result: the process crashed, ran past its time, or wrote no complete result."""


def read_result(path: Path, day: str) -> dict | None:
    """The result in path if it is a complete one for day (a grading's, or an error record), else None."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("day") != day:
        return None
    exercises = doc.get("exercises")
    if not (isinstance(exercises, list) and exercises
            and all(isinstance(e, dict) and e.get("status") in Status.ALL for e in exercises)):
        return None
    return doc


def is_error(doc: dict) -> bool:
    grade = doc.get("grade")
    return isinstance(grade, dict) and bool(grade.get("error"))


def graded(path: Path, day: str) -> bool:
    """Whether the pair needs no grading: a complete result that is not an error record."""
    doc = read_result(path, day)
    return doc is not None and not is_error(doc)


def finished(task: Task) -> bool:
    """Whether this run graded the pair (an earlier run's result, being graded again, does not count)."""
    doc = read_result(Path(task.result), task.day)
    return doc is not None and not is_error(doc) and (doc.get("grade") or {}).get("run") == task.run


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def grade(task: Task, attempt: int = 1, env: dict | None = None) -> str:
    """Grade one pair: `grader check DAY --dir SRC --json TMP` in a process group of its own (the student's code runs
    under it) with a time limit; its result, once complete, renamed into place. Returns the pair's name; raises
    GradingFailed when there is no result."""
    result, log = Path(task.result), Path(task.log)
    result.parent.mkdir(parents=True, exist_ok=True)
    tmp = result.with_name(f".{result.stem}.{os.getpid()}.{attempt}.json")
    tmp.unlink(missing_ok=True)
    cmd = [*task.command, "--course", task.course, "check", task.day, "--dir", task.src_dir, "--json", str(tmp),
           *task.options]
    t0 = time.monotonic()
    with open(log, "w") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=Path(task.course).parent, env={**os.environ, **(env or {}), "GRADER_RESIDENT": "0"},
                                start_new_session=True)
        try:
            code = proc.wait(timeout=task.timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.wait()
            tmp.unlink(missing_ok=True)
            raise GradingFailed(f"did not finish in {task.timeout_s:g} s (log: {log})") from None
        finally:
            _kill_group(proc)  # whatever the check left running (a hung worker) ends with it
    seconds = time.monotonic() - t0
    doc = read_result(tmp, task.day)
    tmp.unlink(missing_ok=True)
    if doc is None:
        if code == -signal.SIGUSR2:  # Slurm's warning that the job's time limit is near (executors.py asks for it):
            # on a loaded node it can come before this grading's own limit
            raise GradingFailed(f"did not finish before the job's time-limit warning (SIGUSR2; log: {log})")
        how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
        raise GradingFailed(f"`grader check` {how} without a result: {_tail(log)}")
    doc["variant"] = task.submission
    for e in doc["exercises"]:
        e["variant"] = task.submission
    doc["submission"] = task.submission
    doc["grade"] = {"run": task.run, "attempt": attempt, "seconds": round(seconds, 1), "exit_code": code,
                    "when": time.strftime("%Y-%m-%d %H:%M:%S"), "host": os.uname().nodename}
    write_json(result, doc)
    return task.name


def attempt(task: Task, attempt: int = 1, env: dict | None = None) -> str | None:
    """grade() as the executors run it: None when the pair has its result, else why not (returned, not raised, so
    that it reaches the submitting side as a value from a Slurm task too)."""
    try:
        grade(task, attempt, env)
    except GradingFailed as e:
        return str(e)
    return None


def _tail(log: Path) -> str:
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return f"no output (log: {log})"
    lines = [ln for ln in text.splitlines()[1:] if ln.strip()]
    last = "\n".join(lines[-12:])[-LOG_TAIL_CHARS:]
    return f"{last or 'no output'} (log: {log})"


def _exercise_doc(day: str, ex, submission: str, source: str, status: str, message: str) -> dict:
    from grader.check.verdict import ExerciseResult

    res = ExerciseResult(day, ex.name, submission, source, None, status=status, message=message,
                         threshold=ex.threshold)
    return {**res.as_dict(), "ranked": False}


def record(task: Task, exercises, status: str, message: str, grade: dict) -> dict:
    """A result written by the grader itself, in the shape of `grader check --json`: an error record (grading failed
    twice) or a missing day (status not_implemented)."""
    doc = {"day": task.day, "variant": task.submission, "ranked": False, "seed": None,
           "exercises": [_exercise_doc(task.day, ex, task.submission, task.src_dir, status, message)
                         for ex in exercises],
           "submission": task.submission,
           "grade": {**grade, "when": time.strftime("%Y-%m-%d %H:%M:%S")}}
    write_json(Path(task.result), doc)
    return doc


COMMAND: tuple[str, ...] | None = None  # `grader` as a command; None: this Python's (the CPU tests script one)


def default_command() -> tuple[str, ...]:
    return COMMAND or (sys.executable, "-m", "grader")
