"""The GPU suite's record: from the per-test lines tests/conftest.py writes ($GRADER_TEST_TIMES), the test count,
outcomes, wall time and the slowest tests (with their build seconds where the test recorded them), printed as a
short table and written as JSON (scripts/device_run.sh copies it to $OUT/gpu-suite.json; committed as
measured/gpu-suite.json).

    python3 scripts/gpu_suite.py TIMES.jsonl --wall S --summary "LINE" --collected-ids IDS.txt \
        --workers N --alone-ids ALONE.txt --json OUT.json
    python3 scripts/gpu_suite.py --merge PART1.json PART2.json --json OUT.json
    python3 scripts/gpu_suite.py --unfinished PART1.json PART2.json >rerun.txt

With --collected-ids (the ids pytest collected, one a line; without it the count is unknown) the record names
the tests that did not finish (`unfinished`: cut off by the call's time limit, PYTEST_S). --unfinished prints those
of the parts given, less any a later part finished, one a line: the PYTEST_IDS file for a call that runs just them
(scripts/device_run.sh PYTEST_IDS=rerun.txt), whose record is then merged with the parts like another part.

With --workers (the run's xdist workers) and --alone-ids (its gpu_alone tests), the record of a run in one call
keeps the wall time that tests/gpu_schedule.py predicts from the run's own seconds beside the measured one, and the
start-up that the difference measures (`start_s`): tests/test_gpu_suite_wall.py predicts the next suite with them.

--merge: the records of one suite run in parts on one GPU (scripts/device_run.sh SUITE_PART=0/2, then 1/2, one
call each: a one-GPU lease's call is too short for the whole suite) as one record. The parts must be disjoint shards
of the same suite on the same GPU model; the wall time is their sum."""
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path


def gpu_name() -> str:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30).stdout.strip().splitlines()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{len(out)} x {out[0]}" if len(out) > 1 else (out[0] if out else "unknown")


def per_test(lines: list[dict]) -> dict[str, dict]:
    """id -> {outcome, seconds (setup + call + teardown), props} of each test that finished (ran its call, or was
    skipped); a failed phase fails the test. A test cut off mid-call left only its setup line: not counted."""
    ended = {ln["id"] for ln in lines if ln["when"] == "call" or ln["outcome"] != "passed"}
    tests: dict[str, dict] = {}
    for ln in (ln for ln in lines if ln["id"] in ended):
        t = tests.setdefault(ln["id"], {"outcome": "passed", "seconds": 0.0, "props": {}, "worker": ln.get("worker")})
        t["seconds"] += ln["seconds"]
        t["props"].update(ln.get("props") or {})
        if ln["outcome"] == "failed":
            t["outcome"] = "failed"
            t["message"] = ln.get("message", "")
        elif ln["outcome"] == "skipped" and t["outcome"] != "failed":
            t["outcome"] = "skipped"
    return tests


def record(lines: list[dict], *, wall_s: float, summary: str, collected: int | None, slowest: int = 15,
           collected_ids: list[str] | None = None, workers: int | None = None,
           alone_ids: list[str] | None = None) -> dict:
    tests = per_test(lines)
    unfinished = None
    if collected_ids is not None:
        collected = len(set(collected_ids))
        unfinished = sorted(set(collected_ids) - set(tests))
    counts = {k: sum(t["outcome"] == k for t in tests.values()) for k in ("passed", "failed", "skipped")}
    ranked = sorted(tests.items(), key=lambda kv: -kv[1]["seconds"])[:slowest]
    build = sum(float(t["props"].get("build_s", 0)) for t in tests.values())
    return {"gpu": gpu_name(), "date": time.strftime("%Y-%m-%d"), "collected": collected, "finished": len(tests),
            **counts, "wall_s": round(wall_s), "pytest_summary": summary,
            "test_seconds_total": round(sum(t["seconds"] for t in tests.values())),
            "build_seconds_total": round(build),
            "slowest": [{"id": i, "seconds": round(t["seconds"], 1), "outcome": t["outcome"],
                         **{k: t["props"][k] for k in ("build_s", "check_s") if k in t["props"]}}
                        for i, t in ranked],
            "failures": {i: t.get("message", "") for i, t in tests.items() if t["outcome"] == "failed"},
            # routes no test could run here (their package is absent from this Python): tests/gpu/test_days_gpu.py
            "untested": sorted({r for t in tests.values() for r in t["props"].get("absent_packages", [])}),
            # every test's seconds: tests/conftest.py starts the slowest first on the next run
            "seconds": {i: round(t["seconds"], 1) for i, t in sorted(tests.items())},
            **({} if unfinished is None else {"unfinished": unfinished}),
            **({} if workers is None else model(tests, wall_s, workers, alone_ids or []))}


def model(tests: dict[str, dict], wall_s: float, workers: int, alone_ids: list[str]) -> dict:
    """The one-call model's account of this run (tests/gpu_schedule.py): the wall time it predicts from the run's own
    seconds with its default start-up, and the start-up this run measured (the wall less the simulated phases)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.gpu_schedule import predict

    seconds = {i: t["seconds"] for i, t in tests.items()}
    alone = [i for i in alone_ids if i in seconds]
    p = predict(list(seconds), seconds, workers, alone)
    return {"workers": workers, "alone": sorted(alone), "predicted_wall_s": p["wall_s"],
            "start_s": round(max(0.0, wall_s - p["parallel_s"] - p["alone_s"]), 1)}


def merge(parts: list[dict]) -> dict:
    """One record from the records of disjoint parts of a suite (see the module's docstring)."""
    models = {p["gpu"] for p in parts}
    if len(models) > 1:
        raise SystemExit(f"the parts ran on different GPUs ({', '.join(sorted(models))}): one record per GPU model")
    seen: dict[str, int] = {}
    for k, p in enumerate(parts):
        for test in p.get("seconds", {}):
            if test in seen:
                raise SystemExit(f"{test} is in parts {seen[test] + 1} and {k + 1}: the parts must be disjoint shards")
            seen[test] = k
    out = {"gpu": parts[0]["gpu"], "date": max(p["date"] for p in parts)}
    for key in ("collected", "finished", "passed", "failed", "skipped", "wall_s", "test_seconds_total",
                "build_seconds_total"):
        values = [p.get(key) for p in parts]
        out[key] = None if any(v is None for v in values) else sum(values)
    if all("unfinished" in p for p in parts):
        # a part may be the rerun of tests others left unfinished: they count once, as finished
        out["unfinished"] = unfinished(parts)
        out["collected"] = len(seen) + len(out["unfinished"])
    out["pytest_summary"] = ";".join(p["pytest_summary"] for p in parts if p.get("pytest_summary"))
    slowest = sorted((s for p in parts for s in p.get("slowest", [])), key=lambda s: -s["seconds"])
    out["slowest"] = slowest[:max((len(p.get("slowest", [])) for p in parts), default=0)]
    out["failures"] = {i: m for p in parts for i, m in p.get("failures", {}).items()}
    out["untested"] = sorted({r for p in parts for r in p.get("untested", [])})
    out["seconds"] = dict(sorted((i, t) for p in parts for i, t in p.get("seconds", {}).items()))
    out["parts"] = len(parts)
    return out


def unfinished(parts: list[dict]) -> list[str]:
    """The tests some part collected and no part finished (see the module's docstring)."""
    done = {t for p in parts for t in p.get("seconds", {})}
    return sorted({t for p in parts for t in p.get("unfinished", [])} - done)


def show(rec: dict) -> None:
    print(f"GPU suite on {rec['gpu']}: {rec['passed']} passed, {rec['failed']} failed, {rec['skipped']} skipped of "
          f"{rec['collected'] or '?'} collected ({rec['finished']} finished) in {rec['wall_s']} s wall; "
          f"{rec['test_seconds_total']} s of test time, {rec['build_seconds_total']} s of it in builds")
    if "predicted_wall_s" in rec:
        print(f"  one-call model (tests/gpu_schedule.py, {rec['workers']} workers): {rec['predicted_wall_s']} s predicted "
              f"from these seconds; start-up measured {rec['start_s']} s")
    print(f"  {rec['pytest_summary']}")
    print(f"  {'seconds':>7} {'build':>6}  slowest tests")
    for s in rec["slowest"]:
        b = f"{s['build_s']:6.0f}" if "build_s" in s else f"{'-':>6}"
        print(f"  {s['seconds']:7.1f} {b}  {s['id']}{'' if s['outcome'] == 'passed' else '  ' + s['outcome'].upper()}")
    if rec.get("unfinished"):
        print(f"  NOT FINISHED ({len(rec['unfinished'])}, rerun them: --unfinished, then PYTEST_IDS): "
              + ", ".join(rec["unfinished"]))
    if rec.get("untested"):
        print(f"  untested here (package absent): {', '.join(rec['untested'])}")
    for i, m in rec["failures"].items():
        print(f"FAILED {i}\n{m[-1500:]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("times", type=Path, nargs="?")
    ap.add_argument("--merge", nargs="+", type=Path, metavar="PART.json",
                    help="merge the records of a suite's parts (no TIMES.jsonl)")
    ap.add_argument("--wall", type=float)
    ap.add_argument("--summary", default="")
    ap.add_argument("--collected-ids", type=Path, metavar="IDS.txt",
                    help="the collected test ids, one a line: the record names those that did not finish")
    ap.add_argument("--unfinished", nargs="+", type=Path, metavar="PART.json",
                    help="print the tests these parts left unfinished, one a line (for device_run.sh PYTEST_IDS)")
    ap.add_argument("--workers", type=int, help="the run's xdist workers (for the one-call model)")
    ap.add_argument("--alone-ids", type=Path, metavar="ALONE.txt", help="the run's gpu_alone tests, one a line")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()

    def read_parts(files: list[Path]) -> list[dict]:
        try:
            return [json.loads(f.read_text()) for f in files]
        except (OSError, ValueError) as e:
            ap.error(f"cannot read a part: {e}")

    if a.unfinished:
        parts = read_parts(a.unfinished)
        if not all("unfinished" in p for p in parts):
            ap.error("a part was recorded without --collected-ids: it cannot say which tests did not finish")
        print("\n".join(unfinished(parts)))
        return
    if a.merge:
        rec = merge(read_parts(a.merge))
    else:
        if a.times is None or a.wall is None:
            ap.error("give TIMES.jsonl and --wall, or --merge PART.json ...")
        lines = [json.loads(x) for x in a.times.read_text().splitlines() if x.strip()] if a.times.is_file() else []

        def ids_in(path: Path | None, what: str) -> list[str] | None:
            if path is None:
                return None
            try:
                return [x.strip() for x in path.read_text().splitlines() if x.strip()]
            except OSError as e:
                ap.error(f"cannot read {what}: {e}")

        ids = ids_in(a.collected_ids, "the collected ids")
        alone = ids_in(a.alone_ids, "the gpu_alone ids")
        rec = record(lines, wall_s=a.wall, summary=a.summary, collected=None, collected_ids=ids, workers=a.workers,
                     alone_ids=alone)
    if a.json:
        a.json.write_text(json.dumps(rec, indent=1) + "\n")
    show(rec)


if __name__ == "__main__":
    main()
