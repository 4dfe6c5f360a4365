"""Which of the course's steps the GPU at hand grades: a step that names the compute capabilities it runs on
(course.yaml `capability:`, e.g. day 11's wgmma steps, the optional Hopper track) is skipped on any other GPU, saying
so, never graded on another path. `grader list` and `grader doctor` say it before a check does."""
from __future__ import annotations

import os
import shutil
import subprocess

from grader.errors import GraderError

# The GPUs a class has, by compute capability, and the shared memory one block of each may opt in to
# (cudaDevAttrMaxSharedMemoryPerBlockOptin; the CUDA C++ Programming Guide's table of technical specifications per
# compute capability): T4; A100; RTX 30xx and A10; RTX 40xx and L4; H100; B200; RTX 50xx. CI's compile matrix
# (tests/test_compile_matrix.py) compiles every kernel for those the course grades on (min_capability and newer).
SMEM_OPTIN_KIB = {"7.5": 64, "8.0": 163, "8.6": 99, "8.9": 99, "9.0": 227, "10.0": 227, "12.0": 99}


# An instructors' run of another class GPU's rules on the GPU at hand (the GPU suite on an H100): GRADER_SIMULATE_GPU=8.6
# makes `grader` grade and skip as an sm_86 GPU would, the launchers see that GPU's shared-memory opt-in
# (GRADER_SMEM_OPTIN_KIB, common/device_cache.h) and no Hopper path (common/hopper.cuh). The kernels still run at
# this GPU's speed: the verdicts say which code paths hold, not how fast that GPU is.
SIMULATE_ENV = "GRADER_SIMULATE_GPU"
SMEM_ENV = "GRADER_SMEM_OPTIN_KIB"


class SimulationError(GraderError):
    """GRADER_SIMULATE_GPU names no class GPU."""


def simulated() -> tuple[int, int] | None:
    """The capability GRADER_SIMULATE_GPU names, or None when unset; SimulationError for a value not in the table."""
    value = os.environ.get(SIMULATE_ENV, "").strip()
    if not value:
        return None
    if value not in SMEM_OPTIN_KIB:
        raise SimulationError(f"{SIMULATE_ENV}={value!r} names no GPU the course knows: use one of "
                              f"{', '.join(SMEM_OPTIN_KIB)} (a compute capability), or unset it")
    major, minor = value.split(".")
    return int(major), int(minor)


def simulation_words(cap: tuple[int, int]) -> str:
    """How a GPU line says it: "simulating sm_86 (99 KiB a block, no Hopper paths)"."""
    key = f"{cap[0]}.{cap[1]}"
    hopper = "Hopper paths on" if key == "9.0" else "no Hopper paths"
    return f"simulating sm_{cap[0]}{cap[1]} ({SMEM_OPTIN_KIB[key]} KiB a block, {hopper})"


def simulate(cap: tuple[int, int]) -> str:
    """Sets this process's environment for the launchers it loads (their shared-memory opt-in, lowered to the
    simulated GPU's) and returns simulation_words(cap)."""
    os.environ[SMEM_ENV] = str(SMEM_OPTIN_KIB[f"{cap[0]}.{cap[1]}"])
    return simulation_words(cap)


def capability_here() -> tuple[int, int] | None:
    """The first GPU's compute capability from nvidia-smi (no torch import: `grader list` stays fast), or None
    without a driver or GPU; the simulated one where GRADER_SIMULATE_GPU names one and a GPU is there."""
    real = _capability_from_smi()
    if real is not None and (sim := simulated()) is not None:
        return sim
    return real


def _capability_from_smi() -> tuple[int, int] | None:
    if not shutil.which("nvidia-smi"):
        return None
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return None
    try:
        major, minor = out[0].split(".")
        return int(major), int(minor)
    except (IndexError, ValueError):
        return None


def limited_steps(day) -> list:
    """The day's exercises that run on some GPU generations only."""
    return [e for e in day.exercises if e.capability]


def not_graded(day, cap: tuple[int, int] | None) -> list:
    """The day's exercises this GPU does not grade (all the limited ones where the GPU is unknown)."""
    have = f"{cap[0]}.{cap[1]}" if cap else None
    return [e for e in limited_steps(day) if have not in e.capability]


def archs(e) -> str:
    """The architectures an exercise's `capability:` names, as nvcc writes them: "sm_90", "sm_90 / sm_100"."""
    return " / ".join(f"sm_{c.replace('.', '')}" for c in e.capability)


def below_course_minimum(cap: tuple[int, int], minimum: str, gpu: str) -> str | None:
    """Why this GPU grades nothing of the course (older than course.yaml's `min_capability`), or None."""
    need = tuple(int(x) for x in minimum.split("."))
    if tuple(cap) >= need:
        return None
    return (f"needs a GPU of compute capability {minimum} or newer (the course's kernels use bf16, cp.async and "
            f"mma.sync, Ampere's); this GPU ({gpu}) is {cap[0]}.{cap[1]}: nothing is graded here. Grade on an A100, "
            "an L4, an RTX 30xx or a newer GPU")


def list_note(day, cap: tuple[int, int] | None) -> str:
    """`grader list`'s words on a day with limited steps: which, on what GPUs, and whether this one grades them."""
    limited = limited_steps(day)
    if not limited:
        return ""
    names = ", ".join(e.name for e in limited)
    where = archs(limited[0]) if len({tuple(e.capability) for e in limited}) == 1 else "their GPUs"
    if cap is None:
        return f"{names}: graded on {where} only"
    skipped = not_graded(day, cap)
    if not skipped:
        return f"{names}: graded on {where}, as here"
    return f"{', '.join(e.name for e in skipped)}: graded on {where} only, not on this GPU (sm_{cap[0]}{cap[1]})"


def doctor_detail(course, cap: tuple[int, int], gpu: str) -> tuple[bool | None, str]:
    """`grader doctor`'s line on what this GPU grades: every step, or every step but those it names (optional steps
    a warning, a mandatory one a problem: the class could not earn its points on this GPU), or nothing (a GPU older
    than the course's min_capability: a problem)."""
    if why := below_course_minimum(cap, course.min_capability, gpu):
        return False, f"the course {why}"
    skipped = [(d, e) for d in course.days if d.status == "ready" for e in not_graded(d, cap)]
    bars = class_bars_detail(course, cap)
    if not skipped:
        return True, f"this GPU ({gpu}, sm_{cap[0]}{cap[1]}) grades every step of the course{bars}"
    mandatory = [f"{d.id}.{e.name}" for d, e in skipped if not e.optional]
    listed = ", ".join(f"{d.id}.{e.name} ({'optional; ' if e.optional else ''}{archs(e)} only)" for d, e in skipped)
    detail = (f"this GPU ({gpu}, sm_{cap[0]}{cap[1]}) grades every step except {listed}: those are skipped here, "
              f"saying so, and graded on their GPUs{bars}")
    return (False if mandatory else None), detail


def class_bars_detail(course, cap: tuple[int, int]) -> str:
    """The steps whose speed bar on this GPU class is its own (course.yaml `class_thresholds:`), as a sentence to
    append, or ""."""
    have = f"{cap[0]}.{cap[1]}"
    own = []
    for d in course.days:
        for e in d.exercises if d.status == "ready" else []:
            bar, why = e.threshold_on(have)
            if why:
                own.append(f"{d.id}.{e.name} needs {bar:g}x, not {e.threshold:g}x ({why})")
    return f"; its own speed bars: {'; '.join(own)}" if own else ""


def process_groups_detail(course, gpus: int) -> str | None:
    """`grader doctor`'s words on the steps that run in several processes, one per GPU (course.yaml `processes:`),
    where this machine has fewer GPUs: skipped here, graded on a machine with enough, and checkable meanwhile in CPU
    processes (`grader check DAY --on cpu`). None where every such step fits."""
    short = [(d, e) for d in course.days if d.status == "ready" for e in d.exercises if e.processes > gpus]
    if not short:
        return None
    listed = ", ".join(f"{d.id}.{e.name} ({e.processes} GPUs)" for d, e in short)
    first = short[0][0].id
    return (f"this machine has {gpus} GPU(s): {listed} run one process per GPU, so they are skipped here (exit 2) "
            f"and graded on a machine with enough GPUs; `grader check {first} --on cpu` checks one in CPU processes "
            "meanwhile")
