"""Refresh tests/data/compile-records.json, the compile results that the compile tests read instead of compiling
(tests/compile_records.py says how they are keyed and checked).

    python3 scripts/compile_records.py --update         # compile what changed since the records; keep the rest
    python3 scripts/compile_records.py --update --all   # compile every key again
    python3 scripts/compile_records.py --verify         # recompile every recorded key and compare; writes nothing

It runs the tests that use the records (tests/test_compile.py, tests/test_compile_matrix.py,
tests/test_ring_ordering.py, tests/test_lesson_tools.py, tests/test_cpu_compile.py; arguments after `--` go to
pytest, default `-n auto`), then writes the records of every compile they used: keys no test asked for any more are
dropped. Exit code:
pytest's (a failing compile test is recorded as it is, and still fails), 2 when no compile ran (no nvcc here?)."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests import compile_records as cr  # noqa: E402

TESTS = ["tests/test_compile.py", "tests/test_compile_matrix.py", "tests/test_ring_ordering.py",
         "tests/test_lesson_tools.py", "tests/test_cpu_compile.py"]


def _run_tests(env: dict, pytest_args: list[str]) -> int:
    cmd = [sys.executable, "-m", "pytest", "-q", *TESTS, *(pytest_args or ["-n", "auto"])]
    print("$", " ".join(cmd), flush=True)
    return subprocess.run(cmd, cwd=ROOT, env={**os.environ, **env}).returncode


def _lines(folder: Path) -> list[dict]:
    return [json.loads(line) for f in sorted(folder.glob("*.jsonl")) for line in f.read_text().splitlines() if line]


def merge(lines: list[dict], old: dict) -> dict:
    """The record file made of one update run's lines. A line whose `external` is None reused its record, so its
    compiler's headers are the old environment's; the others name the headers their compile read."""
    by_base: dict = {}
    for line in lines:  # a compiled line wins over a reused one of the same base (a sampled record that differed)
        if line["base"] not in by_base or line["external"] is not None:
            by_base[line["base"]] = line
    environments = {}
    for compiler in sorted({line["compiler"] for line in by_base.values()}):
        mine = [line for line in by_base.values() if line["compiler"] == compiler]
        identities = {line["identity"] for line in mine}
        if len(identities) != 1:
            sys.exit(f"error: {compiler} said {len(identities)} different versions in one run")
        headers = set()
        for line in mine:
            if line["external"] is None:
                headers.update(old["environments"][compiler]["headers"])
            else:
                headers.update(line["external"])
        environments[compiler] = {"compiler": compiler, "identity": identities.pop(), "headers": sorted(headers)}
    digests = {c: cr.environment_digest(env) for c, env in environments.items()}
    for c, d in digests.items():
        if d is None:
            sys.exit(f"error: the headers {c} read changed during the run; run it again")
    records = {}
    for line in by_base.values():
        k = cr.key(line["base"], digests[line["compiler"]], line["deps"])
        records[k] = {"source": line["source"], "kind": line["kind"], "base": line["base"],
                      "compiler": line["compiler"], "deps": [d for d, _ in line["deps"]], "result": line["result"]}
        if line.get("seconds") is not None:  # what its compile took: the sample is drawn by these (compile_records.py)
            records[k]["seconds"] = line["seconds"]
    return {"format": cr.FORMAT, "environments": environments, "records": dict(sorted(records.items()))}


def dumps(records: dict) -> str:
    """The record file as JSON with one header and one record a line, so that a change shows as the lines of the
    keys it changed."""
    envs = ",\n".join(
        f' {json.dumps(c)}: {{"compiler": {json.dumps(e["compiler"])}, "identity": {json.dumps(e["identity"])}, '
        '"headers": [\n' + ",\n".join(f"  {json.dumps(h)}" for h in e["headers"]) + "]}"
        for c, e in records["environments"].items())
    recs = ",\n".join(f" {json.dumps(k)}: {json.dumps(r, sort_keys=True)}" for k, r in records["records"].items())
    return (f'{{"format": {records["format"]},\n"environments": {{\n{envs}}},\n'
            f'"records": {{\n{recs}}}}}\n')


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--update", action="store_true", help="compile what the records lack and write them")
    mode.add_argument("--verify", action="store_true", help="recompile every recorded key and compare")
    ap.add_argument("--all", action="store_true", help="with --update: compile every key, recorded or not")
    ap.add_argument("pytest_args", nargs="*", help="after --: arguments for pytest (default: -n auto)")
    args = ap.parse_args(argv)
    if args.verify:
        return _run_tests({cr.SAMPLE_ENV: "1"}, args.pytest_args)
    old = cr.load()
    with tempfile.TemporaryDirectory(prefix="compile-records-") as out:
        rc = _run_tests({cr.MODE_ENV: "all" if args.all else "update", cr.OUT_ENV: out}, args.pytest_args)
        lines = _lines(Path(out))
    if not lines:
        print("error: no compile ran, so there is nothing to record (is nvcc installed?)", file=sys.stderr)
        return 2
    new = merge(lines, old)
    cr.RECORDS.parent.mkdir(parents=True, exist_ok=True)
    cr.RECORDS.write_text(dumps(new), encoding="utf-8")
    compiled = len({line["base"] for line in lines if line["external"] is not None})
    kept, dropped = len(set(new["records"]) & set(old["records"])), len(set(old["records"]) - set(new["records"]))
    print(f"{cr.RECORDS.relative_to(ROOT)}: {len(new['records'])} records ({kept} unchanged, "
          f"{len(new['records']) - kept} new; {dropped} dropped; {compiled} compiles this run)")
    return rc


if __name__ == "__main__":
    sys.exit(main())
