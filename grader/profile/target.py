"""The GPU side of `grader profile`, started twice with a JSON spec:

prepare  in a plain process: build (or reuse `grader check`'s build of) the exercise, check that the op exists
         and writes its output, and measure this GPU's roofline ceilings if they are not cached yet;
profile  under ncu: load that build, call the op once as a warm-up, then once inside the NVTX range ncu is told to
         profile, so only the student's kernels of that one call are measured.

The outcome goes to the JSON file named by spec["result"]: under ncu, stdout is shared with the profiler.
"""
from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path

from grader.check.build import BuildError, MissingPackage, build_exercise, load_built
from grader.check.worker import short_error
from grader.course import Exercise
from grader.profile.ncu import RANGE
from grader.protocol import CourseConfigError, Task
from grader.results import write_json

SEED = 0  # inputs do not change a kernel's speed; a fixed seed makes two profiles comparable


def _case(torch, task: Task, spec):
    """The case `grader check` would make for this shape (the same protocol code), without its reference."""
    return task.materialize(torch, shape=spec["shape"], dtype=spec["dtype"], params=spec.get("params", {}),
                            seed=SEED, offset=spec.get("offset", 0), layout=spec.get("layout"), reference=False)


def prepare(spec: dict, torch, ex, task, root: Path) -> dict:
    from grader.profile.ceilings import load_cached, measure
    from grader.check.compare import poison, poisoned_mask

    props, cap = torch.cuda.get_device_properties(0), torch.cuda.get_device_capability(0)
    info = {"gpu": props.name, "capability": f"{cap[0]}.{cap[1]}", "sms": props.multi_processor_count}
    try:
        module, secs, _ = build_exercise(ex, src_dir=Path(spec["src_dir"]), root=root, day_id=spec["day"],
                                         capability=cap)
    except MissingPackage as e:
        return {"status": "env_error", "message": f"{spec['day']}.{ex.name} needs the Python package `{e}`",
                "missing_package": str(e), **info}
    except BuildError as e:
        return {"status": "build_error", "diagnostics": [str(d) for d in e.diagnostics], "log": e.log[-20000:], **info}
    fn = task.resolve(module, ex)
    if fn is None:
        return {"status": "missing_op", "op": ex.op, **info}
    case = _case(torch, task, spec)
    # The work the op must do (e.g. 2MNK for a GEMM): tensor-core FLOPs are not in ncu's FP32/FP16 counters.
    task_flops = task.flops(case)
    for o in case.outputs.values():
        poison(o)
    try:
        got = task.call(fn, case, ex)()
        torch.cuda.synchronize()
    except Exception as e:  # the op raised, or its kernel crashed the context
        return {"status": "op_error", "message": short_error(e), **info}
    if all(bool(poisoned_mask(o).all()) for o in got.values()):
        return {"status": "not_implemented", **info}
    del case, got
    ceilings = None if spec.get("remeasure") else load_cached(root, props.name)
    measured = ceilings is None
    if measured:
        try:
            ceilings = measure(torch, root)
        except Exception as e:
            return {"status": "env_error", "message": f"could not measure this GPU's ceilings: {e}", **info}
    return {"status": "ok", "build_s": round(secs, 2), "ceilings": ceilings, "ceilings_measured": measured,
            "task_flops": task_flops, **info}


def profile(spec: dict, torch, ex, task: Task, root: Path) -> dict:
    # The module `prepare` just built, imported without cpp_extension.load: that would run ninja, and every
    # process started under ncu is instrumented.
    module = load_built(ex, src_dir=Path(spec["src_dir"]), root=root, day_id=spec["day"])
    call = task.call(task.resolve(module, ex), _case(torch, task, spec), ex)
    try:
        call()  # warm-up, outside the range: lazy loading and first-launch costs stay out of the profile
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push(RANGE)
        try:
            call()
        finally:
            torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
    except Exception as e:
        return {"status": "op_error", "message": short_error(e)}
    return {"status": "ok"}


def run(spec: dict) -> dict:
    root = Path(spec["root"])
    sys.path.insert(0, str(root))
    ex = Exercise.model_validate(spec["exercise"])  # resolved by `grader profile`: course.yaml is not read here
    try:
        import torch
    except ImportError:
        return {"status": "env_error", "message": "PyTorch is not installed in this Python: install a CUDA build"}
    if torch.version.cuda is None or not torch.cuda.is_available():
        return {"status": "no_gpu", "torch": torch.__version__, "cuda": torch.version.cuda}
    try:
        task = Task.load(ex.task)
    except CourseConfigError as e:
        return {"status": "env_error", "message": f"course.yaml: {spec['day']}.{ex.name}: {e}"}
    return (prepare if spec["mode"] == "prepare" else profile)(spec, torch, ex, task, root)


def main() -> int:
    spec = json.loads(sys.argv[1])
    try:
        out = run(spec)
    except Exception as e:
        out = {"status": "internal_error", "message": f"{type(e).__name__}: {e}",
               "detail": traceback.format_exc()[-4000:]}
    write_json(Path(spec["result"]), out)
    return 0 if out["status"] == "ok" else 2


if __name__ == "__main__":
    sys.exit(main())
