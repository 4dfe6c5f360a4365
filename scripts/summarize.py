"""The short table printed last by scripts/device_run.sh, and one results.json bundling every day's check."""
import json
import sys
import time
from pathlib import Path


def main():
    log_dir, out = Path(sys.argv[1]), Path(sys.argv[2])
    bundle = {}
    for f in sorted(log_dir.glob("day*.json")):
        bundle[f.stem] = json.loads(f.read_text())
        bundle[f.stem]["date"] = time.strftime("%Y-%m-%d")
    out.write_text(json.dumps(bundle, indent=1))
    print(f"{'day':5} {'status':8} {'dtype':5} {'shape':>12} {'ok':>5} {'us':>9} {'GB/s':>7} {'%copy':>6} "
          f"{'vs base':>8} {'vs torch':>8}")
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
                if "time" not in c:
                    print(f"{day:5} {ex['status']:8} {c['dtype']:5} {c['label']:>12} {ok[0]:>2}/{ok[1]:<2} "
                          f"{c['category']}")
                    continue
                print(f"{day:5} {ex['status']:8} {c['dtype']:5} {c['label']:>12} {ok[0]:>2}/{ok[1]:<2} "
                      f"{c['time']['median_ms'] * 1e3:9.1f} {c.get('gbps', 0):7.0f} {c.get('pct_of_copy', 0):6.0%} "
                      f"{c['speedup']:7.2f}x {c['vs_library']:7.2f}x")
            sp = ex.get("speedup")
            print(f"{day:5} => {ex['status'].upper()}: geomean speedup "
                  f"{'-' if sp is None else f'{sp:.2f}x'} (threshold {ex['threshold']}x)")


if __name__ == "__main__":
    main()
