"""Compares build configurations of day 09's matmul (the -D knobs at the top of solutions/day09/matmul.cu)
against cuBLAS fp32 (TF32 off) in one process on the GPU: the evidence behind the shipped defaults, kept in
measured/NOTES.md. Builds run in parallel processes first, then every config is timed interleaved with cuBLAS.

    python3 scripts/sgemm_sweep.py [--sizes 2048,4096,4224x4096x4096] [--configs "BK=16" "TNB=4,WARPS_N=2" ...]
    ncu -k regex:sgemm --metrics ... python3 scripts/sgemm_sweep.py --once ...   # one call per config and size

A size is n (n x n x n) or MxNxK.
"""
import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from sweep_build import build_variant, prebuild  # noqa: E402  (scripts/ is on the path: this script's folder)
DEFAULT_CONFIGS = ["", "STREAMK=0", "ORDER=0", "AS_PAD=0", "B_EARLY=0,STASH_K=8"]


def parse(cfg: str) -> tuple[Path, list[str]]:
    """A config is comma-separated KNOB=VALUE overrides; SRC=dir builds that folder's matmul.cu and bindings.cpp
    instead of solutions/day09 (say, an earlier version, to time it beside the current one)."""
    src, out = ROOT / "solutions" / "day09", []
    for kv in filter(None, (t.strip() for t in cfg.split(","))):
        if kv.startswith("SRC="):
            src = (ROOT / kv[4:]).resolve()
        else:
            out.append(f"-DSGEMM_{kv}")
    return src, out


def build(cfg: str):
    src, flags = parse(cfg)
    return build_variant("sgemm_sweep", [src / "matmul.cu", src / "bindings.cpp"], flags + ["-Xptxas", "-v"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1024,2048,4096,8192,4224x4096x4096")
    ap.add_argument("--configs", nargs="*", default=DEFAULT_CONFIGS)
    ap.add_argument("--once", action="store_true", help="call each config once per size, untimed (for a profiler)")
    ap.add_argument("--dtype", default="fp32", choices=["fp32", "fp16", "bf16"],
                    help="our kernel's dtype; cuBLAS is always fp32 (the track's ceiling)")
    args = ap.parse_args()
    prebuild(build, args.configs, workers=4)
    import torch

    from grader.check.timing import CudaTimer

    torch.backends.cuda.matmul.allow_tf32 = False
    timer = CudaTimer(torch, warmup=3, min_reps=10, max_reps=100, budget_s=0.5, rel_stderr=0.005)
    mods = {}
    for cfg in args.configs:
        try:
            mods[cfg] = build(cfg)
        except Exception:  # noqa: BLE001 -- prebuild above printed why; the table leaves the config out
            pass
    print(f"{'config':34s} {'size':>14s} {'TFLOP/s':>8s} {'cuBLAS':>8s} {'% cuBLAS':>9s} {'rel L2':>8s}")
    for size in args.sizes.split(","):
        dims = [int(d) for d in size.split("x")]
        m, n, k = dims * 3 if len(dims) == 1 else dims
        g = torch.Generator(device="cuda").manual_seed(m * n + k)
        dt = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
        a32 = torch.randn(m, k, device="cuda", generator=g)
        b32 = torch.randn(k, n, device="cuda", generator=g)
        c32 = torch.empty(m, n, device="cuda")
        a, b = a32.to(dt), b32.to(dt)
        c = torch.empty(m, n, device="cuda", dtype=dt)
        ref = (a.double() @ b.double())
        flop = 2 * m * n * k
        for cfg, mod in mods.items():
            c.fill_(float("nan"))
            mod.matmul(a, b, c)
            err = ((c.double() - ref).norm() / ref.norm()).item()
            if args.once:
                print(f"{args.dtype} {cfg or '(defaults)':29s} {size:>14s} called once, rel L2 {err:.1e}")
                continue
            ours = timer.time(lambda: mod.matmul(a, b, c)).median_ms
            lib = timer.time(lambda: torch.mm(a32, b32, out=c32)).median_ms  # re-timed beside every config
            print(f"{args.dtype} {cfg or '(defaults)':29s} {size:>14s} {flop / ours / 1e9:8.1f} {flop / lib / 1e9:8.1f} "
                  f"{lib / ours:9.1%} {err:8.1e}")


if __name__ == "__main__":
    main()
