"""Row softmax over the last dimension: out = softmax(x, dim=-1)."""
from __future__ import annotations

import torch

LIBRARY = "torch.softmax"  # what the report calls the library op


def make_inputs(shape, dtype, generator, device):
    # Logits with a spread of a few units, like a real classifier's; fresh for every case.
    x = torch.randn(shape, generator=generator, device=device, dtype=torch.float32) * 3.0
    return {"x": x.to(dtype)}


def make_outputs(inputs):
    x = inputs["x"]
    return {"out": torch.empty_like(x)}


def reference(x):
    return (torch.softmax(x.double(), dim=-1),)


def library(x, out):
    torch.softmax(x, dim=-1, out=out)


def _large_logits(inputs, generator):
    # exp(1000) overflows fp32 (and everything else): only a max-subtracting softmax survives.
    return {"x": inputs["x"] + 1000}


def _neg_inf(inputs, generator):
    # Masked entries (-inf) must give exactly 0; every row keeps its first element finite.
    x = inputs["x"].clone()
    mask = torch.rand(x.shape, generator=generator, device=x.device) < 0.25
    mask[..., 0] = False
    return {"x": x.masked_fill(mask, float("-inf"))}


def _very_negative(inputs, generator):
    # Rows of log-probabilities: every entry far below 0 (about -1000). exp of any of them underflows to 0, so
    # a running max that starts at 0 (not -inf) gives a sum of 0 and NaN; only the row's own max is safe.
    return {"x": inputs["x"] - 1000}


def _one_finite(inputs, generator):
    # A row masked down to one entry (-inf everywhere else), at a random column: the output is exactly 1 there and
    # 0 elsewhere, and no -inf - -inf may be formed on the way.
    x = torch.full_like(inputs["x"], float("-inf"))
    cols = torch.randint(0, x.shape[-1], x.shape[:-1] + (1,), generator=generator, device=x.device)
    return {"x": x.scatter(-1, cols, inputs["x"].gather(-1, cols))}


def error_blocks(name, shape, **params):
    # Error maps (grader/check/error_map.py): a row is one softmax, and 32 columns are what a warp covers in one step
    # of its stride; rows and columns are a score matrix's i and j, so a triangle (a causal mask) means something.
    return {"block": [1, 32], "rows": "row", "cols": "column", "diagonal": True}


def row_properties(x, **params):
    # What a probe gives some rows (or all of a case's rows): a map whose wrong rows are exactly these names the
    # property. The most particular first: a row with one finite entry also holds -inf.
    finite = torch.isfinite(x)
    top = torch.where(finite, x.float(), float("-inf")).amax(dim=-1)
    return {"with one finite entry": finite.sum(dim=-1) == 1, "whose max is very negative (below -100)": top < -100,
            "whose max is far above 0 (over 100)": top > 100, "holding -inf entries": torch.isneginf(x).any(dim=-1)}


probes = {"large_logits": _large_logits, "neg_inf": _neg_inf, "very_negative": _very_negative,
          "one_finite": _one_finite}


def bytes_moved(x):
    # Read x once, write out once: the least any softmax can move, and what a copy of x moves.
    return 2 * x.numel() * x.element_size()
