"""The day's ring across processes: each rank is a process (a GPU with the NCCL backend, or a CPU process with gloo),
and the slots and counters become torch.distributed sends and receives.

    o, lse = ring_attention(q, k, v, causal)   # inside an initialized process group

Rank r passes its q, k, v shards (rows r·n .. r·n + n - 1 of the sequence, [B, H, n, d], the same n on every rank)
and gets o and lse for its own queries. At step s it holds key/value shard j = (r - s) mod R: it posts the send of
that shard to rank r + 1 and the receive of the next one from rank r - 1 (batch_isend_irecv, so NCCL runs them on
its own stream while this rank computes), attends to the shard it holds, merges with day 10's online-softmax rule,
and only then waits for the transfer. The receive buffer is the second slot: a transfer never overwrites the shard
being computed on, and `wait()` is the acquire that the single-GPU version writes by hand.
"""
from __future__ import annotations

import math

import torch
import torch.distributed as dist


def _attend(q, k, v, scale, causal_diagonal):
    """One shard's partial: row max m, sum l and unnormalized output acc, in fp32."""
    s = (q.float() @ k.float().transpose(-1, -2)) * scale
    if causal_diagonal:
        n = s.shape[-1]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    m = s.amax(dim=-1)
    p = torch.exp(s - m[..., None])
    return m, p.sum(dim=-1), p @ v.float()


def ring_attention(q, k, v, causal=False, group=None, attend=_attend):
    """attend(q, k, v, scale, causal_diagonal) -> (m, l, acc): one shard's partial in fp32 (a flash kernel's
    (o, lse) is (lse, 1, o)); the default computes it with plain matmuls."""
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    succ, pred = (rank + 1) % world, (rank - 1) % world
    scale = 1.0 / math.sqrt(q.shape[-1])
    m = torch.full(q.shape[:3], float("-inf"), device=q.device)
    total = torch.zeros(q.shape[:3], device=q.device)  # the running sum l
    acc = torch.zeros(q.shape, device=q.device)
    held = (k.contiguous(), v.contiguous())
    for s in range(world):
        j = (rank - s) % world
        pending = None
        if s + 1 < world:
            incoming = (torch.empty_like(held[0]), torch.empty_like(held[1]))
            ops = [dist.P2POp(dist.isend, t, succ, group) for t in held] + \
                  [dist.P2POp(dist.irecv, t, pred, group) for t in incoming]
            pending = dist.batch_isend_irecv(ops)
        if not (causal and j > rank):  # a later shard holds only keys after every local query
            m_b, l_b, acc_b = attend(q, *held, scale, causal and j == rank)
            m_new = torch.maximum(m, m_b)
            fa, fb = torch.exp(m - m_new), torch.exp(m_b - m_new)  # m is -inf only before the first shard
            fa = torch.nan_to_num(fa, nan=0.0)
            m, total = m_new, total * fa + l_b * fb
            acc = acc * fa[..., None] + acc_b * fb[..., None]
        if pending is not None:
            for request in pending:
                request.wait()
            held = incoming
    return (acc / total[..., None]).to(q.dtype), m + torch.log(total)
