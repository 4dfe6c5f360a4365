"""Compares build configurations of day 11's matmul_mma (the -DTC_ knobs at the top of the mma section of
solutions/day11/matmul.cu) against cuBLAS in the same dtype (torch.matmul) in one process on the GPU: the evidence
behind the shipped defaults, kept in measured/NOTES.md. Builds run in parallel processes first, then every config
is timed interleaved with cuBLAS (re-timed beside each config).

    python3 scripts/tc_sweep.py [--sizes 4096,8192] [--dtype bf16] [--configs "STAGES=3" "BK=64,STAGES=3" ...]
"""
import argparse
import hashlib
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEFAULT_CONFIGS = ["", "STAGES=3", "BK=64,STAGES=3", "BN=128,WARPS_N=2,MIN_BLOCKS=2",
                   "BM=256,BN=128,WARPS_M=4,WARPS_N=2"]


def flags(cfg: str) -> list[str]:
    return [f"-DTC_{kv.strip()}" for kv in cfg.split(",") if kv.strip()]


def build(cfg: str):
    import torch

    from grader.build import build_extension

    tag = hashlib.sha1(cfg.encode()).hexdigest()[:8]
    src = ROOT / "solutions" / "day11"
    sources = [src / "matmul.cu", src / "matmul_wgmma.cu", src / "bindings.cpp"]
    mod, secs, _ = build_extension(name=f"tc_sweep_{tag}", sources=sources,
                                   include_dirs=[ROOT / "common"], build_dir=ROOT / ".grader" / "build" / f"tcsweep-{tag}",
                                   extra_cuda_cflags=flags(cfg), capability=torch.cuda.get_device_capability(0),
                                   root=ROOT)
    return mod


def _build_only(cfg: str) -> str:
    try:
        build(cfg)
        return ""
    except Exception as e:  # report and carry on with the others
        return f"{cfg!r}: {str(e)[-1500:]}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--configs", nargs="*", default=DEFAULT_CONFIGS)
    ap.add_argument("--dtype", default="bf16", choices=["fp16", "bf16"])
    ap.add_argument("--op", default="matmul_mma", choices=["matmul_mma", "matmul_wmma"])
    args = ap.parse_args()
    with ProcessPoolExecutor(max_workers=min(6, len(args.configs))) as pool:
        for err in pool.map(_build_only, args.configs):
            if err:
                print("build failed:", err)
    import torch

    from grader.timing import CudaTimer

    timer = CudaTimer(torch, warmup=3, min_reps=10, max_reps=100, budget_s=0.3, rel_stderr=0.005)
    mods = {}
    for cfg in args.configs:
        try:
            mods[cfg] = build(cfg)
        except Exception:
            pass
    print(f"{'config':44s} {'size':>6s} {'TFLOP/s':>8s} {'cuBLAS':>8s} {'% cuBLAS':>9s} {'rel L2':>8s}")
    dt = {"fp16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    for n in map(int, args.sizes.split(",")):
        g = torch.Generator(device="cuda").manual_seed(n)
        s = n ** -0.25
        a = (torch.randn(n, n, device="cuda", generator=g) * s).to(dt)
        b = (torch.randn(n, n, device="cuda", generator=g) * s).to(dt)
        c = torch.empty(n, n, device="cuda", dtype=dt)
        c_lib = torch.empty_like(c)
        ref = a.double() @ b.double()
        flop = 2 * n**3
        for cfg, mod in mods.items():
            fn = getattr(mod, args.op)
            c.fill_(float("nan"))
            fn(a, b, c)
            err = ((c.double() - ref).norm() / ref.norm()).item()
            ours = timer.time(lambda: fn(a, b, c)).median_ms
            lib = timer.time(lambda: torch.matmul(a, b, out=c_lib)).median_ms
            print(f"{args.dtype} {cfg or '(defaults)':39s} {n:6d} {flop / ours / 1e9:8.1f} {flop / lib / 1e9:8.1f} "
                  f"{lib / ours:9.1%} {err:8.1e}", flush=True)


if __name__ == "__main__":
    main()
