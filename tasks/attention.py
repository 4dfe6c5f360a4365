"""Attention forward: o = softmax(scale · q kᵀ [+ causal mask]) v and the row logsumexp, per batch and head.

q, k, v, o are [B, H, N, d] in the case's dtype; lse is [B, H, N] in fp32 (the backward pass recomputes P from
it). scale = 1/sqrt(d); the causal mask hides key j > query i. A case's shape is [B, H, N, d] and its params say
whether it is causal; the op receives `causal` after its outputs.
"""
from __future__ import annotations

import math

import torch

# The library is SDPA's FlashAttention-2 backend for fp16/bf16 (the reference point); fp32, which that
# backend does not take, gets SDPA's own choice. The ceiling is SDPA's cuDNN backend, the fastest on Hopper.
LIBRARY = "SDPA (flash for fp16/bf16)"


def make_inputs(shape, dtype, generator, device, causal=False):
    b, h, n, d = shape
    # Unit-variance q and k give scores q·k/sqrt(d) of unit variance: softmax rows neither flat nor one-hot.
    q, k, v = (torch.randn((b, h, n, d), generator=generator, device=device, dtype=torch.float32).to(dtype)
               for _ in range(3))
    return {"q": q, "k": k, "v": v}


def _model_layout(tensors: dict) -> dict:
    """What a transformer hands attention, with the same values: q, k, v sliced from one [B, N, 3, H, d] projection
    (rows 3·H·d elements apart, heads d apart), o and dout in [B, N, H, d] memory (the order SDPA returns o in, and
    the gradient of a merge of the heads). lse and the gradients dq, dk, dv are left as they are."""
    out = dict(tensors)
    if {"q", "k", "v"} <= tensors.keys():
        b, h, n, d = tensors["q"].shape
        packed = torch.empty((b, n, 3, h, d), dtype=tensors["q"].dtype, device=tensors["q"].device)
        for i, name in enumerate(("q", "k", "v")):
            out[name] = packed.select(2, i).transpose(1, 2)
            out[name].copy_(tensors[name])
    for name in ("o", "dout"):
        if name in tensors:
            t = tensors[name]
            b, h, n, d = t.shape
            out[name] = torch.empty((b, n, h, d), dtype=t.dtype, device=t.device).transpose(1, 2)
            out[name].copy_(t)
    return out


# Case layouts (course.yaml's `layout:`): the same values as views, for the kernels that take views.
LAYOUTS = {"model": _model_layout}


def make_outputs(inputs, causal=False):
    q = inputs["q"]
    return {"o": torch.empty_like(q), "lse": torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)}


def error_blocks(name, shape, **params):
    """Error maps (grader/check/error_map.py): a panel per batch entry and head, blocks of 16 queries (keys, for dk
    and dv: their rows are keys) by 16 head-dim columns, of which the course's query tiles (16 to 128 rows: an MMA
    fragment's, a block's) are whole numbers; lse, a value per query, in blocks of 16 queries. There is no key axis
    in any output, so a causal mask's diagonal has no place in these maps."""
    rows = "key" if name in ("dk", "dv") else "query"
    if len(shape) == 3:
        return {"block": [16, 1], "panels": ["batch", "head"], "rows": rows, "cols": None}
    return {"block": [16, 16], "panels": ["batch", "head"], "rows": rows, "cols": "dim"}


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


def _sdpa(backend_name):
    """SDPA pinned to one backend (whether it can run given inputs: _runs)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backend = getattr(SDPBackend, backend_name)

    def call(q, k, v, causal):
        with sdpa_kernel(backend):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return call


def _runs(call, q, k, v, causal) -> bool:
    try:
        call(q, k, v, causal)
        return True
    except RuntimeError:  # "No available kernel": this backend does not take these inputs
        return False


def _default_sdpa(q, k, v, causal):
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)


_library_calls: dict = {}  # decided once per kind of input, so the timed call does only the attention


def library(q, k, v, o, lse, causal=False):
    # The public API does not return the logsumexp, so the library does a little less work. Its output stays in
    # SDPA's own tensor (there is no out=): copying it into o would time a copy (2-6% here) that the ceiling's call
    # and our kernels do not make. The grader discards the library's outputs.
    key = (q.dtype, q.shape[-1], q.device, causal)
    if key not in _library_calls:
        flash = _sdpa("FLASH_ATTENTION")
        half = q.dtype != torch.float32
        _library_calls[key] = flash if half and _runs(flash, q[:1, :1], k[:1, :1], v[:1, :1], causal) else _default_sdpa
    _library_calls[key](q, k, v, causal)


def ceiling(q, k, v, causal=False):
    """SDPA's cuDNN backend for fp16/bf16; None (no ceiling) where it cannot run, e.g. fp32."""
    cudnn = _sdpa("CUDNN_ATTENTION")
    if q.dtype == torch.float32 or not _runs(cudnn, q, k, v, causal):
        return None
    return "SDPA cuDNN", lambda: cudnn(q, k, v, causal)


def _sharp(inputs, generator):
    # Scores with a standard deviation of 30: exp overflows fp32 unless the running maximum is subtracted, and
    # the maximum keeps growing from tile to tile, so a missing rescale shows.
    return {**inputs, "q": (inputs["q"].float() * 30).to(inputs["q"].dtype)}


probes = {"sharp": _sharp}


def flops(q, k, v, causal=False):
    # The FlashAttention-2 paper's convention: two matmuls of 2·N²·d each per head; half of that when causal.
    b, h, n, d = q.shape
    return 4 * b * h * n * n * d // (2 if causal else 1)
