"""Day 19's ring across processes (solutions/day19/ring_dist.py), measured: one process per GPU over NCCL, the
sequence cut into 2R chunks, each rank holding two of them (plain: two neighbours; zigzag: one from each end), the
key/value shards passed around the ring while each rank attends to the one it holds.

    python3 scripts/lessons/day19_ring_measure.py OUT_DIR        # every visible GPU, one process each (NCCL)
    python3 scripts/lessons/day19_ring_measure.py OUT_DIR --cpu --world 2 --tokens 32 64 --heads 2 --dim 16  # smoke
    python3 scripts/lessons/day19_ring_measure.py --insert       # the lesson's tables from measured/day19/dist-*.json

For each token count, causal or not, and each placement, it times in the same run: the ring's forward; the same
steps with no transfer (compute only: every step attends to the buffer it already holds); the steps' attend calls
alone (attend_ms in the JSON: no fold, no stack, no copies); the compute-only steps replayed from a CUDA graph
(compute_graph_ms: no host work, so far below compute only means the steps wait on Python's launches); with
--graph-ring, the whole ring with its transfers replayed from one CUDA graph per rank (ring_graph_ms); the transfers
alone (comm only); and one GPU doing the whole sequence (SDPA's flash kernel on rank 0; on CPU processes the ring's own
fp32 attend). Every time is the median over repetitions of the slowest rank's (each repetition starts at a
barrier). Share of ideal = one GPU's time / (R × the ring's): 100% when R GPUs are R times as fast as one. Overlap
efficiency = max(compute, comm) / ring: 1.0 when the transfers hide entirely behind the math. The ring's output,
gathered on rank 0, is checked against the one-GPU output (CPU: against the fp64 reference).

The run writes OUT_DIR/day19-dist-<gpu>x<R>.json and .md; copied into measured/day19/ as dist-<gpu>x<R>.json, it is
one of the tables `--insert` writes into days/day19/README.md (never typed). NVLink multicast stays off
(NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1).
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
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[2]
BLOCK = "day19-dist"
MEASURED = ROOT / "measured" / "day19"
PLACEMENTS = ("plain", "zigzag")


def _ring_module():
    spec = importlib.util.spec_from_file_location("ring_dist", ROOT / "solutions" / "day19" / "ring_dist.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _timed(torch, dist, fn, reps: int, device) -> tuple[float, list[float]]:
    """(median over reps of the slowest rank's milliseconds, each rank's median), every rank starting together."""
    cuda = device.type == "cuda"
    rows = []
    for _ in range(reps + 1):  # the first is a warm-up
        if cuda:
            torch.cuda.synchronize()
        dist.barrier()
        t0 = time.perf_counter()
        fn()
        if cuda:
            torch.cuda.synchronize()
        # On the rank's own device: NCCL has no CPU tensors (gloo takes either).
        mine = torch.tensor([1e3 * (time.perf_counter() - t0)], dtype=torch.float64, device=device)
        every = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
        dist.all_gather(every, mine)
        rows.append([float(t) for t in every])
    rows = rows[1:]
    per_rank = [statistics.median(r[i] for r in rows) for i in range(len(rows[0]))]
    return statistics.median(max(r) for r in rows), per_rank


def _captured(torch, fn):
    """fn captured into a CUDA graph (warmed up on a side stream first, as capture requires)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph


def work_per_rank(ring, world: int, causal: bool, placement: str, n: int = 2) -> list[float]:
    """Each rank's share of the score tiles it computes over the whole ring (a diagonal part counts half), from the
    ring's own `visible`: equal across ranks means balanced."""
    out = []
    for rank in range(world):
        w = 0.0
        for j in range(world):
            for rows, keys, diagonal in ring.visible(rank, j, world, causal, placement, n):
                w += (rows.stop - rows.start) * (keys.stop - keys.start) * (0.5 if diagonal else 1.0)
        out.append(w / (n * n))
    return out


def _worker(rank: int, world: int, init: str, a: dict, out: str) -> None:
    import torch
    import torch.distributed as dist

    sys.path.insert(0, str(ROOT))
    from tasks.ring_dist import shard_rows

    cuda = not a["cpu"]
    if cuda:
        torch.cuda.set_device(rank)
    else:  # CPU processes share the cores: threads that spin-wait for cores another rank holds time nothing
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // world))
    device = torch.device("cuda", rank) if cuda else torch.device("cpu")
    dist.init_process_group("nccl" if cuda else "gloo", init_method=init, rank=rank, world_size=world,
                            device_id=device if cuda else None)
    ring = _ring_module()
    dtype = getattr(torch, a["dtype"]) if cuda else torch.float32
    # The same steps with nothing moved: the batch is posted nowhere and its works are none.
    no_transfer = SimpleNamespace(P2POp=dist.P2POp, isend=dist.isend, irecv=dist.irecv,
                                  batch_isend_irecv=lambda ops: [], get_rank=dist.get_rank,
                                  get_world_size=dist.get_world_size)
    reps, rows, done = a["reps"], [], False
    try:
        for causal in (False, True):
            for tokens in a["tokens"]:
                g = torch.Generator(device=device).manual_seed(1234 + tokens)  # the same full tensors on every rank
                shape = (a["batch"], a["heads"], tokens, a["dim"])
                q, k, v = (torch.randn(shape, generator=g, device=device, dtype=dtype) for _ in range(3))
                full = {}

                def single():  # rank 0 alone does the whole sequence; the others wait at the barrier
                    if rank == 0 and cuda:
                        full["o"] = torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, causal)[0]
                    elif rank == 0:
                        full["o"] = ring.attend(q, k, v, q.shape[-1] ** -0.5, causal)[1]

                t_single, _ = _timed(torch, dist, single, reps, device)
                n = tokens // world
                kv = torch.empty((2, a["batch"], a["heads"], n, a["dim"]), dtype=dtype, device=device)

                def comm():  # the transfers alone, double-buffered as the ring does them
                    bufs = (kv, torch.empty_like(kv))
                    for s in range(world - 1):
                        ops = [dist.P2POp(dist.isend, bufs[s % 2], (rank + 1) % world),
                               dist.P2POp(dist.irecv, bufs[(s + 1) % 2], (rank - 1) % world)]
                        for w in dist.batch_isend_irecv(ops):
                            w.wait()

                t_comm = _timed(torch, dist, comm, reps, device)[0] if world > 1 else 0.0
                row = {"causal": causal, "tokens": tokens, "n_per_rank": n, "single_ms": t_single, "comm_ms": t_comm}
                for placement in PLACEMENTS:
                    mine = [torch.cat([torch.arange(s.start, s.stop, device=device)
                                       for s in shard_rows(r, world, tokens, placement)]) for r in range(world)]
                    ql, kl, vl = (t.index_select(2, mine[rank]) for t in (q, k, v))
                    o = torch.empty_like(ql)
                    lse = torch.empty(ql.shape[:3], dtype=torch.float32, device=device)
                    t_ring, ring_ranks = _timed(torch, dist, lambda: ring.ring_attention(
                        ql, kl, vl, o, lse, causal, placement, dist), reps, device)
                    parts = [torch.empty_like(o) for _ in range(world)]
                    dist.all_gather(parts, o)
                    t_compute, compute_ranks = _timed(torch, dist, lambda: ring.ring_attention(
                        ql, kl, vl, torch.empty_like(ql), torch.empty_like(lse), causal, placement, no_transfer),
                        reps, device)

                    def attends():  # the steps' attend calls alone: no fold, no stack, no copies (on the own shard)
                        scale = ql.shape[-1] ** -0.5
                        for step in range(world):
                            j = (rank - step) % world
                            for rows, keys, diagonal in ring.visible(rank, j, world, causal, placement, n):
                                ring.attend(ql[:, :, rows], kl[:, :, keys], vl[:, :, keys], scale, diagonal)

                    t_attend, attend_ranks = _timed(torch, dist, attends, reps, device)
                    # The compute-only steps replayed from a CUDA graph: no Python and no launches on the host. Far
                    # below compute_ms means the eager steps wait on the host (launch-bound), not on the GPU.
                    t_graph, graph_ranks = None, None
                    if cuda:
                        graph = _captured(torch, lambda: ring.ring_attention(
                            ql, kl, vl, torch.empty_like(ql), torch.empty_like(lse), causal, placement, no_transfer))
                        t_graph, graph_ranks = _timed(torch, dist, graph.replay, reps, device)
                    # --graph-ring: the whole ring, transfers included, captured into one CUDA graph per rank and
                    # replayed (NCCL's sends and receives are captured with it): what the ring costs with no host
                    # work at all, the bound a graph-launched ring could reach. Its output must be the eager ring's.
                    ring_graph = {}
                    if cuda and a["graph_ring"]:
                        eager = o.clone()
                        try:
                            whole = _captured(torch, lambda: ring.ring_attention(ql, kl, vl, o, lse, causal,
                                                                                 placement, dist))
                            o.fill_(float("nan"))
                            t, per = _timed(torch, dist, whole.replay, reps, device)
                            ring_graph = {"ring_graph_ms": t, "ring_graph_ms_per_rank": per,
                                          "ring_graph_share_of_ideal": t_single / (world * t),
                                          "ring_graph_max_abs_diff": float((o.double() - eager.double()).abs().max())}
                        except Exception as e:  # noqa: BLE001 -- recorded: whether NCCL's P2P captures here is a finding
                            ring_graph = {"ring_graph_error": f"{type(e).__name__}: {e}"[:400]}
                    diff = None
                    if rank == 0:
                        got = torch.empty_like(q)
                        for idx, part in zip(mine, parts):
                            got.index_copy_(2, idx, part)
                        if cuda:
                            ref = full["o"]
                        else:
                            from tasks import attention

                            ref = attention.reference(q, k, v, causal)[0]
                        diff = float((got.double() - ref.double()).abs().max())
                    if cuda and tokens in a["profile"]:
                        _profile(torch, dist, ring, rank, out, causal, tokens, placement, ql, kl, vl, no_transfer)
                    row[placement] = {"ring_ms": t_ring, "ring_ms_per_rank": ring_ranks, "compute_ms": t_compute,
                                      "compute_ms_per_rank": compute_ranks,
                                      "attend_ms": t_attend, "attend_ms_per_rank": attend_ranks,
                                      "compute_graph_ms": t_graph, "compute_graph_ms_per_rank": graph_ranks,
                                      "work_per_rank": work_per_rank(ring, world, causal, placement),
                                      "speedup_vs_single": t_single / t_ring,
                                      "share_of_ideal": t_single / (world * t_ring),
                                      "overlap_efficiency": max(t_compute, t_comm) / t_ring,
                                      "max_abs_diff": diff, **ring_graph}
                if rank == 0:
                    rows.append(row)
                    print(json.dumps(row), flush=True)
        if rank == 0:
            name = torch.cuda.get_device_name(0) if cuda else "CPU processes (gloo)"
            doc = {"device": name, "world": world, "torch": torch.__version__, "dtype": str(dtype).split(".")[-1],
                   "batch": a["batch"], "heads": a["heads"], "dim": a["dim"], "reps": reps,
                   "when": time.strftime("%Y-%m-%d"), "rows": rows}
            Path(out).mkdir(parents=True, exist_ok=True)
            stem = f"day19-dist-{slug(name)}x{world}"
            (Path(out) / f"{stem}.json").write_text(json.dumps(doc, indent=1))
            (Path(out) / f"{stem}.md").write_text(table(doc) + "\n")
        done = True
    finally:
        if done and cuda and a["graph_ring"]:
            # Destroying a process group whose communicator a CUDA graph has captured hung past the call's limit (2 x
            # H200, every row already written): the results are on disk, so every rank leaves without it.
            dist.barrier()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)
        dist.destroy_process_group()


def _profile(torch, dist, ring, rank, out, causal, tokens, placement, ql, kl, vl, no_transfer) -> None:
    """torch.profiler over 3 calls of the ring and 3 of its compute-only twin on this rank's rows, on rank 0 (the
    others run the same calls unprofiled, so the transfers still pair): the kernel table and a Chrome trace in OUT,
    where the time between kernels shows what the step costs beyond its math."""
    from torch.profiler import ProfilerActivity, profile

    o, lse = torch.empty_like(ql), torch.empty(ql.shape[:3], dtype=torch.float32, device=ql.device)
    for label, comm in (("ring", dist), ("compute", no_transfer)):
        def calls(n):
            for _ in range(n):
                torch.cuda.synchronize()
                dist.barrier()
                ring.ring_attention(ql, kl, vl, o, lse, causal, placement, comm)
            torch.cuda.synchronize()

        calls(2)  # warm
        if rank != 0:
            calls(3)
            continue
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            calls(3)
        stem = Path(out) / f"day19-profile-{tokens}-{'causal' if causal else 'full'}-{placement}-{label}"
        stem.parent.mkdir(parents=True, exist_ok=True)
        prof.export_chrome_trace(f"{stem}.json")
        table_text = prof.key_averages().table(sort_by="cuda_time_total", row_limit=25)
        Path(f"{stem}.txt").write_text(table_text)
        print(f"== profile {stem.name}\n{table_text}", flush=True)


def slug(device: str) -> str:
    """"NVIDIA H100 80GB HBM3" -> "h100"; CPU processes -> "cpu"."""
    if device.startswith("CPU"):
        return "cpu"
    words = [w for w in device.split() if w.upper() not in ("NVIDIA", "TESLA")]
    return (words[0] if words else device).lower()


def _spread(ms: list[float]) -> str:
    lo, hi = min(ms), max(ms)
    return f"{lo:.2f}" if hi - lo < 0.005 else f"{lo:.2f}–{hi:.2f}"


def table(doc: dict) -> str:
    # The graph columns where the run timed the ring replayed from a CUDA graph (--graph-ring; never on CPU processes)
    graph = all("ring_graph_share_of_ideal" in r[p] for r in doc["rows"] for p in PLACEMENTS)
    per = ["ring ms", "share of ideal", *(["graph: share"] if graph else []), "overlap efficiency",
           "compute ms by rank"]
    head = ["causal", "tokens", "one GPU ms"] + [f"{p}: {per[0]}" if i == 0 else c
                                                 for p in PLACEMENTS for i, c in enumerate(per)]
    lines = [f"{doc['world']} × {doc['device']} (torch {doc['torch']}, {doc.get('when', '')}): {doc['dtype']}, batch "
             f"{doc['batch']}, {doc['heads']} heads of d = {doc['dim']}; ms are medians of the slowest rank's time.",
             "", "| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for r in doc["rows"]:
        cells = [f"{'yes' if r['causal'] else 'no'}", f"{r['tokens']:,}", f"{r['single_ms']:.2f}"]
        for placement in PLACEMENTS:
            p = r[placement]
            cells += [f"{p['ring_ms']:.2f}", f"{100 * p['share_of_ideal']:.0f}%",
                      *([f"{100 * p['ring_graph_share_of_ideal']:.0f}%"] if graph else []),
                      f"{p['overlap_efficiency']:.2f}", _spread(p["compute_ms_per_rank"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def lesson_block(docs: list[dict]) -> str:
    """The README's block: one table per measured machine, fewest GPUs first."""
    intro = ("Measured by the instructors on the machines below. One GPU: SDPA's flash kernel over the whole sequence. "
             "Share of ideal: one GPU's time / (ranks × the ring's). Overlap efficiency: max(compute, comm) / ring, "
             "where compute is the same steps with no transfer and comm the transfers alone. Compute ms by rank: the "
             "fastest and the slowest rank's compute-only time, equal when the ranks do equal work. Graph: share: the "
             "same ring, transfers included, captured once into a CUDA graph per rank and replayed (no Python, no "
             "launches on the host).")
    return "\n\n".join([intro, *(table(d) for d in sorted(docs, key=lambda d: (d["world"], d["device"])))])


def insert(paths: list[Path], dry: bool = False) -> int:
    """Rewrites the README's day19-dist block from the saved runs (default: every measured/day19/dist-*.json); dry:
    prints the block instead."""
    paths = paths or sorted(MEASURED.glob("dist-*.json"))
    if not paths:
        print(f"no measured runs in {MEASURED.relative_to(ROOT)} (dist-*.json): run the script on a machine with "
              "two GPUs or more, and copy its day19-dist-*.json there", file=sys.stderr)
        return 2
    docs = []
    for p in paths:
        try:
            doc = json.loads(p.read_text())
        except (OSError, ValueError) as e:
            print(f"{p}: not a saved run ({e})", file=sys.stderr)
            return 2
        if "world" in doc and "rows" in doc:  # measured/day19 also keeps the graded check's record (dist-check-*)
            docs.append(doc)
    if dry:
        print(lesson_block(docs))
        return 0
    sys.path.insert(0, str(ROOT / "scripts"))
    from update_readmes import replace_block

    return 0 if replace_block(ROOT / "days" / "day19" / "README.md", BLOCK, lesson_block(docs)) else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", nargs="?", type=Path)
    p.add_argument("--insert", type=Path, nargs="*", help="saved runs (default: measured/day19/dist-*.json): write "
                                                          "their tables into days/day19/README.md")
    p.add_argument("--print", action="store_true", help="with --insert: print the block instead of writing it")
    p.add_argument("--cpu", action="store_true", help="CPU processes over gloo (a smoke run of the script itself)")
    p.add_argument("--world", type=int, help="processes (default: the GPUs visible, or 2 with --cpu)")
    p.add_argument("--tokens", type=int, nargs="+", default=[4096, 8192, 32768],
                   help="sequence lengths, each a multiple of 2 x the processes")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16"])
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--graph-ring", action="store_true",
                   help="also time the whole ring (transfers included) replayed from a CUDA graph on each rank")
    p.add_argument("--profile", type=int, nargs="*", default=[],
                   help="token counts to profile (torch.profiler on rank 0: kernel table and Chrome trace in OUT)")
    a = p.parse_args(argv)
    if a.insert is not None:
        return insert(a.insert, dry=a.print)
    if a.out is None:
        p.error("give an output folder (or --insert saved runs)")
    if a.cpu and a.profile:
        p.error("--profile profiles the GPU's kernels: it needs GPU processes, not --cpu")
    if a.cpu and a.graph_ring:
        p.error("--graph-ring captures CUDA graphs: it needs GPU processes, not --cpu")
    import torch
    import torch.multiprocessing as mp

    world = a.world or (2 if a.cpu else torch.cuda.device_count())
    if not a.cpu and world < 2:
        print(f"needs two GPUs or more (this machine has {torch.cuda.device_count()}); --cpu runs a smoke test",
              file=sys.stderr)
        return 2
    bad = [t for t in a.tokens if t % (2 * world)]
    if bad:
        p.error(f"--tokens {bad}: each must be a multiple of 2 x {world} processes (two equal chunks per rank)")
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(_worker, args=(world, f"file://{tmp}/rendezvous", vars(a), str(a.out)), nprocs=world, join=True)
    for md in sorted(a.out.glob(f"day19-dist-*x{world}.md")):
        print(md.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
