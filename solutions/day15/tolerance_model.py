"""The rounding model behind day 15's tolerances (course.yaml, exercise attention_bwd_naive): a correct backward
kernel simulated on the CPU, compared with the task's fp64 reference on the course's shapes, probes and seeds.

A correct kernel, as simulated here, sees the inputs as stored (q, k, v, o, dout in the dtype, lse in fp32),
computes everything in fp32 and rounds dq, dk, dv once to the dtype:

    D  = rowsum(dout ∘ o)                        d terms
    P  = exp(scale · q kᵀ - lse), 0 if masked    d terms, then exp
    dV = Pᵀ dout                                 N terms
    dS = P ∘ (dout vᵀ - D)                       d terms, then a difference
    dQ = scale · dS k,  dK = scale · dSᵀ q       N terms

Two orders of the fp32 sums are simulated: one running sum with an FMA per term (the reference kernels' order;
the FMA is emulated exactly, the product in fp64 and one rounding of the sum to fp32), and torch's fp32 matmul
and sum (blocked, pairwise): a kernel may sum in any order. Where the errors come from, largest first:
  - the outputs' own rounding in fp16/bf16 (2^-11, 2^-8 relative);
  - o's rounding to the dtype, through D: dS_ij = P_ij (dP_ij - D_i) takes the error of D_i into every key j.
    dq_i = scale Σ_j dS_ij k_j sums N such terms whose exact values cancel (Σ_j dS_ij = 0), so its error is
    relatively larger than dk's or dv's: dq gets the loosest bounds;
  - lse in fp32: p = exp(s - lse) carries lse's absolute rounding (up to 2^-24 |lse|) as a relative error, up to
    about 1e-5 in the sharp probe (|lse| near 150); it dominates fp32;
  - the fp32 sums themselves (about sqrt(N) · 2^-24 relative).
For each dtype and output, the script prints the worst relative L2 error and the smallest atol that covers every
element given rtol (fixed per dtype at about 4 units of the output's rounding, as in the forward's tolerances;
fp32's rtol is that of the forward). course.yaml's bounds are about twice these.

--tensor-cores models a FlashAttention-2 style mma.sync kernel instead (torch's sum order only): P and dS are made
in fp32 as above but rounded to the input dtype before they enter their products (dV = Pᵀ dout; dQ, dK from dS),
whose sums stay in fp32; for fp32 inputs that rounding is a no-op.

    python3 solutions/day15/tolerance_model.py [--seeds 8] [--dtypes fp32,fp16,bf16] [--tensor-cores] [--markdown OUT]

--markdown also writes what it prints as a page for the lesson (days/day15/tolerance_model.md and, with
--tensor-cores, days/day20/tolerance_model.md): a student repository has this script only once day 15's solution
is published, so the lessons show its output.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tasks import attention_bwd as task  # noqa: E402

SHAPES = [(1, 1, 1, 64), (1, 1, 1, 128), (1, 2, 37, 64), (2, 3, 129, 64), (1, 2, 200, 128), (1, 1, 513, 64),
          (2, 1, 1000, 128), (1, 2, 65, 64), (1, 1, 97, 128)]
PROBE_SHAPES = [(1, 2, 300, 64), (1, 1, 257, 128)]
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
RTOL = {"fp32": 1.0e-4, "fp16": 2.0e-3, "bf16": 1.6e-2}
OUTPUTS = ("dq", "dk", "dv")
MODELS = {False: "both sum orders", True: "tensor cores (P, dS in the dtype), torch's sum order"}  # by --tensor-cores


def _fma(acc, a, b):
    """fp32 acc + a·b with one rounding (the product is exact in fp64)."""
    return (acc.double() + a.double() * b.double()).float()


def _rows_dot(a, b, sequential):
    """[.., N, d] x [.., M, d] -> [.., N, M]: dot products over d in fp32."""
    if not sequential:
        return a @ b.transpose(-1, -2)
    acc = torch.zeros(*a.shape[:-1], b.shape[-2], dtype=torch.float32)
    for c in range(a.shape[-1]):
        acc = _fma(acc, a[..., :, c, None], b[..., None, :, c])
    return acc


def _mat_x(m, x, sequential, transpose):
    """m [.., N, N] (or mᵀ) times x [.., N, d] in fp32."""
    mm = m.transpose(-1, -2) if transpose else m
    if not sequential:
        return mm @ x
    acc = torch.zeros(*mm.shape[:-1], x.shape[-1], dtype=torch.float32)
    for j in range(mm.shape[-1]):
        acc = _fma(acc, mm[..., :, j, None], x[..., None, j, :])
    return acc


def simulate(inputs, causal, sequential, tensor_cores=False):
    """A correct kernel's dq, dk, dv (in the inputs' dtype) for one case. tensor_cores: P and dS are rounded to the
    dtype before the products that use them (the mma operands), as a tensor-core kernel does; torch's order only."""
    dtype = inputs["q"].dtype
    q, k, v, o, dout = (inputs[n].float() for n in ("q", "k", "v", "o", "dout"))
    lse = inputs["lse"]
    n, d = q.shape[-2], q.shape[-1]
    scale = torch.tensor(1.0 / math.sqrt(d), dtype=torch.float32)
    if sequential:
        delta = torch.zeros(q.shape[:-1], dtype=torch.float32)
        for c in range(d):
            delta = _fma(delta, dout[..., c], o[..., c])
    else:
        delta = (dout * o).sum(-1)
    p = torch.exp(_rows_dot(q, k, sequential) * scale - lse[..., None])
    if causal:
        p = p.masked_fill(torch.ones((n, n), dtype=torch.bool).triu(1), 0.0)
    assert not (tensor_cores and sequential), "--tensor-cores models torch's sum order only"
    p_op = p.to(dtype).float() if tensor_cores else p
    dv = _mat_x(p_op, dout, sequential, transpose=True)
    ds = p * (_rows_dot(dout, v, sequential) - delta[..., None])
    if tensor_cores:
        ds = ds.to(dtype).float()
    dq = _mat_x(ds, k, sequential, transpose=False) * scale
    dk = _mat_x(ds, q, sequential, transpose=True) * scale
    return {"dq": dq.to(dtype), "dk": dk.to(dtype), "dv": dv.to(dtype)}


def cases(seeds):
    for shape in SHAPES:
        for seed in range(seeds):
            yield shape, None, seed
    for shape in PROBE_SHAPES:
        for probe in task.probes:
            for seed in range(seeds):
                yield shape, probe, seed


def errors(got, ref, rtol):
    """(relative L2 error, the atol that covers every element given rtol, in units of the reference's RMS)."""
    r = ref.double()
    err = (got.double() - r).abs()
    norm = float(r.norm())
    if norm == 0:  # N = 1: dq = dk = 0 exactly; task.check judges those by the absolute atol alone
        return 0.0, 0.0
    rms = norm / math.sqrt(r.numel())
    return float(err.norm()) / norm, float((err - rtol * r.abs()).clamp_min(0).max()) / rms


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--dtypes", default="fp32,fp16,bf16")
    ap.add_argument("--tensor-cores", action="store_true",
                    help="model a tensor-core kernel: P and dS rounded to the dtype before their products")
    ap.add_argument("--markdown", type=Path, metavar="OUT", help="also write the results as a markdown page")
    args = ap.parse_args()
    orders = (False,) if args.tensor_cores else (True, False)
    model = MODELS[args.tensor_cores]
    found = {}
    for name in args.dtypes.split(","):
        worst: dict = {}  # (output, plain | probe) -> [rel_l2, where, atol, where]
        for shape, probe, seed in cases(args.seeds):
            for causal in (False, True):
                gen = torch.Generator().manual_seed(1000 * seed + 7)
                inputs = task.make_inputs(shape, DTYPES[name], gen, "cpu", causal=causal)
                if probe:
                    inputs = task.probes[probe](inputs, gen)
                ref = dict(zip(OUTPUTS, task.reference(**inputs, causal=causal)))
                label = f"{'x'.join(map(str, shape))}{' causal' if causal else ''} seed {seed}"
                for sequential in orders:
                    got = simulate(inputs, causal, sequential, args.tensor_cores)
                    for out in OUTPUTS:
                        l2, atol = errors(got[out], ref[out], RTOL[name])
                        w = worst.setdefault((out, probe or "plain"), [0.0, "-", 0.0, "-"])
                        if l2 > w[0]:
                            w[0], w[1] = l2, label
                        if atol > w[2]:
                            w[2], w[3] = atol, label
        found[name] = worst
        print(f"{name}: rtol {RTOL[name]:g}, {args.seeds} seeds, {model}; atol in units of the reference's RMS")
        for (out, kind), w in worst.items():
            print(f"  {out} {kind:12s} rel_l2 {w[0]:.3g} ({w[1]})   atol {w[2]:.3g} ({w[3]})")
        for out in OUTPUTS:
            ws = [w for (o, _), w in worst.items() if o == out]
            print(f"  {out} worst: rel_l2 {max(w[0] for w in ws):.3g}, atol {max(w[2] for w in ws):.3g}")
    if args.markdown:
        args.markdown.write_text(markdown(found, args), encoding="utf-8")


def markdown(found: dict, args) -> str:
    """The printed results as a page: one table per dtype, each output's worst case named."""
    model = MODELS[args.tensor_cores]
    flags = f" --seeds {args.seeds}" + (" --tensor-cores" if args.tensor_cores else "")
    lines = ["# The tolerance model's results" + (": a tensor-core kernel" if args.tensor_cores else ""), "",
             f"Written by `python3 solutions/day15/tolerance_model.py{flags} --markdown ...` (the script is published "
             "with day 15's solution; its docstring is the model). A correct kernel simulated on the CPU "
             f"({model}) against the task's fp64 reference on the course's shapes, probes and seeds: for each dtype "
             "and output, the worst relative L2 error and the smallest atol that covers every element given rtol "
             "(atol in units of the reference's RMS). "
             + ("Day 20's lesson (Concept 5) says how its tolerances follow from these." if args.tensor_cores
                else "course.yaml's tolerances are about twice the worst."), ""]
    for name, worst in found.items():
        lines += [f"## {name} (rtol {RTOL[name]:g})", "",
                  "| output | inputs | rel_l2 | its case | atol | its case |", "|---|---|---:|---|---:|---|"]
        lines += [f"| {out} | {kind} | {w[0]:.3g} | {w[1]} | {w[2]:.3g} | {w[3]} |"
                  for (out, kind), w in worst.items()]
        lines += [f"| **{out}** | **worst** | **{max(w[0] for (o, _), w in worst.items() if o == out):.3g}** | | "
                  f"**{max(w[2] for (o, _), w in worst.items() if o == out):.3g}** | |" for out in OUTPUTS]
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
