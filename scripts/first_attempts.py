"""Times the natural first attempts of tests/first_attempts.yaml against their exercises' bars: each is the day's
solution with the entry's edits, checked by `grader check --dir COPY --exercise EX` as a student's folder would be.
Prints one row per attempt (verdict, speedup, bar, whether that is what the entry expects) and exits 1 if any
attempt did not do what it expects or no longer applies. On a machine without a GPU the checks compile only, and
the table says so.

    python3 scripts/first_attempts.py [--day day02 ...] [--seed 1] [--json OUT.json]
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
ATTEMPTS = ROOT / "tests" / "first_attempts.yaml"


def load(days: list[str] | None = None) -> list[dict]:
    entries = yaml.safe_load(ATTEMPTS.read_text()) or []
    return [e for e in entries if not days or e["day"] in days]


def apply(entry: dict, dest: Path) -> str | None:
    """Copies the day's solution (and the folders its exercise `uses:`, where the build looks for them) under dest
    and applies the edits; returns why it could not, or None."""
    from grader.check.build import used_folders
    from grader.course import load_course

    day = load_course(ROOT / "course.yaml").day(entry["day"])
    ex = next(e for e in day.exercises if e.name == entry["exercise"])
    src = dest / entry["day"]
    shutil.copytree(ROOT / "solutions" / entry["day"], src)
    for used, folder in used_folders(ex, src).items():
        shutil.copytree(ROOT / "solutions" / used, folder)
    for edit in entry["edits"]:
        f = src / edit["file"]
        if "copy_of" in edit:  # a new file of the day's folder, a copy of another (a build copies .cuh/.h headers
            # beside its sources, never another day's .cu: the previous step's code goes in as a header)
            if f.exists() or not (src / edit["copy_of"]).is_file():
                return f"{edit['file']}: a copy must be a new file, of a file the solution has ({edit['copy_of']})"
            f.write_text((src / edit["copy_of"]).read_text())
            continue
        text = f.read_text()
        if text.count(edit["find"]) != 1:
            return f"{edit['file']}: the text to replace occurs {text.count(edit['find'])} times (must be once)"
        f.write_text(text.replace(edit["find"], edit["replace"]))
    return None


def as_expected(entry: dict, ex: dict) -> bool:
    """An attempt is measured against its bar, so it must be correct and timed; an entry's `fails_as: CATEGORY`
    says it fails before timing instead, and why (its `why`): then its first failed case must fail that way."""
    if "fails_as" in entry:
        failed = [c.get("category") for c in ex.get("cases", []) if c.get("ok") is False]
        return entry["expect"] == "fail" and ex["status"] == "fail" and failed[:1] == [entry["fails_as"]]
    return ex.get("speedup") is not None and (ex["status"] == "pass") == (entry["expect"] == "pass")


def run(entry: dict, seed: int) -> dict:
    row = {"name": entry["name"], "target": f"{entry['day']}.{entry['exercise']}", "expect": entry["expect"]}
    with tempfile.TemporaryDirectory(prefix="attempt-") as tmp:
        why = apply(entry, Path(tmp))
        if why:
            return {**row, "verdict": "stale", "as_expected": False, "note": why}
        out = Path(tmp) / "result.json"
        p = subprocess.run([sys.executable, "-m", "grader", "check", entry["day"], "--dir",
                            str(Path(tmp) / entry["day"]), "--exercise", entry["exercise"], "--seed", str(seed),
                            "--json", str(out)], cwd=ROOT, capture_output=True, text=True)
        data = json.loads(out.read_text()) if out.exists() else None
    ex = next((x for x in (data or {}).get("exercises", []) if x["exercise"] == entry["exercise"]), None)
    if ex is None:
        tail = (p.stdout + p.stderr).strip().splitlines()[-1:] or ["no output"]
        return {**row, "verdict": f"no result (exit {p.returncode})", "as_expected": False, "note": tail[0]}
    row.update(verdict=ex["status"], speedup=ex.get("speedup"), threshold=ex.get("threshold"))
    if ex["status"] == "no_gpu":  # it compiled; whether it passes needs a GPU
        row.update(verdict="compiled only", as_expected=None)
    else:
        row["as_expected"] = as_expected(entry, ex)
        if ex.get("speedup") is None:  # it failed before it was timed: the check's own words say why
            row["note"] = ((ex.get("message") or "").splitlines() or ["no message"])[0]
    return row


def table(rows: list[dict]) -> str:
    head = ["attempt", "exercise", "expect", "verdict", "speedup", "bar", "as expected"]
    body = [[r["name"], r["target"], r["expect"], r["verdict"],
             f"{r['speedup']:.2f}x" if r.get("speedup") is not None else "-",
             f"{r['threshold']:g}x" if r.get("threshold") is not None else "-",
             {True: "yes", False: "NO", None: "-"}[r["as_expected"]]] for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(line, widths)).rstrip() for line in [head, *body]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    notes = [f"{r['name']}: {r['note']}" for r in rows if r.get("note")]
    return "\n".join(lines + notes)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--day", nargs="*", help="only these days' attempts")
    p.add_argument("--name", nargs="*", help="only the attempts of these names")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", type=Path, help="also write the rows here (after each attempt, so a cut run keeps them)")
    a = p.parse_args(argv)
    entries = [e for e in load(a.day) if not a.name or e["name"] in a.name]
    if a.name:  # in the order named: a device call cut short keeps the rows it ran first
        entries.sort(key=lambda e: a.name.index(e["name"]))
    if a.name and len(entries) < len(set(a.name)):
        missing = sorted(set(a.name) - {e["name"] for e in entries})
        print(f"no attempt named {', '.join(missing)} in {ATTEMPTS.name}", file=sys.stderr)
        return 2
    rows = []
    for e in entries:
        rows.append(run(e, a.seed))
        print(f"{e['name']}: {rows[-1].get('verdict')} {rows[-1].get('speedup')}", flush=True)
        if a.json:
            a.json.write_text(json.dumps(rows, indent=1))
    print(table(rows))
    return 1 if any(r["as_expected"] is False for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
