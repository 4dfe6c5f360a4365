"""Day 20's story table: each version of the key-tile walk, what it changed, and what it measured, from saved
`grader check day20 --json` runs (trimmed into measured/day20/story-<gpu>.json). Each figure is a ratio taken in its
own run against SDPA's backward timed in that run, so rows from different runs compare through those ratios.

    python3 scripts/lessons/day20_story.py                 # print the table
    python3 scripts/lessons/day20_story.py --insert        # write it into days/day20/README.md (the day20-story block)
    python3 scripts/lessons/day20_story.py --add RUN.json --version 3 --commit abc1234 --change "..."
                                                   # append a version from a `grader check day20 --json` file
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "measured" / "day20" / "story-h100.json"
SHAPES = ("4x16x4096x128", "4x16x4096x128 causal", "4x16x4096x64", "4x16x1024x128")


def table(data: dict) -> str:
    # How far bf16 is from fp16 at the same case, over every run: the table shows fp16 only.
    rates = {(i, c["label"], c["dtype"]): c["tflops"] for i, r in enumerate(data["runs"]) for c in r["cases"]}
    gap = max((abs(t / rates[(i, lab, "fp16")] - 1) for (i, lab, dt), t in rates.items()
               if dt == "bf16" and (i, lab, "fp16") in rates), default=0.0)
    n_cases = {len(r["cases"]) for r in data["runs"]}
    dates = sorted({r.get("date", data["date"]) for r in data["runs"]})
    when = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
    lines = [f"Measured on an {data['gpu']} (torch {data['torch']}, {when}), `attention_bwd_tc`, fp16 "
             f"(bf16 within {100 * gap:.0f} %); TFLOP/s and × SDPA's FlashAttention-2 backward, timed in the same "
             "run.", "",
             "| version | change | " + " | ".join(SHAPES)
             + f" | geomean × SDPA flash (all {'/'.join(map(str, sorted(n_cases)))} cases) |",
             "|---|---|" + "---:|" * (len(SHAPES) + 1)]
    for run in data["runs"]:
        by = {c["label"]: c for c in run["cases"] if c["dtype"] == "fp16"}
        cells = [f"{by[s]['tflops']:.0f} ({by[s]['vs_library']:.2f}×)" if s in by else "—" for s in SHAPES]
        ratios = [c["vs_library"] for c in run["cases"]]
        geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        lines.append(f"| {run['version']} (`{run['commit']}`) | {run['change']} | " + " | ".join(cells)
                     + f" | {geo:.2f}× |")
    return "\n".join(lines)


def trim(check: dict, exercise: str) -> list[dict]:
    """The benchmark cases of one exercise in a `grader check --json` result, reduced to what the table reads."""
    ex = next((e for e in check["exercises"] if e["exercise"] == exercise), None)
    if ex is None:
        raise SystemExit(f"{exercise} is not in that result (it holds {[e['exercise'] for e in check['exercises']]})")
    keep = ("dtype", "label", "tflops", "vs_library", "pct_of_ceiling")
    cases = [{k: c[k] for k in keep} for c in ex["cases"] if c.get("kind") == "benchmark" and c.get("tflops")]
    if not cases:
        raise SystemExit(f"{exercise} has no timed cases in that result: was it run with --correctness-only?")
    return cases


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--insert", action="store_true", help="write the table into days/day20/README.md")
    p.add_argument("--add", type=Path, help="a `grader check day20 --json` file whose timings become a new version")
    p.add_argument("--exercise", default="attention_bwd_tc")
    p.add_argument("--version")
    p.add_argument("--commit")
    p.add_argument("--change")
    p.add_argument("--date", default=datetime.date.today().isoformat(), help="of the run (YYYY-MM-DD)")
    a = p.parse_args()
    if a.add:
        if not (a.version and a.commit and a.change):
            p.error("--add needs --version, --commit and --change")
        data = json.loads(DATA.read_text())
        data["runs"] = [r for r in data["runs"] if r["version"] != a.version] + [
            {"version": a.version, "change": a.change, "commit": a.commit, "exercise": a.exercise,
             "date": a.date,
             "cases": trim(json.loads(a.add.read_text()), a.exercise)}]
        DATA.write_text(json.dumps(data, indent=1) + "\n")
    body = table(json.loads(DATA.read_text()))
    if not a.insert:
        print(body)
        return 0
    sys.path.insert(0, str(ROOT / "scripts"))
    from update_readmes import replace_block

    return 0 if replace_block(ROOT / "days" / "day20" / "README.md", "day20-story", body) else 1


if __name__ == "__main__":
    sys.exit(main())
