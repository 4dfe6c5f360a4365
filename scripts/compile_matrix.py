"""The kernels of every solution on the GPUs a class has, without those GPUs: for each solution `.cu` file and each
class GPU (grader/gpu_support.py SMEM_OPTIN_KIB, from the course's min_capability up), ptxas's report (registers,
static shared memory, stack, spills) for the image that GPU would run.

Which image a GPU runs is the build's rule (tests/compile_records.py `image`): an exercise that lists no `-gencode`
is built for the GPU at hand (native); one whose list is the whole build (days 11, 12, 20: sm_80 SASS, compute_80
PTX and sm_90a) runs sm_90a on an H100, sm_80 SASS on any sm_8x GPU, and the compute_80 PTX, compiled by the driver,
elsewhere (sm_100, sm_120): ptxas compiles that PTX for the architecture here. One nvcc run a file builds them all.

    python3 scripts/compile_matrix.py [--arch 8.6 12.0] [--day day20] [--stubs] [--json OUT.json] [-j 2]

Prints a row per file and architecture, and the kernels that spill. measured/compile-matrix.json is its --json
record; CI's own check of the same matrix, every solution and stub, is tests/test_compile_matrix.py."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.check.compile_check import nvcc_path  # noqa: E402
from grader.gpu_support import SMEM_OPTIN_KIB  # noqa: E402
from tests.compile_records import compile_images, image, image_arch  # noqa: E402


def class_archs() -> list[str]:
    """The class GPUs the course grades on: SMEM_OPTIN_KIB's, from course.yaml's min_capability up."""
    from grader.course import load_course

    need = tuple(int(x) for x in load_course(ROOT / "course.yaml").min_capability.split("."))
    return [a for a in SMEM_OPTIN_KIB if tuple(int(x) for x in a.split(".")) >= need]


def files(days: set[str] | None, wheres: tuple[str, ...]):
    """(day, file, include dirs, extra flags), once per file and build."""
    from grader.course import load_course

    seen = {}
    for d in load_course(ROOT / "course.yaml").days:
        if days and d.id not in days:
            continue
        for ex in d.exercises:
            for where in wheres:
                for s in ex.sources:
                    f = ROOT / where / d.id / s
                    k = (f, tuple(ex.extra_cuda_cflags))
                    if s.endswith(".cu") and k not in seen and f.is_file():
                        seen[k] = (d.id, f, [ROOT / i for i in ex.include_dirs], list(ex.extra_cuda_cflags))
    return list(seen.values())


def matrix(f: Path, incs: list[Path], flags: list[str], archs: list[str]) -> list[dict]:
    """One row per arch: the image it runs, and ptxas's kernels of it."""
    images = {a: image(flags, a) for a in archs}
    gencodes = sorted({g for g in images.values() if g})
    rep = compile_images(f, incs, [x for x in flags if not x.startswith("-gencode")], gencodes, None)
    return [{"file": str(f.relative_to(ROOT)), "arch": f"sm_{a.replace('.', '')}", "image": g or "none runs here",
             "ok": rep["ok"], "error": rep["note"],
             "kernels": [k for k in rep["kernels"] if g and k["arch"] == image_arch(g)]} for a, g in images.items()]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", nargs="+", help="compute capabilities, e.g. 8.6 12.0 (default: every class GPU)")
    ap.add_argument("--day", action="append")
    ap.add_argument("--stubs", action="store_true", help="the stubs in days/ too")
    ap.add_argument("--json", type=Path)
    ap.add_argument("-j", type=int, default=2, help="nvcc runs at a time")
    a = ap.parse_args()
    if nvcc_path() is None:
        print("nvcc not found: put the CUDA toolkit's bin/ on PATH", file=sys.stderr)
        return 2
    archs = a.arch or class_archs()
    unknown = [x for x in archs if x not in SMEM_OPTIN_KIB]
    if unknown:
        print(f"unknown compute capability {unknown}: one of {list(SMEM_OPTIN_KIB)}", file=sys.stderr)
        return 2
    todo = files(set(a.day) if a.day else None, ("solutions", "days") if a.stubs else ("solutions",))
    print("| day | file | arch | image | kernels | max registers | max static smem B | spilling kernels | worst spill B |")
    print("|---|---|---|---|---|---|---|---|---|")
    rows = []
    with ThreadPoolExecutor(max(1, a.j)) as pool:
        for (day, *_), got in zip(todo, pool.map(lambda t: matrix(t[1], t[2], t[3], archs), todo)):
            for row in got:
                row["day"] = day
                rows.append(row)
                ks = row["kernels"]
                spills = [k for k in ks if k["spill_stores"] or k["spill_loads"]]
                worst = max((k["spill_stores"] + k["spill_loads"] for k in spills), default=0)
                print(f"| {day} | {row['file']} | {row['arch']} | {row['image']} | {len(ks)}"
                      f"{'' if row['ok'] else ' (FAILED)'} | {max((k['registers'] for k in ks), default=0)} | "
                      f"{max((k['smem_bytes'] for k in ks), default=0)} | {len(spills)} | {worst} |", flush=True)
    spilling = [(r, k) for r in rows for k in r["kernels"] if k["spill_stores"] or k["spill_loads"]]
    print(f"\n{len(rows)} rows, {sum(not r['ok'] for r in rows)} failed, {len(spilling)} kernel(s) spilling:")
    for r, k in spilling:
        print(f"  {r['file']} {r['arch']} ({r['image']}): {k['function'][:100]}: "
              f"{k['spill_stores']}/{k['spill_loads']} B spilled, {k['registers']} registers")
    if a.json:
        nvcc = subprocess.run([nvcc_path(), "--version"], capture_output=True, text=True).stdout.strip()
        a.json.write_text(json.dumps({"nvcc": nvcc.splitlines()[-1], "archs": archs,
                                      "smem_optin_kib": {x: SMEM_OPTIN_KIB[x] for x in archs}, "rows": rows},
                                     indent=1) + "\n")
    return 1 if any(not r["ok"] for r in rows) or spilling else 0


if __name__ == "__main__":
    sys.exit(main())
