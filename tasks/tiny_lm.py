"""A tiny causal transformer language model and a short training run, for checking an attention op end to end
(day 18, and day 20's training step): the same model, initial weights and batches train once with the op and once
with SDPA, and the two loss curves are compared step by step.

The data is synthetic and needs attention to learn: each sequence is random tokens whose second half repeats the
first, so after the midpoint the next token is predictable only by looking back half a sequence.
"""
from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F


@dataclass(frozen=True)
class Config:
    vocab: int = 64
    d_model: int = 256
    heads: int = 4  # head size d_model / heads = 64, a size the course's kernels take
    layers: int = 2
    seq: int = 256
    batch: int = 8
    steps: int = 30
    lr: float = 3e-3

    def describe(self) -> str:
        return (f"{self.layers} layers, {self.heads} heads x {self.d_model // self.heads}, N = {self.seq}, batch "
                f"{self.batch}, {self.steps} AdamW steps")


def sdpa_attention(q, k, v):
    """The reference attention: SDPA, causal, whichever backend it picks for these inputs."""
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class Block(nn.Module):
    def __init__(self, cfg: Config, attention, dtype):
        super().__init__()
        self.heads, self.attention, self.dtype = cfg.heads, attention, dtype
        self.ln1, self.ln2 = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.mlp = nn.Sequential(nn.Linear(cfg.d_model, 4 * cfg.d_model), nn.GELU(),
                                 nn.Linear(4 * cfg.d_model, cfg.d_model))

    def forward(self, x):
        b, n, c = x.shape
        # [B, N, 3, H, d] -> three [B, H, N, d] views (not contiguous: the op must cope), in the attention dtype.
        q, k, v = self.qkv(self.ln1(x)).view(b, n, 3, self.heads, c // self.heads).to(self.dtype).unbind(2)
        o = self.attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        x = x + self.proj(o.transpose(1, 2).reshape(b, n, c).float())
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    def __init__(self, cfg: Config, attention, dtype):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab, cfg.d_model)
        self.pos = nn.Parameter(torch.randn(cfg.seq, cfg.d_model) * 0.02)
        self.blocks = nn.ModuleList(Block(cfg, attention, dtype) for _ in range(cfg.layers))
        self.ln = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab)

    def forward(self, tokens):
        x = self.embed(tokens) + self.pos[: tokens.shape[1]]
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))

    def set_attention(self, attention):
        for blk in self.blocks:
            blk.attention = attention


def batches(cfg: Config, seed: int, device) -> list[torch.Tensor]:
    g = torch.Generator(device="cpu").manual_seed(seed)
    half = torch.randint(0, cfg.vocab, (cfg.steps, cfg.batch, cfg.seq // 2), generator=g)
    return [t.to(device) for t in torch.cat([half, half], dim=-1)]


def step(model: TinyLM, opt, tokens: torch.Tensor, cfg: Config) -> tuple[float, float]:
    """One training step (forward, backward, optimizer): its loss and its wall time in seconds."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    logits = model(tokens[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, cfg.vocab), tokens[:, 1:].reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    torch.cuda.synchronize()
    return float(loss), time.perf_counter() - t0


def train(model: TinyLM, data: list[torch.Tensor], cfg: Config) -> tuple[list[float], torch.optim.Optimizer]:
    """Per-step training losses, and the optimizer (its state continues in the timed steps)."""
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    return [step(model, opt, tokens, cfg)[0] for tokens in data], opt


def time_steps(runs: dict, data: list[torch.Tensor], cfg: Config, reps: int = 21) -> dict[str, float]:
    """The median step time in ms of each trained model, the models' steps interleaved (a, b, a, b, ...) so that a
    drift of clocks or host load during the measurement falls on both alike. At the lesson's size a step takes a few
    milliseconds and is bound by the host's launches, where two separate runs differed by 10 % on their own."""
    times = {name: [] for name in runs}
    for r in range(reps):
        for name, (model, opt) in runs.items():
            times[name].append(step(model, opt, data[r % len(data)], cfg)[1])
    return {name: 1e3 * sorted(t)[len(t) // 2] for name, t in times.items()}


def compare(attention, dtype, seed: int, cfg: Config = Config(), device="cuda", reps: int = 21) -> dict:
    """Train the same model three times from the same weights on the same batches: with `attention`, with SDPA,
    and with SDPA's math backend (SDPA against itself: the size of a difference that rounding alone makes). reps:
    the timed steps of each model (interleaved, see time_steps)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    torch.manual_seed(seed)
    base = TinyLM(cfg, sdpa_attention, dtype).to(device)
    data = batches(cfg, seed, device)
    runs, losses = {}, {}
    for name, attn in (("op", attention), ("sdpa", sdpa_attention), ("sdpa_math", sdpa_attention)):
        model = copy.deepcopy(base)
        model.set_attention(attn)
        if name == "sdpa_math":
            with sdpa_kernel(SDPBackend.MATH):
                losses[name], _ = train(model, data, cfg)
        else:
            losses[name], opt = train(model, data, cfg)
            runs[name] = (model, opt)
    ms = time_steps(runs, data, cfg, reps)
    op, ref, math_ = losses["op"], losses["sdpa"], losses["sdpa_math"]
    return {"losses": op, "sdpa_losses": ref, "max_diff": max(abs(a - b) for a, b in zip(op, ref)),
            "rounding_diff": max(abs(a - b) for a, b in zip(math_, ref)), "step_ms": ms["op"], "sdpa_step_ms": ms["sdpa"],
            "first_loss": ref[0], "last_loss": ref[-1], "chance": math.log(cfg.vocab)}
