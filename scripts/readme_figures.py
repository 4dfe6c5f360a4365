#!/usr/bin/env python3
"""The README's times, measured: `grader check day01` cold (empty state, nothing built or cached) and unchanged,
`grader doctor`, and `grader site build`, each run as a student runs it (a new process) on this machine.

    python3 scripts/readme_figures.py [--dry-run]
    python3 scripts/readme_figures.py --merge ROWS.json   # rows measured elsewhere (a GPU machine's run)
    python3 scripts/readme_figures.py --watch WATCH.json  # also the day03 loop of scripts/watch_bench.py --out

Each run replaces this machine's row in measured/readme-figures.json (rows of other machines are kept, so a GPU
machine's figures and a CPU machine's sit side by side) and rewrites the block of README.md between the
`readme-figures` markers from that file. Nothing else in the README may state a time or size of its own.
"""
from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "measured" / "readme-figures.json"
BEGIN, END = "<!-- readme-figures: begin -->", "<!-- readme-figures: end -->"
FIGURES = [  # key, what the README calls it
    ("doctor_s", "`grader doctor`"),
    ("check_cold_s", "`grader check day01`, cold (nothing built or cached)"),
    ("check_warm_s", "`grader check day01` again, unchanged"),
    ("site_build_s", "`grader site build`"),
    ("watch_recheck_s", "`grader check day03` again, unchanged (median)"),
    ("watch_edit_s", "`grader watch day03`: a one-line kernel edit saved → verdict (median)"),
]
WATCH_STEPS = {"unchanged grader check": "watch_recheck_s", "watch: edit -> verdict line": "watch_edit_s"}


def machine() -> tuple[str, str]:
    """(key, description) of this machine: its GPU if torch sees one, else its CPU and core count."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        import torch

        tv = torch.__version__
        gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        tv, gpu = "none", None
    nvcc = shutil.which("nvcc")
    rel = "none"
    if nvcc:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
        rel = (re.findall(r"release ([\d.]+)", out) or ["?"])[0]
    if gpu:
        return gpu, f"{gpu}, {cores} CPU cores, torch {tv}, nvcc {rel}"
    return f"cpu-{cores}", f"no GPU (compile-only mode), {cores} cores of {cpu}, torch {tv}, nvcc {rel}"


def timed(args: list[str], env: dict, ok: tuple[int, ...] = (0,)) -> tuple[float, int]:
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "grader", *args], cwd=ROOT, env=env, capture_output=True, text=True)
    secs = time.perf_counter() - t0
    if p.returncode not in ok:
        raise SystemExit(f"`grader {' '.join(args)}` exited {p.returncode}, nothing written:\n"
                         f"{(p.stdout + p.stderr)[-3000:]}")
    return secs, p.returncode


def measure() -> dict:
    with tempfile.TemporaryDirectory() as state:
        # An empty state folder: a student's first check on a fresh clone (GRADER_STATE keeps .grader/ untouched).
        env = {**os.environ, "GRADER_STATE": state,
               "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        doctor, _ = timed(["doctor"], env, ok=(0, 2))
        cold, code = timed(["check", "day01"], env, ok=(0, 1, 2))  # the stub: "not implemented" (exit 1)
        warm, _ = timed(["check", "day01"], env, ok=(code,))
        row = {"doctor_s": doctor, "check_cold_s": cold, "check_warm_s": warm}
        # The site is the instructor's (the `site` extra): a machine without MkDocs leaves its figure to another.
        if importlib.util.find_spec("mkdocs") is not None:
            row["site_build_s"], _ = timed(["site", "build", "--out", str(Path(state) / "site")], env)
    return row


def watch_figures(doc: dict) -> dict:
    """The medians of watch_bench's steps that the README shows (a step with no measurement is left out)."""
    return {WATCH_STEPS[st["name"]]: statistics.median(st["seconds"]) for st in doc["steps"]
            if st["name"] in WATCH_STEPS and st["seconds"]}


def block(rows: dict) -> str:
    keys = sorted(rows)
    head = "| | " + " | ".join(rows[k]["machine"] for k in keys) + " |"
    lines = [BEGIN, "<!-- written by scripts/readme_figures.py from measured/readme-figures.json: do not edit -->",
             "", head, "|---|" + "---|" * len(keys)]
    for key, label in FIGURES:
        cells = [f"{rows[k][key]:.1f} s" if key in rows[k] else "-" for k in keys]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines.append("| measured on | " + " | ".join(rows[k]["date"] for k in keys) + " |")
    return "\n".join(lines + ["", END])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dry-run", action="store_true", help="print the figures, write nothing")
    ap.add_argument("--merge", type=Path, metavar="ROWS.json", help="measure nothing: take the machines' rows of "
                    "another run's measured/readme-figures.json (e.g. from scripts/device_run.sh README_FIGURES=1)")
    ap.add_argument("--watch", type=Path, metavar="WATCH.json", help="add the medians of scripts/watch_bench.py's "
                    "table (its watch_bench.json, run on this machine) to this machine's row")
    args = ap.parse_args()
    rows = json.loads(DATA.read_text()) if DATA.is_file() else {}
    if args.merge:
        rows.update(json.loads(args.merge.read_text()))
    else:
        key, desc = machine()
        row = {"machine": desc, "date": datetime.date.today().isoformat(), **measure()}
        if args.watch:
            row.update(watch_figures(json.loads(args.watch.read_text())))
        print(json.dumps(row, indent=1))
        if args.dry_run:
            return 0
        rows[key] = row
    DATA.write_text(json.dumps(rows, indent=1) + "\n")
    readme = (ROOT / "README.md").read_text()
    if BEGIN not in readme or END not in readme:
        raise SystemExit(f"README.md has no {BEGIN} … {END} block to write into")
    start, end = readme.index(BEGIN), readme.index(END) + len(END)
    (ROOT / "README.md").write_text(readme[:start] + block(rows) + readme[end:])
    print(f"wrote {DATA.relative_to(ROOT)} and README.md's figures ({len(rows)} machine(s))")
    return 0


if __name__ == "__main__":
    sys.exit(main())
