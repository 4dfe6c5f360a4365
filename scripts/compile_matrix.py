"""The kernels of every solution on the GPUs a class has, without those GPUs: for each solution `.cu` file and each
architecture, ptxas's report (registers, static shared memory, stack, spills) for the image that GPU would run.

Which image a GPU runs is the build's rule (grader/check/build.py flags_for_gpu): an exercise that lists no
`-gencode` is built for the GPU at hand (native); one whose list holds no image for it (days 11, 12, 20: sm_80 SASS,
compute_80 PTX and sm_90a) runs sm_80 SASS on any sm_8x GPU (the same major: what CI's compile check reads) and the
compute_80 PTX, compiled by the driver, elsewhere (sm_100, sm_120): ptxas compiles that PTX for the architecture here.

    python3 scripts/compile_matrix.py [--arch 86 100 120] [--day day20] [--json OUT.json]

Prints a row per file and architecture, and the kernels that spill. Issue 69's compile matrix starts here: CI's
compile check covers sm_80 and sm_90."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.check.build import BASE_CUDA_FLAGS, TORCH_CUDA_DEFINES  # noqa: E402
from grader.check.compile_check import demangle, nvcc_path, parse_ptxas  # noqa: E402

ARCHS = ("86", "100", "120")  # RTX 30xx/A10 (99 KiB a block, like sm_89 and sm_120), B200, RTX 50xx


def image_for(listed: bool, arch: str) -> tuple[str, str] | None:
    """(what runs there, the -gencode that compiles it), None where CI's own check already reads it."""
    if not listed:
        return "native", f"-gencode=arch=compute_{arch},code=sm_{arch}"
    if arch.startswith("8"):
        return None  # sm_80 SASS runs on every sm_8x GPU: tests/test_compile.py reads it
    return "compute_80 PTX", f"-gencode=arch=compute_80,code=sm_{arch}"


def files(days: set[str] | None):
    """(day, file, include dirs, whether its exercise lists -gencode images), once per file and listing."""
    from grader.course import load_course

    seen = {}
    for d in load_course(ROOT / "course.yaml").days:
        if days and d.id not in days:
            continue
        for ex in d.exercises:
            listed = any("-gencode" in f for f in ex.extra_cuda_cflags)
            for s in ex.sources:
                f = ROOT / "solutions" / d.id / s
                if s.endswith(".cu") and (f, listed) not in seen:
                    seen[(f, listed)] = (d.id, f, [ROOT / i for i in ex.include_dirs], listed)
    return list(seen.values())


def compile_one(f: Path, incs: list[Path], gencode: str) -> tuple[bool, list[dict], str]:
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [nvcc_path() or "nvcc", "-c", str(f), "-o", str(Path(tmp) / "k.o"), *BASE_CUDA_FLAGS,
               *TORCH_CUDA_DEFINES, *[f"-I{i}" for i in incs], "-Xptxas", "-v", gencode]
        p = subprocess.run(cmd, capture_output=True, text=True)
    log = p.stdout + p.stderr
    kernels = parse_ptxas(log)
    names = demangle(sorted({k.function for k in kernels}))
    return p.returncode == 0, [{**k.__dict__, "function": names.get(k.function, k.function)} for k in kernels], log


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", nargs="+", default=list(ARCHS))
    ap.add_argument("--day", action="append")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    if nvcc_path() is None:
        print("nvcc not found: put the CUDA toolkit's bin/ on PATH", file=sys.stderr)
        return 2
    rows = []
    print("| day | file | arch | image | kernels | max registers | max static smem B | spilling kernels | worst spill B |")
    print("|---|---|---|---|---|---|---|---|---|")
    for day, f, incs, listed in files(set(a.day) if a.day else None):
        for arch in a.arch:
            img = image_for(listed, arch)
            if img is None:
                continue
            ok, kernels, log = compile_one(f, incs, img[1])
            spills = [k for k in kernels if k["spill_stores"] or k["spill_loads"]]
            row = {"day": day, "file": f.name, "arch": f"sm_{arch}", "image": img[0], "ok": ok,
                   "kernels": kernels, "error": "" if ok else log[-2000:]}
            rows.append(row)
            worst = max((k["spill_stores"] + k["spill_loads"] for k in spills), default=0)
            print(f"| {day} | {f.name} | sm_{arch} | {img[0]} | {len(kernels)}{'' if ok else ' (FAILED)'} | "
                  f"{max((k['registers'] for k in kernels), default=0)} | "
                  f"{max((k['smem_bytes'] for k in kernels), default=0)} | {len(spills)} | {worst} |", flush=True)
    spilling = [(r, k) for r in rows for k in r["kernels"] if k["spill_stores"] or k["spill_loads"]]
    print(f"\n{len(rows)} compiles, {sum(not r['ok'] for r in rows)} failed, {len(spilling)} kernel(s) spilling:")
    for r, k in spilling:
        print(f"  {r['day']} {r['file']} {r['arch']} ({r['image']}): {k['function'][:100]}: "
              f"{k['spill_stores']}/{k['spill_loads']} B spilled, {k['registers']} registers")
    if a.json:
        a.json.write_text(json.dumps({"nvcc": subprocess.run([nvcc_path(), "--version"], capture_output=True,
                                                             text=True).stdout.strip().splitlines()[-1],
                                      "rows": rows}, indent=1) + "\n")
    return 1 if any(not r["ok"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
