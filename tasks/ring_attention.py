"""Ring attention on one GPU (day 19): the attention forward (o and the row logsumexp, as tasks/attention.py)
computed by `ranks` groups of thread blocks that pass key/value shards around a ring through global memory.

The op is ring_attention(q, k, v, o, lse, causal, ranks, jitter): a case's params give `causal` and `ranks`;
`jitter` is 0 in a plain call. The `stress` check is what catches a protocol that only works on a quiet GPU: it
runs the ring again and again on fresh inputs with a nonzero jitter seed, which makes the kernel's given
scaffolding sleep pseudo-randomly at the protocol's points and reorders which blocks play which rank, and it
compares every run with the fp64 reference. One wrong run fails the exercise, naming the run and its seed.
"""
from __future__ import annotations

import dataclasses
import subprocess

from tasks import attention as _attention

LIBRARY = _attention.LIBRARY

# Stress runs per correctness case: more on small cases, where a run costs a millisecond and a race between two
# blocks has the fewest other blocks around to hide it; at least a few everywhere.
STRESS_ELEMENTS = 1 << 22  # q elements summed over a case's stress runs
STRESS_RUNS = (4, 32)      # fewest, most


def make_inputs(shape, dtype, generator, device, causal=False, ranks=1, jitter=0):
    return _attention.make_inputs(shape, dtype, generator, device, causal)


error_blocks = _attention.error_blocks  # error maps fold its outputs as attention's (grader/check/error_map.py)


def make_outputs(inputs, causal=False, ranks=1, jitter=0):
    return _attention.make_outputs(inputs, causal)


def reference(q, k, v, causal=False, ranks=1, jitter=0):
    return _attention.reference(q, k, v, causal)


def library(q, k, v, o, lse, causal=False, ranks=1, jitter=0):
    _attention.library(q, k, v, o, lse, causal)


def flops(q, k, v, causal=False, ranks=1, jitter=0):
    return _attention.flops(q, k, v, causal)


probes = _attention.probes


def call(fn, case, exercise):
    """The default call, with jitter = 0 unless the case sets it (only the stress check does)."""
    from grader import protocol

    if "jitter" not in case.params:
        case = dataclasses.replace(case, params={**case.params, "jitter": 0})
    return protocol.call(fn, case, exercise)


def stress_runs(shape) -> int:
    """0 where at most one 64-row shard holds keys (N <= 64): nothing passes around the ring but empty shards."""
    b, h, n, d = shape
    if n <= 64:
        return 0
    fewest, most = STRESS_RUNS
    return max(fewest, min(most, STRESS_ELEMENTS // max(1, b * h * n * d)))


def _stress(ctx):
    """The ring on fresh inputs, each run with its own jitter seed, against the fp64 reference."""
    import torch

    from grader import protocol
    from grader.check.compare import poison
    from grader.protocol import Result
    from grader.verdicts import Category

    case, ex = ctx.case, ctx.exercise
    device = next(iter(case.inputs.values())).device
    runs = stress_runs(case.shape)
    # The protocol (counters, fences, slots) is the same code for every element type: its races show in the
    # first dtype's runs as well as in any, and every dtype would triple the check (as with compute-sanitizer).
    if runs == 0 or case.dtype != ex.dtypes[0]:
        return None
    base = 1_000_003 * (1 + sum(case.shape)) + 7919 * int(case.params.get("ranks", 1))
    for run in range(1, runs + 1):
        fresh = ctx.task.materialize(torch, shape=case.shape, dtype=case.dtype, params=case.params, seed=base + run,
                                     device=str(device))
        jittered = dataclasses.replace(fresh, params={**fresh.params, "jitter": run})
        for out in jittered.outputs.values():
            poison(out)
        got = protocol.call(ctx.fn, jittered, ex)()
        torch.cuda.synchronize(device)
        bad = [r for r in ctx.task.check(got, jittered, ex) if not r.ok]
        if bad:
            return Result("stress", False, Category.CHECK_FAILED,
                          f"stress run {run} of {runs} (jitter seed {run}, fresh inputs) gave wrong values in "
                          f"{bad[0].name}: {bad[0].message}. The plain run passed, so this is a race in the ring's "
                          "protocol: data read before its producer published it, or a slot overwritten before its "
                          "consumer released it", {"stress_runs": run, "stress_failed_run": run})
    return Result("stress", True, Category.PASS, f"{runs} stress runs with jitter, all correct",
                  {"stress_runs": runs})


# The Flags each exercise's kernel is instantiated with (the names are in the stub, outside the holes).
FLAGS = {"ring_attention": "FenceFlags", "ring_attention_acqrel": "AcqRelFlags"}


def _ordering(ctx):
    """Every arrival released and every wait acquired at device scope, in the PTX of the exercise's ring_kernel
    instances (tasks/ring_ordering.py): the ordering bugs the hardware does not show in a test."""
    from grader.protocol import CourseConfigError, Result
    from grader.verdicts import Category
    from grader.paths import Paths
    from tasks.ring_ordering import analyze, compile_ptx

    ex = ctx.exercise
    if ctx.src_dir is None or ctx.root is None or tuple(ctx.capability) == (0, 0):
        return None
    if ex.op not in FLAGS:
        raise CourseConfigError(f"the ordering check knows the ops {', '.join(FLAGS)}, not {ex.op!r}")
    sources = tuple(ctx.src_dir / s for s in ex.sources if s.endswith(".cu"))
    try:
        ptx = compile_ptx(sources, tuple(ctx.root / d for d in ex.include_dirs), tuple(ctx.capability),
                          Paths(ctx.root).cache())
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        return Result("ordering", False, Category.CHECK_FAILED, f"could not read the kernel's PTX: {e}")
    if ptx is None:
        return Result("ordering", False, Category.CHECK_FAILED, "nvcc is needed to read the kernel's PTX and was not "
                      "found: put the CUDA toolkit's bin/ on PATH")
    flags = FLAGS[ex.op]
    checked, findings = analyze(ptx, flags)
    if checked == 0:
        return Result("ordering", False, Category.CHECK_FAILED, f"no ring_kernel instance with {flags} in the PTX")
    if findings:
        f = findings[0]
        return Result("ordering", False, Category.CHECK_FAILED,
                      f"memory ordering, read in the PTX of ring_kernel with {flags}: {f.why} (`{f.text}`; "
                      f"{len(findings)} such place(s) in {checked} instance(s))")
    return Result("ordering", True, Category.PASS, f"PTX of {checked} ring_kernel instance(s) with {flags}: every "
                  "arrival released and every wait acquired at device scope")


CHECKS = {"stress": _stress, "ordering": _ordering}
