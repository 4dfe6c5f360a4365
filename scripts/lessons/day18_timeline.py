"""Day 18's timeline: the PyTorch profiler's trace of the tiny language model's training step (tasks/tiny_lm.py), once
with the course op (built from solutions/day18, or --dir, as `grader check` builds it) and once with SDPA's flash
backend, and what the trace says: the step's wall time, how long the GPU is busy in it, the fraction it sits idle,
the kernels launched, and the profiler's own table (key_averages).

    python3 scripts/lessons/day18_timeline.py OUT_DIR        # on a GPU: OUT_DIR/day18-timeline.json, .png, traces
    python3 scripts/lessons/day18_timeline.py OUT_DIR --device cpu   # the same logic on the CPU, a tiny model
    python3 scripts/lessons/day18_timeline.py --insert OUT_DIR/day18-timeline.json   # the lesson's block and picture

OUT_DIR/day18-trace-<variant>.json are Chrome traces (open them in https://ui.perfetto.dev), and
OUT_DIR/day18-timeline-lanes.json the bars of the picture (the step drawn, from those traces). Where `nsys` is on
PATH, a small re-run of this script under `nsys profile --stats=true` leaves its summary in
OUT_DIR/day18-nsys-stats.txt. The GPU machine's run is one call, so every part runs on its own: a part that fails
leaves its error in the JSON's "errors" and the others still run (exit 1 then, with whatever was written).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

NAME = "day18-timeline"
BLOCK = "day18-timeline"
LESSON = ROOT / "days" / "day18" / "README.md"
PICTURE = "day18-timeline.png"
PLACEHOLDER = "(not measured yet: run the course's timeline script on a GPU)"
VARIANTS = ("op", "sdpa_flash")
LABELS = {"op": "course op", "sdpa_flash": "SDPA flash"}
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")  # what the GPU itself runs, in a Chrome trace's "cat"
# Profiler schedule: steps skipped, traced but dropped (the profiler's own start-up), then recorded.
WAIT, WARMUP = 1, 2


class UsageError(Exception):
    """Bad input: exit 2 with this message, no traceback."""


# ---- the trace, as numbers (pure functions of a Chrome trace's events: tested on made-up events) ----

def union_us(intervals: list[tuple[float, float]]) -> float:
    """Total length of the union of [start, end) intervals: time during which at least one runs."""
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return total + (cur_e - cur_s if cur_e is not None else 0.0)


def profiler_steps(events: list[dict]) -> list[dict]:
    """The trace's ProfilerStep#N ranges (the host's view of each recorded step), in order."""
    steps = [e for e in events if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("ph") == "X"
             and e.get("cat") != "gpu_user_annotation"]
    return sorted(steps, key=lambda e: float(e["ts"]))


def step_stats(events: list[dict], step: dict) -> dict:
    """One step's figures: its wall time, the GPU's work inside it (sum of durations, and their union: overlapping
    kernels on two streams count once), the fraction of the step with nothing on the GPU, the kernels the GPU ran
    and the launch calls the host made. GPU events are clipped to the step's window."""
    t0, t1 = float(step["ts"]), float(step["ts"]) + float(step["dur"])
    gpu, kernels, launches = [], 0, 0
    for e in events:
        if e.get("ph") != "X" or "ts" not in e:
            continue
        s, d = float(e["ts"]), float(e.get("dur", 0.0))
        if not (t0 <= s < t1):
            continue
        cat = e.get("cat")
        if cat in GPU_CATS:
            gpu.append((s, min(s + d, t1)))
            kernels += cat == "kernel"
        elif cat in ("cuda_runtime", "cuda_driver") and "Launch" in str(e.get("name", "")):
            launches += 1
    wall = t1 - t0
    busy = union_us(gpu)
    return {"wall_ms": wall / 1e3, "gpu_sum_ms": sum(e - s for s, e in gpu) / 1e3, "gpu_busy_ms": busy / 1e3,
            "gpu_idle_fraction": 1 - busy / wall if wall > 0 else None, "kernels": kernels,
            "launch_calls": launches}


def summarize_steps(per_step: list[dict]) -> dict:
    """The median of each figure over the recorded steps (the step of median wall time stands for the others in
    the picture)."""
    out = {}
    for k in per_step[0]:
        vals = [s[k] for s in per_step if s[k] is not None]
        out[k] = statistics.median(vals) if vals else None
    return out


def lanes(events: list[dict], step: dict) -> dict[str, list[tuple[float, float, str]]]:
    """The picture's rows for one step: per host thread its operators (cpu_op), the host's launch calls, and per
    GPU stream its kernels and copies; each a list of (start ms, length ms, name) from the step's start."""
    t0, t1 = float(step["ts"]), float(step["ts"]) + float(step["dur"])
    main_tid = step.get("tid")
    rows: dict[str, list] = {}
    for e in sorted((e for e in events if e.get("ph") == "X" and "ts" in e), key=lambda e: float(e["ts"])):
        s = float(e["ts"])
        if not (t0 <= s < t1):
            continue
        cat = e.get("cat")
        bar = (round((s - t0) / 1e3, 4), round(float(e.get("dur", 0.0)) / 1e3, 4), str(e.get("name", ""))[:80])
        if cat == "cpu_op":
            row = "CPU: main thread" if e.get("tid") == main_tid else "CPU: autograd thread"
        elif cat in ("cuda_runtime", "cuda_driver"):
            if "Launch" not in bar[2]:
                continue
            row = "CPU: kernel launches"
        elif cat in GPU_CATS:
            row = f"GPU: stream {e.get('tid')}"
        else:
            continue
        rows.setdefault(row, []).append(bar)
    order = ["CPU: main thread", "CPU: autograd thread", "CPU: kernel launches"]
    return {k: rows[k] for k in [*order, *sorted(r for r in rows if r not in order)] if k in rows}


# ---- the measurement ----

def _guard(errors: dict, part: str):
    """A context in which an exception is recorded under errors[part] (with its traceback) instead of raised."""
    @contextlib.contextmanager
    def ctx():
        try:
            yield
        except Exception:  # noqa: BLE001 -- one call on the GPU: every other part must still run
            errors[part] = traceback.format_exc(limit=8)
            print(f"[{part}] failed:\n{errors[part]}", file=sys.stderr)
    return ctx()


def lm_config(device: str):
    """The lesson's tiny LM on a GPU; on the CPU (a test of this script's logic) a smaller one."""
    from tasks import tiny_lm

    if device == "cpu":
        return tiny_lm.Config(d_model=64, heads=2, layers=1, seq=64, batch=2, steps=4)
    return tiny_lm.Config()


def attention_of(variant: str, device: str, src_dir: Path):
    """The attention function of a variant. On the CPU no course op can be built: SDPA's math backend stands in for
    it (the JSON says so), so that everything after the build still runs."""
    import torch
    from torch.nn import functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def sdpa_with(backend):
        def attend(q, k, v):
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return attend

    if variant == "sdpa_flash":
        return sdpa_with(SDPBackend.FLASH_ATTENTION), "SDPA, flash backend"
    if device == "cpu":
        return sdpa_with(SDPBackend.MATH), "SDPA math (a CPU stand-in: no course op without a GPU)"
    from grader.course import load_course
    from lesson_table import build_module

    build_module(torch, "day18", load_course(ROOT / "course.yaml").day("day18").exercises[0].name, src_dir)
    op = torch.ops.course.flash_attention
    return (lambda q, k, v: op(q, k, v, True)[0]), f"torch.ops.course.flash_attention built from {src_dir.name}"


def _no_cuda_sync(device: str):
    """tiny_lm.step brackets a step with torch.cuda.synchronize(); on the CPU there is nothing to wait for."""
    return mock.patch("torch.cuda.synchronize", lambda *a, **k: None) if device == "cpu" else contextlib.nullcontext()


def trained(variant: str, device: str, src_dir: Path, dtype, seed: int = 1234):
    """A model of the variant and its optimizer after cfg.steps warm-up steps (builds, autotuning and the caching
    allocator settle here, outside the trace), and the batches."""
    import torch

    from tasks import tiny_lm

    cfg = lm_config(device)
    attention, source = attention_of(variant, device, src_dir)
    torch.manual_seed(seed)
    model = tiny_lm.TinyLM(cfg, attention, dtype).to(device)
    data = tiny_lm.batches(cfg, seed, device)
    with _no_cuda_sync(device):
        _, opt = tiny_lm.train(model, data, cfg)
    return cfg, model, opt, data, source


def profile_variant(variant: str, device: str, src_dir: Path, out: Path, active: int) -> dict:
    """The variant's recorded steps under torch.profiler: their figures, the profiler's table, its Chrome trace."""
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    from tasks import tiny_lm

    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    cfg, model, opt, data, source = trained(variant, device, src_dir, dtype)
    with _no_cuda_sync(device):
        unprofiled = tiny_lm.time_steps({variant: (model, opt)}, data, cfg, reps=21)[variant]
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with _no_cuda_sync(device), profile(activities=acts, schedule=schedule(wait=WAIT, warmup=WARMUP, active=active)) as prof:
        for i in range(WAIT + WARMUP + active):
            tiny_lm.step(model, opt, data[i % len(data)], cfg)
            prof.step()
    trace = out / f"day18-trace-{variant}.json"
    prof.export_chrome_trace(str(trace))
    doc = json.loads(trace.read_text())
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    steps = profiler_steps(events)
    if not steps:
        raise RuntimeError(f"no ProfilerStep# range in {trace.name}: the schedule recorded nothing")
    per_step = [step_stats(events, s) for s in steps]
    mid = sorted(range(len(steps)), key=lambda i: per_step[i]["wall_ms"])[len(steps) // 2]
    return {"attention": source, "dtype": str(dtype).split(".")[-1], "config": cfg.describe(),
            "steps_recorded": len(steps), "step_ms_unprofiled": unprofiled, **summarize_steps(per_step),
            "per_step": per_step, "trace": trace.name, "pictured_step": steps[mid]["name"],
            "lanes": lanes(events, steps[mid]), "top_by_device": key_rows(prof, "self_device_time_total", len(steps)),
            "top_by_cpu": key_rows(prof, "self_cpu_time_total", len(steps))}


def key_rows(prof, sort_by: str, steps: int, n: int = 15) -> list[dict]:
    """The top rows of the profiler's table (key_averages), per recorded step: calls, self CPU and self GPU time
    (the time a row spends itself, not in what it calls), and totals."""
    rows = sorted((r for r in prof.key_averages() if not r.key.startswith("ProfilerStep")),  # the step itself
                  key=lambda r: getattr(r, sort_by, 0) or 0, reverse=True)[:n]
    return [{"name": r.key, "calls": r.count / steps,
             "self_cpu_ms": r.self_cpu_time_total / steps / 1e3, "cpu_total_ms": r.cpu_time_total / steps / 1e3,
             "self_device_ms": getattr(r, "self_device_time_total", 0) / steps / 1e3,
             "device_total_ms": getattr(r, "device_time_total", 0) / steps / 1e3} for r in rows]


def picture(data: dict, path: Path) -> None:
    """One recorded step of each variant, one above the other on the same time scale: a row per host thread and
    GPU stream, a bar per event (nested host operators overlap, darker where deeper)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [v for v in VARIANTS if "lanes" in data["variants"].get(v, {})]
    if not shown:
        raise RuntimeError("no variant has a traced step to draw")
    span = max(data["variants"][v]["wall_ms"] for v in shown)
    heights = [max(2, len(data["variants"][v]["lanes"])) for v in shown]
    fig, axes = plt.subplots(len(shown), 1, figsize=(10, 1.2 + 0.55 * sum(heights)), sharex=True,
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    colours = {"CPU": "#4c72b0", "GPU": "#dd8452"}
    for ax, v in zip(axes[:, 0], shown):
        d = data["variants"][v]
        rows = list(d["lanes"])
        for y, row in enumerate(rows):
            colour = colours[row.split(":")[0]]
            bars = [(s, max(w, span / 2000)) for s, w, _ in d["lanes"][row]]  # a launch is too short to see
            ax.broken_barh(bars, (y - 0.35, 0.7), facecolors=colour, alpha=0.35 if row.startswith("CPU: main")
                           or row.startswith("CPU: auto") else 0.9, edgecolor="none")
        ax.set_yticks(range(len(rows)), rows, fontsize=9)
        ax.set_ylim(len(rows) - 0.5, -0.5)
        idle = d.get("gpu_idle_fraction")
        ax.set_title(f"{LABELS[v]}: step {d['wall_ms']:.2f} ms, GPU busy {d['gpu_busy_ms']:.2f} ms"
                     + (f" ({100 * idle:.0f}% idle)" if idle is not None else "")
                     + f", {d['kernels']:.0f} kernels", fontsize=10, loc="left")
        ax.grid(axis="x", alpha=0.3)
    axes[-1, 0].set_xlim(0, span * 1.01)
    axes[-1, 0].set_xlabel("ms from the start of the step (torch.profiler, one recorded step each)")
    fig.suptitle(f"Tiny LM training step, {data['gpu']}", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def run_nsys(out: Path, src_dir: Path, device: str = "cuda", timeout_s: int = 240) -> dict:
    """`nsys profile --stats=true` over a small re-run of this script (--nsys-child: the same steps, NVTX ranges, no
    torch.profiler, which would contend with nsys for CUPTI); its summary tables go to day18-nsys-stats.txt."""
    nsys = shutil.which("nsys")
    if nsys is None:
        return {"ran": False, "why": "nsys is not on PATH on this machine"}
    version = subprocess.run([nsys, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [nsys, "profile", "--stats=true", "--force-overwrite=true", "--trace=cuda,nvtx,osrt",
               "-o", str(Path(tmp) / "day18"), sys.executable, str(Path(__file__).resolve()), "--nsys-child",
               "--dir", str(src_dir), "--device", device]
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        (out / "day18-nsys-stats.txt").write_text(r.stdout + ("\n--- stderr ---\n" + r.stderr if r.stderr else ""))
    return {"ran": True, "version": version, "returncode": r.returncode, "seconds": round(time.perf_counter() - t0, 1),
            "stats": "day18-nsys-stats.txt"}


def nsys_child(src_dir: Path, device: str) -> int:
    """The steps nsys records: each variant's warm-up, then 5 steps, each inside an NVTX range named for it (on a
    GPU; a CPU build of torch has no NVTX)."""
    import torch

    from tasks import tiny_lm

    nvtx = torch.cuda.nvtx.range if device == "cuda" else (lambda name: contextlib.nullcontext())
    for v in VARIANTS:
        cfg, model, opt, data, _ = trained(v, device, src_dir, torch.bfloat16 if device == "cuda" else torch.float32)
        for i in range(5):
            with nvtx(f"{LABELS[v]} step {i}"), _no_cuda_sync(device):
                tiny_lm.step(model, opt, data[i % len(data)], cfg)
    print(f"nsys child: {len(VARIANTS)} variants, 5 steps each", flush=True)
    return 0


def measure(out: Path, device: str, src_dir: Path, active: int, nsys: bool) -> dict:
    """Every part, each on its own; the JSON is saved after each, so that a call cut off by its time limit keeps
    what was done."""
    import torch

    errors: dict[str, str] = {}
    data = {"gpu": torch.cuda.get_device_name(0) if device == "cuda" else "CPU (no GPU: a test of the script)",
            "torch": torch.__version__, "device": device, "date": time.strftime("%Y-%m-%d", time.gmtime()),
            "schedule": {"wait": WAIT, "warmup": WARMUP, "active": active}, "variants": {}, "errors": errors,
            "nsys": {"ran": False, "why": "not reached"}}

    def save():
        (out / f"{NAME}.json").write_text(json.dumps(data, indent=1))

    for v in VARIANTS:
        print(f"== {LABELS[v]}: build, warm up, {active} recorded steps", flush=True)
        with _guard(errors, f"variant {v}"):
            data["variants"][v] = profile_variant(v, device, src_dir, out, active)
            if device == "cuda":
                torch.cuda.synchronize()
                if not data["variants"][v]["kernels"]:  # the figures would say "idle" about a GPU nobody watched
                    errors[f"variant {v}"] = "the trace holds no GPU kernel: CUDA activity was not recorded (CUPTI?)"
        save()
    with _guard(errors, "picture"):
        picture(data, out / PICTURE)
        data["picture"] = PICTURE
    # the picture's bars go to a file of their own: the record (committed to measured/) stays small
    lanes_of = {v: d.pop("lanes") for v, d in data["variants"].items() if "lanes" in d}
    with _guard(errors, "lanes"):
        (out / f"{NAME}-lanes.json").write_text(json.dumps(lanes_of))
    save()
    if nsys and device == "cuda":
        print("== nsys", flush=True)
        with _guard(errors, "nsys"):
            data["nsys"] = run_nsys(out, src_dir)
            if data["nsys"].get("returncode"):
                errors["nsys"] = f"nsys exited {data['nsys']['returncode']}: see day18-nsys-stats.txt"
    else:
        data["nsys"] = {"ran": False, "why": "not run on the CPU" if device != "cuda" else "--no-nsys"}
    save()
    return data


# ---- the lesson's block ----

def _short(name: str, width: int = 56) -> str:
    name = name.replace("|", "\\|")
    return name if len(name) <= width else name[: width - 1] + "…"


def table(data: dict) -> str:
    """The lesson's block from a saved day18-timeline.json (KeyError on a file that is not one)."""
    vs = data["variants"]
    op, ref = vs["op"], vs["sdpa_flash"]
    lines = [f"Measured on {data['gpu']} (torch {data['torch']}), {data['date']}: the tiny language model "
             f"({op['config']}, {op['dtype']}), {op['steps_recorded']} training steps recorded by torch.profiler "
             "after warm-up; medians per step. GPU busy: the union of the kernels' intervals.", "",
             "| attention | step ms (profiled) | step ms (not profiled) | GPU busy ms | GPU idle | kernels per step |",
             "|---|---|---|---|---|---|"]
    gpu = data["device"] == "cuda"  # a CPU run (the script's test) has no GPU columns to fill
    for v in VARIANTS:
        d = vs[v]
        lines.append(f"| {LABELS[v]} | {d['wall_ms']:.2f} | {d['step_ms_unprofiled']:.2f} | "
                     + (f"{d['gpu_busy_ms']:.2f} | {100 * d['gpu_idle_fraction']:.0f}% | {d['kernels']:.0f} |" if gpu
                        else "— | — | — |"))
    lines += ["", f"![One traced training step with the course op (top) and with SDPA flash (bottom): host threads "
              f"and GPU streams against time]({PICTURE})", "",
              "The profiler's table for the course op's step, its rows of most GPU time (self: the row's own time, "
              "per step):", "", "| name | calls | self CPU ms | self GPU ms |", "|---|---|---|---|"]
    for r in op["top_by_device"][:8]:
        lines.append(f"| {_short(r['name'])} | {r['calls']:.0f} | {r['self_cpu_ms']:.3f} | {r['self_device_ms']:.3f} |")
    if not gpu:
        return "\n".join([*lines, "", "No GPU in this run: the course op was SDPA's math backend standing in."])
    busy = "host-bound: the GPU waits on the host for most of the step" if op["gpu_idle_fraction"] > 0.5 else \
        "GPU-bound: the GPU is busy for most of the step"
    lines += ["", f"The course op's step is {busy} (GPU idle {100 * op['gpu_idle_fraction']:.0f}% of "
              f"{op['wall_ms']:.2f} ms); it runs {op['kernels']:.0f} kernels per step to SDPA's {ref['kernels']:.0f}."]
    return "\n".join(lines)


def insert(path: Path, lesson: Path = LESSON) -> int:
    """Write the JSON's block into the lesson, and put its picture beside the lesson (from beside the JSON, else
    the one already there)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from update_readmes import replace_block

    try:
        data = json.loads(path.read_text())
    except OSError as e:
        raise UsageError(f"--insert {path}: cannot read it ({e.strerror})") from None
    except json.JSONDecodeError as e:
        raise UsageError(f"--insert {path}: not JSON ({e.msg} at line {e.lineno}); give the day18-timeline.json "
                         "a run of this script wrote") from None
    try:
        body = table(data)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        missing = data.get("errors") if isinstance(data, dict) else None
        raise UsageError(f"--insert {path}: not a complete day18-timeline.json ({type(e).__name__}: {e})"
                         + (f"; the run recorded errors in: {', '.join(missing)}" if missing else "")) from None
    src, dest = path.parent / PICTURE, lesson.parent / PICTURE
    if src.is_file():
        if src.resolve() != dest.resolve():
            shutil.copyfile(src, dest)
    elif not dest.is_file():
        raise UsageError(f"--insert {path}: no {PICTURE} beside it nor beside the lesson; the block links it")
    return 0 if replace_block(lesson, BLOCK, body) else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", nargs="?", type=Path, help="output folder")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--dir", type=Path, default=ROOT / "solutions" / "day18", help="the day's sources to build")
    p.add_argument("--active", type=int, default=5, help="training steps recorded per variant")
    p.add_argument("--no-nsys", action="store_true", help="skip the Nsight Systems re-run")
    p.add_argument("--insert", type=Path, help="a saved day18-timeline.json: write its block into days/day18/README.md")
    p.add_argument("--nsys-child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    try:
        if a.nsys_child:
            return nsys_child(a.dir, a.device)
        if a.insert:
            return insert(a.insert)
        if a.out is None:
            raise UsageError("give an output folder (or --insert a saved day18-timeline.json)")
        if a.active < 1:
            raise UsageError("--active: at least one recorded step")
        if a.device == "cuda":
            import torch
            if not torch.cuda.is_available():
                raise UsageError("no CUDA GPU here: run on a GPU machine, or --device cpu to test the script")
        a.out.mkdir(parents=True, exist_ok=True)
    except UsageError as e:
        print(f"day18_timeline: {e}", file=sys.stderr)
        return 2
    data = measure(a.out, a.device, a.dir, a.active, not a.no_nsys)
    with _guard(data["errors"], "table"):
        print(table(data))
    if data["errors"]:
        (a.out / f"{NAME}.json").write_text(json.dumps(data, indent=1))
        print(f"day18_timeline: {len(data['errors'])} part(s) failed: {', '.join(data['errors'])} (in the JSON)",
              file=sys.stderr)
    return 1 if data["errors"] else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
