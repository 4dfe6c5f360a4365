"""Compares build configurations of day 12's flash_attention_mma (the -D knobs at the top of
solutions/day12/attention.cu, e.g. HOPPER=0 for the mma.sync kernel on a Hopper GPU, WG_TMA=1, WG_STAGES=3)
against SDPA's FlashAttention-2 and cuDNN backends on the GPU: the evidence behind measured/NOTES.md.

Builds run in parallel processes first. SDPA's two backends are timed once per case in this process; each config
then runs in a child process with a time limit (a config that hangs or faults is reported and skipped): checked
against the fp64 reference on small shapes in both dtypes, causal or not, then timed on the benchmark shapes (L2
flushed before each call). The last line names the fastest correct config (geometric mean over the cases).

    python3 scripts/attention_sweep.py [--configs "" "HOPPER=0" ...] [--shapes 4,16,4096,128 ...] [--dtypes bf16]
"""
import argparse
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from sweep_build import build_variant, prebuild  # noqa: E402  (scripts/ is on the path: this script's folder)
DEFAULT_CONFIGS = ["", "WG_OVERLAP=0", "HOPPER=0", "HOPPER=0,MMA_BC64=128,MMA_MIN_BLOCKS64=1"]
DEFAULT_SHAPES = ["4,16,4096,128", "4,16,4096,64", "2,8,2048,64"]
CHECK_SHAPES = [(1, 2, 37, 64), (2, 3, 129, 64), (1, 2, 200, 128), (2, 1, 1000, 128), (1, 2, 513, 64)]
CHECK_REL_L2 = 8e-3  # the bf16 bound of course.yaml (fp16 errors are 8x smaller)


def flags(cfg: str) -> list[str]:
    from grader.course import load_course

    ex = load_course(ROOT / "course.yaml").day("day12").exercises[0]
    return list(ex.extra_cuda_cflags) + [f"-DFA12_{kv.strip()}" for kv in cfg.split(",") if kv.strip()]


def build(cfg: str):
    src = ROOT / "solutions" / "day12"
    return build_variant("fa12_sweep", [src / "attention.cu", src / "bindings.cpp"], flags(cfg))


def cases(shapes, dtypes):
    for s in shapes:
        for dn in dtypes:
            for causal in (False, True):
                yield tuple(map(int, s.split(","))), dn, causal


def inputs(shape, dn, causal):
    import torch

    import tasks.attention as task

    dt = {"fp16": torch.float16, "bf16": torch.bfloat16}[dn]
    g = torch.Generator(device="cuda").manual_seed(sum(shape))
    inp = task.make_inputs(shape, dt, g, "cuda", causal=causal)
    return inp, task.make_outputs(inp, causal=causal), task.flops(inp["q"], inp["k"], inp["v"], causal=causal)


def timer():
    import torch

    from grader.check.timing import CudaTimer

    return CudaTimer(torch, warmup=3, min_reps=10, max_reps=60, budget_s=0.4, rel_stderr=0.005)


def one(cfg: str, shapes, dtypes, out: Path):
    """Child process: check one config, then time it; results as JSON in `out`."""
    import tasks.attention as task

    mod = build(cfg)
    worst = {}
    for shape in CHECK_SHAPES:
        for dn in ("fp16", "bf16"):
            for causal in (False, True):
                inp, o, _ = inputs(shape, dn, causal)
                o["o"].fill_(float("nan"))
                o["lse"].fill_(float("nan"))
                mod.flash_attention_mma(inp["q"], inp["k"], inp["v"], o["o"], o["lse"], causal)
                ro, rl = task.reference(inp["q"], inp["k"], inp["v"], causal=causal)
                eo = ((o["o"].double() - ro).norm() / ro.norm()).item()
                el = ((o["lse"].double() - rl).norm() / rl.norm()).item()
                key = f"{dn} d={shape[3]} {'causal' if causal else 'full'}"
                worst[key] = max(worst.get(key, 0.0), eo, el)
    res = {"config": cfg, "check": worst, "ok": all(e < CHECK_REL_L2 for e in worst.values()), "times": []}
    out.write_text(json.dumps(res))
    if not res["ok"]:
        return
    t = timer()
    for shape, dn, causal in cases(shapes, dtypes):
        inp, o, flop = inputs(shape, dn, causal)
        ms = t.time(lambda: mod.flash_attention_mma(inp["q"], inp["k"], inp["v"], o["o"], o["lse"], causal)).median_ms
        res["times"].append({"shape": shape, "dtype": dn, "causal": causal, "ms": ms, "tflops": flop / ms / 1e9})
        out.write_text(json.dumps(res))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", nargs="*", default=DEFAULT_CONFIGS)
    ap.add_argument("--shapes", nargs="*", default=DEFAULT_SHAPES)
    ap.add_argument("--dtypes", nargs="*", default=["bf16"])
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--timeout", type=float, default=40, help="seconds per config (check and timing)")
    ap.add_argument("--json", help="write every measurement here")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # child process: this config only
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one is not None:
        one(args.one, args.shapes, args.dtypes, Path(args.out))
        return
    prebuild(build, args.configs, workers=4, tail=3000)
    if args.build_only:
        return

    import tasks.attention as task

    t = timer()
    flash, cudnn = task._sdpa("FLASH_ATTENTION"), task._sdpa("CUDNN_ATTENTION")
    base = {}
    for shape, dn, causal in cases(args.shapes, args.dtypes):
        inp, _, flop = inputs(shape, dn, causal)
        q, k, v = inp["q"], inp["k"], inp["v"]
        tf = t.time(lambda: flash(q, k, v, causal)).median_ms
        try:
            tc = t.time(lambda: cudnn(q, k, v, causal)).median_ms
        except RuntimeError:
            tc = float("nan")
        base[(shape, dn, causal)] = (flop / tf / 1e9, flop / tc / 1e9)
    inp = q = k = v = None  # free the operands before the configs run

    results = []
    for cfg in args.configs:
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            cmd = [sys.executable, __file__, "--one", cfg, "--out", f.name, "--shapes", *args.shapes,
                   "--dtypes", *args.dtypes]
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
                failed = p.returncode != 0 and (p.stderr or p.stdout)[-600:]
            except subprocess.TimeoutExpired:
                failed = f"timed out after {args.timeout:.0f} s"
            text = Path(f.name).read_text()
        res = json.loads(text) if text else {"config": cfg, "ok": False, "check": {}, "times": []}
        if failed:
            res["error"] = failed
        results.append(res)
        print(f"check {cfg or '(defaults)'}: {'OK' if res['ok'] else 'WRONG'} " +
              " ".join(f"[{k}: {v:.1e}]" for k, v in res["check"].items()) + (f"  ERROR: {failed}" if failed else ""))

    print(f"{'config':40s} {'dtype':5s} {'shape':>16s} {'causal':>6s} {'TFLOP/s':>8s} {'flash':>7s} {'cuDNN':>7s} "
          f"{'vs flash':>9s} {'vs cuDNN':>9s}")
    for res in results:
        for r in res["times"]:
            fl, cu = base[(tuple(r["shape"]), r["dtype"], r["causal"])]
            r["flash_tflops"], r["cudnn_tflops"] = fl, cu
            print(f"{res['config'] or '(defaults)':40s} {r['dtype']:5s} {'x'.join(map(str, r['shape'])):>16s} "
                  f"{r['causal']!s:>6s} {r['tflops']:8.1f} {fl:7.1f} {cu:7.1f} {r['tflops'] / fl:8.2f}x "
                  f"{r['tflops'] / cu:8.2f}x")
    full = [r for r in results if r["ok"] and len(r["times"]) == len(base)]
    if full:
        best = max(full, key=lambda r: sum(math.log(x["tflops"]) for x in r["times"]))
        print(f"BEST: {best['config']}")
    if args.json:
        Path(args.json).write_text(json.dumps({"baselines": [[list(k[0]), k[1], k[2], *v] for k, v in base.items()],
                                               "configs": results}, indent=1))


if __name__ == "__main__":
    main()
