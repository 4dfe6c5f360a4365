"""Attention backward: the gradients dq, dk, dv of o = softmax(scale · q kᵀ [+ causal mask]) v, given dout = dL/do.

The inputs are the forward's (q, k, v, [B, H, N, d] in the case's dtype), its outputs (o in the dtype, lse fp32
[B, H, N]: what a forward kernel saves for the backward) and the incoming gradient dout ([B, H, N, d], the dtype).
The op writes dq, dk, dv ([B, H, N, d], the dtype). scale = 1/sqrt(d); causal hides key j > query i. A case's shape
is [B, H, N, d] and its params say whether it is causal; the op receives `causal` after its outputs.

o and lse are made by an fp64 forward from the stored q, k, v (o then rounded to the dtype, lse to fp32), so they
are what a correct forward kernel would hand over, and the backward's recomputed P = exp(scale · q kᵀ - lse) is a
probability distribution per row. The reference is the exact gradient of the stored q, k, v, dout (fp64 autograd);
o and lse enter a kernel's result only through their rounding, which the exercise's tolerances allow for.
"""
from __future__ import annotations

import math

import torch

from tasks.attention import reference as _forward  # the forward's fp64 o and lse, one batch entry at a time
from tasks.attention import LAYOUTS  # noqa: F401 (q, k, v packed; o and dout in [B, N, H, d] memory)
from tasks.attention import error_blocks  # noqa: F401 (the gradients fold as the forward's o)

# SDPA's math backend (matmul, softmax, matmul: the same materialized algorithm as the naive kernels, in cuBLAS),
# differentiated by autograd. See `library` for what its timing includes.
LIBRARY = "SDPA math (fwd+bwd)"


def _mask(n, device):
    return torch.ones((n, n), dtype=torch.bool, device=device).triu(1)


def _saved(q, k, v, causal):
    """What a forward kernel saves: o rounded to the dtype, lse in fp32."""
    o, lse = _forward(q, k, v, causal)
    return o.to(q.dtype), lse.float()


def make_inputs(shape, dtype, generator, device, causal=False):
    b, h, n, d = shape
    # Unit-variance q, k (scores of unit variance, as in the forward task), v and dout.
    q, k, v, dout = (torch.randn((b, h, n, d), generator=generator, device=device, dtype=torch.float32).to(dtype)
                     for _ in range(4))
    o, lse = _saved(q, k, v, causal)
    return {"q": q, "k": k, "v": v, "o": o, "lse": lse, "dout": dout}


def refill(inputs, generator, causal=False):
    """Before each timed call: a new dout, in place. Every gradient depends on it, so a replayed result is caught,
    and the saved forward (an fp64 attention per call) need not be made again."""
    d = inputs["dout"]
    d.copy_(torch.randn(d.shape, generator=generator, device=d.device, dtype=torch.float32))


def make_outputs(inputs, causal=False):
    q = inputs["q"]
    return {"dq": torch.empty_like(q), "dk": torch.empty_like(q), "dv": torch.empty_like(q)}


def reference(q, k, v, o, lse, dout, causal=False):
    """fp64 autograd through the attention formula, one batch entry at a time (the saved o and lse are not used:
    this is the exact gradient of the stored q, k, v and dout)."""
    n, d = q.shape[2], q.shape[3]
    mask = _mask(n, q.device) if causal else None
    grads = []
    with torch.enable_grad():
        for qb, kb, vb, gb in zip(q, k, v, dout):
            qd, kd, vd = (t.detach().double().requires_grad_() for t in (qb, kb, vb))
            s = (qd @ kd.transpose(-1, -2)) / math.sqrt(d)
            if mask is not None:
                s = s.masked_fill(mask, float("-inf"))
            out = torch.softmax(s, dim=-1) @ vd
            grads.append(torch.autograd.grad(out, (qd, kd, vd), gb.double()))
    return tuple(torch.stack([g[i] for g in grads]) for i in range(3))


class _ScaledTolerances:
    """The exercise as the protocol's check sees it, with each output's atol multiplied by the RMS of that output's
    reference (an all-zero reference keeps the absolute atol)."""

    def __init__(self, exercise, reference: dict, scaled=None):
        self._exercise, self._rms = exercise, {k: float(r.double().pow(2).mean().sqrt()) if r.numel() else 0.0
                                               for k, r in reference.items() if scaled is None or k in scaled}

    def __getattr__(self, name):
        return getattr(self._exercise, name)

    def tolerance(self, output, dtype):
        tol = self._exercise.tolerance(output, dtype)
        rms = self._rms.get(output, 0.0)
        return tol.model_copy(update={"atol": tol.atol * rms}) if rms > 0 else tol


def check(got, case, exercise, scaled=None):
    """The protocol's check, with two changes for gradients (`scaled`: the outputs that are gradients, if not all).

    atol is in units of the reference's RMS: |out - ref| <= atol · rms(ref) + rtol · |ref| per element. A
    gradient's size depends on its inputs' (the large_values probe multiplies dq and dk by 256, the sharp probe dk by
    about 30), and so does a correct kernel's error on its small elements; an absolute atol would have to be set for
    the largest case and would then wave through errors in the others. The grader's message shows the atol used.

    An output whose fp64 reference is exactly zero everywhere has no relative L2 error (any rounding residue is
    infinitely far in relative terms): there the elementwise bound with the absolute atol alone decides. This
    happens for dq and dk when N = 1: softmax over one key is the constant 1, so its gradient with respect to the
    scores is 0, and a kernel's dS = P (dP - D) is a difference of two fp32 dot products that agree only up to
    their rounding."""
    from grader.protocol import Result
    from grader.protocol import check as default_check
    from grader.verdicts import Category

    results = default_check(got, case, _ScaledTolerances(exercise, case.reference, scaled))
    for i, r in enumerate(results):
        ref = case.reference.get(r.name)
        if (not r.ok and r.category == Category.MISMATCH and r.stats.get("mismatches", 1) == 0 and ref is not None
                and not bool(ref.any())):
            # rel_l2 is undefined here (inf), so not reported; the elementwise bound alone is the ratio to the bound
            stats = {k: v for k, v in r.stats.items() if k not in ("rel_l2", "l2_ratio")}
            stats["tol_ratio"] = stats.get("elem_ratio", 0.0)
            results[i] = Result(r.name, True, Category.PASS, f"max abs err {r.stats['max_abs']:.2e} (the reference "
                                "is all zeros: judged by atol alone)", stats)
    return results


def library(q, k, v, o, lse, dout, dq, dk, dv, causal=False):
    # SDPA has no public backward that takes o and lse: its autograd graph is the way to call its backward, so the
    # forward runs again inside every timed call. That is a third of the library's products (2 of its 6 N²·d
    # matmuls: autograd keeps P, so its backward has 4, where the kernels' has 5 with S recomputed) and one of its
    # two softmax passes; the report's "vs library" ratio flatters the kernel by that much. The FLOP count is the
    # backward's alone, for both. The math backend on every dtype: one algorithm for all three, and the one the
    # naive kernels use (S and P materialized); with torch's default settings it computes fp16/bf16 in fp32
    # (torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp is off). The gradients stay in autograd's tensors (a
    # copy into dq, dk, dv is work the kernels do not do); the grader discards the library's outputs.
    from torch.nn.attention import SDPBackend, sdpa_kernel

    qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))
    with torch.enable_grad(), sdpa_kernel(SDPBackend.MATH):
        out = torch.nn.functional.scaled_dot_product_attention(qg, kg, vg, is_causal=causal)
    torch.autograd.grad(out, (qg, kg, vg), dout)


# -- probes -----------------------------------------------------------------------------------------------------
# A probe is not told the case's params; the stored lse says whether the forward was causal (the two candidate
# forwards' lse differ by O(1) in every row but the last, unless N = 1, where they coincide and either will do).
def _was_causal(inputs) -> bool:
    lse = inputs["lse"].double()
    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    return bool((_forward(q, k, v, True)[1] - lse).abs().max() < (_forward(q, k, v, False)[1] - lse).abs().max())


def _sharp(inputs, generator):
    # q scaled by 30 (the forward task's probe): scores of standard deviation 30, up to about 150, so P must come
    # from exp(S - lse): exp(S) alone overflows fp32 above 88.7. The rows are nearly one-hot, and the fp32 lse now
    # carries an absolute rounding of up to 2^-24 · 150 ≈ 1e-5 into every p. o and lse are recomputed for the new q.
    q = (inputs["q"].float() * 30).to(inputs["q"].dtype)
    o, lse = _saved(q, inputs["k"], inputs["v"], _was_causal(inputs))
    return {**inputs, "q": q, "o": o, "lse": lse}


def _large_values(inputs, generator):
    # v and dout scaled by 2^4 (exactly, in every dtype; o scales with v, lse does not change): dv grows by 16, dq
    # and dk by 256, and dP = dout vᵀ reaches about 2^8 · 4 · sqrt(d) ≈ 1e4. The gradients are then far above every
    # atol, so rtol and the relative L2 bound alone judge them: a kernel whose error does not scale with the values
    # (an accumulator or intermediate kept in the 16-bit dtype, a constant where D should be) shows.
    f = 16.0
    return {**inputs, "v": inputs["v"] * f, "o": inputs["o"] * f, "dout": inputs["dout"] * f}


# N = 1 is a correctness shape (dq = dk = 0 exactly: see `check`). Fully masked rows, the forward's other hazard,
# cannot occur: with a square causal mask every query i sees key j = i.
probes = {"sharp": _sharp, "large_values": _large_values}


def flops(q, k, v, o, lse, dout, causal=False):
    # The FlashAttention-2 paper's convention: the backward is 2.5x the forward's 4·B·H·N²·d (five N²·d products:
    # S again, dV, dP, dQ, dK; the forward has two), half of that when causal. Elementwise work is not counted.
    b, h, n, d = q.shape
    return 10 * b * h * n * n * d // (2 if causal else 1)
