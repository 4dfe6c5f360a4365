"""`grader profile dayNN`: Nsight Compute on the student's kernels only, a speed-of-light summary per kernel, and a
roofline plot against ceilings measured on this GPU.

Per exercise, each GPU step in its own process (a crash or a hang stays contained, and ncu sees only what it must):
1. prepare, a plain process: build or reuse `grader check`'s build, check the op writes its output, measure the
   ceilings once per GPU (profile_target.py);
2. ncu runs the same module in `profile` mode: a warm-up call, then one call inside the NVTX range it profiles;
   meanwhile ptxas's register and spill report is made here for this GPU's architecture;
3. here: the report's raw page is parsed, summarized, rendered, plotted and saved under .grader/profile.
The grader process itself never touches the GPU.
"""
from __future__ import annotations

import json
import math
import re
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable

from rich.console import Console
from rich.markup import escape

from grader.profile import ncu
from grader.profile import report as profile_report
from grader.profile import roofline
from grader.profile.ceilings import cache_path
from grader.check.build import source_paths
from grader.check.compile_check import demangle
from grader.course import Course, Day, Exercise
from grader.errors import GraderError
from grader.paths import Paths, relative_path
from grader.profile.ptxas_report import kernel_resources, match
from grader.results import write_json

PREPARE_S = 600.0  # on top of the build limit: the first profile on a GPU also measures its ceilings (~20 s)


class ExerciseProblem(GraderError):
    """A problem with one exercise (does not build, not implemented, no kernel captured): the others still run."""

    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class Target:
    ex: Exercise
    dtype: str
    shape: tuple[int, ...]
    offset: int = 0
    params: dict = field(default_factory=dict)
    layout: str | None = None


def parse_shape(text: str, ex: Exercise) -> tuple[int, ...]:
    """'4096,4096,4096' (or 4096x4096x4096) with the rank of the exercise's shapes."""
    first = (ex.benchmark or ex.correctness)[0]
    rank = len(first.shape)
    example = ",".join(map(str, first.shape))
    parts = [p for p in re.split(r"[,x\s]+", text.strip().lower()) if p]
    if len(parts) != rank or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise GraderError(f"--shape {text!r}: {ex.name} takes {rank} positive sizes separated by commas, "
                          f"e.g. --shape {example}")
    return tuple(int(p) for p in parts)


def targets(day: Day, exercises: list[Exercise], dtype: str | None, shape: str | None) -> list[Target]:
    """Defaults: the exercise's first dtype and its first benchmark shape."""
    out = []
    for ex in exercises:
        if dtype and dtype not in ex.dtypes:
            raise GraderError(f"{day.id}.{ex.name} runs in {', '.join(ex.dtypes)}, not {dtype}")
        # an untimed exercise: its largest correctness shape
        first = ex.benchmark[0] if ex.benchmark else max(ex.correctness, key=lambda c: math.prod(c.shape))
        case = first.with_params(ex.variants[0] if ex.variants else {})
        out.append(Target(ex, dtype or ex.dtypes[0], parse_shape(shape, ex) if shape else case.shape,
                          0 if shape else case.offset, dict(case.params), None if shape else case.layout))
    return out


# -- the analysis (pure: tested on fixture data) ------------------------------------------------------------
def analyze(csv_text: str, ceilings: dict, resources: dict[str, dict]) -> list[dict]:
    """ncu's raw page + the ceilings + ptxas's report -> one record per profiled kernel."""
    c = roofline.Ceilings.from_dict(ceilings)
    kernels = ncu.parse_raw_csv(csv_text)
    pretty = demangle(sorted({k["name"] for k in kernels if k["name"].startswith("_Z")}))
    out = []
    for k in kernels:
        name = pretty.get(k["name"], k["name"])
        s = roofline.summarize(k["metrics"], c)
        out.append({"id": k["id"], "name": name, "mangled": k["name"] if k["name"].startswith("_Z") else None,
                    "short": ncu.short_name(name), "block": k["info"].get("Block Size"),
                    "grid": k["info"].get("Grid Size"), "summary": s.as_dict(), "verdict": roofline.verdict(s, c),
                    "ptxas": match(k["name"], name, resources), "metrics": k["metrics"], "units": k["units"]})
    return out


TENSOR_CORES = "tensor cores (not counted)"  # the bound of a kernel whose FLOPs the roofline cannot see

def tensor_core_note(kernels: list[dict], task_flops: int | None) -> str | None:
    """ncu's FLOP counters (and so the roofline's FLOP/s and intensity) see FP32/FP16 instructions only. When they
    add up to less than half the task's own FLOP count, the rest ran on tensor cores: say so, and replace each
    kernel's roof verdict, which would call a tensor-core GEMM memory-bound."""
    if not task_flops:
        return None
    counted = sum(k["summary"].get("flops") or 0 for k in kernels)
    if counted >= 0.5 * task_flops:
        return None
    seconds = sum(k["summary"].get("duration_s") or 0 for k in kernels)
    rate = f" = {task_flops / seconds / 1e12:.1f} TFLOP/s over the profiled kernels" if seconds else ""
    for k in kernels:
        k["summary"].update(bound=TENSOR_CORES, pct_of_roof=None)
        k["verdict"] = ("tensor-core work: not counted by the FP32/FP16 counters this roofline uses; compare its "
                        "TFLOP/s with cuBLAS or SDPA in `grader check`")
    return (f"the counters saw {counted / task_flops:.0%} of the task's {task_flops / 1e9:,.1f} GFLOP{rate}: the rest "
            "ran on tensor cores (mma/wgmma), which the FP32 roofline does not place")


def plot_title(res: dict) -> str:
    shape = "x".join(map(str, res["shape"]))
    return f"{res['gpu']} · {res['day']}.{res['exercise']} ({res['variant']}) · {res['dtype']} · {shape}"


def draw(res: dict, path: Path) -> None:
    """The roofline PNG of one profile record; a missing matplotlib becomes res['plot_error'], not a failure of
    the whole profile (the table and the report are still there)."""
    # Kernels whose work ran on tensor cores (tensor_core_note) are not where their counters put
    # them: left off the plot rather than drawn with a misleading "% of roof".
    on_roof = [k for k in res["kernels"] if k["summary"].get("bound") != TENSOR_CORES]
    points = [(k["short"], k["summary"]["ai"], k["summary"]["flop_per_s"]) for k in on_roof]
    try:
        roofline.plot(path, roofline.Ceilings.from_dict(res["ceilings"]), points, plot_title(res))
        res["paths"]["roofline"] = str(path)
    except GraderError as e:
        res["plot_error"] = str(e)
    off = [k["short"] for k in on_roof if not (k["summary"]["ai"] and k["summary"]["flop_per_s"])]
    if off:
        res.setdefault("notes", []).append(f"not on the plot (no FLOPs or no DRAM bytes counted): {', '.join(off)}")
    if len(on_roof) < len(res["kernels"]):
        res.setdefault("notes", []).append("tensor-core kernels are not on the plot: the FP32 roofline cannot place "
                                           "them")


# -- the processes ------------------------------------------------------------------------------------------
def _tail(log: Path, n: int = 15) -> str:
    try:
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return "\n".join("    " + line for line in lines[-n:])


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _target_error(res: dict, day: Day, ex: Exercise, log: Path, placeholders: Callable[[Exercise], list[str]]):
    """The exception for a profile_target outcome other than ok."""
    status, msg = res["status"], res.get("message", "")
    if status == "no_gpu":
        return GraderError(f"profiling needs a CUDA GPU, and torch sees none here (torch {res.get('torch')}, CUDA "
                           f"{res.get('cuda')}). Without one, `grader check {day.id}` still compiles your code and "
                           "shows ptxas's registers and spills")
    if status == "build_error":
        diags = "\n".join(f"    {d}" for d in res.get("diagnostics", [])[:12]) or _tail(log)
        return ExerciseProblem(f"the code does not compile (`grader check {day.id}` shows the same):\n{diags}", 1)
    if status in ("missing_op", "not_implemented"):
        spots = placeholders(ex)
        where = f" (YOUR CODE HERE still at {', '.join(spots[:3])})" if spots else ""
        what = (f"the extension has no function `{ex.op}`" if status == "missing_op"
                else "the op never writes its output")
        return ExerciseProblem(f"{what}: not implemented yet{where}. Implement it and run `grader check {day.id}` "
                               "first; profile it once it is correct")
    if status == "op_error":
        return ExerciseProblem(f"the op failed before it could be profiled: {msg}. Run `grader check {day.id}` to "
                               "see which case fails")
    if status == "internal_error":
        with open(log, "a") as f:
            f.write("\n" + res.get("detail", ""))
        return GraderError(f"internal error in the profiled process: {msg} (details in {log}); please report it")
    return GraderError(msg or f"the profiled process reported {status}; see {log}")


def _target_cmd(spec: dict) -> list[str]:
    return [sys.executable, "-m", "grader.profile.target", json.dumps(spec)]


def profile_exercise(*, root: Path, course: Course, day: Day, t: Target, src_dir: Path,
                     variant: str, ncu_path: str, remeasure: bool, status,
                     placeholders: Callable[[Exercise], list[str]]) -> dict:
    ex, stem = t.ex, f"{day.id}-{t.ex.name}-{variant}"
    out_dir, logs = Paths(root).profiles(), Paths(root).logs()
    out_dir.mkdir(parents=True, exist_ok=True)
    spec = {"root": str(root), "day": day.id, "exercise": ex.model_dump(mode="json"), "src_dir": str(src_dir),
            "dtype": t.dtype, "shape": list(t.shape), "offset": t.offset, "layout": t.layout, "params": t.params,
            "remeasure": remeasure}
    with tempfile.TemporaryDirectory() as tmp:
        status.update(f"{day.id}.{ex.name}: building (or reusing `grader check`'s build); the first profile on a "
                      "GPU also measures its ceilings…")
        log = logs / f"profile-{stem}-prepare.log"
        prep_result = Path(tmp, "prepare.json")
        out = ncu.run_logged(_target_cmd({**spec, "mode": "prepare", "result": str(prep_result)}), log, root,
                      course.limits.build_s + PREPARE_S)
        prep = _read(prep_result)
        if out is None:
            raise ExerciseProblem(f"building and checking the op took over {course.limits.build_s + PREPARE_S:g} s "
                                  f"(a hung kernel?); see {log}")
        if prep is None:
            raise ExerciseProblem(f"the process running the op died (a crashed kernel?); last lines of {log}:\n"
                                  f"{_tail(log)}")
        if prep["status"] != "ok":
            raise _target_error(prep, day, ex, log, placeholders)
        cap = tuple(int(x) for x in prep["capability"].split("."))

        report, log = out_dir / f"{stem}.ncu-rep", logs / f"profile-{stem}.log"
        report.unlink(missing_ok=True)  # a report left by an earlier run must not pass for this one's
        with ThreadPoolExecutor(1) as pool:
            ptxas = pool.submit(kernel_resources, source_paths(ex, src_dir),
                                [root / i for i in ex.include_dirs], ex.extra_cuda_cflags, cap)
            status.update(f"{day.id}.{ex.name}: profiling one call under Nsight Compute (each kernel is replayed "
                          "once per group of counters)…")
            result = Path(tmp, "profile.json")
            cmd = ncu.profile_command(ncu_path, report, _target_cmd({**spec, "mode": "profile", "result": str(result)}))
            out = ncu.run_logged(cmd, log, root, ncu.TIMEOUT_S)
            if out is None:
                raise ExerciseProblem(f"Nsight Compute did not finish in {ncu.TIMEOUT_S:g} s (log: {log}). Each "
                                      "kernel is replayed dozens of times: try a smaller --shape")
            why = ncu.explain_failure(out, log)
            if why and why != "no_kernels":
                raise GraderError(why)
            target = _read(result)
            if target is None:
                raise ExerciseProblem(f"the profiled process did not finish under ncu; last lines of {log}:\n"
                                      f"{_tail(log)}")
            if target["status"] != "ok":
                raise _target_error(target, day, ex, log, placeholders)
            errors = [line.strip() for line in out.splitlines() if line.startswith("==ERROR==")]
            if not report.is_file() and why != "no_kernels" and errors:
                raise GraderError(f"Nsight Compute failed: {'; '.join(errors[:3])} (log: {log})")
            if why == "no_kernels" or not report.is_file():
                raise ExerciseProblem(f"no kernel was captured inside the `{ncu.RANGE}` range around `{ex.op}`: "
                                      "does the op launch its kernel (on the GPU, not on the CPU)? If `grader check` "
                                      f"passes, see {log}")
            text = ncu.raw_csv(ncu_path, report)
            try:
                kernels = analyze(text, prep["ceilings"], ptxas.result())
            except ValueError as e:
                raise GraderError(f"could not read ncu's CSV ({e}); `ncu --import` said:\n{text[-2000:]}") from None
    if not kernels:
        raise ExerciseProblem(f"the report {report} holds no kernel: nothing ran inside the `{ncu.RANGE}` range")

    json_path = out_dir / f"{stem}.json"
    res = {"day": day.id, "exercise": ex.name, "variant": variant, "source": str(src_dir), "dtype": t.dtype,
           "shape": list(t.shape), "offset": t.offset, "gpu": prep["gpu"], "capability": prep["capability"],
           "ceilings": prep["ceilings"], "kernels": kernels, "notes": [],
           "paths": {"report": str(report), "roofline": None, "json": str(json_path), "log": str(log)}}
    if prep.get("ceilings_measured"):
        cached = relative_path(cache_path(root, prep["gpu"]), root)
        res["notes"].append(f"this GPU's ceilings were measured now and cached in {cached}; "
                            "--remeasure-ceilings measures them again")
    uncounted = tensor_core_note(kernels, prep.get("task_flops"))
    if uncounted:
        res["notes"].append(uncounted)
    if any(k["ptxas"] is None for k in kernels):
        res["notes"].append("spills unknown for some kernels: ptxas's report (nvcc -Xptxas -v) did not list them")
    draw(res, out_dir / f"{stem}-roofline.png")
    write_json(json_path, res)
    return res


def run_profile(args, console: Console, *, root: Path, course: Course, day: Day,
                exercises: list[Exercise], src_dir: Path, variant: str,
                placeholders: Callable[[Exercise], list[str]], rel: Callable[[Path], str]) -> int:
    """Profiles every selected exercise; returns the exit code (1 if one does not compile, else 2 if one could not
    be profiled, else 0)."""
    todo = targets(day, exercises, args.dtype, args.shape)
    try:
        ncu_path = ncu.find_ncu(args.ncu)
    except GraderError as e:
        from grader.doctor import needs_a_gpu

        raise GraderError(f"{e}{needs_a_gpu('grader profile')}") from None
    records, failed, problem = [], False, False
    remeasure = args.remeasure_ceilings
    for t in todo:
        try:
            with console.status(f"{day.id}.{t.ex.name}…") as status:
                res = profile_exercise(root=root, course=course, day=day, t=t,
                                       src_dir=src_dir, variant=variant, ncu_path=ncu_path,
                                       remeasure=remeasure, status=status, placeholders=placeholders)
            remeasure = False  # once per run is enough: the next exercise reuses what was just measured
        except ExerciseProblem as e:
            console.print(f"[red]error:[/] {day.id}.{t.ex.name}: {escape(str(e))}", highlight=False)
            records.append({"day": day.id, "exercise": t.ex.name, "variant": variant, "error": str(e)})
            failed, problem = failed or e.exit_code == 1, True
            continue
        profile_report.render(console, res, lambda p: rel(Path(p)))
        if res.get("plot_error"):
            console.print(f"[red]error:[/] {escape(res['plot_error'])}", highlight=False)
            problem = True
        records.append(res)
    doc = {"day": day.id, "variant": variant, "exercises": records}
    if args.json == "-":
        print(json.dumps(doc, indent=1))
    elif args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1))
    return 1 if failed else 2 if problem else 0
