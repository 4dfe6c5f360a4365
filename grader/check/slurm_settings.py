"""Where and with what `grader check --on slurm` runs its job, read from two files: the course's `slurm.yaml`, beside
course.yaml (the instructor ships it with the course), then the student's own (`--slurm-config PATH`, else
~/.config/grader/slurm.yaml when there is one), whose keys replace the course's one by one.

The keys are those of `grader grade --slurm-config` (grader/classroom/executors.py: partition, gpus_per_task,
cpus_per_task, mem_gb, timeout_min, account, qos, setup, sbatch, python, poll_s, grace_s, max_wait_min), so the job is
asked for the way `grade` asks for its tasks, plus two of the check's own:
- `course`: the course.yaml the job checks against, on the cluster's shared filesystem (default: the course this
  command runs in). With `python` (the Python whose grader the job runs) it says where the grader and the course
  come from. When the course's file sets them, a student's file may not change them: the job sends only the
  student's sources, and the thresholds, tasks and baselines are the install's.
- `folder`: where job folders go, a folder the nodes see too (default: the grader's state folder, `.grader/slurm`).
  The job keeps its builds there between checks (`folder/state`), so an unchanged re-check does not compile again."""
from __future__ import annotations

import difflib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from grader.classroom.executors import SlurmConfig, read_settings
from grader.errors import GraderError
from grader.paths import Paths

COURSE_FILE = "slurm.yaml"  # beside course.yaml
INSTALL_KEYS = ("course", "python")  # where the job's grader and course come from: the course's to set
PATH_KEYS = ("course", "python", "folder")  # relative to the file that sets them


class CheckSlurmConfig(SlurmConfig):
    """SlurmConfig (unknown keys refused) and the check's own keys."""
    course: str | None = None  # the course.yaml the job checks against (default: the one this command runs in)
    folder: str | None = None  # job folders, seen by the nodes too (default: <state>/slurm)


def user_file() -> Path:
    """The student's own settings when --slurm-config names none: $XDG_CONFIG_HOME/grader/slurm.yaml."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "grader" / "slurm.yaml"


@dataclass
class Settings:
    config: CheckSlurmConfig
    files: list[Path]  # the files read, the course's first
    course_file: Path  # the course.yaml the job checks against
    python: str  # the Python the job runs
    folder: Path  # job folders

    def describe(self) -> str:
        """What a job asks Slurm for, in a line."""
        c = self.config
        parts = [f"partition {c.partition or '(the default)'}",
                 f"{c.gpus_per_task} GPU{'s' if c.gpus_per_task != 1 else ''}"
                 + (" (compile-only)" if c.gpus_per_task == 0 else ""),
                 f"{c.cpus_per_task} CPU{'s' if c.cpus_per_task != 1 else ''}"]
        parts += [f"{c.mem_gb:g} GB"] if c.mem_gb else []
        parts += [f"{c.timeout_min} min"]
        parts += [f"{k} {v}" for k, v in (("account", c.account), ("qos", c.qos)) if v]
        parts += [f"sbatch {' '.join(f'--{k}' if v is True else f'--{k}={v}' for k, v in c.sbatch.items())}"] \
            if c.sbatch else []
        parts += [f"setup: {'; '.join(c.setup)}"] if c.setup else []
        return ", ".join(parts)


def _check(data: dict, path: Path, what: str) -> None:
    """Each file is validated on its own, so that a bad key is named with the file it is in."""
    try:
        CheckSlurmConfig.model_validate(data)
    except ValidationError as e:
        known = sorted(CheckSlurmConfig.model_fields)
        problems = []
        for err in e.errors():
            where = ".".join(map(str, err["loc"])) or "(top)"
            if err["type"] == "extra_forbidden" and len(err["loc"]) == 1:
                near = difflib.get_close_matches(where, known, n=1)
                problems.append(f"unknown key {where!r}" + (f" (did you mean {near[0]!r}?)" if near else ""))
            else:
                problems.append(f"{where}: {err['msg']}")
        raise GraderError(f"{what} {path}: {'; '.join(problems)}. The keys are: {', '.join(known)}") from None


def _resolve_paths(data: dict, path: Path) -> dict:
    """course, python and folder as absolute paths (~ expanded; a relative one is relative to the file's folder)."""
    out = dict(data)
    for key in PATH_KEYS:
        if isinstance(out.get(key), str):
            p = Path(out[key]).expanduser()
            out[key] = str(p if p.is_absolute() else (path.parent / p).resolve())
    return out


def load(course_path: Path, student: str | None = None) -> Settings:
    """The settings of a `--on slurm` job of the course at course_path: the course's file, then the student's."""
    course_path = Path(course_path).resolve()
    merged: dict = {}
    files: list[Path] = []
    course_file = course_path.parent / COURSE_FILE
    if course_file.is_file():
        data = _resolve_paths(read_settings(course_file, "the course's Slurm settings"), course_file)
        _check(data, course_file, "the course's Slurm settings")
        merged, files = data, [course_file]
    mine = Path(student).expanduser().resolve() if student else user_file()
    if student or mine.is_file():
        what = "--slurm-config" if student else "your Slurm settings"
        data = _resolve_paths(read_settings(mine, what), mine)
        _check(data, mine, what)
        for key in INSTALL_KEYS:
            if key in data and key in merged and data[key] != merged[key]:
                raise GraderError(f"{what} {mine}: `{key}` is set by the course ({course_file}: {merged[key]}), and "
                                  "a job checks against the course's install of the grader, not one of yours: remove "
                                  f"`{key}` from {mine}")
        merged = {**merged, **data}
        files.append(mine)
    config = CheckSlurmConfig.model_validate(merged)
    target = Path(config.course) if config.course else course_path
    if not target.is_file():
        raise GraderError(f"`course: {config.course}` ({files[-1] if files else course_file}) names no file here: it "
                          "should be the course.yaml of the course's install on the cluster, which this login node "
                          "and the nodes both see")
    if config.python and not (os.path.isfile(config.python) and os.access(config.python, os.X_OK)):
        raise GraderError(f"`python: {config.python}` is not an executable here: it should be the Python of the "
                          "grader's install on the cluster, which this login node and the nodes both see")
    folder = Path(config.folder) if config.folder else Paths(course_path.parent).state / "slurm"
    return Settings(config, files, target, config.python or sys.executable, folder)


def slurm_missing() -> str | None:
    """Why `--on slurm` cannot submit from here (None: it can)."""
    try:
        import submitit  # noqa: F401
    except ImportError:
        return "--on slurm needs submitit, which is not installed: pip install -e '.[slurm]'"
    missing = [c for c in ("sbatch", "squeue", "scancel") if shutil.which(c) is None]
    if missing:
        return (f"--on slurm needs Slurm's commands, and {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} "
                "not on PATH here: run it on a login node of the cluster (where `sbatch` works)")
    return None


def _partitions() -> tuple[list[tuple[str, bool, str]] | None, str]:
    """(name, default, gres) of each partition sinfo shows, or None and why it could not tell."""
    try:
        p = subprocess.run(["sinfo", "-h", "-o", "%P|%a|%D|%G"], capture_output=True, text=True, timeout=15)
    except subprocess.TimeoutExpired:
        return None, "sinfo did not answer within 15 s"
    except OSError as e:
        return None, str(e)
    lines = [ln.split("|") for ln in p.stdout.splitlines() if ln.count("|") == 3]
    if p.returncode != 0 or not lines:
        said = (p.stderr or p.stdout).strip().splitlines()
        return None, said[-1] if said else f"sinfo exited with code {p.returncode}"
    merged: dict[str, tuple[bool, set]] = {}
    for name, _avail, _nodes, gres in lines:
        default, kinds = merged.setdefault(name.rstrip("*"), (name.endswith("*"), set()))
        kinds.update(g for g in gres.split(",") if g and g != "(null)")
    return [(n, d, ",".join(sorted(k)) or "no gres") for n, (d, k) in merged.items()], ""


def doctor(course: str | None):
    """`grader doctor`'s lines on Slurm: whether it answers here, and what a `check --on slurm` job would ask for."""
    from grader.course import find_course_file
    from grader.doctor import Check

    out = []
    parts = None
    if shutil.which("sinfo") is None:
        out.append(Check("slurm", None, "no Slurm commands here (fine: `grader check --on slurm` runs from a login "
                                        "node of a cluster)"))
    else:
        parts, why = _partitions()
        if parts is None:
            out.append(Check("slurm", None, f"Slurm's commands are here but Slurm does not answer ({why}): on a "
                                            "cluster's login node, ask its admins whether slurmctld is up and "
                                            "`sinfo` works from here; on a machine without Slurm nothing needs it "
                                            "(`grader check` runs locally)"))
        else:
            shown = "; ".join(f"{n}{' (default)' if d else ''}: {g}" for n, d, g in parts)
            out.append(Check("slurm", True, f"reachable; partitions: {shown}"))
            if (why := slurm_missing()) is not None:
                out.append(Check("--on slurm", None, why))
    try:
        course_path = Path(course).resolve() if course else find_course_file(Path.cwd().resolve())
    except GraderError:
        return out
    if not course_path.is_file():  # doctor's course line says what it is
        return out
    try:
        s = load(course_path)
    except GraderError as e:
        out.append(Check("slurm job", None, str(e)))
        return out
    sources = " + ".join(str(f) for f in s.files) or "no settings file: the defaults"
    out.append(Check("slurm job", True, f"`grader check --on slurm` asks for {s.describe()}; checks against "
                                        f"{s.course_file} with {s.python} (settings: {sources})"))
    c = s.config
    if parts and c.gpus_per_task:
        target = next((p for p in parts if p[0] == c.partition or (c.partition is None and p[1])), None)
        if target is None:
            out.append(Check("slurm job", None, f"sinfo shows no partition {c.partition or '(no default)'}"))
        elif "gpu" not in target[2]:
            out.append(Check("slurm job", None, f"partition {target[0]} offers no GPUs (gres: {target[2]}): a job "
                                                "asking for one is refused; set `partition:` to one with GPUs, or "
                                                "gpus_per_task: 0 for a compile-only check"))
    return out
