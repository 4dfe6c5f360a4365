"""The process that touches the GPU. The runner starts it with a resolved job (grader/check/job.py) and reads its
events (JSON lines on a dedicated pipe, so a kernel's printf cannot corrupt them); if a kernel crashes the CUDA
context or hangs, only this process dies and the runner starts another for the remaining cases.

    python -m grader.check.worker JOB.json [--start N] [--had-failure] [--only N[,N...]] [--sanitized] [--fd FD]
    python -m grader.check.worker JOB.json --rank R --world N --rendezvous file://PATH   # started by rank 0
    python -m grader.check.worker --serve [--fd FD]
    python -m grader.check.worker --serve --listen SOCKET [--idle S] [--ready-fd FD]   # grader/check/resident.py

--serve keeps one process for many jobs (`grader watch`): each line on stdin is a request, {"job": PATH, "start": N,
"had_failure": BOOL}; its events end with {"ev": "end", "code": C} (C: what a one-job worker would exit with).
torch stays imported, the CUDA context alive, and the modules built or loaded stay loaded; the baseline's times
are measured once per session (BASELINE_TIMES). After a lost context (C = 3) the process exits; the runner's
session starts another.

Exit codes: 0 done, 3 the CUDA context was lost (the runner restarts from the next case), 2 environment error.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import re
import sys
import time
import traceback
from pathlib import Path

from grader.check import attribution, ranks, tamper
from grader.check.build import BuildError, MissingPackage, build_exercise
from grader import gpu_support
from grader.gpu_support import below_course_minimum
from grader.check.compare import compare, poison, same_bits
from grader.check.job import Job, Target
from grader.check.physical import driver_version, max_sm_clock_ghz, peak_tflops, too_fast
from grader.paths import Paths
from grader.protocol import CaseData, CheckContext, CourseConfigError, OpContractError, Result, Task
from grader.results import write_json
from grader.check.worker_process import CONTEXT_LOST  # the exit code that says a kernel broke the CUDA context
from grader.verdicts import Category


class Emitter:
    def __init__(self, fd: int | None, file=None):
        self._f = file if file is not None else os.fdopen(fd, "w", buffering=1) if fd is not None else sys.stdout

    def __call__(self, ev: str, **kw):
        self._f.write(json.dumps({"ev": ev, **kw}, default=str) + "\n")
        self._f.flush()


class Silent(Emitter):
    """The events of a rank other than 0: not sent."""

    def __init__(self):
        pass

    def __call__(self, ev: str, **kw):
        pass


TRIPWIRE: tamper.Tripwire | None = None  # armed once per process, before the first student module is loaded


def tampered() -> dict | None:
    """A failed case's result when the op has replaced the grader's or torch's code since arming, else None."""
    changed = TRIPWIRE.changed() if TRIPWIRE is not None else []
    if not changed:
        return None
    return {"ok": False, "category": Category.TAMPERED, "message": tamper.message(changed), "tampered": changed,
            "checks": []}


class Device:
    """What differs between a CUDA run and the CPU run the protocol's own tests use."""

    def __init__(self, torch, kind: str):
        self.torch, self.kind = torch, kind
        self.cuda = kind == "cuda"
        self.side = torch.cuda.Stream() if self.cuda else None

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def alive(self) -> bool:
        if not self.cuda:
            return True
        try:
            self.torch.cuda.synchronize()
            return self.torch.ones(1, device="cuda").add_(1).item() == 2.0
        except Exception:
            return False

    def on_side_stream(self, thunk):
        """Runs thunk on a stream that is not the default one: an op must launch on the caller's current stream."""
        if not self.cuda:
            return thunk()
        with self.torch.cuda.stream(self.side):
            got = thunk()
        self.side.synchronize()
        return got

    def peak_scratch(self, thunk) -> tuple[object, int]:
        """thunk's result and the memory it allocated beyond what existed (e.g. a materialized score matrix)."""
        if not self.cuda:
            return thunk(), 0
        # the cyclic collector paused: freeing an earlier case's tensors between `base` and the op's own
        # allocations would lower the peak by their size (day 10 read 155 MiB for a 256 MiB scratch once)
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            self.torch.cuda.reset_peak_memory_stats()
            base = self.torch.cuda.memory_allocated()
            got = thunk()
            return got, max(0, self.torch.cuda.max_memory_allocated() - base)
        finally:
            if was_enabled:
                gc.enable()


def short_error(e: BaseException) -> str:
    lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
    # TORCH_CHECK appends a C++ frame list; the first line is the message that matters.
    msg = lines[0] if lines else type(e).__name__
    return re.sub(r"^CUDA error: ", "", msg)


class CopyBandwidthCache:
    """Time of a device-to-device copy of N bytes on this GPU, measured once and kept in .grader/cache."""

    def __init__(self, paths: Paths, gpu_name: str, torch, timer):
        safe = re.sub(r"\W+", "-", gpu_name).strip("-")
        self.path = paths.cache() / f"copy-{safe}.json"
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


# -- judging one case -----------------------------------------------------------------------------------------
def judge(task: Task, fn, case: CaseData, ex, dev: Device, *, extra_checks: bool, src_dir: Path | None = None,
          capability: tuple[int, int] = (0, 0), root: Path | None = None) -> dict:
    """One call on poisoned outputs and pristine inputs, on a non-default stream; the named comparisons; a second
    call on the same inputs (a correct kernel gives the same bits twice); then the exercise's extra checks."""
    before = {k: v.clone() for k, v in case.inputs.items()}
    thunk = task.call(fn, case, ex)

    def one_call():
        for o in case.outputs.values():
            poison(o)
        dev.sync()
        return dev.on_side_stream(thunk)

    got, scratch_bytes = dev.peak_scratch(one_call)
    if (bad := tampered()) is not None:  # before its outputs are judged by code it may have replaced
        return bad
    changed = [k for k in case.inputs if not same_bits(case.inputs[k], before[k])]
    if changed:
        return summarize([Result("inputs", False, Category.INPUT_MODIFIED,
                                 f"the op modified its input(s) {changed}: inputs must be read-only")], [])
    results = task.check(got, case, ex)
    first = {k: v.clone() for k, v in got.items()}
    again = one_call()
    differ = [k for k in first if k not in again or not same_bits(first[k], again[k])]
    if differ:
        where = f" in {', '.join(differ)}" if len(first) > 1 else ""
        msg = f"two calls on the same input gave different bits{where}: a race (missing __syncthreads?) or atomics"
        results.append(Result("determinism", ex.determinism == "allowed", Category.NONDETERMINISTIC, msg))
    if extra_checks and all(r.ok for r in results):
        ctx = CheckContext(task, fn, case, ex, thunk, src_dir=src_dir, root=root, capability=capability)
        for name in ex.checks:
            r = task.extra_check(name)(ctx)
            if r is not None:
                results.append(r)
    res = summarize(results, [o.name for o in ex.outputs] or list(case.outputs))
    res["deterministic"] = not differ
    res["scratch_bytes"] = scratch_bytes
    return res


def summarize(results: list[Result], outputs: list[str]) -> dict:
    """A case's verdict from its named results: the first failure decides its category and message (which names
    the output when there are several); an allowed nondeterminism is a note on a pass."""
    failed = [r for r in results if not r.ok]
    top = failed[0] if failed else next((r for r in results if r.category == Category.PASS), results[0])
    name_it = failed and len(outputs) > 1 and top.name in outputs
    res = {**top.stats, "ok": not failed, "category": top.category,
           "message": f"{top.name}: {top.message}" if name_it else top.message,
           "checks": [r.as_dict() for r in results]}
    if not failed:
        # The numbers of the worst-matching output, for the correctness table.
        comps = [r for r in results if "rel_l2" in r.stats]
        if comps:
            worst = max(comps, key=lambda r: r.stats["rel_l2"])
            res.update(worst.stats)
        note = next((r for r in results if r.category == Category.NONDETERMINISTIC), None)
        if note:
            res["message"], res["hint_category"] = note.message, Category.NONDETERMINISTIC
    # The output that came closest to its bound (scripts/tolerance_sweep.py), whichever had the worst rel_l2.
    ratios = [r for r in results if "tol_ratio" in r.stats]
    if ratios:
        closest = max(ratios, key=lambda r: r.stats["tol_ratio"])
        res.update(tol_ratio=closest.stats["tol_ratio"], tol_ratio_output=closest.name)
    return res


# -- timing ---------------------------------------------------------------------------------------------------
def benchmark(task: Task, timer, copies, fn, base, job: Job, case: CaseData, seed: int, peak: float | None) -> dict:
    """Times the op, the library op, the task's ceiling (if it has one) and the baseline, in this run.

    Every timed call gets inputs it has never seen (refilled in place outside the timed region), and the output of
    the op's last timed call is checked against the reference of its inputs: a cached or replayed result fails.
    A memory-bound task (bytes_moved) is also put against a device copy of the same bytes; a compute-bound task
    (flops) against its ceiling op, e.g. cuBLAS fp32 GEMM of the same shape. A rate no kernel can reach on this
    GPU fails as impossible."""
    torch, ex = timer.torch, job.exercise
    scratch = {k: torch.empty_like(v) for k, v in case.outputs.items()}
    gen = torch.Generator(device="cuda").manual_seed(seed ^ 0x5EED)
    refill = lambda: task.refill(torch, case, gen)  # noqa: E731
    # The ceiling prepares its own operands outside the timed region; None: it cannot run these inputs (checked
    # before anything is timed).
    got = task.ceiling(case) if ex.ceiling == "task" or job.baseline == "ceiling" else None
    if job.baseline == "ceiling" and got is None:
        raise CourseConfigError("timed against the task's ceiling, which cannot run these inputs")
    call, last = task.call(fn, case, ex), {}
    kernel = timer.time(lambda: last.update(out=call()), prepare=refill)  # ends with a device-wide synchronize
    stale = stale_outputs(last["out"], _with_reference(task, case), ex)
    if stale:
        return {"ok": False, "category": Category.STALE_OUTPUT,
                "message": f"the output of a timed call was wrong ({stale}): a cached or stale result? Every call "
                           "must compute from the inputs it is given"}
    res = {"time": kernel.as_dict()}
    # What the kernel is compared with does not change between the jobs of one process: timed once per session.
    where = (job.target.day, ex.name, ex.task, case.dtype, repr(case.shape), repr(case.params),
             job.timing.model_dump_json())
    lib = None
    if task.has("library"):
        lib = _once(("library", *where), lambda: timer.time(task.library(case, scratch), prepare=refill))
        res.update(library_time=lib.as_dict(), vs_library=lib.median_ms / kernel.median_ms)
    ceil = None
    if got is not None:
        ceil = _once(("ceiling", got[0], *where), lambda: timer.time(got[1]))
    if job.baseline == "library" and lib is None:
        raise CourseConfigError("timed against the library, but the task defines no library()")
    if job.baseline == "solution":
        base_fn, base_ex = base
        bt = _once(("solution", getattr(base_fn, "__module__", None), _module_file(base_fn), base_ex.name, *where),
                   lambda: timer.time(task.call(base_fn, case.with_outputs(scratch), base_ex), prepare=refill))
    else:
        bt = lib if job.baseline == "library" else ceil
    res.update(baseline_time=bt.as_dict(), speedup=bt.median_ms / kernel.median_ms)
    nbytes = task.bytes_moved(case)
    if nbytes is not None:
        copy_ms = copies.time_ms(nbytes)
        res.update(bytes=nbytes, gbps=nbytes / kernel.median_ms / 1e6, copy_ms=copy_ms,
                   pct_of_copy=copy_ms / kernel.median_ms)
    fl = task.flops(case)
    if fl is not None:
        res.update(flops=fl, tflops=fl / kernel.median_ms / 1e9)
    res.update(ceiling_fields(ex.ceiling, kernel.median_ms, fl,
                              task=(got[0], ceil) if ceil is not None else None,
                              library=(f"{task.library_name}, same dtype", lib) if lib is not None else None))
    why = too_fast(pct_of_copy=res.get("pct_of_copy"), tflops=res.get("tflops"), peak=peak)
    if why:
        res.update(ok=False, category=Category.IMPOSSIBLE_TIMING, message=f"impossible timing: {why}")
    return res


def ceiling_fields(which: str, kernel_ms: float, flops: int | None, *, task=None, library=None) -> dict:
    """The result's ceiling numbers for the exercise's own ceiling (course.yaml `ceiling:`): `task` and `library`
    are (label, timing) pairs timed in this run, or None where there is none (an fp32 case of a ceiling that only
    runs fp16, a task without one). Nothing where the exercise has no ceiling: the report shows '-', never the
    percentage of a yardstick that is not this exercise's (a tensor-core GEMM against cuBLAS fp32)."""
    got = {"task": task, "library": library}.get(which)
    if got is None:
        return {}
    label, t = got
    out = {"ceiling": label, "ceiling_time": t.as_dict(), "pct_of_ceiling": t.median_ms / kernel_ms}
    if flops is not None:
        out["ceiling_tflops"] = flops / t.median_ms / 1e9
    return out


BASELINE_TIMES: dict[tuple, object] = {}  # what benchmark() compared with, per process (a --serve session)


def _once(key: tuple, measure):
    if key not in BASELINE_TIMES:
        BASELINE_TIMES[key] = measure()
    return BASELINE_TIMES[key]


def _module_file(fn) -> str | None:
    """The file of the library an op comes from (a keyed build: its content), where it can be told."""
    mod = sys.modules.get(getattr(fn, "__module__", None) or "")
    return getattr(mod, "__file__", None) or repr(fn)


STALE_SLACK = 10  # times the exercise's tolerance: a stale result belongs to other inputs and is wrong by far more


def widened_compare(out, ref, tol):
    """compare() at the exercise's bounds widened STALE_SLACK times: enough to tell a result of these inputs from
    a wrong or stale one, never failing an honest kernel's rounding (also scripts/edge_bench.py's check)."""
    return compare(out, ref, atol=tol.atol * STALE_SLACK, rtol=tol.rtol * STALE_SLACK,
                   rel_l2=min(0.5, tol.rel_l2 * STALE_SLACK), l2_floor=tol.l2_floor)


def stale_outputs(got: dict, case: CaseData, ex) -> str | None:
    """Whether a timed call's outputs are not the outputs of its inputs. The bounds are the exercise's, widened:
    the correctness cases judge rounding; this only has to tell a result of these inputs from one of others, and
    must not fail an honest kernel on a rounding outlier of the extra inputs it sees while timed."""
    for name in [o.name for o in ex.outputs] or list(case.reference):
        t, tol = got.get(name), ex.tolerance(name, case.dtype)
        if t is None:
            return f"{name}: missing"
        c = widened_compare(t, case.reference[name], tol)
        if not c.ok:
            return f"{name}: {c.message}"
    return None


def _with_reference(task: Task, case: CaseData) -> CaseData:
    """The case with the reference of its current (refilled) inputs."""
    return CaseData(case.dtype, case.params, case.inputs, case.outputs, task.reference(case), case.shape)


def _owner(ex, module, src_dir: Path) -> attribution.Owner:
    """What counts as the student's GPU work: the kernels of the built library, or, for a Python exercise, the
    functions its files define."""
    if ex.build == "python":
        return attribution.Owner(identifiers=attribution.python_kernel_names([src_dir / s for s in ex.sources]),
                                 allow=ex.allow)
    return attribution.Owner(attribution.library_kernels(Path(module.__file__)), allow=ex.allow)


def attribute(torch, task: Task, fn, case: CaseData, ex, dev: Device, owner) -> dict:
    """One call recorded by the profiler (outside any timed loop): foreign kernels or another stream fail."""
    t0 = time.perf_counter()
    launches, stream = attribution.record(torch, task.call(fn, case, ex), dev.side)
    out = {"gpu_work": sorted({attribution.qualified(x.name) if x.kind == "kernel" else x.kind for x in launches}),
           "attribution_s": round(time.perf_counter() - t0, 3)}
    problem = attribution.verdict(launches, stream, owner)
    if problem:
        out.update(ok=False, category=problem[0], message=problem[1])
    return out


def make_timer(torch, timing):
    from grader.check.timing import CudaTimer

    return CudaTimer(torch, timing.warmup, timing.min_reps, timing.max_reps, timing.budget_s, timing.rel_stderr)


def capability_shortfall(ex, cap: tuple[int, int], gpu: str) -> str | None:
    """Why this GPU cannot run the exercise (course.yaml `capability:`), or None."""
    have = f"{cap[0]}.{cap[1]}"
    if not ex.capability or have in ex.capability:
        return None
    what = "an optional step that runs" if ex.optional else "runs"
    return (f"{what} on compute capability {' or '.join(ex.capability)} only; this GPU ({gpu}) is {have}: skipped, "
            "not graded here and not failed")


# -- the run --------------------------------------------------------------------------------------------------
def run(job: Job, emit: Emitter, *, start: int = 0, had_failure: bool = False, only: set[int] | None = None,
        sanitized: bool = False, job_path: Path | None = None, member: ranks.Member | None = None) -> int:
    """Runs the job's cases from `start` (only those in `only`, when given). sanitized: the process runs under
    compute-sanitizer, which is there to watch the op's kernels alone: no attribution (the profiler's own
    instrumentation would be watched too), no extra checks, nothing timed. An exercise of several processes
    (grader/check/ranks.py): rank 0 (member None) starts the other ranks with job_path; each runs this too."""
    root, ex = Path(job.root), job.exercise
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        import torch
    except ImportError:
        emit("env_error", message="PyTorch is not installed in this Python: install a CUDA build of torch")
        return 2
    why = ranks.shortfall(torch, ex.processes, job.device)
    if why:
        emit("skipped", message=f"{job.target.day}.{ex.name} {why}")
        return 0
    if sanitized and ex.processes > 1:
        emit("env_error", message=f"{job.target.day}.{ex.name} runs in {ex.processes} processes, and "
                                  "compute-sanitizer watches one: `grader check` is the check of this exercise")
        return 2
    if job.device == "cuda":
        if torch.version.cuda is None or not torch.cuda.is_available():
            emit("no_gpu", torch=torch.__version__, cuda=torch.version.cuda)
            return 0
        props = torch.cuda.get_device_properties(0)
        cap, name = torch.cuda.get_device_capability(0), props.name
        try:  # another class GPU's rules on this one (an instructors' run): graded and skipped as that GPU would
            if (sim := gpu_support.simulated()) is not None:
                if sim > tuple(cap):
                    emit("env_error", message=f"{gpu_support.SIMULATE_ENV}={sim[0]}.{sim[1]} on a {cap[0]}.{cap[1]} GPU "
                                              f"({props.name}): a GPU stands in only for an older one (the simulated "
                                              "GPU's PTX must compile here); unset it or name an older GPU")
                    return 2
                cap, name = sim, f"{props.name}, {gpu_support.simulate(sim)}"
        except gpu_support.SimulationError as e:
            emit("env_error", message=str(e))
            return 2
        why = below_course_minimum(cap, job.min_capability, name) or capability_shortfall(ex, cap, name)
        if why:
            emit("skipped", message=f"{job.target.day}.{ex.name} {why}")
            return 0
        gpu = name if ex.processes == 1 else f"{ex.processes} x {name}"
        emit("info", gpu=gpu, capability=f"{cap[0]}.{cap[1]}", sms=props.multi_processor_count,
             torch=torch.__version__, cuda=torch.version.cuda, driver=driver_version(), seed=job.seed)
    else:
        props, cap = None, (0, 0)
        where = "CPU" if ex.processes == 1 else f"{ex.processes} CPU processes (gloo)"
        emit("info", gpu=where, capability="-", torch=torch.__version__, seed=job.seed)
    try:
        with ranks.group(torch, ex.processes, job.device, job_path=job_path, member=member, start=start,
                         had_failure=had_failure, timeout_s=job.limits.case_s) as others:
            return _run_cases(torch, job, emit, props, cap, start=start, had_failure=had_failure, only=only,
                              sanitized=sanitized, others=others)
    except ranks.JoinError as e:
        emit("env_error", message=f"the {ex.processes} processes of {job.target.day}.{ex.name} could not form a "
                                  f"process group: {short_error(e)}")
        return 2


def _run_cases(torch, job: Job, emit: Emitter, props, cap, *, start: int, had_failure: bool, only: set[int] | None,
               sanitized: bool, others: ranks.Ranks | None) -> int:
    """run()'s build, resolve and cases, in a process that has joined its group (if the exercise has one). others:
    rank 0's other ranks, whose death is a crash of the case that was running."""
    root, ex, paths = Path(job.root), job.exercise, Paths(Path(job.root))
    try:
        task = Task.load(ex.task)
    except CourseConfigError as e:
        emit("env_error", message=f"course.yaml: {job.target.day}.{ex.name}: {e}")
        return 2

    def build(which: str, t: Target):
        emit("phase", name="build", target=which)
        try:
            mod, secs, recovered = build_exercise(t.exercise, src_dir=Path(t.src_dir), root=root, day_id=t.day,
                                                  capability=cap)
        except BuildError as err:
            emit("build", target=which, ok=False, log=err.log[-20000:], diagnostics=[str(x) for x in err.diagnostics])
            return None
        except MissingPackage as err:
            emit("env_error", message=f"{t.day}.{t.exercise.name} needs the Python package `{err}`, which this "
                                      "Python lacks: install it (see the day's README) and run again",
                 missing_package=str(err))
            return False
        emit("build", target=which, ok=True, seconds=round(secs, 2), recovered_lock=recovered)
        return mod

    global TRIPWIRE
    if TRIPWIRE is None:  # no student code has run in this process yet
        TRIPWIRE = tamper.Tripwire(torch)
    module = build("exercise", job.target)
    if module is False:
        return 2
    if module is None:
        return 0
    fn = task.resolve(module, ex)
    if fn is None:
        emit("missing_op", op=ex.op)
        return 0
    if ex.ceiling == "library" and not task.has("library"):
        emit("env_error", message=f"course.yaml: {job.target.day}.{ex.name} takes the library op as its ceiling, "
                                  f"but {ex.task} defines no library()")
        return 2
    if job.baseline == "ceiling" and not task.has("ceiling"):
        emit("env_error", message=f"course.yaml: {job.target.day}.{ex.name} is timed against the ceiling, but "
                                  f"{ex.task} defines no ceiling()")
        return 2

    failed = had_failure
    need_bench = any(c.kind == "benchmark" and c.index >= start for c in job.cases)
    base = None  # (fn, exercise) of a solution baseline; the library and the ceiling are the task's
    if need_bench and not failed and job.baseline == "solution":
        bt = job.baseline_target
        bmod = build("baseline", bt)
        if bmod is False:
            return 2
        bfn = task.resolve(bmod, bt.exercise) if bmod is not None else None
        if bfn is None:
            emit("env_error", message=f"the baseline ({bt.day}.{bt.exercise.name}'s solution) does not build or "
                                      f"lacks `{bt.exercise.op}`")
            return 2
        base = (bfn, bt.exercise)

    dev = Device(torch, job.device)
    timer = copies = None
    owner = _owner(ex, module, Path(job.target.src_dir)) if dev.cuda and ex.attribution else None
    # The arithmetic peak of the GPU at hand, also under GRADER_SIMULATE_GPU: a simulation lowers the launchers'
    # limits, not the speed of the units that run the kernel (an sm_86's peak flagged an H100's real rate).
    peak = {d: peak_tflops((props.major, props.minor), props.multi_processor_count, max_sm_clock_ghz(), d)
            for d in ex.dtypes} if dev.cuda else {}
    attributed: set[str] = set()  # dtypes whose first correctness case was attributed
    for c in job.cases:
        if c.index < start or (only is not None and c.index not in only) or (sanitized and c.kind == "benchmark"):
            continue
        if c.kind == "benchmark" and failed:
            break
        emit("case_start", index=c.index, kind=c.kind, dtype=c.dtype, label=c.label)
        try:
            case = task.materialize(torch, shape=c.case.shape, dtype=c.dtype, params=dict(c.case.params),
                                    seed=c.seed(job.seed), offset=c.case.offset, out_offset=c.case.out_offset,
                                    layout=c.case.layout,
                                    probe=c.probe, device=job.device)
            result = judge(task, fn, case, ex, dev, extra_checks=c.kind == "correctness" and c.probe is None
                           and not sanitized, src_dir=Path(job.target.src_dir), capability=cap, root=root)
            # Whose work is it: once per dtype on a correctness case, and on every timed shape before it is timed.
            first = c.kind == "correctness" and c.probe is None and c.dtype not in attributed
            if owner is not None and not sanitized and result["ok"] and (first or c.kind == "benchmark"):
                attributed.add(c.dtype)
                result.update(attribute(torch, task, fn, case, ex, dev, owner))
            if c.kind == "benchmark" and result["ok"]:
                if timer is None:
                    timer = make_timer(torch, job.timing)
                    copies = CopyBandwidthCache(paths, props.name, torch, timer)
                result.update(benchmark(task, timer, copies, fn, base, job, case, c.seed(job.seed), peak.get(c.dtype)))
        except CourseConfigError as e:
            emit("env_error", message=f"course.yaml: {job.target.day}.{ex.name}: {e}")
            return 2
        except Exception as e:  # the student's op raised, or the CUDA context died under it (or another rank)
            alive = dev.alive()
            # An OpContractError is the task's own, raised on every rank alike: no rank is lost then.
            lost = others.lost(0.0 if isinstance(e, OpContractError) else 2.0) if others is not None else None
            category = Category.ERROR if alive and not lost else Category.CRASH
            if isinstance(e, OpContractError) and not lost:
                category = Category.ERROR
            emit("case", index=c.index, kind=c.kind, dtype=c.dtype, label=c.label, ok=False, category=category,
                 message=lost or short_error(e), detail=traceback.format_exc(limit=3)[-4000:])
            if not alive or lost:
                return CONTEXT_LOST
            failed = True
            continue
        if (bad := tampered()) is not None:  # the timing, the attribution and the extra checks ran its code too
            emit("case", index=c.index, kind=c.kind, dtype=c.dtype, label=c.label, **bad)
            return CONTEXT_LOST  # nothing more runs in this process: the runner starts a fresh one
        failed |= not result["ok"]
        emit("case", index=c.index, kind=c.kind, dtype=c.dtype, label=c.label, **result)
    emit("done")
    return 0


def _indices(text: str) -> set[int]:
    try:
        return {int(x) for x in text.split(",") if x.strip()}
    except ValueError:
        raise argparse.ArgumentTypeError(f"case indices, comma-separated: {text!r}") from None


def handle_request(req: dict, emit: Emitter) -> tuple[int, bool]:
    """One request of a serving worker: (what a one-job worker would exit with, whether this process must end
    after it: a library of torch ops is loaded once per process, a process group joined once)."""
    from grader.check.build import loads_once

    fresh = False
    try:
        job = Job.read(Path(req["job"]))
        fresh = loads_once(job.exercise) or (job.baseline_target is not None
                                             and loads_once(job.baseline_target.exercise))
        fresh |= job.exercise.processes > 1
        if not req.get("keep_times", True):
            BASELINE_TIMES.clear()  # a check's verdict compares times of its own run
        code = run(job, emit, start=int(req.get("start", 0)), had_failure=bool(req.get("had_failure")),
                   job_path=Path(req["job"]))
    except OSError:
        raise  # the events' connection is gone (resident.serve)
    except Exception as e:
        emit("internal_error", message=f"{type(e).__name__}: {e}", detail=traceback.format_exc()[-4000:])
        code = 2
    emit("end", code=code, fresh=fresh)
    return code, fresh


def serve(emit: Emitter, requests) -> int:
    """Runs one job per request line (see the module's doc) until stdin closes or the CUDA context is lost."""
    try:  # before the first request: the runner may start this worker while it still plans the job
        import torch  # noqa: F401
    except Exception:
        pass  # run() imports it again and says what is wrong, as an event, once a job asks
    for line in requests:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
        except ValueError as e:
            emit("internal_error", message=f"a request that is not JSON: {e}")
            emit("end", code=2, fresh=False)
            continue
        code, fresh = handle_request(req, emit)
        if code == CONTEXT_LOST or fresh:
            return code
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m grader.check.worker")
    p.add_argument("job", nargs="?", help="the job's JSON file (written by the runner)")
    p.add_argument("--serve", action="store_true", help="run the jobs requested on stdin, one JSON line each, in "
                                                        "this one process")
    p.add_argument("--start", type=int, default=0, help="the first case to run (after a crash)")
    p.add_argument("--had-failure", action="store_true", help="an earlier case failed: time nothing")
    p.add_argument("--only", type=_indices, help="run these cases alone (comma-separated indices; e.g. again, under "
                                                 "compute-sanitizer)")
    p.add_argument("--sanitized", action="store_true", help="running under compute-sanitizer: no attribution, no "
                                                            "extra checks, no timing")
    p.add_argument("--fd", type=int, help="write events to this file descriptor (default: stdout)")
    p.add_argument("--listen", help="(with --serve) take requests on this Unix socket, one a connection, and answer "
                                    "on it: a warm worker that outlives a check (grader/check/resident.py)")
    p.add_argument("--idle", type=float, default=600.0, help="(with --listen) exit after this many seconds without "
                                                             "a request")
    p.add_argument("--ready-fd", type=int, help="(with --listen) say `listening` on this file descriptor")
    p.add_argument("--rank", type=int, help="(started by rank 0) this process's rank in the exercise's group")
    p.add_argument("--world", type=int, help="(with --rank) the number of processes")
    p.add_argument("--rendezvous", help="(with --rank) where the ranks meet: file://PATH")
    a = p.parse_args(argv)
    if a.job is None and not a.serve:
        p.error("give the job's JSON file, or --serve")
    member = None
    if a.rank is not None:
        if a.world is None or a.rendezvous is None or not 0 < a.rank < a.world:
            p.error("--rank takes --world and --rendezvous, with 0 < rank < world")
        member = ranks.Member(a.rank, a.world, a.rendezvous)
    # Only rank 0 reports: the other ranks judge the same gathered outputs and would send the same events.
    emit = Emitter(a.fd) if member is None else Silent()
    if a.serve and a.listen:
        from grader.check import resident

        return resident.serve(a.listen, a.idle, a.ready_fd, handle_request, lambda f: Emitter(None, f))
    if a.serve:
        return serve(emit, sys.stdin)
    try:
        return run(Job.read(Path(a.job)), emit, start=a.start, had_failure=a.had_failure, only=a.only,
                   sanitized=a.sanitized, job_path=Path(a.job), member=member)
    except Exception as e:
        emit("internal_error", message=f"{type(e).__name__}: {e}", detail=traceback.format_exc()[-4000:])
        return 2


def _exit_now(code: int) -> None:
    """Exit without the interpreter's teardown (torch's, which takes half a second or more, while the runner waits
    for the event pipe to close): every event is written already; the logs are flushed here."""
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


if __name__ == "__main__":
    if "--sanitized" in sys.argv:  # under compute-sanitizer: a normal teardown, which the tools' reports may await
        sys.exit(main())
    _exit_now(main())
