"""Attention as a registered torch op with an autograd formula (day 18): course::flash_attention(q, k, v, causal)
-> (o, lse), differentiated by torch.autograd.

A case calls the op on q, k, v that require grad and backpropagates the seeded dout through o, so one call checks
the forward (o, lse) and the backward the op registered (dq, dk, dv) against fp64 references. The exercise's checks
then ask what a framework asks of an op: torch.library.opcheck (schema, fake tensors, autograd registration, AOT
dispatch), torch.compile(fullgraph=True) of a module that uses it, forward and backward, and a short training run
of a tiny language model whose losses must follow SDPA's (tasks/tiny_lm.py).
"""
from __future__ import annotations

import torch

from tasks import attention as _fwd
from tasks import attention_bwd as _bwd

GRADIENTS = ("dq", "dk", "dv")


def make_inputs(shape, dtype, generator, device, causal=False):
    b, h, n, d = shape
    q, k, v, dout = (torch.randn((b, h, n, d), generator=generator, device=device, dtype=torch.float32).to(dtype)
                     for _ in range(4))
    return {"q": q, "k": k, "v": v, "dout": dout}


error_blocks = _fwd.error_blocks  # error maps fold its outputs as attention's (grader/check/error_map.py)


def make_outputs(inputs, causal=False):
    q = inputs["q"]
    return {**_fwd.make_outputs(inputs), **{g: torch.empty_like(q) for g in GRADIENTS}}


def reference(q, k, v, dout, causal=False):
    o, lse = _fwd.reference(q, k, v, causal)
    dq, dk, dv = _bwd.reference(q, k, v, None, None, dout, causal)
    return {"o": o, "lse": lse, "dq": dq, "dk": dk, "dv": dv}


def _forward_backward(fn, q, k, v, dout, causal):
    """o and lse from the op, and the gradients autograd gets through its registered backward."""
    from grader.protocol import OpContractError

    no_formula = ("no autograd formula is registered for the op (torch.library.register_autograd in your .py "
                  "file)")
    qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))
    with torch.enable_grad():
        ret = fn(qg, kg, vg, causal)
        if not isinstance(ret, (tuple, list)) or len(ret) != 2:
            raise OpContractError(f"the op returned {type(ret).__name__}; it must return (o, lse)")
        o, lse = ret
        if not o.requires_grad:
            raise OpContractError(f"o does not require grad although q, k, v do: {no_formula}")
        try:
            dq, dk, dv = torch.autograd.grad(o, (qg, kg, vg), dout)
        except RuntimeError as e:
            # torch's fallback for an op without a formula lets the forward run and fails here, in the backward
            # (not implemented), or its output's graph does not reach q, k, v (not used in the graph).
            if any(m in str(e) for m in ("not implemented", "not have been used in the graph",
                                         "autograd kernel was not registered")):
                raise OpContractError(f"{no_formula}: {_first_line(e)}") from None
            raise
    return {"o": o.detach(), "lse": lse.detach(), "dq": dq, "dk": dk, "dv": dv}


def call(fn, case, exercise):
    i, causal = case.inputs, bool(case.params.get("causal", False))
    return lambda: _forward_backward(fn, i["q"], i["k"], i["v"], i["dout"], causal)


def check(got, case, exercise):
    """o and lse with the forward's absolute tolerances; the gradients with atol in units of their reference's RMS,
    as the backward days do (tasks/attention_bwd.py's check)."""
    return _bwd.check(got, case, exercise, scaled=GRADIENTS)


# -- the exercise's checks -------------------------------------------------------------------------------------
_done: set = set()


def _first(ctx, name) -> bool:
    """Whether this is the first case of its dtype and variant to run check `name` in this process (the slow
    checks need one case each, not every shape)."""
    key = (name, id(ctx.fn), ctx.case.dtype, tuple(sorted(ctx.case.params.items())))
    if key in _done:
        return False
    _done.add(key)
    return True


def _opcheck(ctx):
    """torch.library.opcheck with inputs that require grad (its autograd test needs them): the schema against
    what the op does (no mutation or aliasing it does not declare), the fake implementation against the real one,
    the autograd registration, and AOT dispatch (how torch.compile calls it). Small cases only: it calls the op
    several times in each mode."""
    from grader.protocol import Result
    from grader.verdicts import Category

    if ctx.case.shape[2] > 256 or not _first(ctx, "opcheck"):
        return None
    i = ctx.case.inputs
    args = tuple(t.detach().clone().requires_grad_() for t in (i["q"], i["k"], i["v"])) + \
        (bool(ctx.case.params.get("causal", False)),)
    try:
        torch.library.opcheck(ctx.fn, args)
    except Exception as e:  # OpCheckError names the test that failed, e.g. test_faketensor
        return Result("opcheck", False, Category.OPCHECK, f"torch.library.opcheck: {_first_line(e)}")
    return Result("opcheck", True, Category.PASS, "torch.library.opcheck passed (schema, fake tensors, autograd "
                  "registration, AOT dispatch)")


class _AttentionLayer(torch.nn.Module):
    def __init__(self, fn, causal):
        super().__init__()
        self.fn, self.causal = fn, causal

    def forward(self, q, k, v):
        return self.fn(q, k, v, self.causal)


def _compile(ctx):
    """The op inside a module compiled with torch.compile(fullgraph=True): no graph break in the forward, and the
    compiled backward (AOTAutograd's trace of the registered formula) gives the right gradients."""
    from grader.protocol import Result
    from grader.verdicts import Category

    if not _first(ctx, "compile"):
        return None
    torch._dynamo.reset()
    layer = torch.compile(_AttentionLayer(ctx.fn, bool(ctx.case.params.get("causal", False))), fullgraph=True)
    try:
        got = _forward_backward(lambda q, k, v, causal: layer(q, k, v),
                                *(ctx.case.inputs[n] for n in ("q", "k", "v", "dout")), False)
    except Exception as e:
        return Result("torch_compile", False, Category.TORCH_COMPILE,
                      f"torch.compile(fullgraph=True) of a module calling the op: {_first_line(e)}")
    finally:
        torch._dynamo.reset()
    bad = [r for r in check(got, ctx.case, ctx.exercise) if not r.ok]
    if bad:
        return Result("torch_compile", False, Category.TORCH_COMPILE,
                      f"under torch.compile, {bad[0].name}: {bad[0].message}")
    return Result("torch_compile", True, Category.PASS, "torch.compile(fullgraph=True): no graph break, forward "
                  "and backward correct")


# A correct op changes the losses only through rounding. SDPA's math backend against its default one measures what
# rounding alone does to this model in the same run; the op may differ from SDPA by a few times that. The floor
# keeps the bound from collapsing when the two SDPA backends happen to agree closely.
TRAINING_MARGIN = 4.0
TRAINING_FLOOR = 1e-3  # a quarter of a thousandth of the loss at chance (ln 64 = 4.16)


def _training(ctx):
    """A tiny causal language model trained for a few steps with the op and with SDPA, from the same weights on the
    same batches: the per-step losses must agree; the report gives both step times. Causal cases only (a language
    model is causal), once per dtype."""
    from grader.protocol import Result
    from grader.verdicts import Category
    from tasks import tiny_lm

    if not ctx.case.params.get("causal", False) or not _first(ctx, "training"):
        return None
    cfg = tiny_lm.Config()
    dtype = getattr(torch, {"fp16": "float16", "bf16": "bfloat16"}.get(ctx.case.dtype, "float32"))
    fn = ctx.fn
    r = tiny_lm.compare(lambda q, k, v: fn(q, k, v, True)[0], dtype, seed=1234, cfg=cfg)
    bound = max(TRAINING_MARGIN * r["rounding_diff"], TRAINING_FLOOR)
    stats = {k: r[k] for k in ("max_diff", "rounding_diff", "step_ms", "sdpa_step_ms", "first_loss", "last_loss")}
    stats["bound"] = bound
    speed = (f"step {r['step_ms']:.2f} ms vs SDPA {r['sdpa_step_ms']:.2f} ms "
             f"({r['sdpa_step_ms'] / r['step_ms']:.2f}x)")
    if not all(map(_finite, r["losses"])) or r["max_diff"] > bound:
        worst = max(range(len(r["losses"])), key=lambda s: abs(r["losses"][s] - r["sdpa_losses"][s]))
        return Result("training", False, Category.CHECK_FAILED,
                      f"tiny LM ({cfg.describe()}): loss at step {worst + 1} is {r['losses'][worst]:.4f}, SDPA's "
                      f"{r['sdpa_losses'][worst]:.4f}: |diff| {r['max_diff']:.2e} > {bound:.2e} (rounding alone, "
                      f"SDPA math vs SDPA: {r['rounding_diff']:.2e})", stats)
    return Result("training", True, Category.PASS,
                  f"tiny LM ({cfg.describe()}): losses {r['first_loss']:.3f} -> {r['last_loss']:.3f}, max |diff| vs "
                  f"SDPA {r['max_diff']:.1e} (bound {bound:.1e}); {speed}", stats)


def _finite(x: float) -> bool:
    return x == x and abs(x) != float("inf")


def _first_line(e: BaseException) -> str:
    lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
    return lines[0] if lines else type(e).__name__


CHECKS = {"opcheck": _opcheck, "torch_compile": _compile, "training": _training}
