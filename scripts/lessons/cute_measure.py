"""Day 11's CuTe DSL table: step 11f's kernel (solutions/day11/matmul_cute.py) beside day 11's inline-PTX wgmma
kernels (solutions/day11/matmul_wgmma.cu): lines of code, the time each takes to build (no GPU needed: nvcc for the
one, cute.compile for sm_90a for the other), and what the CuTe build's PTX holds.

    python3 scripts/lessons/cute_measure.py OUT_DIR          # measure: OUT_DIR/cute.json and cute.md
    python3 scripts/lessons/cute_measure.py --insert measured/cute-compile.json   # its table into day 11

Run it with a Python that has the DSL (`pip install -e ".[cute]"`) and nvcc on the PATH. The speed of step 11f is
the grader's to measure (`grader check day11 --exercise matmul_cute` on an H100/H200), not this script's."""
from __future__ import annotations

import ast
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tokenize
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cutlass_measure  # noqa: E402  (nvcc's timing, its flags and the machine's name: the CUTLASS table's own)
from lesson_table import ROOT  # noqa: E402
from lesson_table import main as lesson_main  # noqa: E402

CUTE = ROOT / "solutions" / "day11" / "matmul_cute.py"
COURSE = ROOT / "solutions" / "day11" / "matmul_wgmma.cu"
DTYPES = ["float16", "bfloat16"]

# One fresh process: import the file (and with it the DSL), then one build per dtype; the times as JSON.
_BUILD = """
import importlib.util, json, sys, time
t0 = time.perf_counter()
import torch
spec = importlib.util.spec_from_file_location("matmul_cute", sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
out = {"import_s": time.perf_counter() - t0}
for name in sys.argv[2:]:
    t = time.perf_counter()
    m.compile_for(getattr(torch, name), "cpu")
    out[name] = time.perf_counter() - t
print(json.dumps(out))
"""


def python_code_lines(path: Path) -> int:
    """Lines that hold code: neither blank, nor comments, nor docstrings."""
    text = path.read_text()
    docs: set[int] = set()
    for node in ast.walk(ast.parse(text)):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body \
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            docs.update(range(body[0].lineno, body[0].end_lineno + 1))
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
    lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type not in skip:
            lines.update(range(tok.start[0], tok.end[0] + 1))
    return len(lines - docs)


def cute_build(env: dict | None = None) -> dict:
    r = subprocess.run([sys.executable, "-c", _BUILD, str(CUTE), *DTYPES], capture_output=True, text=True,
                       env={**os.environ, **(env or {})}, check=False)
    if r.returncode != 0:
        sys.exit(f"cute.compile failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def ptx_facts(ptx: str) -> dict:
    """What the kept PTX says the kernel is: its wgmma and TMA instructions, its block size, its target."""
    return {"target": re.search(r"^\.target (\S+)", ptx, re.M).group(1),
            "wgmma": sorted(set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.(m\d+n\d+k\d+\.\w+\.\w+\.\w+)", ptx))),
            "wgmma_count": len(re.findall(r"\bwgmma\.mma_async\b", ptx)),
            "tma_count": len(re.findall(r"\bcp\.async\.bulk\.tensor\.", ptx)),
            "threads": int(re.search(r"\.reqntid (\d+)", ptx).group(1))}


def ptxas_resources(ptx_path: Path) -> dict | None:
    """ptxas's registers and spill bytes for the kept PTX (sm_90a), if ptxas is on this machine."""
    ptxas = shutil.which("ptxas") or ("/usr/local/cuda/bin/ptxas" if Path("/usr/local/cuda/bin/ptxas").exists() else None)
    if not ptxas:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([ptxas, "-arch=sm_90a", "-v", str(ptx_path), "-o", f"{tmp}/k.cubin"], capture_output=True,
                           text=True, check=True)
    log = r.stdout + r.stderr
    return {"registers": int(re.search(r"Used (\d+) registers", log).group(1)),
            "spill_bytes": sum(int(n) for n in re.findall(r"(\d+) bytes spill (?:stores|loads)", log))}


def measure(a) -> dict:
    from importlib.metadata import version

    seconds, kernels = cutlass_measure.compile_seconds(COURSE, [ROOT / "common"], a.repeats)
    runs = [cute_build({"CUTE_DSL_DISABLE_FILE_CACHING": "1"}) for _ in range(a.repeats)]
    best = min(runs, key=lambda r: sum(r[d] for d in DTYPES))
    ptx = {}
    with tempfile.TemporaryDirectory() as tmp:
        for d in DTYPES:  # one dtype per folder: the DSL names the kept file after the signature, not the dtype
            folder = Path(tmp) / d
            folder.mkdir()
            subprocess.run([sys.executable, "-c", _BUILD, str(CUTE), d], capture_output=True, check=True,
                           env={**os.environ, "CUTE_DSL_KEEP": "ptx", "CUTE_DSL_DUMP_DIR": str(folder)})
            (path,) = folder.glob("*.ptx")
            ptx[d] = {**ptx_facts(path.read_text()), "ptxas": ptxas_resources(path)}
    return {"nvcc": cutlass_measure.nvcc_version(), "dsl": version("nvidia-cutlass-dsl"), "cpu": cutlass_measure.cpu_name(),
            "cores": os.cpu_count(), "flags": cutlass_measure.FLAGS, "repeats": a.repeats,
            "course": {"what": "day 11's wgmma kernels, inline PTX (solutions/day11/matmul_wgmma.cu)",
                       "code_lines": cutlass_measure.code_lines(COURSE), "kernels": kernels, "seconds": seconds},
            "cute": {"what": "step 11f, CuTe DSL (solutions/day11/matmul_cute.py)", "code_lines": python_code_lines(CUTE),
                     "kernels": len(DTYPES), "import_s": best["import_s"], "compile_s": {d: best[d] for d in DTYPES}},
            "ptx": ptx}


def table(data: dict) -> str:
    c, k = data["course"], data["cute"]
    build = sum(k["compile_s"].values())
    lines = [f"Built on {data['cores']} cores of {data['cpu']}, no GPU, the fastest of {data['repeats']} runs: "
             f"nvcc {data['nvcc']} (`{' '.join(data['flags'])}`, source to "
             f"object) and CuTe DSL {data['dsl']} (`cute.compile` for sm_90a, one build per dtype, in a fresh "
             "process):", "",
             "| source | lines of code | kernels | build s |", "|---|---:|---:|---:|",
             f"| {cutlass_measure.shown(c['what'])} | {c['code_lines']} | {c['kernels']} | {c['seconds']:.1f} |",
             f"| {cutlass_measure.shown(k['what'])} | {k['code_lines']} | {k['kernels']} | {build:.1f} "
             f"(+ {k['import_s']:.1f} to import the DSL) |", "",
             "What the CuTe build's PTX holds, per dtype (`CUTE_DSL_KEEP=ptx`; registers from ptxas on that PTX):", "",
             "| dtype | target | wgmma | wgmma in the PTX | TMA copies in the PTX | threads | registers | spill bytes |",
             "|---|---|---|---:|---:|---:|---:|---:|"]
    for d, p in data["ptx"].items():
        res = p.get("ptxas") or {}
        lines.append(f"| {d} | {p['target']} | {', '.join(p['wgmma'])} | {p['wgmma_count']} | {p['tma_count']} | "
                     f"{p['threads']} | {res.get('registers', '-')} | {res.get('spill_bytes', '-')} |")
    lines += ["", "No GPU ran either here: step 11f's speed against 11e and cuBLAS is in the next paragraph."]
    return "\n".join(lines)


def main() -> int:
    return lesson_main(name="cute", lesson="day11", block="cute-measured", measure=measure, table=table,
                       add_arguments=lambda p: p.add_argument("--repeats", type=int, default=3))


if __name__ == "__main__":
    sys.exit(main())
