"""Day 19, exercise 3: the ring across processes. Each rank is a process with a GPU of its own (NCCL; CPU processes
with gloo in the tests), and exercise 1's slots and counters become sends, receives and waits.

    ring_attention(q, k, v, o, lse, causal, placement, comm)   # on every rank of an initialized process group

The sequence is cut into 2R chunks of c rows (R ranks). Rank r holds two of them: chunks 2r and 2r + 1 with
placement "plain", chunks r and 2R − 1 − r with "zigzag" (one from each end, so that causal ranks do equal work).
It passes its rows of q, k and v ([B, H, 2c, d] each, in sequence order) and o ([B, H, 2c, d], q's dtype) and lse
(fp32 [B, H, 2c]) to write for those rows. `comm` is torch.distributed's point-to-point API (P2POp, isend, irecv,
batch_isend_irecv, get_rank, get_world_size): the grader passes a strict version of it (tasks/strict_p2p.py), in
which a receive's buffer holds NaN until its wait() returns and a send's buffer must keep its bits until its wait()
returns, and then torch.distributed itself.
"""
from __future__ import annotations

import torch
import torch.distributed as dist


def visible(rank: int, j: int, world: int, causal: bool, placement: str, n: int) -> list[tuple[slice, slice, bool]]:
    """The parts of rank's n local queries that see any of rank j's n local keys: (query rows, key rows, diagonal),
    diagonal meaning that the causal mask applies between them (the same positions on both sides)."""
    every = slice(0, n)
    if not causal:
        return [(every, every, False)]
    if j == rank:  # the local rows are in sequence order, so the mask over them is the sequence's mask
        return [(every, every, True)]
    if placement == "plain":  # shard j lies wholly before shard rank, or wholly after it
        return [(every, every, False)] if j < rank else []
    first, second = slice(0, n // 2), slice(n // 2, n)
    # zigzag, j < rank: j's first chunk precedes both of rank's chunks; its second (2R − 1 − j) follows both.
    # j > rank: both of j's chunks follow rank's first chunk and precede its second.
    return [(every, first, False)] if j < rank else [(second, every, False)]


def attend(q, k, v, scale: float, diagonal: bool):
    """One part's partial (lse, o): the row logsumexp of its scores (fp32 [B, H, rows]) and its output normalized
    over its own keys ([B, H, rows, d]). On a GPU in fp16/bf16, SDPA's flash kernel (o in q's dtype); otherwise fp32
    matmuls."""
    if q.is_cuda and q.dtype in (torch.float16, torch.bfloat16):
        o, lse = torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, diagonal, False, scale=scale)[:2]
        return lse, o
    s = (q.float() @ k.float().transpose(-1, -2)) * scale
    if diagonal:
        s.masked_fill_(torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    m = s.amax(dim=-1)
    p = torch.exp(s - m.unsqueeze(-1))
    total = p.sum(dim=-1)
    return m + total.log(), (p @ v.float()) / total.unsqueeze(-1)


def ring_attention(q, k, v, o, lse, causal=False, placement="plain", comm=dist, group=None, attend=attend):
    rank, world = comm.get_rank(group), comm.get_world_size(group)
    succ, pred = (rank + 1) % world, (rank - 1) % world
    n, scale = q.shape[2], q.shape[-1] ** -0.5
    # K and V travel together in one buffer: one send and one receive a step. While a step computes on one buffer
    # (`held`), the next shard arrives in the other (`free`); the two swap roles every step.
    bufs = (torch.stack((k, v)), torch.empty((2, *k.shape), dtype=k.dtype, device=k.device))
    lse_run = acc = None  # every local query row's logsumexp and output so far (acc fp32, normalized), from step 0 on
    for s in range(world):
        held, free = bufs[s % 2], bufs[(s + 1) % 2]
        j = (rank - s) % world  # the rank whose keys `held` holds
        works = []
        # BEGIN SOLUTION: unless this is the last step, post this step's transfer in one batch: `held` to succ, the next shard into `free` from pred; keep the works it returns in `works`
        if s + 1 < world:
            works = comm.batch_isend_irecv([comm.P2POp(comm.isend, held, succ, group),
                                            comm.P2POp(comm.irecv, free, pred, group)])
        # END SOLUTION
        for rows, keys, diagonal in visible(rank, j, world, causal, placement, n):
            lse_b, o_b = attend(q[:, :, rows], held[0][:, :, keys], held[1][:, :, keys], scale, diagonal)
            # BEGIN SOLUTION: fold the part into the running state of `rows` (step 0's part covers every row and starts it, acc in fp32): the part weighs w = exp(lse_b − lse_new) = sigmoid(lse_b − lse_old) in the merged softmax, so acc moves to acc + w·(o_b − acc), and lse_new = logaddexp(lse_old, lse_b)
            if acc is None:
                lse_run, acc = lse_b, o_b.float()
                continue
            lr, ar = lse_run[:, :, rows], acc[:, :, rows]
            ar.lerp_(o_b.float(), torch.sigmoid(lse_b - lr).unsqueeze(-1))
            torch.logaddexp(lr, lse_b, out=lr)
            # END SOLUTION
        # BEGIN SOLUTION: wait for every work of the transfer: then `free` holds the next shard, and `held` may be received into again
        for w in works:
            w.wait()
        # END SOLUTION
    # BEGIN SOLUTION: write o (acc in o's dtype) and lse
    o.copy_(acc)
    lse.copy_(lse_run)
    # END SOLUTION
