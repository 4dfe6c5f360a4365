"""The verdict on one exercise, assembled in one place: from the worker's case results (or the event that ended
the run early), the compile-only report on a machine without a GPU, and the placeholders still in the stub.
The report renders it; the CLI turns the statuses into an exit code (grader/verdicts.py)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from grader.check.timing import geomean
from grader.verdicts import MISSING_FILE, Category, Status, restore


@dataclass
class ExerciseResult:
    day: str
    exercise: str
    variant: str
    source: str
    seed: int
    status: str = Status.FAIL
    message: str = ""
    threshold: float | None = None
    speedup: float | None = None  # geometric mean over benchmark cases
    points: int = 0
    info: dict = field(default_factory=dict)
    builds: list = field(default_factory=list)
    cases: list = field(default_factory=list)
    log: str = ""
    compile: list = field(default_factory=list)  # compile-only reports when there is no GPU
    missing_package: str | None = None  # env_error: the Python package the exercise imports and this Python lacks

    def as_dict(self):
        return asdict(self)


def class_bar(ex, info: dict | None) -> tuple[float | None, str, str | None]:
    """The speed bar of the GPU class the run reported (course.yaml `class_thresholds:`), the words that say so
    (" on sm_86", or "" for the default bar) and the class's reason (None for the default)."""
    cap = (info or {}).get("capability")
    bar, why = ex.threshold_on(cap)
    return bar, (f" on sm_{cap.replace('.', '')}" if why else ""), why


def decide(res: ExerciseResult, ex, terminal: dict | None, correctness_only: bool) -> ExerciseResult:
    """Status and message from how the run ended (terminal: build failure, missing op, no GPU, env error) or
    from the cases."""
    if terminal is not None:
        kind = terminal["ev"]
        if kind == "build":
            res.status, res.message = Status.BUILD_ERROR, "the code does not compile"
        elif kind == "missing_op":
            res.status = Status.NOT_IMPLEMENTED
            res.message = f"the built module has no `{terminal['op']}`: not implemented yet"
        elif kind == "no_gpu":
            res.status, res.message = Status.NO_GPU, "no CUDA GPU here: correctness and speed need a GPU"
        elif kind == "skipped":
            res.status, res.message = Status.SKIPPED, terminal["message"]
        else:
            res.status, res.message = Status.ENV_ERROR, terminal.get("message", "environment error")
            res.missing_package = terminal.get("missing_package")
        return res
    failures = [c for c in res.cases if not c["ok"] and c["category"] != Category.SKIPPED]
    if any(c["ok"] for c in res.cases):
        # Some case passed, so the kernel exists: an output left entirely unwritten is a bug in it (a launch that
        # skips this shape, say), not a missing implementation.
        for c in failures:
            if c["category"] == Category.NOT_IMPLEMENTED:
                c["category"], c["message"] = Category.UNWRITTEN, "no output element was written for this shape"
    elif (any(c["category"] == Category.NOT_IMPLEMENTED for c in failures)
          and all(c["category"] in (Category.NOT_IMPLEMENTED, *Category.NOT_COUNTED) for c in failures)):
        # at least one case found the output unwritten; cases that never ran (a worker that died) say nothing
        res.status, res.message = Status.NOT_IMPLEMENTED, "the output is never written: not implemented yet"
        return res
    if failures:
        first = failures[0]
        res.status = Status.FAIL
        res.message = f"{len(failures)} case(s) failed; first: {first['dtype']} {first['label']}: {first['message']}"
        return res
    tools = [c["label"] for c in res.cases if c["kind"] == "sanitizer"]
    clean = f", clean under {' and '.join(tools)}" if tools else ""
    if not ex.timed:
        res.status, res.points = Status.PASS, ex.points
        res.message = f"correct in every case{clean} (this exercise is not timed)"
        return res
    if correctness_only:
        res.status, res.message = Status.PASS, f"correct in every case{clean} (the timed shapes and speed not checked)"
        return res
    res.speedup = geomean([c["speedup"] for c in res.cases if c["kind"] == "benchmark"])
    bar, on, _ = class_bar(ex, res.info)
    res.threshold = bar
    if res.speedup >= bar:
        res.status, res.points = Status.PASS, ex.points
        res.message = f"correct{clean}, and {res.speedup:.2f}x the baseline (needs {bar:g}x{on})"
    else:
        res.status = Status.FAIL
        res.message = f"correct, but {res.speedup:.2f}x the baseline: needs {bar:g}x{on}"
    return res


def missing_files(res: ExerciseResult) -> list[str]:
    """The sources its compile reports found missing."""
    return [c["file"] for c in res.compile if not c.get("ok") and c.get("note") == MISSING_FILE]


def compiled_only(res: ExerciseResult, ex, reports: list) -> ExerciseResult:
    """No GPU: the verdict is what the compilers said."""
    res.compile = [r.as_dict() for r in reports]
    if gone := missing_files(res):
        res.status = Status.BUILD_ERROR
        res.message = (f"{', '.join(gone)} {'is' if len(gone) == 1 else 'are'} missing, so nothing of this exercise "
                       f"was built: {restore(gone, res.day)}")
    elif not all(r.ok for r in reports):
        res.status, res.message = Status.BUILD_ERROR, "the code does not compile"
    else:
        kernels = next((r.note for r in reports if r.note.startswith("kernels ")), "")
        if ex.build != "python":
            what = "compiled for sm_80 and sm_90"
        elif kernels.startswith("kernels compiled"):
            what = f"Python syntax checked and its {kernels} without a GPU"
        elif kernels:
            what = f"Python syntax checked; {kernels}"
        else:
            what = "Python syntax checked (its kernels compile only on a GPU)"
        res.message = (f"{what}; no CUDA GPU here, so correctness and speed were not checked: run "
                       "`grader check` on a GPU machine")
    return res


def missing_compiler(res: ExerciseResult, message: str) -> ExerciseResult:
    """A compiler the exercise needs is not on this machine: an environment error (exit 2), saying what to
    install; nothing was built, so nothing of the code is judged."""
    res.status, res.message = Status.ENV_ERROR, message
    return res


def note_placeholders(res: ExerciseResult, spots: list[str], placeholder: str, others: int = 0) -> ExerciseResult:
    """Where the stub's placeholder still stands: beside NOT IMPLEMENTED, and beside a compile-only verdict, which a
    stub left as released gets as finished code does (it compiles), so that it alone says the work is not done.
    spots: the places this step's code reaches; others: how many more stand elsewhere in its files."""
    shown = ", ".join(spots[:3]) + (f" and {len(spots) - 3} more" if len(spots) > 3 else "")
    if others:
        shown += f"; {others} more that this step's code does not reach (yet)"
    if res.status == Status.NOT_IMPLEMENTED and spots:
        res.message += f" ({placeholder} still at {shown})"
    elif res.status == Status.NO_GPU and spots:
        # the marker is one line, so code written under it cannot be told from a part not written: say both
        res.message += (f". {placeholder} still stands at {shown}: a part not written yet, or written with its "
                        "marker left in place (delete the marker line once its part is written)")
    return res


def hint_category(res: ExerciseResult) -> str | None:
    """Which hint fits this result: the first failed case's, or the exercise's status."""
    if res.status == Status.PASS:
        return None
    failed = [c for c in res.cases if not c["ok"] and c["category"] not in Category.NOT_COUNTED]
    if res.status == Status.BUILD_ERROR:
        gone = missing_files(res)
        if gone and len(gone) == sum(not c.get("ok") for c in res.compile):
            return None  # the message names the missing files: no compiler error to read
        return Category.BUILD_ERROR
    if res.status == Status.NOT_IMPLEMENTED:
        return Category.NOT_IMPLEMENTED
    if res.status == Status.FAIL:
        return (failed[0].get("hint_category") or failed[0]["category"]) if failed else Category.SLOW
    return None


def hint_pattern(res: ExerciseResult) -> str | None:
    """The pattern of the failed case whose error map says the most (grader/check/error_map.py's choose, the map
    the report draws), if it showed one."""
    if res.status != Status.FAIL:
        return None
    from grader.check.error_map import choose

    mapped = choose([c for c in res.cases if not c["ok"] and c["category"] not in Category.NOT_COUNTED])
    return mapped.get("pattern") if mapped else None


def hint(res: ExerciseResult, ex, course_hints: dict[str, str]) -> str | None:
    """The hint for the pattern the error map showed (the exercise's, then the course's), else for the category:
    a pattern says more than its category does."""
    cat = hint_category(res)
    if not cat:
        return None
    for key in (hint_pattern(res), cat):
        found = key and (ex.hints.get(key) or course_hints.get(key))
        if found:
            return found
    return None
