"""Wall time of `grader check` on a copy of a day's solution: cold (empty build folder), unchanged, and after
editing only the kernel file. Targets (issue 2): cold <= 30 s, kernel edit <= 10 s, unchanged <= 5 s."""
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def check(d: Path, day: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "grader", "check", day, "--dir", str(d), "--seed", "3"], cwd=ROOT,
                       capture_output=True, text=True)
    return time.perf_counter() - t0, p.returncode


def main():
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("log_dir", nargs="?", type=Path, help="where build_times.json goes (default: printed only)")
    log_dir = ap.parse_args().log_dir
    rows = []
    for day in ("day03", "day02"):
        with tempfile.TemporaryDirectory() as tmp:
            d = Path(tmp) / day
            shutil.copytree(ROOT / "solutions" / day, d)
            cold = check(d, day)
            same = check(d, day)
            with open(d / "softmax.cu", "a") as f:
                f.write("\n// an edit\n")
            edit = check(d, day)
        rows.append((day, cold, same, edit))
    print(f"{'day':6} {'cold s':>8} {'unchanged s':>12} {'kernel edit s':>14}  (exit codes)")
    for day, c, s, e in rows:
        print(f"{day:6} {c[0]:8.1f} {s[0]:12.1f} {e[0]:14.1f}  ({c[1]}, {s[1]}, {e[1]})")
    if log_dir:
        (log_dir / "build_times.json").write_text(str(rows))


if __name__ == "__main__":
    main()
