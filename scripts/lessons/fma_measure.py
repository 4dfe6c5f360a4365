"""Day 03's FMA experiment: the same solution kernels built twice, with nvcc's default contraction of a*b+c into one
fused multiply-add (-fmad=true) and without it (-fmad=false); each build's error against an fp64 reference and its
time, on this GPU. A softmax (day 03) and a tiled matmul (day 07), fp32.

    python3 scripts/lessons/fma_measure.py OUT_DIR              # writes OUT_DIR/fma.json and OUT_DIR/fma.md
    python3 scripts/lessons/fma_measure.py --insert fma.json    # regenerates day 03's table from a saved run
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from lesson_table import main as lesson_main  # noqa: E402
from lesson_table import median_event_ms  # noqa: E402

# (day, exercise, shape): the softmax's rows x cols, the matmul's M, N, K
CASES = [("day03", "softmax", (4096, 4096)), ("day07", "matmul", (2048, 2048, 2048))]
SEEDS = (1, 2, 3)


def _errors(torch, out, ref) -> dict:
    diff = (out.double() - ref).abs()
    return {"max_abs": float(diff.max()), "max_rel": float((diff / ref.abs().clamp_min(1e-30)).max()),
            "rel_l2": float(torch.linalg.vector_norm(out.double() - ref) / torch.linalg.vector_norm(ref))}


def measure(_args=None) -> dict:
    import torch

    from grader.check.build import build_exercise
    from grader.course import load_course

    course = load_course(ROOT / "course.yaml")
    cap = torch.cuda.get_device_capability()
    rows = []
    for day_id, name, shape in CASES:
        ex = next(e for e in course.day(day_id).exercises if e.name == name)
        for fmad in (True, False):
            flags = [f for f in ex.extra_cuda_cflags if not f.startswith("-fmad")] + [f"-fmad={'true' if fmad else 'false'}"]
            built = ex.model_copy(update={"extra_cuda_cflags": flags})
            module, _, _ = build_exercise(built, src_dir=ROOT / "solutions" / day_id, root=ROOT, day_id=day_id,
                                          capability=cap)
            op = getattr(module, ex.op)
            worst, ms = {"max_abs": 0.0, "max_rel": 0.0, "rel_l2": 0.0}, []
            for seed in SEEDS:  # fresh random inputs per seed; the worst error over them
                g = torch.Generator(device="cuda").manual_seed(seed)
                if len(shape) == 2:
                    x = torch.randn(shape, device="cuda", generator=g) * 4
                    out = torch.empty_like(x)
                    ref = torch.softmax(x.double(), dim=-1)
                    call = lambda: op(x, out)  # noqa: E731
                else:
                    m, n, k = shape
                    a = torch.randn(m, k, device="cuda", generator=g)
                    b = torch.randn(k, n, device="cuda", generator=g)
                    out = torch.empty(m, n, device="cuda")
                    ref = a.double() @ b.double()
                    call = lambda: op(a, b, out)  # noqa: E731
                call()
                torch.cuda.synchronize()
                for key, v in _errors(torch, out, ref).items():
                    worst[key] = max(worst[key], v)
                ms.append(median_event_ms(torch, call, reps=30))
            rows.append({"day": day_id, "exercise": name, "shape": list(shape), "fmad": fmad, "ms": sorted(ms)[1],
                         **worst})
    return {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "seeds": list(SEEDS), "rows": rows}


def table(data: dict) -> str:
    lines = [f"Measured on {data['gpu']} (torch {data['torch']}): "
             f"the instructors' solutions, fp32, the worst error over {len(data['seeds'])} random inputs against fp64, "
             "median time of 30 calls.", "",
             "| kernel | shape | -fmad | max abs err | max rel err | rel L2 | ms | time × fmad=true |",
             "|---|---|---|---|---|---|---|---|"]
    base = {}
    for r in data["rows"]:
        key = (r["day"], r["exercise"])
        if r["fmad"]:
            base[key] = r["ms"]
        lines.append(f"| {r['day']} {r['exercise']} | {'×'.join(map(str, r['shape']))} | "
                     f"{'true' if r['fmad'] else 'false'} | {r['max_abs']:.2e} | {r['max_rel']:.2e} | "
                     f"{r['rel_l2']:.2e} | {r['ms']:.3f} | {r['ms'] / base[key]:.2f} |")
    return "\n".join(lines)


def main() -> int:
    return lesson_main(name="fma", lesson="day03", block="fma-measured", measure=measure, table=table)


if __name__ == "__main__":
    sys.exit(main())
