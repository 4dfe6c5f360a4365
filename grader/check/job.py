"""One resolved job: everything the worker needs to check an exercise, decided once by the runner.

The worker never reads course.yaml and never plans: it receives the exercise, its resolved baseline (with the
folder its solution is built from), the planned cases, the seed, the timing settings, the limits and the paths,
as one JSON file written next to the run's log (so a run can be replayed: `python -m grader.check.worker JOB`)."""
from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from grader.check.plan import PlannedCase, plan
from grader.course import Course, Day, Exercise, Limits, Timing
from grader.paths import Paths


class Target(BaseModel):
    """An exercise and the folder its sources are built from."""
    model_config = ConfigDict(frozen=True)

    day: str
    exercise: Exercise
    src_dir: str


class Job(BaseModel):
    model_config = ConfigDict(frozen=True)

    root: str
    target: Target
    baseline: Literal["solution", "library", "ceiling", "none"]
    baseline_target: Target | None = None  # baseline: solution
    cases: list[PlannedCase]
    seed: int
    timing: Timing
    limits: Limits
    device: Literal["cuda", "cpu"] = "cuda"
    min_capability: str = "0.0"  # the course's oldest GPU generation (course.yaml min_capability)

    @property
    def exercise(self) -> Exercise:
        return self.target.exercise

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.model_dump_json(indent=1))
        return path

    @classmethod
    def read(cls, path: Path) -> Job:
        return cls.model_validate_json(Path(path).read_text())


def make_job(*, course: Course, root: Path, day: Day, ex: Exercise, src_dir: Path, seed: int,
             dtypes: list[str] | None = None, correctness_only: bool = False, device: str = "cuda",
             cases: list[str] | None = None) -> Job:
    b = ex.baseline
    kind = "none" if b is None else "solution" if b.solution else "library" if b.library else "ceiling"
    base = None
    if kind == "solution":
        base_day, base_ex = course.baseline_exercise(ex)
        base = Target(day=base_day.id, exercise=base_ex, src_dir=str(Paths(root).solution(base_day.id)))
    return Job(root=str(root), target=Target(day=day.id, exercise=ex, src_dir=str(src_dir)), baseline=kind,
               baseline_target=base, cases=plan(ex, dtypes, benchmark=not correctness_only, cases=cases), seed=seed,
               timing=course.defaults.timing, limits=ex.limit(course.limits), device=device,
               min_capability=course.min_capability)
