"""Day 20's end-to-end table: attention built from day 12's forward and day 20's backward (both from solutions/, or
--dir for day 20's), trained in the tiny language model against SDPA pinned to its FlashAttention-2 backend: the
losses step by step, and the time per training step. Both kernels are built the way `grader check` builds them,
and recorded for autograd two ways: a Python autograd.Function (as day 18's op records its formula), and one C++
autograd node (scripts/lessons/day20_attention_node.cpp), which shows what Python costs where the host bounds the step.

    python3 scripts/lessons/day20_measure.py OUT_DIR            # writes OUT_DIR/day20.json and OUT_DIR/day20.md
    python3 scripts/lessons/day20_measure.py --insert day20.json # regenerates the README's table from a saved run
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from lesson_table import build_module  # noqa: E402
from lesson_table import main as lesson_main  # noqa: E402


def _build_node(torch, day20_dir: Path):
    """scripts/lessons/day20_attention_node.cpp with day 12's forward and day 20's backward (day20_dir's), built with the
    flags course.yaml gives day 20 (the mma.sync image for sm_80 and the wgmma one for sm_90a)."""
    from torch.utils.cpp_extension import load

    from grader.check.build import BASE_CUDA_FLAGS, CXX_FLAGS
    from grader.course import load_course

    ex = next(e for e in load_course(ROOT / "course.yaml").day("day20").exercises if e.name == "attention_bwd_tc")
    sources = [ROOT / "scripts" / "lessons" / "day20_attention_node.cpp", ROOT / "solutions" / "day12" / "attention.cu",
               day20_dir / "attention_bwd_tc.cu"]
    return load("day20_attention_node", [str(p) for p in sources], extra_include_paths=[str(ROOT / "common")],
                extra_cuda_cflags=BASE_CUDA_FLAGS + list(ex.extra_cuda_cflags), extra_cflags=list(CXX_FLAGS))


def check_node(torch, node, reference) -> None:
    """The C++ node gives the Python Function's bits (the same kernels; the deterministic backward, so that the bits
    can be compared) for the three ways a model hands q, k, v over: views of one projection, separate strided
    tensors, contiguous tensors. Raises if not. (The kernels' own results on views are graded: day 12's and day
    20's correctness cases include views.)"""
    g = torch.Generator(device="cuda").manual_seed(5)
    b, n, h, d = 2, 77, 3, 64
    for dtype in (torch.bfloat16, torch.float16):
        packed = torch.randn(b, n, 3, h, d, device="cuda", dtype=dtype, generator=g)
        dout = torch.randn(b, h, n, d, device="cuda", dtype=dtype, generator=g)
        inputs = {"views of one projection": lambda t: [x.transpose(1, 2) for x in t.unbind(2)],
                  "separate strided tensors": lambda t: [x.clone().transpose(1, 2) for x in t.unbind(2)],
                  "contiguous tensors": lambda t: [x.transpose(1, 2).contiguous() for x in t.unbind(2)]}
        for how, make in inputs.items():
            results = []
            for fn in (reference, lambda q, k, v: node.attention(q, k, v, True, True)):
                leaf = packed.clone().requires_grad_()
                o = fn(*make(leaf))
                o.backward(dout)
                results.append((o.detach(), leaf.grad))
            (o1, g1), (o2, g2) = results
            if not (torch.equal(o1, o2) and torch.equal(g1, g2)):
                raise SystemExit(f"the C++ node differs from the Python Function ({how}, {dtype})")


def _columns_contiguous(t):
    return t if t.stride(-1) == 1 else t.contiguous()


def attention_fn(torch, forward, backward):
    """Causal attention as an autograd.Function over the two raw ops (the day-18 op registers the same pair). Both
    kernels take views, so nothing is copied: q, k, v as the model hands them, o written in [B, N, H, d] memory (the
    model's merge of the heads is then a view, as with SDPA), dout as it arrives."""

    class Attention(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v):
            q, k, v = (_columns_contiguous(t) for t in (q, k, v))
            b, h, n, d = q.shape
            o = torch.empty(b, n, h, d, dtype=q.dtype, device=q.device).transpose(1, 2)
            lse = torch.empty(b, h, n, dtype=torch.float32, device=q.device)
            forward(q, k, v, o, lse, True)
            ctx.save_for_backward(q, k, v, o, lse)
            return o

        @staticmethod
        def backward(ctx, do):
            q, k, v, o, lse = ctx.saved_tensors
            dq, dk, dv = (torch.empty(q.shape, dtype=q.dtype, device=q.device) for _ in range(3))
            backward(q, k, v, o, lse, _columns_contiguous(do), dq, dk, dv, True)
            return dq, dk, dv

    return Attention.apply


def measure(day20_dir: Path) -> dict:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from tasks import tiny_lm

    fwd = build_module(torch, "day12", "flash_attention_mma").flash_attention_mma
    bwd_mod = build_module(torch, "day20", "attention_bwd_tc", day20_dir)
    node = _build_node(torch, day20_dir)
    check_node(torch, node, attention_fn(torch, fwd, bwd_mod.attention_bwd_tc_deterministic))
    variants = {  # (the table's label, the attention)
        "attention_bwd_tc": attention_fn(torch, fwd, bwd_mod.attention_bwd_tc),
        "attention_bwd_tc_deterministic": attention_fn(torch, fwd, bwd_mod.attention_bwd_tc_deterministic),
        "attention_bwd_tc, one C++ autograd node": lambda q, k, v: node.attention(q, k, v, True),
    }
    configs = {"lesson": tiny_lm.Config(),
               "large": tiny_lm.Config(d_model=1024, heads=8, layers=2, seq=2048, batch=4, steps=20, lr=1e-3)}
    rows = []
    for cname, cfg in configs.items():
        for variant, attn in variants.items():
            for dname, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION):  # the reference runs (the math run sets its own)
                    # 101 interleaved steps: a few-ms step bound by the host drifts by 10 % from run to run
                    r = tiny_lm.compare(attn, dtype, seed=1234, cfg=cfg, reps=101)
                rows.append({"config": cname, "describe": cfg.describe(), "backward": variant, "dtype": dname,
                             **{k: r[k] for k in ("max_diff", "rounding_diff", "step_ms", "sdpa_step_ms",
                                                  "first_loss", "last_loss")}})
                print(rows[-1], flush=True)
    return {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "training": rows}


def table(data: dict) -> str:
    lines = [f"Measured on {data['gpu']} (torch {data['torch']}): the "
             "same weights and batches trained with day 12's forward and this day's backward, and with SDPA pinned "
             "to its FlashAttention-2 backend; the difference SDPA's math backend makes against it is the size of "
             "a rounding difference.", ""]
    for cname in dict.fromkeys(r["config"] for r in data["training"]):
        rows = [r for r in data["training"] if r["config"] == cname]
        lines += [f"{cname.capitalize()} model: {rows[0]['describe']}.", "",
                  "| backward | dtype | loss, first → last | max \\|Δloss\\| vs SDPA flash | SDPA math vs flash "
                  "| step ms | SDPA flash step ms | × SDPA flash |", "|---|---|---|---|---|---|---|---|"]
        for r in rows:
            lines.append(f"| {r['backward']} | {r['dtype']} | {r['first_loss']:.3f} → {r['last_loss']:.3f} | "
                         f"{r['max_diff']:.1e} | {r['rounding_diff']:.1e} | {r['step_ms']:.2f} | "
                         f"{r['sdpa_step_ms']:.2f} | {r['sdpa_step_ms'] / r['step_ms']:.2f} |")
        lines.append("")
    return "\n".join(lines).rstrip()


def main() -> int:
    return lesson_main(name="day20", lesson="day20", block="day20-training", measure=lambda a: measure(a.dir), table=table,
                       add_arguments=lambda p: p.add_argument("--dir", type=Path, default=ROOT / "solutions" / "day20"))


if __name__ == "__main__":
    sys.exit(main())
