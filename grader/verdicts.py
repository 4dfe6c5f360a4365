"""The words of a verdict, defined once: an exercise's status, a case's (or a check's) category, and the exit code
they give. The schema validates `hints:` keys against CATEGORIES; the worker, the verdict and the report use these
names and no others."""
from __future__ import annotations


class Status:
    """What `grader check` says of one exercise."""

    PASS = "pass"
    FAIL = "fail"  # wrong, too slow, or a check failed
    NOT_IMPLEMENTED = "not_implemented"
    BUILD_ERROR = "build_error"
    NO_GPU = "no_gpu"  # compiled only: correctness and speed need a GPU
    ENV_ERROR = "env_error"  # the machine or the course's configuration, not the student's code
    SKIPPED = "skipped"  # not checked: the exercise needs more of the machine than this one has (several GPUs)

    ALL = (PASS, FAIL, NOT_IMPLEMENTED, BUILD_ERROR, NO_GPU, ENV_ERROR, SKIPPED)
    UNGRADED = (NO_GPU, ENV_ERROR, SKIPPED)  # grading was impossible here: exit 2 unless something failed


class Category:
    """Why one case (or one named check within it) did or did not pass."""

    PASS = "pass"
    # the outputs against the reference (grader/check/compare.py)
    NOT_IMPLEMENTED = "not_implemented"  # no output element written
    UNWRITTEN = "unwritten"  # some output elements never written
    NONFINITE = "nonfinite"  # NaN/inf where the reference has none, or the reverse
    MISMATCH = "mismatch"  # outside the tolerance
    # the call itself
    INPUT_MODIFIED = "input_modified"
    NONDETERMINISTIC = "nondeterministic"  # two calls on one input gave different bits
    CRASH = "crash"  # the CUDA context died, or the process running the op
    TIMEOUT = "timeout"
    ERROR = "error"  # the op raised
    # the task's extra checks (protocol.CHECKS, or a task's own)
    OPCHECK = "opcheck"  # torch.library.opcheck: schema, fake tensor, autograd registration
    TORCH_COMPILE = "torch_compile"  # the op under torch.compile(fullgraph=True)
    SANITIZER = "sanitizer"  # compute-sanitizer found an error (or could not run where an exercise requires it)
    LOCAL_MEMORY = "local_memory"  # ptxas: a kernel has a stack frame or spills (the no_local_memory check)
    CHECK_FAILED = "check_failed"  # any other extra check of a task
    # integrity: what an honest op cannot do (grader/check/attribution.py, the timing checks in the worker)
    FOREIGN_KERNEL = "foreign_kernel"  # GPU work not compiled from the student's sources (the library, say)
    SIDE_STREAM = "side_stream"  # work on a stream other than the caller's current one
    STALE_OUTPUT = "stale_output"  # a timed call's output is wrong: a cached or replayed result
    IMPOSSIBLE_TIMING = "impossible_timing"  # faster than the memory or the arithmetic units allow
    TAMPERED = "tampered"  # the op replaced the grader's or torch's own code in its process (check/tamper.py)
    # the exercise as a whole
    BUILD_ERROR = "build_error"
    SLOW = "slow"  # correct, below the threshold
    # cases that did not run
    SKIPPED = "skipped"  # not timed because correctness failed
    NOT_RUN = "not_run"  # a hang or repeated crashes stopped the run

    ALL = (PASS, NOT_IMPLEMENTED, UNWRITTEN, NONFINITE, MISMATCH, INPUT_MODIFIED, NONDETERMINISTIC, CRASH, TIMEOUT,
           ERROR, OPCHECK, TORCH_COMPILE, SANITIZER, LOCAL_MEMORY, CHECK_FAILED, FOREIGN_KERNEL, SIDE_STREAM, STALE_OUTPUT,
           IMPOSSIBLE_TIMING, TAMPERED, BUILD_ERROR, SLOW, SKIPPED, NOT_RUN)
    # Not failures of their own: a case that did not run because of another.
    NOT_COUNTED = (SKIPPED, NOT_RUN)
    HINTABLE: tuple[str, ...] = ()  # every failure a student can act on (set below)


Category.HINTABLE = tuple(c for c in Category.ALL if c != Category.PASS and c not in Category.NOT_COUNTED)

# Exit codes of the CLI.
EXIT_PASS, EXIT_FAIL, EXIT_ENV = 0, 1, 2

# A source that is not there: the compile report's note (compile_check.source_problem), and how to get it back.
MISSING_FILE = "file not found"


def restore(files: list[str], day_id: str) -> str:
    """How to get a day's missing sources back, each named as the grader prints it (from the course's folder)."""
    return (f"restore {'it' if len(files) == 1 else 'them'} with `git checkout -- {' '.join(files)}` (or "
            f"`grader release {day_id}` for the released stub)")


def exit_code(statuses: list[str]) -> int:
    """1 if anything failed (a failure outranks an environment problem), else 2 if grading was impossible, else 0."""
    if any(s not in (Status.PASS, *Status.UNGRADED) for s in statuses):
        return EXIT_FAIL
    return EXIT_ENV if any(s in Status.UNGRADED for s in statuses) else EXIT_PASS
