"""The process that touches the GPU. The CLI starts it with a JSON spec and reads its events (JSON lines on a
dedicated pipe, so a kernel's printf cannot corrupt them); if a kernel crashes the CUDA context or hangs, only
this process dies and the CLI starts another for the remaining cases.

Exit codes: 0 done, 3 the CUDA context was lost (the CLI restarts from the next case), 2 environment error.
"""
from __future__ import annotations

import importlib
import json
import os
import re
import sys
import traceback
from pathlib import Path

from grader.check.build import BuildError, MissingPackage, build_exercise


class CourseConfigError(Exception):
    """course.yaml asks for something its task cannot do: the course's problem, not the student's."""
from grader.check.compare import compare, poison, same_bits
from grader.course import load_course
from grader.check.plan import plan
from grader.results import write_json

TORCH_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
CONTEXT_LOST = 3


class Emitter:
    def __init__(self, fd: int):
        self._f = os.fdopen(fd, "w", buffering=1)

    def __call__(self, ev: str, **kw):
        self._f.write(json.dumps({"ev": ev, **kw}, default=str) + "\n")
        self._f.flush()


def _place(torch, t, offset: int):
    """The same values, `offset` elements past an aligned allocation (rows start unaligned)."""
    if offset == 0:
        return t.contiguous()
    buf = torch.empty(t.numel() + offset, dtype=t.dtype, device=t.device)
    view = buf[offset:].view(t.shape)
    view.copy_(t)
    return view


def _context_alive(torch) -> bool:
    try:
        torch.cuda.synchronize()
        return torch.ones(1, device="cuda").add_(1).item() == 2.0
    except Exception:
        return False


def _short_error(e: BaseException) -> str:
    lines = [l for l in str(e).strip().splitlines() if l.strip()]
    # TORCH_CHECK appends a C++ frame list; the first line is the message that matters.
    msg = lines[0] if lines else type(e).__name__
    return re.sub(r"^CUDA error: ", "", msg)


class CopyBandwidthCache:
    """Time of a device-to-device copy of N bytes on this GPU, measured once and kept in .grader/cache."""

    def __init__(self, root: Path, gpu_name: str, torch, timer):
        safe = re.sub(r"\W+", "-", gpu_name).strip("-")
        self.path = root / ".grader" / "cache" / f"copy-{safe}.json"
        self.torch, self.timer = torch, timer
        try:
            self.data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            self.data = {}

    def time_ms(self, bytes_moved: int) -> float:
        key = str(bytes_moved)
        if key not in self.data:
            n = bytes_moved // 2  # a copy reads and writes n bytes: bytes_moved in all
            src = self.torch.randint(0, 255, (n,), dtype=self.torch.uint8, device="cuda")
            dst = self.torch.empty_like(src)
            self.data[key] = self.timer.time(lambda: dst.copy_(src)).median_ms
            write_json(self.path, self.data)
        return self.data[key]


def run(spec: dict, emit: Emitter) -> int:
    root = Path(spec["root"])
    course = load_course(Path(spec["course"]))
    day = course.day(spec["day"])
    ex = next(e for e in day.exercises if e.name == spec["exercise"])
    src_dir = Path(spec["src_dir"])
    sys.path.insert(0, str(root))

    try:
        import torch
    except ImportError:
        emit("env_error", message="PyTorch is not installed in this Python: install a CUDA build of torch")
        return 2
    if not torch.cuda.is_available():
        emit("no_gpu", torch=torch.__version__, cuda=torch.version.cuda)
        return 0
    if torch.version.cuda is None:
        emit("env_error", message="this torch has no CUDA support")
        return 2

    task = importlib.import_module(ex.task)
    props = torch.cuda.get_device_properties(0)
    cap = torch.cuda.get_device_capability(0)
    emit("info", gpu=props.name, capability=f"{cap[0]}.{cap[1]}", sms=props.multi_processor_count,
         torch=torch.__version__, cuda=torch.version.cuda, seed=spec["seed"])

    def build(target: str, e, d: Path, day_id: str, variant: str):
        emit("phase", name="build", target=target)
        try:
            mod, secs, recovered = build_exercise(e, src_dir=d, root=root, day_id=day_id, variant=variant,
                                                  capability=cap)
        except BuildError as err:
            emit("build", target=target, ok=False, log=err.log[-20000:], diagnostics=[str(x) for x in err.diagnostics])
            return None
        except MissingPackage as err:
            emit("env_error", message=f"{day_id}.{e.name} needs the Python package `{err}`, which this Python "
                                      f"lacks: install it (see the day's README) and run again")
            return False
        emit("build", target=target, ok=True, seconds=round(secs, 2), recovered_lock=recovered)
        return mod

    base = course.baseline_exercise(ex)
    module = build("exercise", ex, src_dir, day.id, spec["variant"])
    if module is False:
        return 2
    if module is None:
        return 0
    fn = getattr(module, ex.op, None)
    if fn is None:
        emit("missing_op", op=ex.op)
        return 0
    if ex.baseline.ceiling and not hasattr(task, "ceiling"):
        emit("env_error", message=f"course.yaml: {day.id}.{ex.name} is timed against the ceiling, but {ex.task} "
                                  "defines no ceiling()")
        return 2

    cases = plan(ex, spec.get("dtypes"), benchmark=not spec.get("correctness_only"))
    failed = spec.get("had_failure", False)
    need_bench = any(c.kind == "benchmark" and c.index >= spec["start"] for c in cases)

    base_fn = None  # None: the baseline is the library or the ceiling, timed anyway
    if need_bench and not failed and base is not None:
        base_day, base_ex = base[0].id, base[1]
        bmod = build("baseline", base_ex, root / "solutions" / base_day, base_day, "solution")
        if bmod is False:
            return 2
        if bmod is None:
            emit("env_error", message=f"the baseline ({base_day}.{base_ex.name}'s solution) does not build")
            return 2
        base_fn = getattr(bmod, base_ex.op)

    timer = None
    side = torch.cuda.Stream()
    for c in cases:
        if c.index < spec["start"]:
            continue
        if c.kind == "benchmark" and failed:
            break
        emit("case_start", index=c.index, kind=c.kind, dtype=c.dtype, label=c.label)
        dtype = getattr(torch, TORCH_DTYPES[c.dtype])
        gen = torch.Generator(device="cuda").manual_seed(c.seed(spec["seed"]))
        params = dict(c.case.params)
        tol = ex.tolerances[c.dtype]
        try:
            inputs = {k: _place(torch, v, c.case.offset)
                      for k, v in task.make_inputs(c.case.shape, dtype, gen, "cuda", **params).items()}
            if c.probe:
                inputs = {k: _place(torch, v, c.case.offset) for k, v in task.probes[c.probe](inputs, gen).items()}
            refs = task.reference(**inputs, **params)
            outputs = {k: _place(torch, v, c.case.offset) for k, v in task.make_outputs(inputs, **params).items()}
            result = check_once(torch, fn, inputs, outputs, refs, tol, side, params)
            if c.kind == "benchmark" and result["ok"]:
                if timer is None:
                    timer = make_timer(torch, course)
                    copies = CopyBandwidthCache(root, props.name, torch, timer)
                result.update(benchmark(torch, timer, copies, task, fn, base_fn, ex.baseline, inputs, outputs,
                                        params))
        except CourseConfigError as e:
            emit("env_error", message=f"course.yaml: {day.id}.{ex.name}: {e}")
            return 2
        except Exception as e:  # the student's op raised, or the CUDA context died under it
            alive = _context_alive(torch)
            category = "error" if alive else "crash"
            emit("case", index=c.index, kind=c.kind, dtype=c.dtype, label=c.label, ok=False, category=category,
                 message=_short_error(e), detail=traceback.format_exc(limit=3)[-4000:])
            if not alive:
                return CONTEXT_LOST
            failed = True
            continue
        failed |= not result["ok"]
        emit("case", index=c.index, kind=c.kind, dtype=c.dtype, label=c.label, **result)
    emit("done")
    return 0


def make_timer(torch, course):
    from grader.check.timing import CudaTimer

    t = course.defaults.timing
    return CudaTimer(torch, t.warmup, t.min_reps, t.max_reps, t.budget_s, t.rel_stderr)


def check_once(torch, fn, inputs, outputs, refs, tol, side, params=None) -> dict:
    """One call on poisoned outputs and pristine inputs, on a non-default stream; then a second call on the
    same inputs to catch races (a correct kernel gives the same bits twice)."""
    before = {k: v.clone() for k, v in inputs.items()}
    outs = list(outputs.values())
    extra = list((params or {}).values())  # a case's params (e.g. causal) follow the outputs, in order

    def call():
        for o in outs:
            poison(o)
        torch.cuda.synchronize()
        with torch.cuda.stream(side):
            ret = fn(*inputs.values(), *outs, *extra)
        side.synchronize()
        return ret

    # Memory the op allocates for itself during a call (e.g. a materialized score matrix), beyond its outputs.
    torch.cuda.reset_peak_memory_stats()
    base_bytes = torch.cuda.memory_allocated()
    call()
    scratch_bytes = max(0, torch.cuda.max_memory_allocated() - base_bytes)
    changed = [k for k in inputs if not same_bits(inputs[k], before[k])]
    if changed:
        return dict(ok=False, category="input_modified",
                    message=f"the op modified its input(s) {changed}: inputs must be read-only")
    comps = [compare(o, r, atol=tol.atol, rtol=tol.rtol, rel_l2=tol.rel_l2) for o, r in zip(outs, refs)]
    first = [o.clone() for o in outs]
    call()
    deterministic = all(same_bits(a, b) for a, b in zip(first, outs))
    worst = next((c for c in comps if not c.ok), comps[0])
    res = worst.as_dict()
    res["deterministic"] = deterministic
    res["scratch_bytes"] = scratch_bytes
    if not deterministic:
        note = "two calls on the same input gave different bits: a race (missing __syncthreads?) or atomics"
        res["message"] = f"{res['message']}; {note}" if not res["ok"] else note
        res["hint_category"] = "nondeterministic"
    return res


def benchmark(torch, timer, copies, task, fn, base_fn, baseline, inputs, outputs, params=None) -> dict:
    """Times the op, the library op, the task's ceiling (if it has one) and the baseline, in this run.

    A memory-bound task (bytes_moved) is also put against a device copy of the same bytes; a compute-bound task
    (flops) against its ceiling op, e.g. cuBLAS fp32 GEMM of the same shape."""
    params = params or {}
    ins, outs, extra = list(inputs.values()), list(outputs.values()), list(params.values())
    scratch = [torch.empty_like(o) for o in outs]
    # The ceiling prepares its own operands outside the timed region; None: it cannot run these inputs (checked
    # before anything is timed).
    got = task.ceiling(**inputs, **params) if hasattr(task, "ceiling") else None
    if baseline.ceiling and got is None:
        raise CourseConfigError("timed against the task's ceiling, which cannot run these inputs")
    kernel = timer.time(lambda: fn(*ins, *outs, *extra))
    lib = timer.time(lambda: task.library(*ins, *scratch, **params))
    res = {"time": kernel.as_dict(), "library_time": lib.as_dict(), "vs_library": lib.median_ms / kernel.median_ms}
    ceil = None
    if got is not None:
        label, call = got
        ceil = timer.time(call)
        res.update(ceiling=label, ceiling_time=ceil.as_dict(), pct_of_ceiling=ceil.median_ms / kernel.median_ms)
    base = (lib if baseline.library else ceil if baseline.ceiling else
            timer.time(lambda: base_fn(*ins, *scratch, *extra)))
    res.update(baseline_time=base.as_dict(), speedup=base.median_ms / kernel.median_ms)
    if hasattr(task, "bytes_moved"):
        nbytes = task.bytes_moved(**inputs, **params)
        copy_ms = copies.time_ms(nbytes)
        res.update(bytes=nbytes, gbps=nbytes / kernel.median_ms / 1e6, copy_ms=copy_ms,
                   pct_of_copy=copy_ms / kernel.median_ms)
    if hasattr(task, "flops"):
        fl = task.flops(**inputs, **params)
        res.update(flops=fl, tflops=fl / kernel.median_ms / 1e9)
        if ceil is not None:
            res["ceiling_tflops"] = fl / ceil.median_ms / 1e9
    return res


def main() -> int:
    spec = json.loads(sys.argv[1])
    emit = Emitter(spec["fd"])
    try:
        return run(spec, emit)
    except Exception as e:
        emit("internal_error", message=f"{type(e).__name__}: {e}", detail=traceback.format_exc()[-4000:])
        return 2


if __name__ == "__main__":
    sys.exit(main())
