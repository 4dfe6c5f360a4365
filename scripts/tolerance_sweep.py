"""The seed sweep behind course.yaml's tolerances (issue 32): every ready exercise's solution over many seeds x every
correctness case and probe x every dtype, and the worst ratio of its error to its tolerance. A correct kernel must sit
at 0.5 or less everywhere: twice its worst over the seeds still passes. tests/test_tolerance_sweep.py reads the
table against course.yaml.

The ratio of one compared output is the larger of max |out - ref| / (atol + rtol·|ref|) over its elements and
rel_l2 / its bound (grader/check/compare.py's tol_ratio): the grader's own comparison, through the task's own
`check` (the backward's atol in units of the reference's RMS included). Seed s is `grader check --seed s`'s seed:
each case's inputs come from PlannedCase.seed(s), so a row's worst case reproduces with
`grader check dayNN --solution --seed S --case "DTYPE LABEL"`.

How it runs: the solutions are built first, in parallel processes, by the grader's keyed build (build_exercise: a
build the grader made before is reused). Then every group of exercises whose task makes the same inputs and reference
(the softmax days; the matmul days; the attention forwards; the backwards; day 18; day 19's rings) runs at once, in
processes in proportion to its cost, each process taking every k-th seed: for every seed it makes each case once
(inputs and fp64 reference, on the GPU) and runs every exercise of the group that has it. Correctness only: no timing,
no sanitizer, no determinism or extra checks. The task's check runs with compare() deferred (DeferredComparison): its
numbers stay on the GPU and are read once per seed, because a dozen waits per case, in processes that take turns at
the GPU, were most of the time (H100: 45-70 seeds in 7 minutes). Every row's worst case and first failure are then
run again through the grader's own compare: `exact` in the row, and a failure's message as the grader words it. Each
process stops at the deadline (--budget-s from the start), and the table says which seeds each row got.

An exercise that runs as a process group (`processes: N`, day 19's ring_dist) runs in N processes, one per GPU as the
grader does (gloo processes with --device cpu); on a machine with fewer GPUs it is listed under `not_swept`, with why.
On a machine of several GPUs the one-process units take them in turn.

Natural second orders of the same maths (ORDERS): a build with other -D knobs (split-K, another tile width, the
mma.sync walk on a Hopper GPU) or other case params (a ring of another size), each a row of its own.

    python3 scripts/tolerance_sweep.py [--seeds 200] [--days day10 day19] [--exercise day19.ring_attention]
        [--dtypes fp32] [--no-orders] [--procs 6] [--budget-s 500] [--out measured/tolerance-sweep-h100.json]
    python3 scripts/tolerance_sweep.py --merge A.json B.json --out measured/tolerance-sweep-h100.json

One table per GPU (measured/tolerance-sweep-<gpu>.json: its rows' bits are that GPU's); the course is covered by
the tables together, every ready exercise and dtype in one of them at least (a step added later may be swept on
whichever GPU is lent then). Two GPU calls cover the course: --days day01-day12, and --days day13-day20 (on two
GPUs, which ring_dist needs), each in a 9-minute call with --budget-s 500 (cold builds included: a third of it). A
row short of seeds is topped up with other seeds (--exercise ... --seed-start 1001) and the tables merged.
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from multiprocessing import get_context

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

REQUIRED_SEEDS = 200
MAX_RATIO = 0.5

# Other orders of the same maths, each run as a row of its own: (label, extra nvcc flags, extra variants). The flags
# are knobs the solutions already have (the configuration sweeps use them); the variants are case params the op
# already takes.
ORDERS: dict[str, list[tuple[str, list[str], list[dict]]]] = {
    # Stream-K on every shape (not only the last wave): each tile's K is split between blocks, whose partial sums
    # are added in fp32 (split-K); walking K upwards, as well as downwards.
    "day09.matmul": [("split-K", ["-DSGEMM_STREAMK=2"], []),
                     ("split-K, K upwards", ["-DSGEMM_STREAMK=2", "-DSGEMM_SK_DOWN=0"], [])],
    # K-tiles of 64 instead of 32 (tc_sweep.py's configuration): another grouping of the fp32 accumulation.
    "day11.matmul_mma": [("BK=64", ["-DTC_BK=64", "-DTC_STAGES=3"], [])],
    # On a Hopper GPU the aligned shapes take the wgmma walk: the mma.sync walk (what other GPUs run) separately,
    # with key tiles of 64 and of 128 (another online-softmax rescaling schedule).
    "day12.flash_attention_mma": [("mma.sync", ["-DFA12_HOPPER=0"], []),
                                  ("mma.sync, Bc=128", ["-DFA12_HOPPER=0", "-DFA12_MMA_BC64=128",
                                                        "-DFA12_MMA_MIN_BLOCKS64=1"], [])],
    "day20.attention_bwd_tc_dv": [("mma.sync", ["-DFA20_HOPPER=0"], [])],
    "day20.attention_bwd_tc_dkdv": [("mma.sync", ["-DFA20_HOPPER=0"], [])],
    "day20.attention_bwd_tc": [("mma.sync", ["-DFA20_HOPPER=0"], [])],
    "day20.attention_bwd_tc_deterministic": [("mma.sync", ["-DFA20_HOPPER=0"], [])],
    # Rings of other sizes, causal and not (course.yaml checks ranks 2 and 8 plain, 4 causal).
    "day19.ring_attention": [("other ranks", [], [{"causal": True, "ranks": 2}, {"causal": False, "ranks": 3},
                                                  {"causal": False, "ranks": 4}, {"causal": True, "ranks": 8},
                                                  {"causal": True, "ranks": 16}])],
}


@dataclass
class Entry:
    """One row family: an exercise as graded (order "") or in another order."""
    day: str
    exercise: str
    order: str = ""
    flags: list[str] = field(default_factory=list)
    variants: list[dict] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)
    processes: int = 1  # course.yaml `processes:`: a group of that many processes, one per GPU

    @property
    def key(self) -> str:
        return f"{self.day}.{self.exercise}" + (f" [{self.order}]" if self.order else "")


def gpu_slug(name: str) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'h100': the first word that is letters then digits; else the name, simplified."""
    m = re.search(r"\b([A-Za-z]+\d{2,4}[A-Za-z]*)\b", name.replace("NVIDIA", ""))
    return (m.group(1) if m else re.sub(r"\W+", "-", name).strip("-")).lower()


def day_ids(course, given: list[str] | None) -> list[str] | None:
    """--days: ids and ranges (day13-day20) of the course's days."""
    if not given:
        return None
    ids = [d.id for d in course.days]
    out = []
    for g in given:
        lo, _, hi = g.partition("-")
        if hi:
            out += ids[ids.index(lo):ids.index(hi) + 1]
        else:
            out.append(g)
    return out


def exercise_of(course, entry: Entry):
    """The course's exercise, as this entry runs it: its flags added, its variants replacing the course's."""
    ex = next(e for e in course.day(entry.day).exercises if e.name == entry.exercise)
    update = {}
    if entry.flags:
        update["extra_cuda_cflags"] = [*ex.extra_cuda_cflags, *entry.flags]
    if entry.variants:
        update["variants"] = entry.variants
    return ex.model_copy(update=update) if update else ex


def select(course, days=None, exercises=None, dtypes=None, orders=True) -> list[Entry]:
    """The ready exercises chosen (days: ids; exercises: `dayNN.name` or `name`), with their orders."""
    out = []
    for day in course.days:
        if day.status != "ready" or (days and day.id not in days):
            continue
        for ex in day.exercises:
            if exercises and not ({f"{day.id}.{ex.name}", ex.name} & set(exercises)):
                continue
            chosen = [d for d in ex.dtypes if not dtypes or d in dtypes]
            if not chosen:
                continue
            out.append(Entry(day.id, ex.name, dtypes=chosen, processes=ex.processes))
            if orders:
                for label, flags, variants in ORDERS.get(f"{day.id}.{ex.name}", []):
                    out.append(Entry(day.id, ex.name, label, list(flags), list(variants), chosen, ex.processes))
    return out


def group_key(task_name: str) -> str:
    """Exercises whose tasks make the same inputs, outputs and reference share their cases: the functions' names."""
    from grader.protocol import Task

    m = Task.load(task_name).module
    return "|".join(f"{f.__module__}.{f.__qualname__}" for f in (m.make_inputs, m.make_outputs, m.reference))


# -- building -----------------------------------------------------------------------------------------------------
def build_one(root: str, entry: dict, device: str) -> tuple[str, float, str]:
    """Builds (or finds built) one entry's module, in a process of its own; (key, seconds, error or '')."""
    from grader.check.build import BuildError, MissingPackage, build_exercise
    from grader.course import load_course

    e = Entry(**entry)
    t0 = time.perf_counter()
    try:
        import torch

        cap = tuple(torch.cuda.get_device_capability(0)) if device == "cuda" else (0, 0)
        course = load_course(Path(root) / "course.yaml")
        build_exercise(exercise_of(course, e), src_dir=Path(root) / "solutions" / e.day, root=Path(root),
                       day_id=e.day, capability=cap)
    except BuildError as err:
        return e.key, time.perf_counter() - t0, f"build failed: {err.log[-2000:]}"
    except MissingPackage as err:
        return e.key, time.perf_counter() - t0, f"needs the Python package {err}"
    except Exception as err:  # noqa: BLE001 -- reported in the table, the sweep goes on
        return e.key, time.perf_counter() - t0, f"{type(err).__name__}: {err}"
    return e.key, time.perf_counter() - t0, ""


def build_all(root: Path, entries: list[Entry], device: str, procs: int) -> dict[str, str]:
    """Every entry's module built, `procs` builds at a time (one build per build unit and flags): key -> error."""
    from grader.check.build import build_unit
    from grader.course import load_course

    course = load_course(root / "course.yaml")
    first: dict[tuple, Entry] = {}
    for e in entries:
        ex = exercise_of(course, e)
        if ex.build == "python":  # imported (and JIT-compiled) where it runs
            continue
        first.setdefault((e.day, build_unit(ex)), e)
    errors: dict[str, str] = {}
    if not first:
        return errors
    t0 = time.perf_counter()
    # spawn: each build process imports torch itself (a forked CUDA context is unusable); one build per process, as
    # a library of torch ops loads once per process.
    with ProcessPoolExecutor(max_workers=max(1, min(procs, len(first))), mp_context=get_context("spawn"),
                             max_tasks_per_child=1) as pool:
        futures = [pool.submit(build_one, str(root), asdict(e), device) for e in first.values()]
        for f in futures:
            key, secs, err = f.result()
            print(f"  build {key}: {'FAILED ' + err.splitlines()[0] if err else 'ok'} ({secs:.0f} s)", flush=True)
            if err:
                errors[key] = err
    print(f"builds: {len(first)} in {time.perf_counter() - t0:.0f} s", flush=True)
    # An entry sharing a failed build fails with it.
    out = {}
    for e in entries:
        ex = exercise_of(course, e)
        owner = first.get((e.day, build_unit(ex))) if ex.build != "python" else None
        if owner is not None and owner.key in errors:
            out[e.key] = errors[owner.key]
    return out


# -- one unit: a group of exercises over a range of seeds, in this process ------------------------------------------
class Tally:
    """One row's numbers as they come in: exercise x order x dtype."""

    def __init__(self):
        self.case_runs = 0
        self.failures = 0
        self.first_failure = None
        self.worst = None  # {"tol_ratio", "elem_ratio", "l2_ratio", "output", "case", "seed"}
        self.by_output: dict[str, dict] = {}
        self.tolerances: dict[str, dict] = {}
        self.seconds = 0.0

    def add(self, records, label: str, seed: int) -> None:
        """One case's outputs: records of (output, failed, ratio or None, elem_ratio, l2_ratio, message). A ratio of
        None is not a comparison (a task's own verdict on the call, e.g. its transport): it counts only if it failed
        (as inf: nothing was compared, or NaN where the reference is finite)."""
        self.case_runs += 1
        failed = [r for r in records if r[1]]
        if failed and self.first_failure is None:
            self.first_failure = {"case": label, "seed": seed, "output": failed[0][0], "message": failed[0][5][:500]}
        self.failures += bool(failed)
        for name, bad, ratio, elem, l2, _ in records:
            if ratio is None and not bad:
                continue
            ratio = math.inf if ratio is None or bad and ratio <= 1 or ratio != ratio else ratio
            got = {"tol_ratio": ratio, "elem_ratio": elem, "l2_ratio": l2, "output": name, "case": label, "seed": seed}
            if self.worst is None or ratio > self.worst["tol_ratio"]:
                self.worst = got
            mine = self.by_output.get(name)
            if mine is None or ratio > mine["tol_ratio"]:
                self.by_output[name] = {k: v for k, v in got.items() if k != "output"}

    def as_dict(self) -> dict:
        return {"case_runs": self.case_runs, "failures": self.failures, "first_failure": self.first_failure,
                "worst": self.worst, "by_output": self.by_output, "tolerances": self.tolerances,
                "seconds": round(self.seconds, 2)}


class DeferredComparison:
    """compare()'s numbers left on the device (0-dim tensors), read once per seed: the sweep's cases would otherwise
    wait for the GPU a dozen times each, and the processes sharing it take turns at every wait. `ok` is True: the
    sweep judges by the ratio and by `bad` (an unwritten or non-finite element), and checks every failure and every
    row's worst case again with the grader's own compare."""
    ok = True
    category = "pass"
    message = ""
    error_map = None  # a passing comparison's: the sweep draws no maps

    def __init__(self, stats: dict):
        self.stats = stats

    def as_dict(self) -> dict:
        return dict(self.stats)


def deferred_compare(out, ref, *, atol: float, rtol: float, rel_l2: float, l2_floor: float = 0.0,
                     blocks=None) -> DeferredComparison:
    """grader/check/compare.py's compare, its tol_ratio and failure kept on the device. One difference: an all-zero
    reference has no rel_l2 (its ratio is the elementwise one), as tasks/attention_bwd.py's check judges it; no
    other task makes one."""
    import torch

    from grader.check.compare import poisoned_mask

    o, r = out.double(), ref.double()
    finite_ref = torch.isfinite(r)
    agree = (torch.isnan(o) & torch.isnan(r)) | (torch.isinf(r) & (o == r)) | (finite_ref & torch.isfinite(o))
    bad = poisoned_mask(out).any() | ~agree.all()
    of, rf = torch.where(finite_ref, o, 0.0), torch.where(finite_ref, r, 0.0)
    diff = (of - rf).abs()
    zero = torch.zeros((), dtype=torch.float64, device=o.device)
    elem = torch.where(diff == 0, 0.0, diff / (atol + rtol * rf.abs())).amax() if o.numel() else zero
    ref_norm = torch.linalg.vector_norm(rf).clamp_min(l2_floor * o.numel() ** 0.5)
    err_norm = torch.linalg.vector_norm(of - rf)
    l2 = torch.where(ref_norm > 0, err_norm / ref_norm.clamp_min(1e-300), zero) / rel_l2
    return DeferredComparison({"tol_ratio": torch.maximum(elem, l2), "elem_ratio": elem, "l2_ratio": l2,
                               "bad": bad})


def _deferred_check(task, got, case, ex):
    """The task's own check (its outputs, tolerances, scaling) with compare() deferred: results whose stats hold
    tensors."""
    from unittest import mock

    from grader import protocol

    with mock.patch.object(protocol, "compare", deferred_compare):
        return task.check(got, case, ex)


@dataclass
class Live:
    """An entry ready to run in a unit: its exercise, task, op, planned cases and a tally per dtype."""
    entry: Entry
    ex: object
    task: object
    fn: object
    cases: list
    tallies: dict


def run_unit(spec: dict, member=None) -> dict:
    """A unit: its entries (one group) over its seeds until the deadline; the result as a dict, also
    written to spec["result"] after every seed (a unit killed at the deadline keeps the seeds it finished).

    A group of `processes` > 1 (an exercise that runs as a process group, grader/check/ranks.py): this process is
    rank 0 (member None), starts ranks 1 .. N-1 running the same unit, and all join the group; every rank makes the
    same cases and calls the op together (the task gathers the outputs to every rank), rank 0 alone records. Rank 0
    decides at each seed whether there is time for it, and tells the others."""
    root, device, deadline = Path(spec["root"]), spec["device"], spec["deadline"]
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    import torch

    from grader.check import ranks

    world = int(spec.get("processes", 1))
    others = []
    if world > 1:
        why = ranks.shortfall(torch, world, device)
        if why:
            out = {"entries": {}, "seeds": [], "errors": {Entry(**e).key: why for e in spec["entries"]}}
            Path(spec["result"]).write_text(json.dumps(out))
            return out
        if member is None:
            where = tempfile.mkdtemp(prefix="tolerance-sweep-ranks-")
            member = ranks.Member(0, world, f"file://{where}/store")
            for r in range(1, world):
                others.append(subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--unit", spec["spec"],
                                                "--rank", str(r), "--world", str(world), "--rendezvous",
                                                member.rendezvous], stdin=subprocess.DEVNULL))
        else:
            spec = {**spec, "result": None}  # only rank 0 records
        ranks.join(torch, member, device, timeout_s=120)
    try:
        return _run_unit(spec, torch, device, deadline, world)
    finally:
        if world > 1:
            import torch.distributed as dist

            dist.destroy_process_group()
            for p in others:
                p.wait(timeout=60)


def _agree(torch, world: int, device: str, go: bool) -> bool:
    """Rank 0's `go`, on every rank of the group (one process: `go` itself)."""
    if world == 1:
        return go
    import torch.distributed as dist

    flag = torch.tensor([1 if go else 0], device="cuda" if device == "cuda" else "cpu")
    dist.broadcast(flag, 0)
    return bool(flag.item())


def _run_unit(spec: dict, torch, device: str, deadline: float, world: int) -> dict:
    from grader.check.build import BuildError, build_exercise
    from grader.check.compare import poison
    from grader.check.plan import plan
    from grader.course import load_course
    from grader.protocol import Result, Task

    root = Path(spec["root"])
    course = load_course(root / "course.yaml")
    cap = tuple(torch.cuda.get_device_capability(0)) if device == "cuda" else (0, 0)
    gpu = torch.cuda.get_device_name(0) if device == "cuda" else "CPU"  # a group's processes each have one
    out = {"gpu": gpu, "torch": torch.__version__, "cuda": torch.version.cuda, "entries": {}, "seeds": [],
           "errors": {}}

    def save():
        if spec.get("result"):
            tmp = Path(spec["result"] + ".tmp")
            tmp.write_text(json.dumps(out, default=_json_default))
            tmp.replace(spec["result"])

    live = []
    for raw in spec["entries"]:
        e = Entry(**raw)
        ex = exercise_of(course, e)
        try:
            task = Task.load(ex.task)
            module, _, _ = build_exercise(ex, src_dir=root / "solutions" / e.day, root=root, day_id=e.day,
                                          capability=cap)
            fn = task.resolve(module, ex)
            if fn is None:
                raise RuntimeError(f"the built module has no op {ex.op!r}")
        except Exception as err:  # noqa: BLE001 -- a build error, a missing package: the row says why
            msg = f"build failed: {err.log[-1500:]}" if isinstance(err, BuildError) else f"{type(err).__name__}: {err}"
            out["errors"][e.key] = msg
            continue
        cases = plan(ex, e.dtypes, benchmark=False)
        tallies = {d: Tally() for d in e.dtypes}
        out["entries"][e.key] = {"entry": asdict(e), "cases_per_seed": {d: sum(c.dtype == d for c in cases)
                                                                       for d in e.dtypes}, "tallies": tallies}
        live.append(Live(e, ex, task, fn, cases, tallies))
    save()

    def run_case(x, case, exact: bool):
        """One call on poisoned outputs and its check: the grader's own (exact) or deferred."""
        for o in case.outputs.values():
            poison(o)
        got = x.task.call(x.fn, case, x.ex)()
        return (x.task.check(got, case, x.ex) if exact else _deferred_check(x.task, got, case, x.ex))

    def make(x, pc, seed):
        return x.task.materialize(torch, shape=pc.case.shape, dtype=pc.dtype, params=dict(pc.case.params),
                                  seed=pc.seed(seed), offset=pc.case.offset, out_offset=pc.case.out_offset,
                                  layout=pc.case.layout, probe=pc.probe,
                                  device=device)

    for seed in spec["seeds"]:
        if not _agree(torch, world, device, time.time() < deadline):
            break
        # This seed's cases, each made once (inputs and fp64 reference) for every exercise of the group that has it,
        # and dropped once they have all run it.
        users: dict[tuple, list] = {}
        for x in live:
            for pc in x.cases:
                probe = x.task.probes.get(pc.probe) if pc.probe else None
                layout = x.task.layout(pc.case.layout) if pc.case.layout else None
                key = (pc.dtype, pc.case.model_dump_json(), _qualname(probe), _qualname(layout), pc.seed(seed))
                users.setdefault(key, []).append((x, pc))
        complete, pending = True, []  # pending: (x, pc, [(name, ok, stats, message)]) until the seed's one read
        for runs in users.values():
            if world == 1 and time.time() > deadline:  # a group stops between seeds only, all ranks at once
                complete = False
                break
            case = None
            for x, pc in runs:
                if x.entry.key in out["errors"]:
                    continue
                t0 = time.perf_counter()
                if case is None:
                    case = make(x, pc, seed)
                names = [o.name for o in x.ex.outputs] or list(case.outputs)
                for name in names:
                    x.tallies[pc.dtype].tolerances.setdefault(name, x.ex.tolerance(name, pc.dtype).model_dump())
                try:
                    results = run_case(x, case, exact=False)
                except Exception as err:  # noqa: BLE001 -- the solution raised or crashed: the row says so
                    results = [Result("op", False, "error", f"{type(err).__name__}: {str(err)[:300]}")]
                    if device == "cuda" and not _alive(torch):
                        out["errors"][x.entry.key] = f"the CUDA context was lost at {pc.named} seed {seed}: {err}"
                        save()
                        return out
                pending.append((x, pc, [(r.name, r.ok, r.stats, r.message) for r in results]))
                x.tallies[pc.dtype].seconds += time.perf_counter() - t0
        if not complete:
            break
        # The seed's one read of the device: every ratio and failure flag at once.
        tensors = [st[k] for _, _, rs in pending for _, _, st, _ in rs for k in ("tol_ratio", "elem_ratio", "l2_ratio",
                                                                                 "bad") if k in st]
        values = iter(torch.stack([t.double().reshape(()) for t in tensors]).tolist() if tensors else [])
        for x, pc, rs in pending:
            recs = []
            for name, ok, st, message in rs:
                if "tol_ratio" in st:
                    ratio, elem, l2, bad = (next(values) for _ in range(4))
                    recs.append((name, bool(bad) or ratio > 1, ratio, elem, l2, message or "over its bound"))
                else:
                    recs.append((name, not ok, st.get("tol_ratio"), st.get("elem_ratio"), st.get("l2_ratio"), message))
            x.tallies[pc.dtype].add(recs, pc.named, seed)
        out["seeds"].append(seed)
        save()

    # The grader's own compare on every row's worst case and first failure: the deferred numbers confirmed (or
    # corrected), and a failure's message as the grader words it. Every rank does the same, in the same order.
    for x in live:
        if x.entry.key in out["errors"]:
            continue
        for t in x.tallies.values():
            for which in ("worst", "first_failure"):
                got = getattr(t, which)
                pc = next((c for c in x.cases if got and c.named == got["case"]), None)
                if pc is None:
                    continue
                try:
                    results = run_case(x, make(x, pc, got["seed"]), exact=True)
                except Exception as err:  # noqa: BLE001
                    got["exact"] = {"error": f"{type(err).__name__}: {str(err)[:300]}"}
                    continue
                mine = next((r for r in results if r.name == got["output"]), None)
                failed = [r for r in results if not r.ok]
                got["exact"] = {"tol_ratio": mine.stats.get("tol_ratio") if mine else None, "ok": not failed}
                if which == "first_failure" and failed:
                    got["message"] = f"{failed[0].name}: {failed[0].message}"[:500]
    save()
    return out


def _qualname(f) -> str | None:
    return None if f is None else f"{f.__module__}.{f.__qualname__}"


def _alive(torch) -> bool:
    try:
        torch.cuda.synchronize()
        return torch.ones(1, device="cuda").add_(1).item() == 2.0
    except Exception:  # noqa: BLE001
        return False


def _json_default(o):
    if isinstance(o, Tally):
        return o.as_dict()
    raise TypeError(type(o).__name__)


# -- the table ----------------------------------------------------------------------------------------------------
def rows_from_units(units: list[dict], entries: list[Entry], build_errors: dict[str, str]) -> list[dict]:
    """One row per entry x dtype, from the units' results (several units may hold seeds of the same entry)."""
    rows = {}
    for e in entries:
        for d in e.dtypes:
            rows[(e.key, d)] = {"day": e.day, "exercise": e.exercise, "order": e.order, "flags": e.flags,
                                "variants": e.variants, "dtype": d, "processes": e.processes, "seeds": 0, "seed_list": [],
                                "cases_per_seed": None, "case_runs": 0, "failures": 0, "first_failure": None,
                                "worst": None, "by_output": {}, "tolerances": {}, "seconds": 0.0,
                                "error": build_errors.get(e.key)}
    for u in units:
        for key, err in u.get("errors", {}).items():
            for (k, _), row in rows.items():
                if k == key and not row["error"]:
                    row["error"] = err
        for key, got in u.get("entries", {}).items():
            for d, t in got["tallies"].items():
                row = rows.get((key, d))
                if row is None:
                    continue
                row["cases_per_seed"] = got["cases_per_seed"][d]
                row["seed_list"] = sorted(set(row["seed_list"]) | set(u.get("seeds", [])))
                merge_tally(row, t)
    for row in rows.values():
        row["seeds"] = len(row["seed_list"])
    return list(rows.values())


def merge_tally(row: dict, t: dict) -> None:
    row["case_runs"] += t["case_runs"]
    row["failures"] += t["failures"]
    firsts = [f for f in (row["first_failure"], t["first_failure"]) if f]
    row["first_failure"] = min(firsts, key=lambda f: f["seed"]) if firsts else None  # the lowest seed's
    if t["worst"] and (row["worst"] is None or t["worst"]["tol_ratio"] > row["worst"]["tol_ratio"]):
        row["worst"] = t["worst"]
    for name, w in t["by_output"].items():
        if name not in row["by_output"] or w["tol_ratio"] > row["by_output"][name]["tol_ratio"]:
            row["by_output"][name] = w
    row["tolerances"].update(t["tolerances"])
    row["seconds"] = round(row["seconds"] + t["seconds"], 2)


def not_swept(course, too_big: set[tuple[str, str]], gpus: int) -> list[dict]:
    """The process-group exercises this run was asked for but could not sweep, and why: one GPU per process, and
    this machine has fewer (`too_big`: their (day, exercise) pairs)."""
    return [{"day": d.id, "exercise": e.name, "dtypes": list(e.dtypes),
             "why": f"runs as {e.processes} processes, one GPU each, and the sweep ran on {gpus}: sweep it on a "
                    f"machine with {e.processes} (--exercise {d.id}.{e.name}) and merge the tables"}
            for d in course.days if d.status == "ready" for e in d.exercises if (d.id, e.name) in too_big]


def row_key(row: dict) -> tuple:
    return row["day"], row["exercise"], row["order"], row["dtype"]


def merge_tables(tables: list[dict]) -> dict:
    """Tables of runs over other exercises or other seeds, as one: rows of the same exercise x order x dtype add up
    over seeds that differ. A later table's row over every seed of an earlier one replaces it (the sweep run again
    after a change to the kernel: the table must say what the code does now); rows that share only some seeds are
    refused, since their tallies cannot be told apart per seed."""
    rows: dict[tuple, dict] = {}
    for t in tables:
        for r in t["rows"]:
            k = row_key(r)
            earlier, later = set(rows[k]["seed_list"]) if k in rows else set(), set(r["seed_list"])
            if earlier & later:
                if not later >= earlier:
                    raise SystemExit(f"{k}: two tables share {len(earlier & later)} of their seeds, but the later does "
                                     "not cover all of the earlier's: sweep those seeds again")
                del rows[k]
            if k not in rows:
                rows[k] = json.loads(json.dumps(r))
                continue
            have = rows[k]
            if have["tolerances"] and r["tolerances"] and have["tolerances"] != r["tolerances"]:
                raise SystemExit(f"{k}: the tables were made with different tolerances; run the sweep again")
            merge_tally(have, r)
            have["seed_list"] = sorted(set(have["seed_list"]) | set(r["seed_list"]))
            have["seeds"] = len(have["seed_list"])
            have["cases_per_seed"] = have["cases_per_seed"] or r["cases_per_seed"]
            have["error"] = have["error"] if have["seeds"] else (have["error"] or r["error"])
    gpus = sorted({t["gpu"] for t in tables})
    if len(gpus) > 1:
        raise SystemExit(f"the tables come from different GPUs ({', '.join(gpus)}): one table per GPU")
    base = dict(tables[0])
    swept = {(r["day"], r["exercise"]) for r in rows.values() if r["seeds"]}
    left = {(n["day"], n["exercise"]): n for t in tables for n in t.get("not_swept", [])
            if (n["day"], n["exercise"]) not in swept}
    base.update(rows=sorted(rows.values(), key=row_key), runs=[run for t in tables for run in t.get("runs", [])],
                not_swept=list(left.values()))
    return base


def summary_lines(table: dict) -> list[str]:
    """The table for people: a row per exercise x order x dtype, flagged where it misses the requirement."""
    lines = [f"{'exercise':46s} {'dtype':5s} {'seeds':>5s} {'cases':>8s} {'worst':>7s}  where"]
    for r in table["rows"]:
        name = f"{r['day']}.{r['exercise']}" + (f" [{r['order']}]" if r["order"] else "")
        w = r["worst"]
        ratio = f"{w['tol_ratio']:.3f}" if w else "-"
        where = f"{w['output']} {w['case']} seed {w['seed']}" if w else "-"
        why = [f"{r['failures']} FAILED ({r['first_failure']['case']} seed {r['first_failure']['seed']})"
               if r["failures"] else "",
               "over 0.5" if w and w["tol_ratio"] > MAX_RATIO and not r["failures"] else "",
               f"ERROR {r['error'].strip().splitlines()[0][:100]}" if r["error"] else ""]
        why = "; ".join(x for x in why if x)
        lines.append(f"{name:46s} {r['dtype']:5s} {r['seeds']:5d} {r['case_runs']:8d} {ratio:>7s}  {where}"
                     + (f"  <-- {why}" if why else ""))
    return lines


# -- the parent ---------------------------------------------------------------------------------------------------
def plan_units(root: Path, entries: list[Entry], seeds: range, procs: int, device: str) -> list[dict]:
    """Groups of entries (by the inputs and reference their tasks make), each given processes in proportion to its
    cost (at least one), its seeds dealt out in turn (process i of k takes every k-th): every group runs from the
    start, and a deadline leaves each with seeds in proportion, none with none. Costliest first."""
    from grader.check.plan import plan
    from grader.course import load_course

    course = load_course(root / "course.yaml")
    groups: dict[str, list[Entry]] = {}
    cost: dict[str, float] = {}
    for e in entries:
        ex = exercise_of(course, e)
        g = f"{group_key(ex.task)}|processes={e.processes}"
        groups.setdefault(g, []).append(e)
        # A case costs its call and comparison; making its inputs and reference is shared within the group (a
        # backward's fp64 forward and autograd weigh more than the call).
        cases = plan(ex, e.dtypes, benchmark=False)
        weight = 3.0 if "attention" in ex.task else 1.0
        cost[g] = cost.get(g, 0.0) + weight * len(cases)
    total = sum(cost.values()) or 1.0
    units = []
    for g, members in groups.items():
        parts = max(1, min(len(seeds), round(procs * cost[g] / total)))
        for i in range(parts):
            mine = list(seeds)[i::parts]
            units.append({"group": g, "entries": [asdict(e) for e in members], "seeds": mine,
                          "cost": cost[g] * len(mine), "root": str(root), "device": device,
                          "processes": members[0].processes})
    return sorted(units, key=lambda u: -u["cost"])


def run_units(units: list[dict], procs: int, deadline: float, logs: Path, gpus: int = 1) -> list[dict]:
    """Each unit in a process of its own, `procs` at a time, none started after the deadline; a unit still running
    60 s past it is killed (the seeds it finished are kept). With several GPUs (and no CUDA_VISIBLE_DEVICES set), the
    one-process units take them in turn; a process group sees them all."""
    pending, running, results = list(units), [], []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    numbers = itertools.count()
    while pending or running:
        if pending and time.time() >= deadline:
            print(f"  deadline: {len(pending)} unit(s) not started: " + "; ".join(map(_unit_name, pending)), flush=True)
            pending = []
        while pending and len(running) < procs:
            u = pending.pop(0)
            number = next(numbers)
            name = f"unit-{number}"
            spec = logs / f"{name}.spec.json"
            u.update(deadline=deadline, result=str(logs / f"{name}.json"), spec=str(spec))
            spec.write_text(json.dumps(u))
            log = open(logs / f"{name}.log", "w")
            own = dict(env)
            if gpus > 1 and u.get("processes", 1) == 1 and "CUDA_VISIBLE_DEVICES" not in os.environ:
                own["CUDA_VISIBLE_DEVICES"] = str(number % gpus)
            proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--unit", str(spec)],
                                    stdout=log, stderr=subprocess.STDOUT, env=own, start_new_session=True)
            running.append((u, proc, log, time.time()))
        still = []
        for u, proc, log, t0 in running:
            code = proc.poll()
            if code is None and time.time() > deadline + 60:
                os.killpg(proc.pid, 9)
                code = f"killed 60 s past the deadline ({proc.wait()})"
            if code is None:
                still.append((u, proc, log, t0))
                continue
            log.close()
            try:
                got = json.loads(Path(u["result"]).read_text())
            except (OSError, ValueError):
                got = {"entries": {}, "seeds": [], "errors": {}}
            if code != 0:
                tail = Path(log.name).read_text(errors="replace")[-1500:]
                for e in u["entries"]:
                    got["errors"].setdefault(Entry(**e).key, f"the unit ({_unit_name(u)}) exited with {code} after "
                                                            f"{len(got['seeds'])} seed(s): {tail}")
                print(f"  unit {_unit_name(u)} exited with {code}; its log ends:\n{tail}", flush=True)
            print(f"  unit {_unit_name(u)}: {len(got['seeds'])} of {len(u['seeds'])} seeds in "
                  f"{time.time() - t0:.0f} s", flush=True)
            results.append(got)
        running = still
        if running:
            time.sleep(0.2)
    return results


def gpu_count(device: str) -> int:
    if device != "cuda":
        return 1
    import torch

    return max(1, torch.cuda.device_count())


def _unit_name(u: dict) -> str:
    names = sorted({f"{e['day']}.{e['exercise']}" for e in u["entries"]})
    short = names[0] + (f" +{len(names) - 1}" if len(names) > 1 else "")
    seeds = u["seeds"]
    step = seeds[1] - seeds[0] if len(seeds) > 1 else 1
    return f"{short} seeds {seeds[0]}..{seeds[-1]}" + (f" every {step}" if step > 1 else "") if seeds else short


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=REQUIRED_SEEDS, help="seeds per case (default %(default)s)")
    ap.add_argument("--seed-start", type=int, default=1, help="the first seed (a second run can add seeds)")
    ap.add_argument("--days", nargs="*", help="only these days, or ranges of them: day13-day20 (default: every ready "
                                              "day)")
    ap.add_argument("--exercise", nargs="*", help="only these exercises: dayNN.name or name")
    ap.add_argument("--dtypes", help="only these dtypes, comma-separated")
    ap.add_argument("--no-orders", action="store_true", help="the exercises as graded only (no ORDERS rows)")
    ap.add_argument("--procs", type=int, default=max(1, min(6, (os.cpu_count() or 2) // 2)),
                    help="units (processes) at a time, also builds at a time (default %(default)s)")
    ap.add_argument("--budget-s", type=float, default=500.0, help="no new seed after this many seconds from the "
                                                                  "start, builds included (default %(default)s)")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="cpu: the machinery's own tests")
    ap.add_argument("--root", type=Path, default=ROOT, help="the course (its course.yaml and solutions/)")
    ap.add_argument("--out", type=Path, help="the table (default measured/tolerance-sweep-<gpu>.json)")
    ap.add_argument("--merge", nargs="+", type=Path,
                    help="merge these tables (the earlier table first; include --out to keep what it has) into --out "
                         "instead of running; a later table's rows over the same seeds replace the earlier's")
    ap.add_argument("--unit", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--world", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--rendezvous", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)

    if a.unit:
        from grader.check.ranks import Member

        run_unit(json.loads(a.unit.read_text()),
                 Member(a.rank, a.world, a.rendezvous) if a.rank is not None else None)
        return 0
    if a.merge:
        if not a.out:
            ap.error("--merge needs --out")
        table = merge_tables([json.loads(p.read_text()) for p in a.merge])
        a.out.write_text(json.dumps(table, indent=1) + "\n")
        print("\n".join(summary_lines(table)))
        return 0

    t_start = time.time()
    deadline = t_start + a.budget_s
    root = a.root.resolve()
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    from grader.course import load_course

    course = load_course(root / "course.yaml")
    entries = select(course, day_ids(course, a.days), a.exercise, a.dtypes.split(",") if a.dtypes else None, not a.no_orders)
    if not entries:
        ap.error("no ready exercise matches")
    print(f"{len(entries)} rows' exercises, seeds {a.seed_start}..{a.seed_start + a.seeds - 1}, {a.procs} at a time",
          flush=True)
    gpus = gpu_count(a.device)
    too_big = set()
    if a.device == "cuda":  # a process group needs a GPU per process: listed as not swept, with why
        too_big = {(e.day, e.exercise) for e in entries if e.processes > gpus}
        entries = [e for e in entries if e.processes <= gpus]
    if not entries:
        ap.error(f"the exercises chosen need more GPUs than this machine's {gpus}")
    build_errors = build_all(root, entries, a.device, a.procs)
    ok_entries = [e for e in entries if e.key not in build_errors]
    units = plan_units(root, ok_entries, range(a.seed_start, a.seed_start + a.seeds), a.procs, a.device)
    with tempfile.TemporaryDirectory(prefix="tolerance-sweep-") as tmp:
        results = run_units(units, max(a.procs, len(units)), deadline, Path(tmp), gpus)
    info = next((r for r in results if r.get("gpu")), {})
    table = {"gpu": info.get("gpu", "unknown"), "slug": gpu_slug(info.get("gpu", "unknown")),
             "torch": info.get("torch"), "cuda": info.get("cuda"), "date": time.strftime("%Y-%m-%d"),
             "required_seeds": REQUIRED_SEEDS, "max_ratio": MAX_RATIO,
             "runs": [{"command": " ".join(sys.argv[1:] if argv is None else argv), "seed_start": a.seed_start,
                       "seeds": a.seeds, "wall_s": round(time.time() - t_start), "procs": a.procs}],
             "rows": sorted(rows_from_units(results, entries, build_errors), key=row_key)}
    table["not_swept"] = not_swept(course, too_big, gpus)
    out = a.out or ROOT / "measured" / f"tolerance-sweep-{table['slug']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(table, indent=1, default=_json_default) + "\n")
    print("\n".join(summary_lines(table)))
    print(f"table: {out} ({time.time() - t_start:.0f} s)")
    bad = [r for r in table["rows"] if r["error"] or r["failures"] or not r["worst"]
           or r["worst"]["tol_ratio"] > MAX_RATIO or r["seeds"] < a.seeds]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
