"""Attention with dropout on the probabilities, forward and backward, as FlashAttention-2 fuses it:

    P = softmax(scale · q kᵀ [+ causal mask]),   o = (P ∘ M / (1 − p)) v,   lse = logsumexp of the scores

M is the keep mask of tasks/philox.py: element (b, h, i, j) kept where Philox4x32-10 on the counter
(j // 4, i, b·H + h, offset) under the key `seed` draws below 1 − p, the same bits common/philox.cuh gives a kernel
in any order. Dropout does not touch the normalization: lse is the undropped softmax's, so a backward recomputes P
from it and draws M again from (seed, offset) instead of storing it.

The seed and the offset travel as a tensor `rng` (int64 [2] on the device: seed, offset), as PyTorch passes its
generator's state to its attention kernels, so that a kernel reads them on the device and a CUDA graph can replay
it. They are drawn from the case's generator: a kernel that ignores them, or a mask computed once, fails.

The backward's gradients, with D = rowsum(dout ∘ o) as without dropout (o is the dropped output):
    dv = (P ∘ M / (1 − p))ᵀ dout,   dP = (dout vᵀ) ∘ M / (1 − p),   dS = P ∘ (dP − D),
    dq = scale · dS k,   dk = scale · dSᵀ q.
"""
from __future__ import annotations

import math

import torch

from tasks import attention as _attention
from tasks.philox import keep_mask



def _exposed_mask(inputs, generator):
    # v's row j is 8·e_(j mod d), exact in every dtype: o[i, c] is 8 / (1 − p) times the sum of the kept P[i, j]
    # over the keys j ≡ c (mod d), so one wrong mask bit moves an element by about 8·P[i, j], far outside every
    # bound, where random v would hide it among N terms. (The probe shapes' N is a few times d.)
    v = inputs["v"]
    n, d = v.shape[2], v.shape[3]
    one_hot = torch.zeros((n, d), dtype=torch.float32, device=v.device)
    one_hot[torch.arange(n, device=v.device), torch.arange(n, device=v.device) % d] = 8.0
    return {**inputs, "v": one_hot.to(v.dtype).expand_as(v).contiguous()}


probes = {**_attention.probes, "exposed_mask": _exposed_mask}


def _rng(generator, device) -> torch.Tensor:
    """(seed, offset): a 62-bit seed and the counter's 32-bit offset word."""
    seed = torch.randint(0, 2**62, (1,), generator=generator, device=device, dtype=torch.int64)
    offset = torch.randint(0, 2**31, (1,), generator=generator, device=device, dtype=torch.int64)
    return torch.cat([seed, offset])


def make_inputs(shape, dtype, generator, device, causal=False, p=0.1):
    return {**_attention.make_inputs(shape, dtype, generator, device, causal), "rng": _rng(generator, device)}


error_blocks = _attention.error_blocks  # error maps fold its outputs as attention's (grader/check/error_map.py)


def make_outputs(inputs, causal=False, p=0.1):
    return _attention.make_outputs(inputs, causal)


def keep(rng: torch.Tensor, b: int, h: int, n: int, p: float, device) -> torch.Tensor:
    seed, offset = (int(x) for x in rng.tolist())
    return keep_mask(seed, offset, b, h, n, n, p, device=device)


def _probabilities(q, k, causal):
    """fp64 P and lse, [B, H, N, N] and [B, H, N]."""
    n, d = q.shape[2], q.shape[3]
    s = (q.double() @ k.double().transpose(-1, -2)) / math.sqrt(d)
    if causal:
        s = s.masked_fill(torch.ones((n, n), dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    return torch.exp(s - lse[..., None]), lse


def reference(q, k, v, rng, causal=False, p=0.1):
    """fp64: o = (P ∘ M / (1 − p)) v and the undropped lse."""
    b, h, n, _ = q.shape
    probs, lse = _probabilities(q, k, causal)
    m = keep(rng, b, h, n, p, q.device).double()
    return (probs * m / (1.0 - p)) @ v.double(), lse


def flops(q, k, v, rng, causal=False, p=0.1):
    return _attention.flops(q, k, v, causal)


def backward_reference(q, k, v, rng, dout, causal=False, p=0.1):
    """fp64 autograd through the forward formula with the same mask: (dq, dk, dv)."""
    b, h, n, _ = q.shape
    m = keep(rng, b, h, n, p, q.device).double()
    qd, kd, vd = (t.detach().double().requires_grad_() for t in (q, k, v))
    probs, _ = _probabilities(qd, kd, causal)
    o = (probs * m / (1.0 - p)) @ vd
    return torch.autograd.grad(o, (qd, kd, vd), dout.double())


def backward_by_formula(q, k, v, rng, dout, causal=False, p=0.1):
    """The same gradients by the formulas of the module's docstring, which a fused backward computes tile by tile
    (D from the dropped o; P recomputed; M drawn again)."""
    b, h, n, d = q.shape
    m = keep(rng, b, h, n, p, q.device).double()
    qd, kd, vd, dod = (t.double() for t in (q, k, v, dout))
    probs, _ = _probabilities(qd, kd, causal)
    dropped = probs * m / (1.0 - p)
    o = dropped @ vd
    dv = dropped.transpose(-1, -2) @ dod
    dp = (dod @ vd.transpose(-1, -2)) * m / (1.0 - p)
    big_d = (dod * o).sum(dim=-1, keepdim=True)
    ds = probs * (dp - big_d)
    scale = 1.0 / math.sqrt(d)
    return scale * ds @ kd, scale * ds.transpose(-1, -2) @ qd, dv
