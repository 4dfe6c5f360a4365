"""The GPU suite's one excuse: an exercise whose result says this machine lacks a Python package the exercise
imports (a route of an optional extra: CuTe DSL's `cutlass`, `mojo`) is untested here, not failed, when this Python
really lacks it. scripts/gpu_suite.py lists such routes in the suite's record (`untested`)."""
import importlib.util


def absent_package(ex: dict) -> str | None:
    """The package an exercise's result says this machine lacks, if it really is absent from this Python (a route
    of an optional extra, e.g. CuTe DSL's `cutlass` or `mojo`): that exercise is not tested here, as the grader
    says, rather than failed. A package that is present yet reported missing is the grader's bug: None."""
    pkg = ex.get("missing_package")  # the grader's result names it (grader/check/verdict.py)
    if ex.get("status") != "env_error" or not pkg:
        return None
    return pkg if importlib.util.find_spec(pkg.split(".")[0]) is None else None


def untested_routes(exercises: list[dict]) -> list[str]:
    """The suite's record of an exercise list's routes that could not run here: `day.exercise (package)` each."""
    return [f"{ex['day']}.{ex['exercise']} ({pkg})" for ex in exercises if (pkg := absent_package(ex))]
