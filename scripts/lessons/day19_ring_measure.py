"""Day 19's ring across processes (days/day19/ring_dist.py), measured: one process per GPU over NCCL, a query shard
of n tokens per rank, the key/value shards passed around the ring while each rank attends to the one it holds.

    python3 scripts/lessons/day19_ring_measure.py OUT_DIR                  # every visible GPU, one process each (NCCL)
    python3 scripts/lessons/day19_ring_measure.py OUT_DIR --cpu --world 2 --sizes 32 64 --heads 2 --dim 16   # a smoke run
    python3 scripts/lessons/day19_ring_measure.py --insert OUT_DIR/day19-dist.json    # the lesson's table from a saved run

For each shard size it times, in the same run: the ring's forward; the same attention work with no transfer
(compute only: every step attends to a shard already held); the transfers alone (comm only); and one GPU doing the
whole sequence (the same flash kernel over world x n tokens). Overlap efficiency is max(compute, comm) / ring: 1.0
when the transfers hide entirely behind the math. On GPUs each shard's partial comes from SDPA's flash kernel (its
(o, lse) merged by the lesson's rule); on CPU processes (gloo) from the lesson's plain matmuls. The ring's output,
gathered on rank 0, is checked against the one-GPU output (CPU: against the fp64 reference).

NVLink multicast stays off (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1), as the device notes require.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BLOCK = "day19-dist"


def _ring_module():
    spec = importlib.util.spec_from_file_location("ring_dist", ROOT / "days" / "day19" / "ring_dist.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def flash_attend(torch):
    """A shard's partial from SDPA's flash kernel: (o, lse) is the lesson's (m, l, acc) = (lse, 1, o)."""

    def attend(q, k, v, scale, causal_diagonal):
        out, lse = torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, causal_diagonal, False,
                                                                     scale=scale)[:2]
        return lse, torch.ones_like(lse), out.float()

    return attend


def _timed(torch, dist, fn, reps: int, cuda: bool) -> float:
    """Median milliseconds of fn() over reps, every rank starting together (a barrier) and the slowest rank's time
    counted (a max over ranks, on the rank's own GPU: NCCL has no CPU tensors; gloo takes either)."""
    times = []
    for _ in range(reps + 1):  # the first is a warm-up
        if cuda:
            torch.cuda.synchronize()
        dist.barrier()
        t0 = time.perf_counter()
        fn()
        if cuda:
            torch.cuda.synchronize()
        t = torch.tensor([time.perf_counter() - t0], dtype=torch.float64,
                         device=torch.cuda.current_device() if cuda else "cpu")
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        times.append(1e3 * float(t))
    return statistics.median(times[1:])


def _worker(rank: int, world: int, init: str, a: dict, out: str) -> None:
    import torch
    import torch.distributed as dist

    cuda = not a["cpu"]
    if cuda:
        torch.cuda.set_device(rank)
    dist.init_process_group("nccl" if cuda else "gloo", init_method=init, rank=rank, world_size=world)
    mod = _ring_module()
    device = f"cuda:{rank}" if cuda else "cpu"
    dtype = getattr(torch, a["dtype"]) if cuda else torch.float32
    attend = flash_attend(torch) if cuda else mod._attend
    rows = []
    try:
        for causal in (False, True):
            for n in a["sizes"]:
                g = torch.Generator(device=device).manual_seed(1234 + n)  # the same full tensors on every rank
                shape = (a["batch"], a["heads"], world * n, a["dim"])
                q, k, v = (torch.randn(shape, generator=g, device=device, dtype=dtype) for _ in range(3))
                part = slice(rank * n, (rank + 1) * n)
                ql, kl, vl = (t[:, :, part].contiguous() for t in (q, k, v))
                result = {}

                def ring():
                    result["o"] = mod.ring_attention(ql, kl, vl, causal, attend=attend)[0]

                t_ring = _timed(torch, dist, ring, a["reps"], cuda)
                real = mod.dist.batch_isend_irecv
                mod.dist.batch_isend_irecv = lambda ops: []  # no transfer: the same steps on the shards held
                try:
                    t_compute = _timed(torch, dist, lambda: mod.ring_attention(ql, kl, vl, causal, attend=attend),
                                       a["reps"], cuda)
                finally:
                    mod.dist.batch_isend_irecv = real

                def comm():
                    held = (kl, vl)
                    for _ in range(world - 1):
                        incoming = (torch.empty_like(kl), torch.empty_like(vl))
                        ops = [dist.P2POp(dist.isend, t, (rank + 1) % world) for t in held] + \
                              [dist.P2POp(dist.irecv, t, (rank - 1) % world) for t in incoming]
                        for req in dist.batch_isend_irecv(ops):
                            req.wait()
                        held = incoming

                t_comm = _timed(torch, dist, comm, a["reps"], cuda) if world > 1 else 0.0
                parts = [torch.empty_like(result["o"]) for _ in range(world)]
                dist.all_gather(parts, result["o"])
                full = {}

                def single():  # rank 0 alone does the whole sequence; the others wait at the barrier
                    if rank == 0 and cuda:
                        full["o"] = torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, causal)[0]
                    elif rank == 0:
                        mod._attend(q, k, v, q.shape[-1] ** -0.5, causal)

                t_single = _timed(torch, dist, single, a["reps"], cuda)
                if rank == 0:
                    o = torch.cat(parts, dim=2)
                    if cuda:
                        ref = full["o"]
                    else:
                        sys.path.insert(0, str(ROOT))
                        from tasks import attention

                        ref = attention.reference(q, k, v, causal)[0]
                    ideal = max(t_compute, t_comm)
                    rows.append({"causal": causal, "n_per_rank": n, "tokens": world * n, "ring_ms": t_ring,
                                 "compute_ms": t_compute, "comm_ms": t_comm, "single_ms": t_single,
                                 "speedup_vs_single": t_single / t_ring, "share_of_ideal": t_single / (world * t_ring),
                                 "overlap_efficiency": ideal / t_ring,
                                 "comm_hidden": t_comm <= t_compute,
                                 "max_abs_diff": float((o.double() - ref.double()).abs().max())})
                    print(json.dumps(rows[-1]), flush=True)
        if rank == 0:
            name = torch.cuda.get_device_name(0) if cuda else "CPU processes (gloo)"
            doc = {"device": name, "world": world, "torch": torch.__version__, "dtype": str(dtype).split(".")[-1],
                   "batch": a["batch"], "heads": a["heads"], "dim": a["dim"], "rows": rows}
            Path(out).mkdir(parents=True, exist_ok=True)
            (Path(out) / "day19-dist.json").write_text(json.dumps(doc, indent=1))
            (Path(out) / "day19-dist.md").write_text(table(doc) + "\n")
    finally:
        dist.destroy_process_group()


def table(doc: dict) -> str:
    lines = [f"Measured on {doc['world']} x {doc['device']} (torch {doc['torch']}), regenerated by "
             f"`scripts/lessons/day19_ring_measure.py`: {doc['dtype']}, batch {doc['batch']}, {doc['heads']} heads of "
             f"d = {doc['dim']}, one query shard of n tokens per rank. Compute: the same steps with no transfer; "
             "comm: the transfers alone; one GPU: the whole sequence on one device (rank 0's); overlap efficiency: "
             "max(compute, comm) / ring; share of ideal: one GPU's time / (ranks × ring's).", "",
             "| causal | n per rank | tokens | ring ms | compute ms | comm ms | one GPU ms | × one GPU | share of ideal "
             "| overlap efficiency | comm hidden | max \\|Δ\\| vs one GPU |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    for r in doc["rows"]:
        lines.append(f"| {'yes' if r['causal'] else 'no'} | {r['n_per_rank']:,} | {r['tokens']:,} | {r['ring_ms']:.2f} "
                     f"| {r['compute_ms']:.2f} | {r['comm_ms']:.2f} | {r['single_ms']:.2f} | "
                     f"{r['speedup_vs_single']:.2f} | {100 * r['share_of_ideal']:.0f}% | {r['overlap_efficiency']:.2f} | "
                     f"{'yes' if r['comm_hidden'] else 'no'} | {r['max_abs_diff']:.1e} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", nargs="?", type=Path)
    p.add_argument("--insert", type=Path, help="a saved day19-dist.json: write its table into days/day19/README.md")
    p.add_argument("--cpu", action="store_true", help="CPU processes over gloo (a smoke run of the script itself)")
    p.add_argument("--world", type=int, help="processes (default: the GPUs visible, or 2 with --cpu)")
    p.add_argument("--sizes", type=int, nargs="+", default=[2048, 4096, 8192, 16384], help="tokens per rank")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16"])
    p.add_argument("--reps", type=int, default=10)
    a = p.parse_args(argv)
    if a.insert:
        sys.path.insert(0, str(ROOT / "scripts"))
        from update_readmes import replace_block

        ok = replace_block(ROOT / "days" / "day19" / "README.md", BLOCK, table(json.loads(a.insert.read_text())))
        return 0 if ok else 1
    if a.out is None:
        p.error("give an output folder (or --insert a saved run)")
    import torch
    import torch.multiprocessing as mp

    world = a.world or (2 if a.cpu else torch.cuda.device_count())
    if not a.cpu and world < 2:
        print(f"needs two GPUs or more (this machine has {torch.cuda.device_count()}); --cpu runs a smoke test",
              file=sys.stderr)
        return 2
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(_worker, args=(world, f"file://{tmp}/rendezvous", vars(a), str(a.out)), nprocs=world, join=True)
    print(table(json.loads((a.out / "day19-dist.json").read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
