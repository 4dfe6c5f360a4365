"""Day 19's graded ring across processes (`ring_dist`), checked as a student's machine checks it: the solution, the
released stub and each known-wrong ring of tests/known_wrong.yaml (the solution with its planted edits), each by
`grader check day19 --exercise ring_dist` in a folder of its own, with the verdict it must give.

    python3 scripts/lessons/day19_dist_check.py OUT_DIR          # on a machine with two GPUs or more (NCCL)
    python3 scripts/lessons/day19_dist_check.py OUT_DIR --cpu    # CPU processes over gloo (the runner, in-process)

Prints one line per check (what it is, the status, the first failed case's message, whether that is the expected
verdict) and writes OUT_DIR/day19-dist-check.json. Exit 0 when every verdict is the expected one, 1 otherwise.
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
EXERCISE = "ring_dist"


def _checks() -> list[dict]:
    """(name, folder maker, --case filters, what must come out) for the solution, the stub and each known-wrong."""
    import yaml

    out = [{"name": "solution", "source": "solutions", "expect": {"status": "pass"}},
           {"name": "stub", "source": "days", "cases": ["fp32 1x2x40x64"], "expect": {"status": "not_implemented"}}]
    for bug in yaml.safe_load((ROOT / "tests" / "known_wrong.yaml").read_text()):
        if bug.get("day") == "day19" and bug.get("exercise") == EXERCISE:
            want = bug["category"] if isinstance(bug["category"], list) else [bug["category"]]
            out.append({"name": bug["name"], "source": "solutions", "edits": bug.get("edits") or [bug],
                        "cases": bug.get("cases"), "expect": {"status": "fail", "category": want,
                                                              "message": bug["message"]}})
    return out


def _folder(check: dict, tmp: Path) -> Path:
    src = tmp / check["name"] / "day19"
    shutil.copytree(ROOT / check["source"] / "day19", src)
    for edit in check.get("edits", []):
        f = src / edit["file"]
        text = f.read_text()
        if edit["find"] not in text:
            raise SystemExit(f"{check['name']}: the text to replace is no longer in the solution: {edit['find']!r}")
        f.write_text(text.replace(edit["find"], edit["replace"]))
    return src


def _run_cli(src: Path, cases: list[str] | None, tmp: Path) -> dict:
    out = tmp / f"{src.parent.name}.json"
    args = [sys.executable, "-m", "grader", "check", "day19", "--dir", str(src), "--exercise", EXERCISE,
            "--correctness-only", "--seed", "7", "--json", str(out)]
    args += [a for c in cases or [] for a in ("--case", c)]
    r = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600)
    if not out.exists():
        return {"status": "no result", "exit": r.returncode, "cases": [], "message": (r.stdout + r.stderr)[-2000:]}
    ex = json.loads(out.read_text())["exercises"][0]
    return {**ex, "exit": r.returncode}


def _run_cpu(src: Path, cases: list[str] | None) -> dict:
    sys.path.insert(0, str(ROOT))
    from grader.check.job import make_job
    from grader.check.runner import run_job
    from grader.course import load_course
    from grader.verdicts import exit_code

    course = load_course(ROOT / "course.yaml")
    day = course.day("day19")
    ex = next(e for e in day.exercises if e.name == EXERCISE)
    job = make_job(course=course, root=ROOT, day=day, ex=ex, src_dir=src, seed=7, device="cpu", cases=cases,
                   correctness_only=True)
    res = run_job(job, variant=f"check-{src.parent.name}", correctness_only=True)
    return {**res.as_dict(), "exit": exit_code([res.status])}


def verdict_ok(got: dict, expect: dict) -> bool:
    if got["status"] != expect["status"]:
        return False
    if "category" not in expect:
        return True
    hits = [c for c in got["cases"] if not c["ok"] and c["category"] in expect["category"]]
    return bool(hits) and all(re.search(expect["message"], c["message"]) for c in hits)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path)
    p.add_argument("--cpu", action="store_true", help="CPU processes over gloo, through the runner in this process")
    p.add_argument("--only", nargs="+", help="these checks only (solution, stub, or a known-wrong's name)")
    a = p.parse_args(argv)
    checks = [c for c in _checks() if not a.only or c["name"] in a.only]
    unknown = sorted(set(a.only or []) - {c["name"] for c in _checks()})
    if unknown:
        p.error(f"no check named {', '.join(unknown)} (there are: {', '.join(c['name'] for c in _checks())})")
    a.out.mkdir(parents=True, exist_ok=True)
    rows, all_ok = [], True
    with tempfile.TemporaryDirectory() as tmp:
        for check in checks:
            src = _folder(check, Path(tmp))
            got = _run_cpu(src, check.get("cases")) if a.cpu else _run_cli(src, check.get("cases"), Path(tmp))
            ok = verdict_ok(got, check["expect"])
            all_ok &= ok
            first = next((c for c in got["cases"] if not c["ok"]), None)
            said = f"{first['dtype']} {first['label']}: {first['message']}" if first else got.get("message", "")
            rows.append({"check": check["name"], "status": got["status"], "exit": got["exit"], "said": said,
                         "cases": len(got["cases"]), "gpu": (got.get("info") or {}).get("gpu"),
                         "expected": check["expect"], "as_expected": ok})
            print(f"{'ok ' if ok else 'BAD'} {check['name']}: {got['status']} (exit {got['exit']}, "
                  f"{len(got['cases'])} cases) {said}", flush=True)
    (a.out / "day19-dist-check.json").write_text(json.dumps({"checks": rows}, indent=1))
    print(f"{sum(r['as_expected'] for r in rows)} of {len(rows)} verdicts as expected")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
