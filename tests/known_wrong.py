"""The known-wrong kernels of tests/known_wrong.yaml made concrete: whether this machine can run one, the copy of its
day's solution with the bug planted (and the earlier days its exercises compile beside it), and the arguments and
environment of its `grader check`. One place for tests/gpu/test_days_gpu.py and scripts/error_maps.py."""
from __future__ import annotations

import shutil
from functools import cache
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
KNOWN_WRONG = yaml.safe_load((ROOT / "tests" / "known_wrong.yaml").read_text())


def bug_id(bug: dict) -> str:
    return f"{bug['day']}-{bug['name']}"


@cache
def ready_days() -> tuple[str, ...]:
    from grader.course import load_course

    return tuple(d.id for d in load_course(ROOT / "course.yaml").days if d.status == "ready")


def skip_reason(bug: dict) -> str | None:
    """Why this machine cannot run the bug's check (a day not ready, too few GPUs, another architecture), or None."""
    if bug["day"] not in ready_days():
        return f"{bug['day']} is planned: its known-wrong kernels run once it is ready"
    import torch

    gpus = bug.get("gpus", 1)
    if gpus > 1 and gpus > torch.cuda.device_count():  # an exercise of several processes
        return f"{bug['name']} runs in {gpus} processes, one per GPU; this machine has fewer GPUs"
    if "gpu_arch" in bug and torch.cuda.is_available():  # a bug in a path only that architecture takes (e.g. day 20's wgmma walk on sm_90)
        major, minor = torch.cuda.get_device_capability()
        if f"sm_{major}{minor}" != bug["gpu_arch"]:
            return f"{bug['name']} is in the {bug['gpu_arch']} path; this GPU is sm_{major}{minor}"
    return None


def plant(bug: dict, folder: Path) -> Path:
    """folder/<day>: the day's solution with the bug's edits made, and beside it the earlier days whose files its
    exercises compile (`uses:`), as in the course. A `find` no longer in the solution fails loudly."""
    from grader.course import load_course

    src = folder / bug["day"]
    shutil.copytree(ROOT / "solutions" / bug["day"], src)
    for used in {u.split("/")[0] for e in load_course(ROOT / "course.yaml").day(bug["day"]).exercises for u in e.uses}:
        shutil.copytree(ROOT / "solutions" / used, folder / used)
    for edit in bug.get("edits") or [bug]:
        f = src / edit["file"]
        text = f.read_text()
        assert text.count(edit["find"]) >= 1, f"{bug['name']}: the text to replace is no longer in the solution"
        f.write_text(text.replace(edit["find"], edit["replace"]))
    return src


def check_args(bug: dict, src: Path) -> list[str]:
    """`grader check`'s arguments for the planted copy (its day, folder, time limit, exercise, dtype, cases)."""
    args = [bug["day"], "--dir", str(src)]
    args += (["--timeout", str(bug["timeout"])] if "timeout" in bug else [])
    args += (["--exercise", bug["exercise"]] if "exercise" in bug else [])
    args += (["--dtype", bug["dtype"]] if "dtype" in bug else [])
    args += [a for name in bug.get("cases") or [] for a in ("--case", name)]
    return args


def check_env(bug: dict) -> dict[str, str]:
    """compute-sanitizer after a failure only where the entry tests what it adds (`sanitizer:`): elsewhere it finds
    nothing in bugs of arithmetic, slowly."""
    return {"GRADER_SANITIZE": "1" if bug.get("sanitizer") else "0"}
