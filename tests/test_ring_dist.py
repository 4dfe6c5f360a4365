"""Day 19's ring over torch.distributed (days/day19/ring_dist.py, lesson code beside the stub), run here on CPU processes with the gloo
backend: the schedule, the double-buffered transfers and the merge, against the fp64 reference, for 1 to 3 ranks.
The same code runs on GPUs with NCCL."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]


def _module():
    spec = importlib.util.spec_from_file_location("ring_dist", ROOT / "days" / "day19" / "ring_dist.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _worker(rank, world, init, shape, causal, out_dir):
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    try:
        g = torch.Generator().manual_seed(7)
        q, k, v = (torch.randn(shape, generator=g) for _ in range(3))
        n = shape[2] // world
        part = slice(rank * n, (rank + 1) * n)
        o, lse = _module().ring_attention(q[:, :, part], k[:, :, part], v[:, :, part], causal)
        torch.save({"o": o, "lse": lse}, Path(out_dir) / f"{rank}.pt")
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("world", [1, 2, 3])
@pytest.mark.parametrize("causal", [False, True])
def test_ring_over_gloo_matches_the_reference(world, causal, tmp_path):
    import torch.multiprocessing as mp

    from tasks import attention

    shape = (2, 3, 24 * world, 16)
    init = f"file://{tmp_path / 'rendezvous'}"
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    mp.spawn(_worker, args=(world, init, shape, causal, str(tmp_path)), nprocs=world, join=True)
    g = torch.Generator().manual_seed(7)
    q, k, v = (torch.randn(shape, generator=g) for _ in range(3))
    ref_o, ref_lse = attention.reference(q, k, v, causal)
    parts = [torch.load(tmp_path / f"{r}.pt") for r in range(world)]
    o = torch.cat([p["o"] for p in parts], dim=2)
    lse = torch.cat([p["lse"] for p in parts], dim=2)
    assert torch.allclose(o.double(), ref_o, atol=1e-5, rtol=1e-4)
    assert torch.allclose(lse.double(), ref_lse, atol=1e-5, rtol=1e-5)


def test_a_wrong_schedule_is_caught(tmp_path, monkeypatch):
    """The test can fail: a ring that attends to its own shard at every step gives wrong values for 2 ranks."""
    import torch.multiprocessing as mp

    from tasks import attention

    world, shape = 2, (1, 2, 32, 16)
    init = f"file://{tmp_path / 'rendezvous'}"
    mp.spawn(_broken_worker, args=(world, init, shape, str(tmp_path)), nprocs=world, join=True)
    g = torch.Generator().manual_seed(7)
    q, k, v = (torch.randn(shape, generator=g) for _ in range(3))
    ref_o, _ = attention.reference(q, k, v, False)
    o = torch.cat([torch.load(tmp_path / f"{r}.pt")["o"] for r in range(world)], dim=2)
    assert not torch.allclose(o.double(), ref_o, atol=1e-5, rtol=1e-4)


def _broken_worker(rank, world, init, shape, out_dir):
    import torch.distributed as dist

    mod = _module()
    real = mod.dist.batch_isend_irecv

    def no_transfer(ops):  # receives nothing new: the "incoming" buffers keep the rank's own shard
        reqs = real(ops)
        for r in reqs:
            r.wait()
        for op in ops:
            if op.op is dist.irecv:
                op.tensor.copy_(held[0] if op.tensor.shape == held[0].shape and len(seen) % 2 == 0 else held[1])
                seen.append(1)
        return []

    held, seen = [], []
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    try:
        g = torch.Generator().manual_seed(7)
        q, k, v = (torch.randn(shape, generator=g) for _ in range(3))
        n = shape[2] // world
        part = slice(rank * n, (rank + 1) * n)
        held.extend([k[:, :, part].contiguous(), v[:, :, part].contiguous()])
        mod.dist.batch_isend_irecv = no_transfer
        o, _ = mod.ring_attention(q[:, :, part], k[:, :, part], v[:, :, part], False)
        torch.save({"o": o}, Path(out_dir) / f"{rank}.pt")
    finally:
        mod.dist.batch_isend_irecv = real
        dist.destroy_process_group()
