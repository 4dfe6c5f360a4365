"""Day 18's measured table: the course op (day 12's forward, day 17's backward, through autograd) against SDPA,
forward + backward, and the tiny language model's training step, on this GPU. Builds the op from solutions/ (or
--dir) the way `grader check` does, so it runs the same library.

    python3 scripts/lessons/day18_measure.py OUT_DIR            # writes OUT_DIR/day18.json and OUT_DIR/day18.md
    python3 scripts/lessons/day18_measure.py --insert day18.json # regenerates the README's table from a saved run
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from lesson_table import main as lesson_main  # noqa: E402
from lesson_table import median_event_ms  # noqa: E402

SHAPES = [(4, 16, 1024, 64), (4, 16, 1024, 128), (2, 16, 4096, 128)]


def measure(src_dir: Path) -> dict:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from grader.check.build import build_exercise
    from grader.course import load_course
    from tasks import tiny_lm

    course = load_course(ROOT / "course.yaml")
    ex = course.day("day18").exercises[0]
    build_exercise(ex, src_dir=src_dir, root=ROOT, day_id="day18",
                   capability=tuple(torch.cuda.get_device_capability(0)))
    op = torch.ops.course.flash_attention
    rows = []
    for dtype in (torch.bfloat16, torch.float16):
        for b, h, n, d in SHAPES:
            for causal in (False, True):
                q, k, v, do = (torch.randn(b, h, n, d, device="cuda", dtype=dtype) for _ in range(4))
                qg, kg, vg = (t.requires_grad_() for t in (q, k, v))

                def course_fb():
                    o = op(qg, kg, vg, causal)[0]
                    torch.autograd.grad(o, (qg, kg, vg), do)

                def sdpa_fb():
                    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                        o = torch.nn.functional.scaled_dot_product_attention(qg, kg, vg, is_causal=causal)
                    torch.autograd.grad(o, (qg, kg, vg), do)

                t_op, t_sdpa = median_event_ms(torch, course_fb), median_event_ms(torch, sdpa_fb)
                flops = 14 * b * h * n * n * d // (2 if causal else 1)  # forward 4·BHN²d + backward 2.5x that
                rows.append({"dtype": str(dtype).split(".")[-1], "shape": [b, h, n, d], "causal": causal,
                             "op_ms": t_op, "sdpa_flash_ms": t_sdpa, "op_tflops": flops / t_op / 1e9,
                             "sdpa_tflops": flops / t_sdpa / 1e9})
    training = {}
    for name, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        r = tiny_lm.compare(lambda q, k, v: op(q, k, v, True)[0], dtype, seed=1234)
        training[name] = {k: r[k] for k in ("max_diff", "rounding_diff", "step_ms", "sdpa_step_ms", "first_loss",
                                            "last_loss")}
    return {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "config": tiny_lm.Config().describe(),
            "fwd_bwd": rows, "training": training}


def table(data: dict) -> str:
    lines = [f"Measured on {data['gpu']} (torch {data['torch']}). "
             "Forward + backward through autograd, median of 20; FLOPs = 3.5 × 4·B·H·N²·d (÷2 causal).", "",
             "| dtype | B, H, N, d | causal | course op ms | SDPA flash ms | course TFLOP/s | × SDPA flash |",
             "|---|---|---|---|---|---|---|"]
    for r in data["fwd_bwd"]:
        lines.append(f"| {r['dtype']} | {', '.join(map(str, r['shape']))} | {'yes' if r['causal'] else 'no'} | "
                     f"{r['op_ms']:.2f} | {r['sdpa_flash_ms']:.2f} | {r['op_tflops']:.0f} | "
                     f"{r['sdpa_flash_ms'] / r['op_ms']:.2f} |")
    lines += ["", f"Tiny language model ({data['config']}), the same weights and batches:", "",
              "| dtype | loss, first → last | max \\|Δloss\\| vs SDPA | SDPA math vs SDPA | step ms (op) | step ms (SDPA) "
              "| × SDPA |", "|---|---|---|---|---|---|---|"]
    for name, t in data["training"].items():
        lines.append(f"| {name} | {t['first_loss']:.3f} → {t['last_loss']:.3f} | {t['max_diff']:.1e} | "
                     f"{t['rounding_diff']:.1e} | {t['step_ms']:.2f} | {t['sdpa_step_ms']:.2f} | "
                     f"{t['sdpa_step_ms'] / t['step_ms']:.2f} |")
    return "\n".join(lines)


def main() -> int:
    return lesson_main(name="day18", lesson="day18", block="day18-measured", measure=lambda a: measure(a.dir), table=table,
                       add_arguments=lambda p: p.add_argument("--dir", type=Path, default=ROOT / "solutions" / "day18"))


if __name__ == "__main__":
    sys.exit(main())
