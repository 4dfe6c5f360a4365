"""Compares build configurations of day 11's matmul_mma (the -DTC_ knobs at the top of the mma section of
solutions/day11/matmul.cu) or matmul_wgmma (TC_WG_TMA, TC_WG_CLUSTER in matmul_wgmma.cu) against cuBLAS in the
same dtype (torch.matmul) in one process on the GPU: the evidence behind the shipped defaults, kept in
measured/NOTES.md. Builds run in parallel processes first, then every config is timed interleaved with cuBLAS
(re-timed beside each config). --check also compares every config with an fp64 reference on ragged shapes.

    python3 scripts/tc_sweep.py [--sizes 4096,8192] [--dtype bf16] [--configs "STAGES=3" "BK=64,STAGES=3" ...]
    python3 scripts/tc_sweep.py --op matmul_wgmma --configs "WG_TMA=0" "" "WG_CLUSTER=2" --check
"""
import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from sweep_build import build_variant, prebuild  # noqa: E402  (scripts/ is on the path: this script's folder)
# The shipped 128 x 128 tile (two blocks per SM) against the 128 x 256 tile it replaced, with 3 stages and BK = 64,
# and a 256 x 128 tile (one block per SM each: two would spill).
DEFAULT_CONFIGS = ["", "BN=256,WARPS_N=4,MIN_BLOCKS=1", "BN=256,WARPS_N=4,MIN_BLOCKS=1,STAGES=3",
                   "BN=256,WARPS_N=4,MIN_BLOCKS=1,BK=64,STAGES=3", "BM=256,WARPS_M=4,MIN_BLOCKS=1"]
# matmul_wgmma needs its sm_90a image: the exercise's own flags (course.yaml), as the grader builds it.
WGMMA_FLAGS = ["-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_90a,code=sm_90a"]
CHECK_SHAPES = [(128, 128, 128), (129, 384, 1024), (130, 136, 1000), (200, 264, 40), (257, 264, 512),
                (3000, 5000, 2000), (1000, 72, 8)]


def flags(cfg: str) -> list[str]:
    extra = WGMMA_FLAGS if "WG_" in cfg or cfg.startswith("wgmma") else []
    return [f"-DTC_{kv.strip()}" for kv in cfg.split(",") if kv.strip() and kv.strip() != "wgmma"] + extra


def build(cfg: str):
    src = ROOT / "solutions" / "day11"
    return build_variant("tc_sweep", [src / "matmul.cu", src / "matmul_wgmma.cu", src / "bindings.cpp"], flags(cfg))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--configs", nargs="*", default=DEFAULT_CONFIGS)
    ap.add_argument("--dtype", default="bf16", help="bf16, fp16 or both: bf16,fp16")
    ap.add_argument("--op", default="matmul_mma",
                    choices=["matmul_mma", "matmul_wmma", "matmul_mma_sync", "matmul_wgmma", "matmul_wgmma_async"])
    ap.add_argument("--check", action="store_true", help="also compare each config with fp64 on ragged shapes")
    ap.add_argument("--build-only", action="store_true")
    args = ap.parse_args()
    if args.op.startswith("matmul_wgmma"):  # the sm_90a image for every config, the defaults ("") included
        args.configs = [cfg if "WG_" in cfg else ",".join(x for x in ("wgmma", cfg) if x) for cfg in args.configs]
    prebuild(build, args.configs, workers=6)
    if args.build_only:
        return
    import torch

    from grader.check.timing import CudaTimer

    timer = CudaTimer(torch, warmup=3, min_reps=10, max_reps=100, budget_s=0.3, rel_stderr=0.005)
    mods = {}
    for cfg in args.configs:
        try:
            mods[cfg] = build(cfg)
        except Exception:  # noqa: BLE001 -- prebuild above printed why; the table leaves the config out
            pass
    for name in args.dtype.split(","):
        run(args, mods, timer, name, {"fp16": torch.float16, "bf16": torch.bfloat16}[name])


def run(args, mods, timer, name, dt):
    import torch

    if args.check:
        print(f"{'config':44s} {'M x N x K':>18s} {'rel L2':>8s} {'max err':>8s}")
        for cfg, mod in mods.items():
            fn = getattr(mod, args.op)
            for m, n, k in CHECK_SHAPES:
                g = torch.Generator(device="cuda").manual_seed(m * n + k)
                s = k ** -0.25
                a = (torch.randn(m, k, device="cuda", generator=g) * s).to(dt)
                b = (torch.randn(k, n, device="cuda", generator=g) * s).to(dt)
                c = torch.full((m, n), float("nan"), device="cuda", dtype=dt)
                fn(a, b, c)
                ref = a.double() @ b.double()
                err = ((c.double() - ref).norm() / ref.norm()).item()
                worst = (c.double() - ref).abs().max().item()
                ok = "" if err < 6e-3 and worst == worst else "  <-- WRONG"
                print(f"{name} {cfg or '(defaults)':39s} {f'{m}x{n}x{k}':>18s} {err:8.1e} {worst:8.1e}{ok}",
                      flush=True)
    print(f"{'config':44s} {'size':>6s} {'TFLOP/s':>8s} {'cuBLAS':>8s} {'% cuBLAS':>9s} {'rel L2':>8s}")
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
            print(f"{name} {cfg or '(defaults)':39s} {n:6d} {flop / ours / 1e9:8.1f} {flop / lib / 1e9:8.1f} "
                  f"{lib / ours:9.1%} {err:8.1e}", flush=True)

if __name__ == "__main__":
    main()
