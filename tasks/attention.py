"""Attention forward: o = softmax(scale · q kᵀ [+ causal mask]) v and the row logsumexp, per batch and head.

q, k, v, o are [B, H, N, d] in the case's dtype; lse is [B, H, N] in fp32 (the backward pass recomputes P from
it). scale = 1/sqrt(d); the causal mask hides key j > query i. A case's shape is [B, H, N, d] and its params say
whether it is causal; the op receives `causal` after its outputs.
"""
from __future__ import annotations

import math

import torch

LIBRARY = "torch SDPA"  # what the report calls the library op


def make_inputs(shape, dtype, generator, device, causal=False):
    b, h, n, d = shape
    # Unit-variance q and k give scores q·k/sqrt(d) of unit variance: softmax rows neither flat nor one-hot.
    q, k, v = (torch.randn((b, h, n, d), generator=generator, device=device, dtype=torch.float32).to(dtype)
               for _ in range(3))
    return {"q": q, "k": k, "v": v}


def make_outputs(inputs, causal=False):
    q = inputs["q"]
    return {"o": torch.empty_like(q), "lse": torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)}


def reference(q, k, v, causal=False):
    """fp64, one batch at a time (the score matrix is B·H·N² doubles)."""
    n, d = q.shape[2], q.shape[3]
    mask = torch.ones((n, n), dtype=torch.bool, device=q.device).triu(1) if causal else None
    outs, lses = [], []
    for qb, kb, vb in zip(q.double(), k.double(), v.double()):
        s = (qb @ kb.transpose(-1, -2)) / math.sqrt(d)
        if mask is not None:
            s = s.masked_fill(mask, float("-inf"))
        lse = torch.logsumexp(s, dim=-1)
        outs.append(torch.exp(s - lse[..., None]) @ vb)
        lses.append(lse)
    return torch.stack(outs), torch.stack(lses)


def library(q, k, v, o, lse, causal=False):
    # SDPA picks its fastest backend (FlashAttention-2 for fp16/bf16 on an H100/H200); the public API does not
    # return the logsumexp, so only o is produced: the library does slightly less work than the op.
    o.copy_(torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal))


def _sharp(inputs, generator):
    # Scores with a standard deviation of 30: exp overflows fp32 unless the running maximum is subtracted, and
    # the maximum keeps growing from tile to tile, so a missing rescale shows.
    return {**inputs, "q": (inputs["q"].float() * 30).to(inputs["q"].dtype)}


probes = {"sharp": _sharp}


def flops(q, k, v, causal=False):
    # The FlashAttention-2 paper's convention: two matmuls of 2·N²·d each per head; half of that when causal.
    b, h, n, d = q.shape
    return 4 * b * h * n * n * d // (2 if causal else 1)
