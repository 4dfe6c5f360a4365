"""Every known-wrong kernel's error map (issue 66's evidence): for each entry of tests/known_wrong.yaml, its day's
solution with the bug planted (tests/known_wrong.py: the same copy, `uses:` folders, edits and check arguments as
tests/gpu/test_days_gpu.py), `grader check --json`, and one table row: the day, the name, the planted bug, the
failing case, its category and the pattern its error map names. Needs a GPU.

    python3 scripts/error_maps.py --out maps/                 # every wrong-output kernel this machine can run
    python3 scripts/error_maps.py --out maps/ --day day07     # one day (repeatable); -k SUBSTRING on the names

Writes into --out: <day>-<name>.json (the check's result), .png and .txt (the map of the failing case whose map says the most, as
a picture and as the terminal draws it), table.md (the table) and table.json (its rows). A kernel whose result is
already in --out is not checked again (--again does), so a run cut off by a time limit goes on where it stopped;
--budget-s stops starting new checks after that many seconds and prints the table of what is done. Builds go into
--state (default: --out/state), kept between runs.

The GPU suite keeps its own known-wrong checks' results for this table (the same arguments and seed): with
GRADER_KEEP_RESULTS=DIR, tests/gpu/test_days_gpu.py copies each into DIR as <day>-<name>.json, and
`error_maps.py --out DIR --rederive` then makes the table and pictures from them, checking nothing again.

    python3 scripts/error_maps.py --out maps/ --rederive     # no GPU: the detectors and the choice of map run again

--rederive checks nothing: it runs the detectors of this tree again on the cell grids the kept results recorded, and
chooses each kernel's map again, so a change to the detectors or the choice is seen on the last GPU run's maps."""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.check import error_map  # noqa: E402
from grader.verdicts import Category, Status  # noqa: E402
from tests.known_wrong import KNOWN_WRONG, bug_id, check_args, check_env, plant, skip_reason  # noqa: E402


def planted(bug: dict) -> str:
    """The bug in a few words: its edits' replacement text, shortened."""
    edits = bug.get("edits") or [bug]
    text = " / ".join(" ".join(e["replace"].split()) for e in edits)
    return text if len(text) <= 70 else text[:69] + "…"


def first_failure(doc: dict) -> dict | None:
    """The failing case of the check whose error map says the most (error_map.choose, as the report's), else its
    first failing case at all."""
    cases = [c for ex in doc.get("exercises", []) for c in ex.get("cases", [])
             if not c.get("ok") and c.get("category") not in Category.NOT_COUNTED]
    return error_map.choose(cases) or (cases[0] if cases else None)


# The categories of a wrong output (compare()'s): only these have a map. A kernel expected to fail otherwise (a crash,
# a hang, an exploit caught by the integrity checks, opcheck) is listed without a check unless --all.
MAPPED = {Category.MISMATCH, Category.UNWRITTEN, Category.NONFINITE}


_ONLY_ROWS = re.compile(r"only rows (.+) are wrong: (\d+) of the (\d+) rows, all among the (\d+) rows ")


def _recorded_properties(emap: dict) -> list:
    """The rows' properties the map recorded; for a map written before it recorded them, those its probe_rows
    sentence names ("only rows P are wrong: BAD of the N rows, all among the HAVE rows"; every wrong row has P
    there, so BAD of them are wrong). A map that named no probe_rows then gives none: none that the old detector
    could name, and the new one is no looser."""
    if "properties" in emap:
        return emap["properties"]
    found = _ONLY_ROWS.match(emap.get("pattern_text") or "") if emap.get("pattern") == "probe_rows" else None
    if not found:
        return []
    what, bad, n, have = found[1], int(found[2]), int(found[3]), int(found[4])
    return [[what, have, bad, n, bad]]


def rederive(doc: dict) -> dict:
    """The result with every recorded map's pattern found again by this tree's detectors (in place)."""
    for ex in doc.get("exercises", []):
        for c in ex.get("cases", []):
            for holder in [c, *c.get("checks", [])]:
                emap = holder.get("error_map")
                if emap:
                    emap["pattern"], emap["pattern_text"] = error_map.detect(emap, _recorded_properties(emap))
                    holder["pattern"] = emap["pattern"]
                    # the message as compare() would write it now: the old pattern's sentence out, the new one in
                    message = (holder.get("message") or "").split("; pattern ")[0]
                    holder["message"] = message + (f"; pattern {emap['pattern']}: {emap['pattern_text']}"
                                                   if emap["pattern"] else "")
    return doc


def run_one(bug: dict, out: Path, state: Path, again: bool, every: bool = False, rederiving: bool = False) -> dict:
    name = bug_id(bug)
    result = out / f"{name}.json"
    want = bug["category"] if isinstance(bug["category"], list) else [bug["category"]]
    row = {"day": bug["day"], "name": bug["name"], "planted": planted(bug), "expected": want,
           "expected_pattern": bug.get("pattern")}
    if not every and not MAPPED & set(want):
        return {**row, "skipped": f"fails as {', '.join(want)}: no output compared wrong, so no map (--all checks it)"}
    if why := skip_reason(bug):
        return {**row, "skipped": why}
    if (again and not rederiving) or not result.exists():
        if rederiving:
            return {**row, "error": "no kept result to run the detectors on"}
        import torch

        if not torch.cuda.is_available():
            return {**row, "error": "no CUDA GPU here: the known-wrong kernels run on a GPU machine"}
        with tempfile.TemporaryDirectory(prefix="error-map-") as tmp:
            src = plant(bug, Path(tmp))
            cmd = [sys.executable, "-m", "grader", "check", *check_args(bug, src), "--seed", "7", "--json", str(result)]
            cmd += [] if bug.get("timed") else ["--correctness-only"]
            # no warm worker: the checks run side by side, each in processes of its own (as `grader grade`'s do)
            env = {**os.environ, **check_env(bug), "GRADER_STATE": str(state), "GRADER_RESIDENT": "0"}
            t0 = time.perf_counter()
            try:
                r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
            except subprocess.TimeoutExpired:
                return {**row, "error": "the check ran past 900 s"}
            (out / f"{name}.log").write_text(r.stdout + r.stderr)
            row["seconds"] = round(time.perf_counter() - t0, 1)
    try:
        doc = json.loads(result.read_text())
    except (OSError, ValueError):
        return {**row, "error": f"no result (see {name}.log)"}
    if rederiving:
        doc = rederive(doc)
    c = first_failure(doc)
    if c is None:
        # an exercise that could not run here (a missing package, no such GPU) says why rather than "no case failed"
        why = next((f"not run: {ex['message']}" for ex in doc.get("exercises", [])
                    if ex.get("status") in (Status.ENV_ERROR, Status.SKIPPED) and ex.get("message")), "no case failed")
        return {**row, "error": why}
    emap = c.get("error_map")
    row.update(case=f"{c.get('dtype')} {c.get('label')}", category=c.get("category"), pattern=c.get("pattern"),
               cells=error_map.cells(emap) if emap else None,
               output=(emap or {}).get("output"), pattern_text=(emap or {}).get("pattern_text"),
               strip=error_map.strip(emap) if emap else None)
    if emap:
        (out / f"{name}.txt").write_text("\n".join([f"{row['case']}: {c.get('message', '')}",
                                                    *error_map.text(emap)]) + "\n")
        try:
            error_map.png(emap, out / f"{name}.png")
        except ImportError as e:  # matplotlib is a dependency of the project; a bare machine may still lack it
            row["png"] = f"not drawn: {e}"
    return row


def table(rows: list[dict]) -> str:
    lines = ["| day | known-wrong kernel | planted bug | case (output) | category | pattern | map |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        if "skipped" in r or "error" in r:
            lines.append(f"| {r['day']} | {r['name']} | `{r['planted']}` | {r.get('skipped') or r.get('error')} |"
                         f" | | |")
            continue
        where = f"{r['case']}" + (f" ({r['output']})" if r.get("output") else "")
        pattern = r["pattern"] or "-"
        if r.get("expected_pattern") and r["expected_pattern"] != r["pattern"]:
            pattern += f" (known_wrong.yaml expects {r['expected_pattern']})"
        lines.append(f"| {r['day']} | {r['name']} | `{r['planted']}` | {where} | {r['category']} | "
                     f"{pattern} | `{r['strip'] or 'no map'}` |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--out", type=Path, required=True, help="folder for the results, maps and table")
    p.add_argument("--day", action="append", default=[], help="only this day's kernels (repeatable)")
    p.add_argument("-k", dest="match", default="", help="only kernels whose day-name contains this")
    p.add_argument("--jobs", type=int, default=4, help="checks at once (default 4; they share the GPU)")
    p.add_argument("--budget-s", type=float, default=0, help="start no check after this many seconds (0: no limit)")
    p.add_argument("--again", action="store_true", help="check again kernels whose result is already in --out")
    p.add_argument("--all", action="store_true", help="also the kernels expected to fail otherwise than by a wrong "
                                                      "output (crash, hang, exploit, opcheck)")
    p.add_argument("--rederive", action="store_true", help="check nothing: run the detectors and the choice of map "
                                                           "again on the grids the results in --out recorded")
    p.add_argument("--state", type=Path, help="the checks' $GRADER_STATE (builds kept between runs; default "
                                              "--out/state)")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    state = args.state or args.out / "state"
    bugs = [b for b in KNOWN_WRONG if (not args.day or b["day"] in args.day) and args.match in bug_id(b)]
    t0 = time.monotonic()

    def one(bug):
        if args.budget_s and time.monotonic() - t0 > args.budget_s:
            return None
        return run_one(bug, args.out, state, args.again, args.all, args.rederive)

    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        rows = [r for r in pool.map(one, bugs) if r is not None]
    text = table(rows)
    (args.out / "table.md").write_text(text)
    (args.out / "table.json").write_text(json.dumps(rows, indent=1))
    print(text, end="")
    done = sum("skipped" not in r and "error" not in r for r in rows)
    skipped = sum("skipped" in r for r in rows)
    named = sum(bool(r.get("pattern")) for r in rows)
    print(f"\n{done} of {len(bugs)} kernels checked, {skipped} not (said why), {len(bugs) - len(rows)} left for a "
          f"later run; {named} with a pattern named; maps in {args.out}")
    return 0 if len(rows) == len(bugs) else 3


if __name__ == "__main__":
    sys.exit(main())
