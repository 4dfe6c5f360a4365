"""What day 20's training step at the lesson size would take if the course's kernels read and wrote the model's
strided layout (no copies), measured before building it: a stand-in attention that launches the same forward and
backward kernels on buffers of the same shape made once (so it pays every launch and allocation the real op pays,
but no copy), returns its output in SDPA's memory order ([B, N, H, d], so the model's reshape is a view), and takes
dO as it comes. Its values are not attention (the losses are meaningless); only its time is. Timed interleaved with
SDPA pinned to its FlashAttention-2 backend and with the real op, as scripts/day20_measure.py times them.

    python3 scripts/day20_copy_free_bound.py      # on a GPU machine
"""
from __future__ import annotations

import copy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))


def copy_free(torch, fwd, bwd, shape, dtype):
    """The stand-in: the real launches on fixed contiguous buffers; outputs allocated in the layout a strided
    kernel would write (o as [B, N, H, d] memory, gradients as the real op allocates them)."""
    b, h, n, d = shape
    q, k, v, do = (torch.randn(shape, device="cuda", dtype=dtype) for _ in range(4))
    o, lse = torch.empty_like(q), torch.empty(b, h, n, device="cuda")

    class CopyFree(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q_in, k_in, v_in):
            out = torch.empty(b, n, h, d, device="cuda", dtype=dtype).transpose(1, 2)  # SDPA's memory order
            lse_out = torch.empty(b, h, n, device="cuda")
            fwd(q, k, v, o, lse_out, True)
            ctx.save_for_backward(q_in, k_in, v_in, out, lse_out)
            return out

        @staticmethod
        def backward(ctx, g):
            _ = ctx.saved_tensors  # unpacked, as the real op does
            dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
            bwd(q, k, v, o, lse, do, dq, dk, dv, True)
            return dq, dk, dv

    return CopyFree.apply


def main() -> int:
    import torch
    from day20_measure import _build, attention_fn
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from tasks import tiny_lm

    fwd = _build(torch, "day12", "flash_attention_mma", ROOT / "solutions" / "day12").flash_attention_mma
    bwd = _build(torch, "day20", "attention_bwd_tc", ROOT / "solutions" / "day20").attention_bwd_tc
    cfg = tiny_lm.Config()
    shape = (cfg.batch, cfg.heads, cfg.seq - 1, cfg.d_model // cfg.heads)  # the model reads tokens[:, :-1]
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}; {cfg.describe()}")
    for dname, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        torch.manual_seed(1)
        base = tiny_lm.TinyLM(cfg, tiny_lm.sdpa_attention, dtype).cuda()
        data = tiny_lm.batches(cfg, 1, "cuda")
        variants = {"sdpa": tiny_lm.sdpa_attention, "op": attention_fn(torch, fwd, bwd),
                    "copy_free": copy_free(torch, fwd, bwd, shape, dtype)}
        runs = {}
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            for name, attn in variants.items():
                model = copy.deepcopy(base)
                model.set_attention(attn)
                _, opt = tiny_lm.train(model, data, cfg)
                runs[name] = (model, opt)
            for rep in range(3):
                ms = tiny_lm.time_steps(runs, data, cfg, reps=41)
                print(f"{dname} run {rep}: step ms " + ", ".join(f"{k} {v:.3f}" for k, v in ms.items())
                      + f"; x SDPA flash: op {ms['sdpa'] / ms['op']:.3f}, copy-free {ms['sdpa'] / ms['copy_free']:.3f}",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
