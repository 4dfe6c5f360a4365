"""Day 19's measured tables, from the solution built the way `grader check` builds it:

1. Overlap: the ring (fence and acquire/release counters) against the same schedule with every shard already
   local (`ring_attention_local`), fp16, over sequence lengths and ring sizes. Overlap efficiency = local / ring:
   1.0 means the communication is hidden completely.
2. Catch rates: each protocol bug (the known-wrong kernels of tests/known_wrong.yaml, and the fence bugs the
   lesson discusses) built as a variant of the solution and run many times, plain and with the stress mode's
   jitter, on fresh inputs: how many runs gave wrong values.

    python3 scripts/lessons/day19_measure.py OUT_DIR             # writes OUT_DIR/day19.json and OUT_DIR/day19.md
    python3 scripts/lessons/day19_measure.py --insert day19.json  # regenerates the README's tables from a saved run
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from lesson_table import build_module  # noqa: E402

SOURCE = "ring_attention.cu"
# Variants for the catch-rate table: (name, exercise, what it breaks, find, replace). The known-wrong kernels'
# edits come first (read from tests/known_wrong.yaml so they cannot drift); these two weaken exercise 2.
EXTRA_BUGS = [
    ("release_relaxed", "ring_attention_acqrel", "AcqRelFlags::arrive with a relaxed fetch_add",
     "c.fetch_add(1u, cuda::memory_order_release);", "c.fetch_add(1u, cuda::memory_order_relaxed);"),
    ("block_scope", "ring_attention_acqrel", "AcqRelFlags with thread_scope_block (too narrow a scope)",
     "cuda::atomic_ref<unsigned, cuda::thread_scope_device>", "cuda::atomic_ref<unsigned, cuda::thread_scope_block>"),
]
KNOWN_WHAT = {  # the known-wrong kernels, as the table names them
    "ring_flag_before_data": "arrival on the successor's `full` before the copy (known-wrong)",
    "ring_overwrite_before_release": "no wait for the successor's `done` before overwriting its slot (known-wrong)",
    "ring_consumer_without_acquire": "AcqRelFlags::wait with a relaxed load (known-wrong)",
    "ring_arrive_without_fence": "FenceFlags::arrive without __threadfence() before the atomicAdd (known-wrong)",
    "ring_wait_without_fence": "FenceFlags::wait without __threadfence() after the spin (known-wrong)",
}
CATCH_SHAPES = [((1, 2, 256, 64), 4), ((2, 4, 512, 64), 8), ((1, 4, 1024, 128), 4)]


def _time_ms(torch, fn, reps: int = 20) -> float:
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[len(times) // 2]


def overlap(module, system=None) -> list[dict]:
    """`system`: the solution built with thread_scope_system in AcqRelFlags (the widest scope), timed beside."""
    import torch

    rows = []
    for (b, h, n, d) in [(2, 8, 1024, 128), (2, 8, 4096, 128), (1, 8, 16384, 128), (4, 16, 4096, 64)]:
        for ranks in (2, 4, 8):
            g = torch.Generator(device="cuda").manual_seed(n + ranks)
            q, k, v = (torch.randn((b, h, n, d), generator=g, device="cuda").half() for _ in range(3))
            o, lse = torch.empty_like(q), torch.empty((b, h, n), device="cuda")
            t = {}
            calls = [(name, getattr(module, name)) for name in ("ring_attention", "ring_attention_acqrel",
                                                                 "ring_attention_local")]
            if system is not None:
                calls.append(("system", system.ring_attention_acqrel))
            for name, f in calls:
                t[name] = _time_ms(torch, lambda: f(q, k, v, o, lse, False, ranks))  # noqa: B023 (called here)
            shard = -(-n // ranks)
            rows.append({"shape": [b, h, n, d], "ranks": ranks, "shard": shard,
                         "shard_mib": 2 * b * h * shard * d * 2 / 2**20,
                         "fence_ms": t["ring_attention"], "acqrel_ms": t["ring_attention_acqrel"],
                         "local_ms": t["ring_attention_local"],
                         "efficiency": t["ring_attention_local"] / t["ring_attention"],
                         "efficiency_acqrel": t["ring_attention_local"] / t["ring_attention_acqrel"],
                         **({"system_ms": t["system"]} if "system" in t else {})})
            print(rows[-1], flush=True)
    return rows


def catch_runs(src_dir: Path, exercise: str, runs: int) -> dict:
    """In a child process: build one variant, run it `runs` times plain and `runs` times with jitter."""
    import torch

    from grader.check.compare import compare, poison
    from tasks import attention

    fn = getattr(build_module(torch, "day19", exercise, src_dir), exercise)
    wrong = {"plain": 0, "jitter": 0}
    total = 0
    for shape, ranks in CATCH_SHAPES:
        for run in range(runs):
            g = torch.Generator(device="cuda").manual_seed(run * 7 + ranks)
            q, k, v = (torch.randn(shape, generator=g, device="cuda").half() for _ in range(3))
            ref_o, ref_lse = attention.reference(q, k, v, False)
            total += 1
            for mode, jitter in (("plain", 0), ("jitter", run + 1)):
                o, lse = torch.empty_like(q), torch.empty(shape[:3], device="cuda")
                poison(o)
                fn(q, k, v, o, lse, False, ranks, jitter)
                torch.cuda.synchronize()
                ok = compare(o, ref_o, atol=2e-4, rtol=2e-3, rel_l2=1e-3).ok and \
                    compare(lse, ref_lse, atol=2e-4, rtol=2e-3, rel_l2=1e-3).ok
                wrong[mode] += not ok
    return {"runs": total, **wrong}


def catch_rates(runs: int) -> list[dict]:
    import yaml

    known = [(b["name"], b["exercise"], KNOWN_WHAT.get(b["name"], b["name"]), b["find"], b["replace"])
             for b in yaml.safe_load((ROOT / "tests" / "known_wrong.yaml").read_text())
             if b["day"] == "day19" and b["category"] != ["crash", "timeout"]]
    bugs = known + EXTRA_BUGS
    work = Path(tempfile.mkdtemp(prefix="day19-bugs-"))
    procs = []
    for name, exercise, _, find, replace in bugs:
        d = work / name
        shutil.copytree(ROOT / "solutions" / "day19", d)
        text = (d / SOURCE).read_text()
        assert text.count(find) >= 1, f"{name}: the edit does not match the solution"
        (d / SOURCE).write_text(text.replace(find, replace))
        out = work / f"{name}.json"
        procs.append((name, exercise, out, subprocess.Popen(
            [sys.executable, __file__, "--catch", str(d), exercise, str(runs), str(out)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
    rows = []
    for name, exercise, out, p in procs:
        try:
            log, _ = p.communicate(timeout=400)
        except subprocess.TimeoutExpired:
            p.kill()
            log = "timed out"
        res = json.loads(out.read_text()) if out.exists() else {"error": log.strip().splitlines()[-1:]}
        what = next(w for n, _, w, _, _ in bugs if n == name) or name
        rows.append({"bug": name, "exercise": exercise, "what": what, **res})
        print(rows[-1], flush=True)
    return rows


def table(data: dict) -> str:
    gpu = data.get("gpu", "?")
    lines = [f"Overlap on the {gpu} (fp16, not causal; ms per call, medians; efficiency = local / ring):", "",
             "| B×H×N×d | R | shard rows | shard K+V | local | ring (fences) | ring (acq/rel) | acq/rel, system "
             "scope | efficiency |", "|---|---|---|---|---|---|---|---|---|"]
    for r in data["overlap"]:
        b, h, n, d = r["shape"]
        system = f"{r['system_ms']:.3f}" if "system_ms" in r else "-"
        lines.append(f"| {b}×{h}×{n}×{d} | {r['ranks']} | {r['shard']} | {r['shard_mib']:.1f} MiB | "
                     f"{r['local_ms']:.3f} | {r['fence_ms']:.3f} | {r['acqrel_ms']:.3f} | {system} | "
                     f"{r['efficiency']:.2f} / {r['efficiency_acqrel']:.2f} |")
    lines += ["", f"Protocol bugs caught (wrong runs of all runs, fresh fp16 inputs, shapes "
              f"{', '.join(f'{list(s)} R={r}' for s, r in CATCH_SHAPES)}):", "",
              "| bug | plain runs wrong | jittered runs wrong |", "|---|---|---|"]
    for r in data["catch"]:
        if "runs" in r:
            what = KNOWN_WHAT.get(r["bug"], r["what"])
            lines.append(f"| {what} | {r['plain']} of {r['runs']} | {r['jitter']} of {r['runs']} |")
        else:
            what = KNOWN_WHAT.get(r["bug"], r["what"])
            lines.append(f"| {what} | error: {r.get('error')} | |")
    return "\n".join(lines)


def insert(json_path: Path) -> None:
    data = json.loads(json_path.read_text())
    readme = ROOT / "days" / "day19" / "README.md"
    text = readme.read_text()
    block = re.compile(r"(<!-- day19-measured:begin -->\n).*?(\n<!-- day19-measured:end -->)", re.S)
    if not block.search(text):
        raise SystemExit(f"{readme}: no day19-measured block")
    readme.write_text(block.sub(lambda m: m.group(1) + table(data) + m.group(2), text))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", nargs="?", type=Path)
    p.add_argument("--insert", type=Path)
    p.add_argument("--catch", nargs=4, metavar=("DIR", "EXERCISE", "RUNS", "OUT"))
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--overlap-only", action="store_true", help="skip the catch rates (keep a saved run's, --merge)")
    p.add_argument("--merge", type=Path, help="a saved day19.json whose catch rates to keep with --overlap-only")
    a = p.parse_args()
    if a.insert:
        insert(a.insert)
        return 0
    if a.catch:
        d, exercise, runs, out = a.catch
        Path(out).write_text(json.dumps(catch_runs(Path(d), exercise, int(runs))))
        return 0
    import torch

    module = build_module(torch, "day19", "ring_attention")
    wide = Path(tempfile.mkdtemp(prefix="day19-system-")) / "day19"
    shutil.copytree(ROOT / "solutions" / "day19", wide)
    text = (wide / SOURCE).read_text()
    (wide / SOURCE).write_text(text.replace("cuda::thread_scope_device", "cuda::thread_scope_system"))
    system = build_module(torch, "day19", "ring_attention_acqrel", wide)
    catch = json.loads(a.merge.read_text())["catch"] if a.overlap_only and a.merge else \
        ([] if a.overlap_only else catch_rates(a.runs))
    data = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "catch": catch,
            "overlap": overlap(module, system)}
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "day19.json").write_text(json.dumps(data, indent=1))
    (a.out / "day19.md").write_text(table(data) + "\n")
    print(table(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
