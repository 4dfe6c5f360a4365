"""Day 19's ring over torch.distributed (days/day19/ring_dist.py, lesson code beside the stub), run here on CPU processes with the gloo
backend: the schedule, the double-buffered transfers and the merge, against the fp64 reference, for 1 to 3 ranks.
The same code runs on GPUs with NCCL."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]


def _module():
    spec = importlib.util.spec_from_file_location("ring_dist", ROOT / "days" / "day19" / "ring_dist.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _local_shards(rank, world, shape):
    """The seeded q, k, v and this rank's rows of them."""
    g = torch.Generator().manual_seed(7)
    q, k, v = (torch.randn(shape, generator=g) for _ in range(3))
    n = shape[2] // world
    part = slice(rank * n, (rank + 1) * n)
    return q[:, :, part], k[:, :, part].contiguous(), v[:, :, part].contiguous()


def _worker(rank, world, init, shape, causal, out_dir, wrong=False):
    import torch.distributed as dist

    mod = _module()
    q, k, v = _local_shards(rank, world, shape)
    if wrong:  # the transfers happen, but every step attends to the rank's own shard again
        real = mod.dist.batch_isend_irecv

        def own_shard_again(ops):
            sends = [op for op in ops if op.op is dist.isend]
            recvs = [op for op in ops if op.op is dist.irecv]
            scratch = [dist.P2POp(dist.irecv, torch.empty_like(op.tensor), op.peer) for op in recvs]
            for request in real(sends + scratch):
                request.wait()
            for op, own in zip(recvs, (k, v)):
                op.tensor.copy_(own)
            return []

        mod.dist.batch_isend_irecv = own_shard_again
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    try:
        o, lse = mod.ring_attention(q, k, v, causal)
        torch.save({"o": o, "lse": lse}, Path(out_dir) / f"{rank}.pt")
    finally:
        dist.destroy_process_group()


def _run(tmp_path, world, shape, causal, wrong=False):
    """o and lse of every rank, concatenated along the sequence, and the fp64 reference."""
    import torch.multiprocessing as mp

    from tasks import attention

    init = f"file://{tmp_path / 'rendezvous'}"
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    mp.spawn(_worker, args=(world, init, shape, causal, str(tmp_path), wrong), nprocs=world, join=True)
    parts = [torch.load(tmp_path / f"{r}.pt") for r in range(world)]
    g = torch.Generator().manual_seed(7)
    q, k, v = (torch.randn(shape, generator=g) for _ in range(3))
    ref_o, ref_lse = attention.reference(q, k, v, causal)
    o, lse = (torch.cat([p[name] for p in parts], dim=2) for name in ("o", "lse"))
    return o, lse, ref_o, ref_lse


@pytest.mark.parametrize("world", [1, 2, 3])
@pytest.mark.parametrize("causal", [False, True])
def test_ring_over_gloo_matches_the_reference(world, causal, tmp_path):
    o, lse, ref_o, ref_lse = _run(tmp_path, world, (2, 3, 24 * world, 16), causal)
    assert torch.allclose(o.double(), ref_o, atol=1e-5, rtol=1e-4)
    assert torch.allclose(lse.double(), ref_lse, atol=1e-5, rtol=1e-5)


def test_a_wrong_schedule_is_caught(tmp_path):
    """The test can fail: a ring that attends to its own shard at every step gives wrong values for 2 ranks."""
    o, _, ref_o, _ = _run(tmp_path, 2, (1, 2, 32, 16), False, wrong=True)
    assert not torch.allclose(o.double(), ref_o, atol=1e-5, rtol=1e-4)


def test_the_measurement_script_runs_on_cpu_processes(tmp_path):
    """scripts/lessons/day19_ring_measure.py's smoke run (gloo): every row timed, and the gathered ring output checked."""
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "lessons" / "day19_ring_measure.py"), str(tmp_path), "--cpu",
                        "--world", "2", "--sizes", "8", "16", "--heads", "2", "--dim", "8", "--reps", "1"],
                       capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((tmp_path / "day19-dist.json").read_text())
    assert [(r["causal"], r["n_per_rank"]) for r in doc["rows"]] == [(False, 8), (False, 16), (True, 8), (True, 16)]
    for r in doc["rows"]:
        assert r["max_abs_diff"] < 1e-5 and r["ring_ms"] > 0 and r["compute_ms"] > 0 and r["comm_ms"] > 0, r
    assert "| no | 8 | 16 |" in (tmp_path / "day19-dist.md").read_text()
