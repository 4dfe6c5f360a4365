"""Attention-with-dropout backward: dq, dk, dv of o = (P ∘ M / (1 − p)) v (tasks/attention_dropout.py), given the
forward's saved o (the dropped output, rounded to the dtype), its lse (undropped, fp32), the incoming gradient dout
and the same rng = (seed, offset) the forward drew its mask from. A kernel draws M again from rng; nothing of the
mask is handed over.

The reference is fp64 autograd through the forward formula with tasks/philox.py's mask; the check is the attention
backward's (tasks/attention_bwd.py: atol in units of each gradient's RMS).
"""
from __future__ import annotations

import torch

from tasks import attention_bwd as _bwd
from tasks import attention_dropout as _fwd


def make_inputs(shape, dtype, generator, device, causal=False, p=0.1):
    b, h, n, d = shape
    q, k, v, dout = (torch.randn((b, h, n, d), generator=generator, device=device, dtype=torch.float32).to(dtype)
                     for _ in range(4))
    rng = _fwd._rng(generator, device)
    o, lse = _fwd.reference(q, k, v, rng, causal, p)
    return {"q": q, "k": k, "v": v, "o": o.to(dtype), "lse": lse.float(), "dout": dout, "rng": rng}


error_blocks = _bwd.error_blocks  # error maps fold its outputs as attention's (grader/check/error_map.py)


def make_outputs(inputs, causal=False, p=0.1):
    return _bwd.make_outputs(inputs)


def reference(q, k, v, o, lse, dout, rng, causal=False, p=0.1):
    return _fwd.backward_reference(q, k, v, rng, dout, causal, p)


check = _bwd.check


# The attention backward's large_values (v, o and dout x 16: o is linear in v, dropped or not). Its sharp probe
# recomputes o without a mask, so it is not this task's: the forward exercise has the sharp probe.
probes = {"large_values": _bwd.probes["large_values"]}


def flops(q, k, v, o, lse, dout, rng, causal=False, p=0.1):
    return _bwd.flops(q, k, v, o, lse, dout, causal)
