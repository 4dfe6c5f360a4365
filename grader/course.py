"""course.yaml: the schema, loading, and the errors a malformed file gets.

Everything day-specific lives in course.yaml and tasks/; this module only knows the shape of that data.
"""
from __future__ import annotations

import re
from datetime import date, datetime
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator,
                      model_validator)

from grader.errors import GraderError
from grader.yaml_file import not_a_file, read_yaml
from grader.check.error_map import PATTERNS
from grader.verdicts import Category

# What `hints:` may key on: a failure category, or the pattern of a failing output's error map (a pattern's hint
# wins over its category's: grader/check/verdict.py's hint)
HINT_KEYS = (*Category.HINTABLE, *PATTERNS)

DTYPES = ("fp32", "fp16", "bf16")
Dtype = Literal["fp32", "fp16", "bf16"]
DAY_ID = re.compile(r"^day\d{2}$")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Limits(Strict):
    build_s: float = Field(300, gt=0)
    case_s: float = Field(60, gt=0)


class Timing(Strict):
    warmup: int = Field(3, ge=0)
    min_reps: int = Field(10, ge=3)
    max_reps: int = Field(200, ge=3)
    budget_s: float = Field(0.25, gt=0)
    rel_stderr: float = Field(0.01, gt=0)


class Defaults(Strict):
    timing: Timing = Timing()


class Tolerance(Strict):
    atol: float = Field(ge=0)
    rtol: float = Field(ge=0)
    rel_l2: float = Field(gt=0, lt=1, description="bound on ||out-ref||/||ref||; below 1 so zeros fail")
    l2_floor: float = Field(0.0, ge=0, description="the L2 bound is rel_l2·max(||ref||, l2_floor·sqrt(n)): an "
                            "output's OutputSpec sets it (values near zero by chance, held to the precision of "
                            "values of this size)")


Param = bool | int | float | str


class Case(Strict):
    shape: tuple[int, ...]
    offset: int = Field(0, ge=0, description="elements between an aligned allocation and the tensor")
    out_offset: int | None = Field(None, ge=0, description="the outputs' own offset (default: `offset`), so that "
                                                           "inputs and outputs can start at different alignments")
    layout: str | None = Field(None, description="a memory layout the task defines (its LAYOUTS): the case's tensors "
                                                 "are views in that layout, with the same values")
    params: dict[str, Param] = Field({}, description="passed to the task's functions and, in order, to the op")

    @field_validator("shape")
    @classmethod
    def _positive(cls, v):
        if not v or any(d <= 0 for d in v):
            raise ValueError(f"every dimension must be a positive integer, got {list(v)}")
        return v

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, v):
        return {"shape": v} if isinstance(v, (list, tuple)) else v

    @model_validator(mode="after")
    def _offset_or_layout(self):
        if (self.offset or self.out_offset) and self.layout:
            raise ValueError(f"a case takes an offset or a layout, not both (a layout makes its own views), got "
                             f"offset {self.offset}, out_offset {self.out_offset} and layout {self.layout!r}")
        return self

    @property
    def outputs_offset(self) -> int:
        return self.offset if self.out_offset is None else self.out_offset

    def label(self) -> str:
        s = "x".join(map(str, self.shape))
        s = f"{s}+{self.offset}" if self.offset else s
        s = f"{s} out+{self.out_offset}" if self.outputs_offset != self.offset else s
        s = f"{s} {self.layout}" if self.layout else s
        for k, v in self.params.items():  # "causal" for causal=True; nothing for False; k=v otherwise
            s += f" {k}" if v is True else "" if v is False else f" {k}={v}"
        return s

    def same_tensors(self, other: Case) -> bool:
        """The same shape in the same memory (params aside): how sanitize_shapes names correctness cases."""
        return ((self.shape, self.offset, self.outputs_offset, self.layout)
                == (other.shape, other.offset, other.outputs_offset, other.layout))

    def with_params(self, extra: dict) -> Case:
        return self.model_copy(update={"params": {**extra, **self.params}})


class ClassThreshold(Strict):
    """Another bar on some GPU classes, for a reason their hardware gives (e.g. one block an SM where an H100 holds
    two): the class's own calibration, never a discount."""
    capability: list[Annotated[str, StringConstraints(pattern=r"^\d+\.\d+$")]] = Field(min_length=1)
    threshold: float = Field(gt=0)
    reason: str = Field(min_length=1, description="why this class cannot reach the default bar, in one sentence")


class Baseline(Strict):
    solution: str | None = Field(None, description="a ready day whose solution is the baseline")
    exercise: str | None = Field(None, description="which exercise of that day (default: the one with this op)")
    library: bool = Field(False, description="time against the task's library op (e.g. torch.softmax)")
    ceiling: bool = Field(False, description="time against the task's ceiling op (e.g. cuBLAS fp32 GEMM)")

    @model_validator(mode="after")
    def _exactly_one(self):
        if (self.solution is not None) + self.library + self.ceiling != 1:
            raise ValueError("give exactly one of `solution: dayNN`, `library: true` or `ceiling: true`")
        if self.exercise is not None and self.solution is None:
            raise ValueError("`exercise:` names an exercise of the `solution:` day; give `solution:` too")
        return self

    def describe(self) -> str:
        if self.solution:
            return f"{self.solution}{'.' + self.exercise if self.exercise else ''} solution"
        return "library" if self.library else "ceiling"


class OutputSpec(Strict):
    """One output of the op, by the name the task gives it, with its own tolerances where they differ from the
    exercise's (an fp32 logsumexp beside a bf16 output; a dq looser than dk and dv)."""
    name: str = Field(pattern=r"^[A-Za-z_]\w*$")
    tolerances: dict[Dtype, Tolerance] = {}
    # A logsumexp is the size of the scores it comes from, yet can sit near zero by chance (one key: lse is that
    # key's score): relative to its own norm, a rounding of 1e-7 there would be a large error. Its L2 bound counts
    # each element as at least this large (compare's l2_floor); 0: the plain relative L2 error.
    l2_floor: float = Field(0.0, ge=0, description="the size below which this output's values count as near zero "
                                                   "in its relative L2 bound (a logsumexp: 1, its scores' size)")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, v):
        return {"name": v} if isinstance(v, str) else v


class Edit(Strict):
    """One find/replace in a file of the day (a bug planted in a released stub)."""
    file: str
    find: str = Field(min_length=1)
    replace: str


class Stub(Strict):
    """How the student's version of an exercise is made from the solution, beyond clearing the marked holes."""
    plant: list[Edit] = Field([], description="edits applied to the solution: the student gets a bug to fix")
    fails_as: str | None = Field(None, description="the category the released stub must fail with")

    @model_validator(mode="after")
    def _consistent(self):
        if self.plant and self.fails_as is None:
            raise ValueError("a stub with planted bugs says which category it fails with (`fails_as:`)")
        if self.fails_as is not None and self.fails_as not in Category.HINTABLE:
            raise ValueError(f"fails_as {self.fails_as!r} is not a verdict category ({', '.join(Category.HINTABLE)})")
        return self


class ExerciseLimits(Strict):
    """Overrides of the course-wide limits for one exercise (a slow reference, a long build)."""
    build_s: float | None = Field(None, gt=0)
    case_s: float | None = Field(None, gt=0)


class Exercise(Strict):
    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    task: str = Field(pattern=r"^[A-Za-z_][\w.]*$", description="Python module under tasks/")
    op: str = Field(pattern=r"^(?:[A-Za-z_]\w*::)?[A-Za-z_]\w*$",
                    description="the function the built module exports, or `namespace::name` for torch.ops")
    signature: str
    build: Literal["torch_extension", "python"] = Field(
        "torch_extension", description="torch_extension: the sources are compiled with ninja into a module that "
        "exports `op`; python: the first source is a Python file defining `op` (CuPy, numba, Triton...)")
    sources: list[str] = Field(min_length=1, description="the files of the day's folder the exercise builds from; "
                               "in a torch extension, .py files are imported after the library is loaded (they "
                               "register fake and autograd implementations of its torch ops)")
    cpu_compile: str | None = Field(None, description="build: python only: a function of the Python file that "
                                    "compiles its kernels for one dtype without a GPU, called as f(torch_dtype, "
                                    "\"cpu\") by the compile-only check (a route such as CuTe DSL whose compiler "
                                    "needs no device); without it, a Python exercise is checked for syntax only")
    uses: list[str] = Field([], description="files of earlier days compiled with the sources, as `dayNN/file`: "
                            "found in the folder beside this day's (days/dayNN for the student, solutions/dayNN for "
                            "--solution), so the op runs the student's own kernels from those days")
    include_dirs: list[str] = []
    extra_cuda_cflags: list[str] = []
    call: Literal["out", "returns"] = Field(
        "out", description="out: the op writes into output tensors it is given; returns: it returns its outputs. "
        "A task can define its own `call` (e.g. through autograd) instead")
    args: list[str] = Field([], description="the op's arguments by name (inputs, outputs, params), in order; "
                                            "default: inputs, then outputs (call: out), then params")
    outputs: list[OutputSpec] = Field([], description="the outputs compared, by name (default: all the task's)")
    dtypes: list[Dtype] = Field(min_length=1)
    correctness: list[Case] = Field(min_length=1)
    benchmark: list[Case] = Field([], description="timed shapes; none: the exercise passes on correctness alone")
    tolerances: dict[Dtype, Tolerance] = {}
    determinism: Literal["required", "allowed"] = Field(
        "allowed", description="required: two calls on one input must give the same bits, else the case fails")
    checks: list[str] = Field([], description="extra checks by name, e.g. opcheck, torch_compile (grader.protocol "
                                              "or the task's CHECKS)")
    sanitize: list[Literal["memcheck", "racecheck", "initcheck", "synccheck"]] = Field(
        [], description="compute-sanitizer tools the code must be clean under: each runs the correctness cases of "
                        "the first dtype once more; an error in the student's sources fails the exercise")
    sanitize_shapes: list[Case] = Field([], description="the correctness shapes the `sanitize:` tools run (default: "
                                        "all); a few small ones where a tool over every case would take minutes")
    allow: list[str] = Field([], description="GPU work the op may launch besides kernels compiled from its sources, "
                                             "memsets and device-to-device copies (always the op's own): memcpy (a "
                                             "host copy), or part of a kernel's name")
    probes: list[str] = []
    probe_shapes: list[Case] = []
    variants: list[dict[str, Param]] = Field(
        [], description="every case runs once per variant (its params merged in), "
                        "e.g. [{causal: false}, {causal: true}]")
    baseline: Baseline | None = None
    ceiling: Literal["task", "library", "none"] = Field(
        "task", description="what the report's '% of' column divides by, timed in the same run: task: the task's "
        "ceiling() (e.g. cuBLAS fp32 GEMM, the CUDA cores' yardstick); library: the task's library op in the same "
        "dtype (a tensor-core exercise: cuBLAS in fp16/bf16); none: no ceiling, the column shows '-'")
    threshold: float | None = Field(None, gt=0, description="needed speedup over the baseline (geometric mean)")
    class_thresholds: list[ClassThreshold] = Field(
        [], description="the bar on the GPU classes listed (their compute capabilities), where their hardware keeps "
                        "the default out of a correct solution's reach, with the reason")
    limits: ExerciseLimits = ExerciseLimits()
    stub: Stub = Stub()
    processes: int = Field(1, ge=1, le=8, description="processes that run the op together, one per GPU (NCCL; gloo "
                           "with CPU processes when the job runs on the CPU): the worker is rank 0 and starts the "
                           "others (grader/check/ranks.py); a machine with fewer GPUs skips the exercise (exit 2)")
    attribution: bool = Field(True, description="false: the op's GPU work is not attributed to the student's "
                              "sources (an exercise about communication, whose compute is the library's and whose "
                              "transfers run on NCCL's own streams)")
    points: int = Field(ge=0)
    capability: list[Annotated[str, StringConstraints(pattern=r"^\d+\.\d+$")]] = Field(
        [], description="the compute capabilities the exercise runs on, as major.minor, e.g. [\"9.0\"] for wgmma; on any "
                        "other GPU it is skipped, saying so (empty: every GPU)")
    optional: bool = Field(False, description="an extra step beyond the day's: graded like any other when written, "
                           "but its stub left as released (not implemented) does not fail `grader check`'s exit code")
    hints: dict[str, str] = {}

    def threshold_on(self, capability: str | None) -> tuple[float | None, str | None]:
        """The bar on a GPU of this compute capability ("8.6"; None: unknown) and the reason when it is not the
        default one."""
        for t in self.class_thresholds:
            if capability in t.capability:
                return t.threshold, t.reason
        return self.threshold, None

    @model_validator(mode="after")
    def _consistent(self):
        for d in self.dtypes:
            for o in self.outputs or [None]:
                if d not in self.tolerances and (o is None or d not in o.tolerances):
                    which = f"output {o.name!r}" if o else "the outputs"
                    raise ValueError(f"tolerances missing for dtype {d} ({which}): give them under `tolerances:` or "
                                     "the output's own `tolerances:`")
        names = [o.name for o in self.outputs]
        if len(set(names)) != len(names):
            raise ValueError(f"output names must be unique, got {names}")
        if len(set(self.args)) != len(self.args):
            raise ValueError(f"argument names must be unique, got {self.args}")
        timed = bool(self.benchmark)
        if timed and (self.baseline is None or self.threshold is None):
            raise ValueError("a timed exercise (benchmark shapes) needs a `baseline:` and a `threshold:`")
        if not timed and (self.baseline is not None or self.threshold is not None):
            raise ValueError("`baseline:` and `threshold:` need benchmark shapes to time")
        if self.class_thresholds and self.threshold is None:
            raise ValueError("`class_thresholds:` changes the bar of a timed exercise: give `threshold:` too")
        caps = [c for t in self.class_thresholds for c in t.capability]
        if len(set(caps)) != len(caps):
            raise ValueError(f"class_thresholds: a capability may have one bar, got {caps}")
        bad = sorted(set(self.hints) - set(HINT_KEYS))
        if bad:
            raise ValueError(f"hints for unknown categor{'y' if len(bad) == 1 else 'ies'} or patterns {bad}: use "
                             f"{', '.join(HINT_KEYS)}")
        if self.sanitize_shapes and not self.sanitize:
            raise ValueError("sanitize_shapes lists shapes for the `sanitize:` tools, but there are none")
        for c in self.sanitize_shapes:
            if not any(c.same_tensors(k) for k in self.correctness):
                raise ValueError(f"sanitize_shapes: {c.label()} is not one of the correctness shapes")
        if self.processes > 1 and (timed or self.sanitize):
            raise ValueError(f"an exercise of {self.processes} processes is graded on correctness and its checks: "
                             "timing across processes and compute-sanitizer runs are not supported (drop "
                             "`benchmark:` and `sanitize:`)")
        if self.probes and not self.probe_shapes:
            raise ValueError("probes are listed but probe_shapes is empty")
        for s in self.sources:
            if Path(s).is_absolute() or ".." in Path(s).parts:
                raise ValueError(f"source {s!r} must be a file name inside the day's folder")
        for e in self.stub.plant:
            if e.file not in self.sources:
                raise ValueError(f"stub.plant edits {e.file!r}, which is not one of the sources {self.sources}")
        for u in self.uses:
            if not re.fullmatch(r"day\d\d/[\w.-]+\.(cu|cpp|cc)", u):
                raise ValueError(f"uses: {u!r} must be `dayNN/file.cu` (or .cpp): a source file of another day")
        if self.uses and self.build == "python":
            raise ValueError("`uses:` compiles other days' files into a torch extension; a `build: python` "
                             "exercise compiles its kernels itself")
        if self.cpu_compile and self.build != "python":
            raise ValueError("cpu_compile names a function of a `build: python` exercise's file (its kernels' "
                             "compiler without a GPU); a torch extension's sources are compiled by nvcc already")
        if self.build == "torch_extension" and not [s for s in self.sources if not s.endswith(".py")]:
            raise ValueError("a torch extension needs at least one C++/CUDA source besides its .py files")
        if self.build == "python":
            if not self.sources[0].endswith(".py"):
                raise ValueError("a `build: python` exercise lists its Python file (the one defining the op) first "
                                 f"in sources, got {self.sources[0]!r}")
            if self.extra_cuda_cflags:
                raise ValueError("extra_cuda_cflags apply to torch extensions; a `build: python` exercise compiles "
                                 "its kernels itself")
        return self

    @property
    def torch_op(self) -> bool:
        """The op is a registered torch op (`namespace::name`, TORCH_LIBRARY), not a module attribute."""
        return "::" in self.op

    @property
    def timed(self) -> bool:
        return bool(self.benchmark)

    def tolerance(self, output: str, dtype: str) -> Tolerance:
        spec = next((o for o in self.outputs if o.name == output), None)
        tol = spec.tolerances[dtype] if spec is not None and dtype in spec.tolerances else self.tolerances[dtype]
        return tol.model_copy(update={"l2_floor": spec.l2_floor}) if spec is not None and spec.l2_floor else tol

    def limit(self, course_limits: Limits) -> Limits:
        """The course-wide limits with this exercise's overrides."""
        return Limits(build_s=self.limits.build_s or course_limits.build_s,
                      case_s=self.limits.case_s or course_limits.case_s)


ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _iso_date(v):
    """A calendar date written as YYYY-MM-DD (YAML reads it as a date; quoted, it is a string). Anything else is an
    error rather than a guess: pydantic would read the number 20250301 as seconds since 1970."""
    if isinstance(v, datetime):
        raise ValueError(f"give a date without a time, as YYYY-MM-DD (got {v.isoformat()})")
    if v is None or isinstance(v, date):
        return v
    if isinstance(v, str) and ISO_DATE.match(v.strip()):
        try:
            return date.fromisoformat(v.strip())
        except ValueError as e:
            raise ValueError(f"{v!r} is not a date of the calendar ({e})") from None
    raise ValueError(f"expected a date as YYYY-MM-DD, got {v!r}")


class Day(Strict):
    id: str
    title: str
    track: str
    status: Literal["ready", "planned"]
    prerequisites: list[str] = []
    mandatory: bool = False
    topics: list[str] = []
    exercises: list[Exercise] = []
    notebooks: list[str] = Field([], description="nbgrader notebooks in solutions/dayNN, released with the stubs")
    release: date | None = Field(None, description="the date the day goes out: `grader release --to` leaves its "
                                 "stubs and lesson out of the student repository before it (none: at once)")
    due: date | None = Field(None, description="the last day to hand it in: `grader publish` adds the solution to "
                             "the student repository only after it")
    long_steps: dict[str, str] = Field({}, description="step (exercise name, or `the Hopper walk`) -> why it may ask "
                                       "for more code lines than a day's step should (scripts/hole_table.py)")
    # strict: a number, never `true` read as 1 hour or the string "8"
    hours: float | None = Field(None, strict=True, description="the hours a strong student needs for the day's "
                                "mandatory path (the lesson, and the holes of every graded step that is not "
                                "optional), judged from the student repository; a day's work is about 8. The "
                                "syllabus shows it")

    @field_validator("id")
    @classmethod
    def _id(cls, v):
        if not DAY_ID.match(v):
            raise ValueError(f"day id must look like day01, got {v!r}")
        return v

    @field_validator("hours")
    @classmethod
    def _hours(cls, v):
        if v is not None and not (0 < v < float("inf")):  # NaN fails too
            raise ValueError("hours must be a positive number: a strong student's hours for the day's mandatory "
                             "path (about 8 is a day's work)")
        return v

    @field_validator("release", "due", mode="before")
    @classmethod
    def _dates(cls, v):
        return _iso_date(v)

    @field_validator("due")
    @classmethod
    def _due_after_release(cls, v, info):
        released = info.data.get("release")
        if v is not None and released is not None and v <= released:
            raise ValueError(f"the due date must come after the release date ({released})")
        return v

    @model_validator(mode="after")
    def _ready_has_exercises(self):
        if self.status == "ready" and not self.exercises:
            raise ValueError("a ready day must list at least one exercise")
        names = [e.name for e in self.exercises]
        if len(set(names)) != len(names):
            raise ValueError(f"exercise names must be unique within a day, got {names}")
        return self


# What the student repository leaves out by default: the grader's own test suite (it checks the solutions and plants
# bugs in them: tests/known_wrong.yaml), the instructor's scripts and measurements, and the CI that runs them.
INSTRUCTOR_ONLY_PATHS = ("tests/", "scripts/", "measured/", ".ci/", ".github/workflows/leaderboard.yml")


class AllowLeak(Strict):
    """A line a released file may share with a solution region: one so common that it gives no answer away."""
    text: str = Field(min_length=1, description="the line's code, as it stands (whitespace and a trailing comment "
                                                  "do not matter)")
    reason: str = Field(min_length=10, description="why showing it gives nothing away")


ANCHOR_SUFFIX = "_defaults"  # a top-level key that only holds YAML anchors (exercise_defaults: &softmax …)


class Course(Strict):
    # Unknown keys are refused as at every other level (a typo such as `limts:` must not be silently ignored);
    # only keys named *_defaults, which hold YAML anchors for the days to merge, are allowed besides the fields.
    model_config = ConfigDict(extra="forbid", frozen=True)

    title: str
    repository: str
    pitch: str = Field("", description="the syllabus's opening paragraph (markdown)")
    leaderboard: str = Field("", description="where the leaderboard is published (a URL), for the site's home page; "
                                             "empty: it will be on the site")
    limits: Limits = Limits()
    defaults: Defaults = Defaults()
    hints: dict[str, str] = Field({}, description="default hints by failure category or error-map pattern; an "
                                "exercise's own win")
    days: list[Day] = Field(min_length=1)
    min_capability: Annotated[str, StringConstraints(pattern=r"^\d+\.\d+$")] = Field(
        "0.0", description="the oldest GPU generation the course grades on, as major.minor (\"8.0\": Ampere, for "
        "bf16, cp.async and mma.sync): an older GPU grades nothing, saying so at `grader doctor` and `grader check`")
    answers: dict[str, str] = Field(
        {}, description="shared files (relative to course.yaml) that hold the answers to a day's holes, each with "
        "that day: `grader release --to` keeps one out of the student repository until that day's solution is "
        "published there (`grader publish`), and holds back every day that includes it until then")
    allow_leak: list[AllowLeak] = Field(
        [], description="lines a released file may share with a solution region, each with its reason; the release "
        "refuses any other")
    instructor_only: list[str] = Field(
        list(INSTRUCTOR_ONLY_PATHS), description="files `grader release --to` leaves out of the student repository "
        "besides solutions/ and the hidden cases, relative to course.yaml: `folder/` for a folder, else a file name "
        "or a pattern (`*` within a folder, `**` across folders)")

    @model_validator(mode="before")
    @classmethod
    def _anchor_holders(cls, raw):
        if isinstance(raw, dict):
            return {k: v for k, v in raw.items() if not (isinstance(k, str) and k.endswith(ANCHOR_SUFFIX)
                                                         and k not in cls.model_fields)}
        return raw

    @field_validator("instructor_only")
    @classmethod
    def _relative_paths(cls, v):
        for i, pat in enumerate(v):
            parts = pat.strip("/").split("/")
            if not pat.strip("/") or pat.startswith("/") or ".." in parts or "\\" in pat:
                raise ValueError(f"[{i}] {pat!r}: give a path inside the course, relative to course.yaml, "
                                 "with forward slashes")
        return v

    @field_validator("hints")
    @classmethod
    def _hint_keys(cls, v):
        bad = sorted(set(v) - set(HINT_KEYS))
        if bad:
            raise ValueError(f"hints for unknown categories or patterns {bad}: use {', '.join(HINT_KEYS)}")
        return v

    @model_validator(mode="after")
    def _cross_refs(self):
        ids = [d.id for d in self.days]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"duplicate day ids {dup}")
        for path, day in self.answers.items():
            if day not in ids:
                raise ValueError(f"answers: {path} answers {day!r}, which is not a day of the course")
            if path.startswith(("/", "../")) or "/../" in path:
                raise ValueError(f"answers: {path!r} must be a path inside the course, relative to course.yaml")
        index = {d.id: i for i, d in enumerate(self.days)}
        for i, d in enumerate(self.days):
            for p in d.prerequisites:
                if p not in index:
                    raise ValueError(f"{d.id}: prerequisite {p!r} is not a day of the course")
                if index[p] >= i:
                    raise ValueError(f"{d.id}: prerequisite {p!r} must come before it")
            for e in d.exercises:
                for u in e.uses:
                    used = u.split("/")[0]
                    if used not in index or index[used] >= i:
                        raise ValueError(f"{d.id}.{e.name}: uses {u!r}, but {used} is not a day before {d.id}")
                b = e.baseline.solution if e.baseline else None
                if b is None:
                    continue
                if b not in index or self.days[index[b]].status != "ready":
                    raise ValueError(f"{d.id}.{e.name}: baseline solution {b!r} is not a ready day")
                if _find_baseline(self.days[index[b]], e) is None:
                    which = (f"exercise {e.baseline.exercise!r}" if e.baseline.exercise
                             else f"op {e.op!r} of task {e.task!r}")
                    raise ValueError(f"{d.id}.{e.name}: baseline {b!r} has no {which}")
                if b == d.id and e.baseline.exercise in (None, e.name):
                    raise ValueError(f"{d.id}.{e.name}: an exercise cannot be its own baseline")
        return self

    # -- lookups -----------------------------------------------------------------------------------------
    def day(self, day_id: str) -> Day:
        norm = normalize_day_id(day_id)
        for d in self.days:
            if d.id == norm:
                return d
        raise GraderError(f"no day {day_id!r} in course.yaml (days are day01 … {self.days[-1].id})")

    def baseline_exercise(self, ex: Exercise) -> tuple[Day, Exercise] | None:
        if ex.baseline is None or ex.baseline.solution is None:
            return None
        d = self.day(ex.baseline.solution)
        return d, _find_baseline(d, ex)


def _find_baseline(day: Day, ex: Exercise) -> Exercise | None:
    """The exercise of `day` that `ex` is timed against: the named one, else the one of the same task and op. A named
    one may belong to another task: it runs on `ex`'s cases, so its `args` must be among their inputs, outputs and
    params (day 16's dK/dV op against day 15's full backward, whose dq the dK/dV task also allocates)."""
    for x in day.exercises:
        if x.name == ex.baseline.exercise if ex.baseline.exercise else (x.task == ex.task and x.op == ex.op):
            return x
    return None


def normalize_day_id(s: str) -> str:
    """Accepts day7, day07, 7 and 07."""
    m = re.fullmatch(r"(?:day)?0*(\d{1,2})", s.strip().lower())
    return f"day{int(m.group(1)):02d}" if m else s


def format_errors(err: ValidationError, raw) -> str:
    """A pydantic error as lines of `key path: what was wrong`, the path readable against the raw data."""
    lines = []
    for e in err.errors():
        path = _readable_loc(e["loc"], raw)
        msg = e["msg"].removeprefix("Value error, ")
        got = e.get("input")
        got_s = "" if isinstance(got, (dict, list)) or got is None else f" (got {got!r})"
        lines.append(f"  {path}: {msg}{got_s}")
    return "\n".join(lines)


def _readable_loc(loc, raw) -> str:
    """days.3.exercises.0.threshold -> days[3] (day04).exercises[0].threshold"""
    out, node = [], raw
    for part in loc:
        if isinstance(part, int):
            label = f"[{part}]"
            if isinstance(node, list) and part < len(node):
                node = node[part]
                if isinstance(node, dict) and "id" in node:
                    label += f" ({node['id']})"
            out.append(label)
        else:
            if not str(part).startswith(("function-", "list[", "tuple[", "union[")):
                out.append(("." if out else "") + str(part))
            node = node.get(part) if isinstance(node, dict) else None
    return "".join(out) or "(top level)"


def load_course(path: Path) -> Course:
    raw = read_yaml(path, str(path), "not found: run the grader inside the course repository or pass --course")
    if not isinstance(raw, dict):
        raise GraderError(f"{path}: expected a mapping at the top level, got {type(raw).__name__}")
    try:
        return Course.model_validate(raw)
    except ValidationError as e:
        raise GraderError(f"{path} does not match the course schema:\n{format_errors(e, raw)}") from None


def find_course_file(start: Path) -> Path:
    for d in (start, *start.parents):
        if (d / "course.yaml").is_file():
            return d / "course.yaml"
        if why := not_a_file(d / "course.yaml"):  # the first course.yaml upwards is the course's: say what it is
            raise GraderError(f"{d / 'course.yaml'} {why}: the course is read from the file course.yaml; fix or "
                              "remove this one, or pass --course PATH")
    raise GraderError("course.yaml not found in this folder or any parent: run inside the course repository "
                      "or pass --course PATH")
