"""Correctness of one output against its fp64 reference: poison detection, NaN/inf agreement, elementwise
tolerance and a relative L2 bound, with the numbers a student needs to find the bug."""
from __future__ import annotations

from dataclasses import dataclass, field, fields

# Signalling-NaN bit patterns with a payload no arithmetic produces (arithmetic on NaN gives a quiet NaN), so
# "this element still holds the poison" means "nothing wrote it".
POISON_BITS = {"float32": 0x7FA5A5A5, "float16": 0x7DA5, "bfloat16": 0x7FA5}


def _int_view(t):
    import torch

    # any dtype to the signed integer of its width: inputs such as an int64 RNG state are compared bit for bit too
    return t.view({8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.int8}[t.element_size()])


def poison(t) -> None:
    _int_view(t).fill_(POISON_BITS[str(t.dtype).removeprefix("torch.")])


def poisoned_mask(t):
    return _int_view(t) == POISON_BITS[str(t.dtype).removeprefix("torch.")]


def same_bits(a, b) -> bool:
    import torch

    return a.shape == b.shape and a.dtype == b.dtype and bool(torch.equal(_int_view(a), _int_view(b)))


@dataclass
class Comparison:
    ok: bool
    category: str  # pass | not_implemented | unwritten | nonfinite | mismatch
    message: str
    numel: int = 0
    max_abs: float = 0.0
    max_rel: float = 0.0
    rel_l2: float = 0.0
    mismatches: int = 0
    mismatch_frac: float = 0.0
    worst_index: list[int] | None = None
    worst_out: float | None = None
    worst_ref: float | None = None
    # How close to its bound the output came: the larger of max |out - ref| / (atol + rtol·|ref|) and
    # rel_l2 / the rel_l2 bound (1 is the edge; scripts/tolerance_sweep.py wants a correct kernel at 0.5 or less).
    tol_ratio: float = 0.0
    elem_ratio: float = 0.0
    l2_ratio: float = 0.0
    extra: dict = field(default_factory=dict)
    # Where it is wrong (grader/check/error_map.py): built only for a failing output whose task folds it into blocks
    error_map: dict | None = None
    pattern: str | None = None  # the map's pattern, by name (course.yaml's hints may key on it)

    def as_dict(self):
        # Field by field, not dataclasses.asdict: its deep copy was a sixth of a passing case's judging (tests/
        # test_tolerance_model.py judges 21,000 outputs). The values are built for this comparison alone.
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _index(flat_idx: int, shape) -> list[int]:
    idx = []
    for d in reversed(shape):
        idx.append(flat_idx % d)
        flat_idx //= d
    return list(reversed(idx))


def _fmt(idx) -> str:
    return "[" + ", ".join(map(str, idx)) + "]"


def _mapped(c: Comparison, out, ref, atol: float, rtol: float, blocks, unwritten, nonfinite=None) -> Comparison:
    """A failing comparison with its error map and the pattern it shows (named at the end of its message)."""
    if callable(blocks):  # asked of the task only now: a passing output never asks
        blocks = blocks()
    if blocks is None:
        return c
    from grader.check.error_map import build

    c.error_map = build(out, ref, atol=atol, rtol=rtol, blocks=blocks, unwritten=unwritten, nonfinite=nonfinite)
    c.pattern = c.error_map["pattern"]
    if c.pattern:
        c.message += f"; pattern {c.pattern}: {c.error_map['pattern_text']}"
    return c


def compare(out, ref, *, atol: float, rtol: float, rel_l2: float, l2_floor: float = 0.0, blocks=None) -> Comparison:
    """out: the kernel's output (any float dtype, possibly still poisoned); ref: fp64 reference. The relative L2
    error is ||out - ref|| / max(||ref||, l2_floor·sqrt(n)): l2_floor > 0 holds a reference that sits near zero by
    chance to the precision of values of that size (course.yaml's OutputSpec.l2_floor). blocks: how the task folds
    this output into its blocks (error_map.Blocks, or a function giving it or None); a failing output then gets its
    error map."""
    import torch

    n = out.numel()
    unwritten = poisoned_mask(out)
    n_unwritten = int(unwritten.sum())
    if n_unwritten == n:
        return Comparison(False, "not_implemented", "output never written: not implemented yet?", numel=n)
    if n_unwritten:
        first = _index(int(unwritten.flatten().nonzero()[0]), out.shape)
        return _mapped(Comparison(False, "unwritten",
                                  f"{n_unwritten} of {n} output elements ({n_unwritten / n:.2%}) were never written; "
                                  f"first at {_fmt(first)}", numel=n, mismatches=n_unwritten,
                                  mismatch_frac=n_unwritten / n, worst_index=first),
                       out, ref, atol, rtol, blocks, unwritten)

    o = out.double()
    r = ref.double()
    # NaN and inf must agree exactly: where the reference is NaN the output must be NaN, where it is +-inf the
    # output must be the same infinity, and where it is finite the output must be finite.
    both_nan = torch.isnan(o) & torch.isnan(r)
    inf_agree = torch.isinf(r) & (o == r)
    finite_ref = torch.isfinite(r)
    bad_special = ~(both_nan | inf_agree | (finite_ref & torch.isfinite(o)))
    n_special = int(bad_special.sum())
    if n_special:
        first = _index(int(bad_special.flatten().nonzero()[0]), out.shape)
        return _mapped(Comparison(False, "nonfinite",
                                  f"{n_special} elements are NaN/inf where the reference is not (or the reverse); "
                                  f"first at {_fmt(first)}: got {o[tuple(first)].item()}, expected "
                                  f"{r[tuple(first)].item()}", numel=n, mismatches=n_special,
                                  mismatch_frac=n_special / n, worst_index=first, worst_out=o[tuple(first)].item(),
                                  worst_ref=r[tuple(first)].item()),
                       out, ref, atol, rtol, blocks, unwritten, bad_special)

    of, rf = torch.where(finite_ref, o, 0.0), torch.where(finite_ref, r, 0.0)
    diff = (of - rf).abs()
    allowed = atol + rtol * rf.abs()
    ratio = torch.where(diff == 0, 0.0, diff / allowed)  # 0/0 (atol 0, ref and out 0) is no error
    worst_flat = int(ratio.flatten().argmax())
    worst = _index(worst_flat, out.shape)
    bad = int((diff > allowed).sum())
    ref_norm = max(float(torch.linalg.vector_norm(rf)), l2_floor * n ** 0.5)
    err_norm = float(torch.linalg.vector_norm(of - rf))
    l2 = err_norm / ref_norm if ref_norm > 0 else (0.0 if err_norm == 0 else float("inf"))
    max_abs = float(diff.max()) if n else 0.0
    rel = diff / rf.abs().clamp_min(1e-300)
    max_rel = float(torch.where(rf != 0, rel, torch.zeros_like(rel)).max()) if n else 0.0
    wo, wr = float(o.flatten()[worst_flat]), float(r.flatten()[worst_flat])
    elem_ratio = float(ratio.flatten()[worst_flat]) if n else 0.0
    l2_ratio = l2 / rel_l2 if rel_l2 > 0 else (0.0 if l2 == 0 else float("inf"))
    stats = dict(numel=n, max_abs=max_abs, max_rel=max_rel, rel_l2=l2, mismatches=bad, mismatch_frac=bad / n,
                 worst_index=worst, worst_out=wo, worst_ref=wr, tol_ratio=max(elem_ratio, l2_ratio),
                 elem_ratio=elem_ratio, l2_ratio=l2_ratio)
    if bad or l2 > rel_l2:
        why = []
        if bad:
            why.append(f"{bad} of {n} elements ({bad / n:.2%}) outside atol={atol:g} + rtol={rtol:g}*|ref|")
        if l2 > rel_l2:
            why.append(f"relative L2 error {l2:.3g} > {rel_l2:g}")
        return _mapped(Comparison(False, "mismatch", f"wrong values: {'; '.join(why)}; worst at {_fmt(worst)}: "
                                  f"got {wo:.6g}, expected {wr:.6g}", **stats),
                       out, ref, atol, rtol, blocks, unwritten, bad_special)
    return Comparison(True, "pass", f"max abs err {max_abs:.2e}, rel L2 {l2:.2e}", **stats)
