"""Day 19's ring across processes (exercise `ring_dist`): the attention forward (o and the row logsumexp, as
tasks/attention.py) computed by the processes of a group, each holding only its own rows of q, k and v, while the
key/value shards travel around a ring.

The exercise runs in `processes` processes (course.yaml; grader/check/ranks.py starts them, one per GPU). On every
rank the op is called as

    ring_attention(q, k, v, o, lse, causal, placement, comm)

with that rank's rows (`shard_rows`) of the case's q, k, v as new tensors, and o, lse for those rows to write
(poisoned first). `comm` is tasks/strict_p2p.py's StrictP2P over torch.distributed: a receive's buffer holds NaN
until its wait() returns, a send's buffer is checked unchanged at its wait(), and every work must be waited.
Each call's outputs are gathered to every rank, so every rank judges the same bits (the ranks stay in step).

A case's verdict puts the transport first: what the op did wrong with its buffers (`check`), then o and lse against
the fp64 reference. A call whose output has NaN where the reference has none is run once more with the receive
buffers filled with 0 instead: an output that changes with what a receive's buffer held before its wait() proves
the op read it early. The `real_transport` check runs the op once more through torch.distributed itself (NCCL
between GPUs), where a ring that only works with the strict transport's one work per op (NCCL gives one per
batch) fails.
"""
from __future__ import annotations

import sys
import traceback

from grader.protocol import OpContractError
from tasks import attention as _attention

LIBRARY = _attention.LIBRARY
PLACEMENTS = ("plain", "zigzag")
LAST: dict = {}  # what this process's last call saw: the transport's findings, for check() (same on every rank)


def make_inputs(shape, dtype, generator, device, causal=False, placement="plain"):
    return _attention.make_inputs(shape, dtype, generator, device, causal)


error_blocks = _attention.error_blocks  # error maps fold its outputs as attention's (grader/check/error_map.py)


def make_outputs(inputs, causal=False, placement="plain"):
    return _attention.make_outputs(inputs, causal)


def reference(q, k, v, causal=False, placement="plain"):
    return _attention.reference(q, k, v, causal)


def flops(q, k, v, causal=False, placement="plain"):
    return _attention.flops(q, k, v, causal)


probes = _attention.probes


def shard_rows(rank: int, world: int, n: int, placement: str) -> list[slice]:
    """The rows of the sequence rank holds, in order: the sequence is 2·world chunks of equal length c; "plain" gives
    rank r chunks 2r and 2r + 1 (one contiguous shard), "zigzag" chunks r and 2·world − 1 − r, one from each end, so
    that every rank computes the same number of causal tiles."""
    from grader.protocol import CourseConfigError

    if placement not in PLACEMENTS:
        raise CourseConfigError(f"placement {placement!r} is not one of {', '.join(PLACEMENTS)}")
    if n % (2 * world):
        raise CourseConfigError(f"N = {n} is not a multiple of 2 x {world} processes: every rank holds two chunks of "
                                "equal length (give shapes whose N divides)")
    c = n // (2 * world)
    chunks = (2 * rank, 2 * rank + 1) if placement == "plain" else (rank, 2 * world - 1 - rank)
    return [slice(i * c, (i + 1) * c) for i in chunks]


def _group():
    import torch.distributed as dist

    from grader.protocol import CourseConfigError

    if not dist.is_available() or not dist.is_initialized():
        raise CourseConfigError("tasks.ring_dist runs in a process group, one process per GPU, which `grader check` "
                                "starts (course.yaml: `processes: 2` or more): its op cannot be called alone")
    return dist


class RankError(OpContractError):
    """The op raised on some rank: raised on every rank, naming the first, so that all stay in step (and the worker
    knows no rank was lost)."""


def _index(torch, rows: list[slice], device):
    return torch.cat([torch.arange(s.start, s.stop, device=device) for s in rows])


def _run_op(torch, dist, fn, case, comm, mine) -> tuple:
    """One call on this rank's rows (new tensors every time); o and lse for them, poisoned before the call."""
    from grader.check.compare import poison

    q, k, v = (case.inputs[name].index_select(2, mine) for name in ("q", "k", "v"))
    o = torch.empty_like(q)
    lse = torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)
    poison(o)
    poison(lse)
    error = None
    try:
        fn(q, k, v, o, lse, bool(case.params.get("causal", False)), case.params.get("placement", "plain"), comm)
    except Exception as e:  # the log keeps this rank's traceback; the verdict names the rank and the error
        traceback.print_exc(file=sys.stderr)
        lines = [ln for ln in str(e).splitlines() if ln.strip()]
        error = f"{type(e).__name__}: {lines[0] if lines else ''}".rstrip(": ")
    errors = [None] * dist.get_world_size()
    dist.all_gather_object(errors, error)
    first = next(((r, e) for r, e in enumerate(errors) if e), None)
    if first:
        raise RankError(f"rank {first[0]}: {first[1]}")
    return o, lse


def _gather(torch, dist, local, indices, full) -> None:
    """Every rank's rows of an output, into `full` at their places in the sequence."""
    parts = [torch.empty_like(local) for _ in indices]
    dist.all_gather(parts, local.contiguous())
    for idx, part in zip(indices, parts):
        full.index_copy_(2, idx, part)


def _strict_call(torch, dist, fn, case, mine, indices, outputs, poison_value):
    """The op through StrictP2P; the outputs gathered into `outputs`, and every rank's report."""
    from tasks.strict_p2p import StrictP2P

    comm = StrictP2P(dist, poison=poison_value)
    o, lse = _run_op(torch, dist, fn, case, comm, mine)
    comm.finish()
    _gather(torch, dist, o, indices, outputs["o"])
    _gather(torch, dist, lse, indices, outputs["lse"])
    mine_report = {"violations": [(v.rule, v.transfer, v.message) for v in comm.violations],
                   "sent": comm.sent, "received": comm.received}
    reports = [None] * dist.get_world_size()
    dist.all_gather_object(reports, mine_report)
    return reports


def call(fn, case, exercise):
    """Each call: the op on every rank through the strict transport, the outputs gathered to every rank."""
    import torch

    dist = _group()
    rank, world = dist.get_rank(), dist.get_world_size()
    n = case.inputs["q"].shape[2]
    device = case.inputs["q"].device
    placement = case.params.get("placement", "plain")
    indices = [_index(torch, shard_rows(r, world, n, placement), device) for r in range(world)]

    def run():
        reports = _strict_call(torch, dist, fn, case, indices[rank], indices, case.outputs, float("nan"))
        early = None
        if _new_nan(case.outputs, case.reference):
            # The same call with 0 where NaN stood: a correct ring never reads a receive's buffer before its wait,
            # so its output cannot depend on what the buffer held.
            again = {k: torch.empty_like(v) for k, v in case.outputs.items()}
            _strict_call(torch, dist, fn, case, indices[rank], indices, again, 0.0)
            early = next((name for name in again if not _same(again[name], case.outputs[name])), None)
        LAST.update(reports=reports, read_early=early, world=world)
        return case.outputs

    return run


def _new_nan(got: dict, ref: dict) -> bool:
    return any(bool((got[name].isnan() & ~ref[name].isnan()).any()) for name in got if name in ref)


def _same(a, b) -> bool:
    import torch

    return bool(torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8)))


def transport_problem(reports: list[dict], read_early: str | None, world: int) -> str | None:
    """The first thing the ring did wrong with its buffers, as the verdict says it; None if nothing."""
    # The earliest transfer first, then the lowest rank, then the order they happened in on that rank.
    found = [(t, r, k, rule, msg) for r, rep in enumerate(reports) for k, (rule, t, msg) in enumerate(rep["violations"])]
    during = [f for f in found if f[3] != "never_waited"]
    if during:
        return f"rank {min(during)[1]}: {min(during)[4]}"
    if read_early:
        return (f"{read_early} changes with what a receive's buffer holds before its wait() returns (the grader's "
                "transport fills it with NaN, then 0, until wait() delivers the data): a received shard used before "
                "its wait (computed on before it has arrived)")
    late = [f for f in found if f[3] == "never_waited"]
    if late:
        return f"rank {min(late)[1]}: {min(late)[4]}"
    few = next(((r, rep["received"]) for r, rep in enumerate(reports) if rep["received"] < world - 1), None)
    if few:
        r, got = few
        return (f"rank {r} received {got} shard(s) through `comm`; in a ring of {world} processes each receives "
                f"{world - 1}: pass every K/V shard with the comm the op is given")
    return None


def check(got, case, exercise):
    """The transport's findings first (they explain wrong values), then o and lse against the reference."""
    from grader import protocol
    from grader.protocol import Result
    from grader.verdicts import Category

    results = protocol.check(got, case, exercise)
    if all(r.category == Category.NOT_IMPLEMENTED for r in results):
        return results  # nothing written: not implemented yet, whatever the transfers did
    problem = transport_problem(LAST.get("reports") or [], LAST.get("read_early"), LAST.get("world", 1))
    if problem:
        return [Result("transport", False, Category.CHECK_FAILED, problem), *results]
    return [*results, Result("transport", True, Category.PASS, "every buffer waited before it was used again")]


def _real_transport(ctx):
    """The op once more through torch.distributed itself (NCCL between GPUs, gloo between CPU processes), on the
    same inputs, against the reference: what the student's code meets outside the grader."""
    import torch

    from grader import protocol
    from grader.protocol import Result
    from grader.verdicts import Category

    dist = _group()
    case, world = ctx.case, dist.get_world_size()
    backend = dist.get_backend()
    n, device = case.inputs["q"].shape[2], case.inputs["q"].device
    indices = [_index(torch, shard_rows(r, world, n, case.params.get("placement", "plain")), device)
               for r in range(world)]
    outputs = {k: torch.empty_like(v) for k, v in case.outputs.items()}
    try:
        o, lse = _run_op(torch, dist, ctx.fn, case, dist, indices[dist.get_rank()])
    except RankError as e:
        return Result("real_transport", False, Category.CHECK_FAILED,
                      f"through torch.distributed itself ({backend}) the op raised on {e}: wait every work the batch "
                      "returns (NCCL returns one work for a whole batch, gloo one per op)")
    _gather(torch, dist, o, indices, outputs["o"])
    _gather(torch, dist, lse, indices, outputs["lse"])
    bad = [r for r in protocol.check(outputs, case, ctx.exercise) if not r.ok]
    if bad:
        return Result("real_transport", False, Category.CHECK_FAILED,
                      f"through torch.distributed itself ({backend}), {bad[0].name}: {bad[0].message}")
    return Result("real_transport", True, Category.PASS, f"also correct through torch.distributed ({backend})")


CHECKS = {"real_transport": _real_transport}
