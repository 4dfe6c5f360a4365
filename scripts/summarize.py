"""The short table printed last by scripts/device_run.sh, and one results.json bundling every day's check."""
import json
import time
from pathlib import Path


def main():
    import argparse

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("log_dir", type=Path, help="the folder of the checks' dayNN.json")
    ap.add_argument("out", type=Path, help="the results.json to write")
    a = ap.parse_args()
    log_dir, out = a.log_dir, a.out
    bundle = {}
    for f in sorted(log_dir.glob("day*.json")):
        bundle[f.stem] = json.loads(f.read_text())
        bundle[f.stem]["date"] = time.strftime("%Y-%m-%d")
    out.write_text(json.dumps(bundle, indent=1))
    # rate: GB/s (memory-bound tasks) or TFLOP/s (compute-bound); peak: % of a copy of the same bytes, or of
    # the task's ceiling op (cuBLAS fp32 for matmul), both measured in the same run.
    print(f"{'day':5} {'exercise':18} {'status':8} {'dtype':5} {'shape':>14} {'ok':>5} {'us':>9} {'rate':>11} "
          f"{'%peak':>6} {'vs base':>8} {'vs lib':>8}")
    for day, data in bundle.items():
        for ex in data["exercises"]:
            corr = {}
            for c in ex["cases"]:
                if c["kind"] == "correctness":
                    a = corr.setdefault(c["dtype"], [0, 0])
                    a[0] += bool(c["ok"])
                    a[1] += 1
            for c in ex["cases"]:
                if c["kind"] != "benchmark":
                    continue
                ok = corr.get(c["dtype"], [0, 0])
                head = f"{day:5} {ex['exercise'][:18]:18} {ex['status']:8} {c['dtype']:5} {c['label']:>14} {ok[0]:>2}/{ok[1]:<2}"
                if "time" not in c:
                    print(f"{head} {c['category']}")
                    continue
                rate = f"{c['gbps']:6.0f} GB/s" if "gbps" in c else f"{c.get('tflops', 0):5.1f} TF/s"
                peak = c.get("pct_of_copy", c.get("pct_of_ceiling"))
                peak = "-" if peak is None else f"{peak:.0%}"
                print(f"{head} {c['time']['median_ms'] * 1e3:9.1f} {rate:>11} {peak:>6} "
                      f"{c['speedup']:7.2f}x {c['vs_library']:7.2f}x")
            sp = ex.get("speedup")
            if ex["threshold"] is None:  # untimed: the verdict is correctness (and the exercise's checks)
                print(f"{day:5} {ex['exercise']} => {ex['status'].upper()}: {ex['message']}")
            else:
                print(f"{day:5} {ex['exercise']} => {ex['status'].upper()}: geomean speedup "
                      f"{'-' if sp is None else f'{sp:.2f}x'} (threshold {ex['threshold']}x)")


if __name__ == "__main__":
    main()
