"""Hidden cases: an instructor-only overlay of extra correctness shapes and fixed seeds, merged into ranked runs.

The overlay is a YAML file kept out of every student repository (`grader release --to` leaves it out and refuses
a target that holds one). It is found, in order, at `grader check --hidden PATH`, at $GRADER_HIDDEN, or as
`hidden.yaml` beside course.yaml; a student repository has none, which is normal. Only `grader check --ranked`
reads it: an ordinary check runs the course's cases alone, so a student never runs (or sees) the hidden ones.

    # day -> exercise -> extra cases
    day01:
      softmax:
        correctness: [[3, 5001], {shape: [2, 4099], offset: 3}]   # appended to the exercise's correctness shapes
        seeds: [918273645]                                       # one more correctness run on these fixed inputs

Shapes are written as in course.yaml (every variant of the exercise runs them too). A fixed seed is one more run
of every correctness case (the hidden shapes included, no timing) on inputs the instructor chose, e.g. ones that
broke a past submission; the ranked run passes only if it passes too.
"""
from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field, TypeAdapter, ValidationError

from grader.course import Case, Course, Exercise, Strict, format_errors
from grader import paths
from grader.errors import GraderError
from grader.yaml_file import read_yaml

HIDDEN_ENV, FILE_NAME = paths.HIDDEN_ENV, paths.HIDDEN_FILE


class HiddenCases(Strict):
    """The hidden cases of one exercise."""
    correctness: list[Case] = Field([], description="shapes appended to the exercise's correctness shapes")
    seeds: list[int] = Field([], description="fixed seeds: one more correctness-only run on each")

    def merged(self, ex: Exercise) -> Exercise:
        """The exercise with the hidden shapes after its own."""
        if not self.correctness:
            return ex
        return ex.model_copy(update={"correctness": [*ex.correctness, *self.correctness]})


_SCHEMA = TypeAdapter(dict[str, dict[str, HiddenCases]])


def locate(course_file: Path, explicit: str | None = None, environ=None) -> Path | None:
    """The overlay's path: --hidden, else $GRADER_HIDDEN, else hidden.yaml beside course.yaml if it exists. A path
    given explicitly must exist; the default one may be absent (a student repository)."""
    env = os.environ if environ is None else environ
    for given, where in ((explicit, "--hidden"), (env.get(HIDDEN_ENV), f"${HIDDEN_ENV}")):
        if given:
            p = Path(given).expanduser()
            if not p.is_file():
                raise GraderError(f"{where} names {given}, which is not a file")
            return p.resolve()
    default = Path(course_file).resolve().parent / FILE_NAME
    return default if default.is_file() else None


def load(path: Path, course: Course) -> dict[str, dict[str, HiddenCases]]:
    """The overlay at path, checked against the course: every day and exercise it names exists, and its shapes have
    as many dimensions as the exercise's own."""
    raw = read_yaml(Path(path), f"the hidden cases {path}")
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise GraderError(f"{path}: expected a mapping of days (day01: {{exercise: {{correctness: [...], seeds: "
                          f"[...]}}}}), got {type(raw).__name__}")
    try:
        overlay = _SCHEMA.validate_python(raw)
    except ValidationError as e:
        raise GraderError(f"{path} does not match the hidden-cases schema:\n{format_errors(e, raw)}") from None
    problems = []
    for day_id, exercises in overlay.items():
        day = next((d for d in course.days if d.id == day_id), None)
        if day is None:
            problems.append(f"  {day_id}: not a day of the course (days are written day01 … {course.days[-1].id})")
            continue
        for name, hidden in exercises.items():
            ex = next((e for e in day.exercises if e.name == name), None)
            if ex is None:
                have = ", ".join(e.name for e in day.exercises) or "none"
                problems.append(f"  {day_id}.{name}: {day_id} has no exercise {name!r} (it has: {have})")
                continue
            ranks = sorted({len(c.shape) for c in ex.correctness})
            for i, c in enumerate(hidden.correctness):
                if len(ranks) == 1 and len(c.shape) != ranks[0]:
                    problems.append(f"  {day_id}.{name}.correctness[{i}]: {list(c.shape)} has {len(c.shape)} "
                                    f"dimension(s), the exercise's shapes have {ranks[0]}")
            for i, s in enumerate(hidden.seeds):
                if not 0 <= s < 2**63:
                    problems.append(f"  {day_id}.{name}.seeds[{i}]: a seed is from 0 to 2**63 - 1 (got {s})")
    if problems:
        raise GraderError(f"{path} does not fit course.yaml:\n" + "\n".join(problems))
    return overlay


def for_exercise(overlay: dict[str, dict[str, HiddenCases]] | None, day_id: str, name: str) -> HiddenCases:
    return (overlay or {}).get(day_id, {}).get(name, HiddenCases())
