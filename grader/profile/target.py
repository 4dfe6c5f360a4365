"""The GPU side of `grader profile`, started twice with a JSON spec:

prepare  in a plain process: build (or reuse `grader check`'s build of) the exercise, check that the op exists
         and writes its output, and measure this GPU's roofline ceilings if they are not cached yet;
profile  under ncu: load that build, call the op once as a warm-up, then once inside the NVTX range ncu is told to
         profile, so only the student's kernels of that one call are measured.

The outcome goes to the JSON file named by spec["result"]: under ncu, stdout is shared with the profiler.
"""
from __future__ import annotations

import importlib
import importlib.util
import json
import sys
import traceback
from pathlib import Path

from grader.check.build import BuildError, MissingPackage, build_dir, build_exercise, extension_name, load_python_module
from grader.course import load_course
from grader.profile.ncu import RANGE
from grader.results import write_json
from grader.check.worker import TORCH_DTYPES, _place, _short_error

SEED = 0  # inputs do not change a kernel's speed; a fixed seed makes two profiles comparable


def _case(torch, task, spec):
    dtype = getattr(torch, TORCH_DTYPES[spec["dtype"]])
    gen = torch.Generator(device="cuda").manual_seed(SEED)
    off, params = spec.get("offset", 0), spec.get("params", {})
    inputs = {k: _place(torch, v, off)
              for k, v in task.make_inputs(tuple(spec["shape"]), dtype, gen, "cuda", **params).items()}
    outputs = {k: _place(torch, v, off) for k, v in task.make_outputs(inputs, **params).items()}
    # The op takes the case's params (e.g. causal) after its outputs, as in `grader check`.
    return inputs, list(outputs.values()), list(params.values())


def prepare(spec: dict, torch, ex, task, root: Path) -> dict:
    from grader.profile.ceilings import load_cached, measure
    from grader.check.compare import poison, poisoned_mask

    props, cap = torch.cuda.get_device_properties(0), torch.cuda.get_device_capability(0)
    info = {"gpu": props.name, "capability": f"{cap[0]}.{cap[1]}", "sms": props.multi_processor_count}
    try:
        module, secs, _ = build_exercise(ex, src_dir=Path(spec["src_dir"]), root=root, day_id=spec["day"],
                                         variant=spec["variant"], capability=cap)
    except MissingPackage as e:
        return {"status": "env_error", "message": f"{spec['day']}.{ex.name} needs the Python package `{e}`", **info}
    except BuildError as e:
        return {"status": "build_error", "diagnostics": [str(d) for d in e.diagnostics], "log": e.log[-20000:], **info}
    fn = getattr(module, ex.op, None)
    if fn is None:
        return {"status": "missing_op", "op": ex.op, **info}
    inputs, outs, extra = _case(torch, task, spec)
    ins = list(inputs.values())
    # The work the op must do (e.g. 2MNK for a GEMM): tensor-core FLOPs are not in ncu's FP32/FP16 counters.
    task_flops = int(task.flops(**inputs, **spec.get("params", {}))) if hasattr(task, "flops") else None
    for o in outs:
        poison(o)
    try:
        fn(*ins, *outs, *extra)
        torch.cuda.synchronize()
    except Exception as e:  # the op raised, or its kernel crashed the context
        return {"status": "op_error", "message": _short_error(e), **info}
    if all(bool(poisoned_mask(o).all()) for o in outs):
        return {"status": "not_implemented", **info}
    del inputs, ins, outs
    ceilings = None if spec.get("remeasure") else load_cached(root, props.name)
    measured = ceilings is None
    if measured:
        try:
            ceilings = measure(torch, root)
        except Exception as e:
            return {"status": "env_error", "message": f"could not measure this GPU's ceilings: {e}", **info}
    return {"status": "ok", "build_s": round(secs, 2), "ceilings": ceilings, "ceilings_measured": measured,
            "task_flops": task_flops, **info}


def _load_built(root: Path, spec: dict, ex):
    """The module `prepare` just built, imported without cpp_extension.load: that would run ninja, and every
    process started under ncu is instrumented. A Python exercise is simply imported again (its JIT compiles in
    the warm-up call, outside the profiled range)."""
    name = extension_name(spec["day"], ex.name, spec["variant"])
    if ex.build == "python":
        return load_python_module(name=name, path=Path(spec["src_dir"]) / ex.sources[0], root=root)[0]
    path = build_dir(root, spec["day"], ex.name, spec["variant"]) / f"{name}.so"
    s = importlib.util.spec_from_file_location(name, path)
    if s is None or not path.is_file():
        raise FileNotFoundError(f"{path} is missing: the build did not finish")
    module = importlib.util.module_from_spec(s)
    s.loader.exec_module(module)
    return module


def profile(spec: dict, torch, ex, task, root: Path) -> dict:
    fn = getattr(_load_built(root, spec, ex), ex.op)
    inputs, outs, extra = _case(torch, task, spec)
    ins = list(inputs.values())
    try:
        fn(*ins, *outs, *extra)  # warm-up, outside the range: lazy loading and first-launch costs stay out of the profile
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push(RANGE)
        try:
            fn(*ins, *outs, *extra)
        finally:
            torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
    except Exception as e:
        return {"status": "op_error", "message": _short_error(e)}
    return {"status": "ok"}


def run(spec: dict) -> dict:
    root = Path(spec["root"])
    sys.path.insert(0, str(root))
    ex = next(e for e in load_course(Path(spec["course"])).day(spec["day"]).exercises if e.name == spec["exercise"])
    try:
        import torch
    except ImportError:
        return {"status": "env_error", "message": "PyTorch is not installed in this Python: install a CUDA build"}
    if torch.version.cuda is None or not torch.cuda.is_available():
        return {"status": "no_gpu", "torch": torch.__version__, "cuda": torch.version.cuda}
    task = importlib.import_module(ex.task)
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
