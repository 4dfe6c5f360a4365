"""What the sandbox costs: `grader check DAY --solution` with and without it, timed, on a GPU machine, and whether
the verdicts agree.

    python3 scripts/sandbox_overhead.py [DAY ...] [--correctness-only] [--json FILE]

Each mode gets a state folder of its own ($GRADER_STATE), empty at first: the first check of each is cold (every
build, the baseline's included, made from nothing; in the sandbox they go to the submission's own state), the
second warm (the builds found). The runs alternate (open cold, sandboxed cold, open warm, sandboxed warm), so that
a drift of the machine falls on both. Exit 1 when a status differs between the modes."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODES = {"open": "--no-sandbox", "sandbox": "--sandbox"}


def check(day: str, mode: str, state: Path, timed: bool) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        cmd = [sys.executable, "-m", "grader", "check", day, "--solution", "--seed", "7", MODES[mode], "--json",
               str(out), *([] if timed else ["--correctness-only"])]
        t0 = time.perf_counter()
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True,
                           env={**os.environ, "GRADER_STATE": str(state)})
        seconds = time.perf_counter() - t0
        doc = json.loads(out.read_text()) if out.exists() else {"exercises": []}
    return {"seconds": round(seconds, 1), "exit": p.returncode,
            "statuses": {e["exercise"]: e["status"] for e in doc["exercises"]},
            "speedups": {e["exercise"]: e.get("speedup") for e in doc["exercises"]},
            "tail": "" if p.returncode == 0 else (p.stdout + p.stderr)[-1500:]}


def main() -> int:
    a = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    a.add_argument("days", nargs="*", default=["day01", "day05"])
    a.add_argument("--correctness-only", action="store_true", help="check without timing")
    a.add_argument("--json", help="also write the rows here")
    args = a.parse_args()
    rows, differ = [], []
    for day in args.days:
        with tempfile.TemporaryDirectory() as tmp:
            states = {m: Path(tmp) / m for m in MODES}
            runs = {(m, k): None for k in ("cold", "warm") for m in MODES}
            for k in ("cold", "warm"):
                for m in MODES:
                    runs[(m, k)] = check(day, m, states[m], not args.correctness_only)
        for k in ("cold", "warm"):
            o, s = runs[("open", k)], runs[("sandbox", k)]
            rows.append({"day": day, "run": k, "open_s": o["seconds"], "sandbox_s": s["seconds"],
                         "overhead_s": round(s["seconds"] - o["seconds"], 1), "open": o, "sandbox": s})
            if o["statuses"] != s["statuses"] or o["exit"] != s["exit"]:
                differ.append((day, k, o["statuses"], s["statuses"], s["tail"] or o["tail"]))
    print(f"{'day':6} {'run':5} {'open s':>8} {'sandbox s':>10} {'overhead s':>11}  statuses (open | sandbox)")
    for r in rows:
        same = r["open"]["statuses"] == r["sandbox"]["statuses"]
        print(f"{r['day']:6} {r['run']:5} {r['open_s']:8.1f} {r['sandbox_s']:10.1f} {r['overhead_s']:11.1f}  "
              f"{'same' if same else 'DIFFER'}: {sorted(set(r['open']['statuses'].values()))}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    for day, k, o, s, tail in differ:
        print(f"\n{day} ({k}): open {o}, sandbox {s}\n{tail}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
