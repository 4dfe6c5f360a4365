"""Day 19's static check of the counters' memory ordering, read from the PTX of the student's ring kernel.

The stress check catches what the GPU shows; some ordering bugs it never shows. On the H100 a missing
__threadfence() in FenceFlags, or a relaxed fetch_add in AcqRelFlags, gave right answers in every one of 60 jittered
runs (the instructors' measured/NOTES.md), and another GPU or compiler may not be so kind. So the exercise also reads the compiled
code of every ring_kernel instance that uses the exercise's Flags, where the two rules of the protocol are
visible instruction by instruction:

- release: every arrival (an atomic add on a counter) is itself `.release` (or `.acq_rel`) at device or system
  scope, or a device- or system-scope fence (`membar.gl`, `membar.sys`, `fence.sc|acq_rel.gpu|sys`) comes after
  the block's last barrier and before it;
- acquire: every spin load of a counter (`ld.volatile`, `ld.relaxed`, `ld.acquire`) is itself `.acquire` at
  device or system scope, or such a fence follows it before the block's next barrier.

A block-scope fence or operation (`.cta`) is too narrow: producer and consumer are different blocks.
"""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

_ENTRY = re.compile(r"^\.(?:visible\s+)?\.entry\s+(\S+?)\s*\(", re.M)
_FENCE = re.compile(r"^\s*(?:membar\.(?:gl|sys)|fence\.(?:sc|acq_rel)(?:\.(?:gpu|sys))?)\s*;")
_BARRIER = re.compile(r"^\s*(?:@!?%p\d+\s+)?(?:bar\.sync|barrier\.sync|bar\.red|barrier\.red)\b")
_ARRIVAL = re.compile(r"^\s*(?:@!?%p\d+\s+)?(?:atom|red)\.([\w.]*)")
_SPIN = re.compile(r"^\s*(?:@!?%p\d+\s+)?ld\.(volatile|relaxed|acquire)\.([\w.]*)")


@dataclass
class Finding:
    kernel: str
    line: int
    text: str
    why: str


def _strong_scope(qualifiers: str) -> bool:
    """Device or system scope: .gpu, .sys, or no scope (PTX's default for atomics and fences is .gpu)."""
    return ".cta" not in f".{qualifiers}." and ".cluster" not in f".{qualifiers}."


def analyze(ptx: str, flags: str) -> tuple[int, list[Finding]]:
    """(instances checked, findings) over the ring_kernel entries instantiated with `flags`."""
    entries = list(_ENTRY.finditer(ptx))
    checked, findings = 0, []
    for k, m in enumerate(entries):
        name = m.group(1)
        if "ring_kernel" not in name or flags not in name:
            continue
        checked += 1
        start = ptx.count("\n", 0, m.start()) + 1
        body = ptx[m.end():entries[k + 1].start() if k + 1 < len(entries) else len(ptx)].splitlines()
        arrivals = 0
        for i, line in enumerate(body):
            a = _ARRIVAL.match(line)
            if a and ".add" in f".{a.group(1)}." and ".shared" not in a.group(1):
                arrivals += 1
                q = a.group(1)
                if (".release" in f".{q}." or ".acq_rel" in f".{q}.") and _strong_scope(q):
                    continue
                ok = False
                for back in reversed(body[:i]):
                    if _BARRIER.match(back):
                        break
                    if _FENCE.match(back):
                        ok = True
                        break
                if not ok:
                    findings.append(Finding(name, start + i + 1, line.strip(), "an arrival with no device-scope "
                                            "release: no fence between the block's barrier and the atomic, and the "
                                            "atomic is not .release, so the count may be seen before the data"))
            s = _SPIN.match(line)
            if s and ".shared" not in s.group(2):
                if s.group(1) == "acquire" and _strong_scope(s.group(2)):
                    continue
                ok = False
                for fwd in body[i + 1:]:
                    if _FENCE.match(fwd):
                        ok = True
                        break
                    if _BARRIER.match(fwd):
                        break
                if not ok:
                    findings.append(Finding(name, start + i + 1, line.strip(), "a wait with no device-scope "
                                            "acquire: the spin load is not .acquire and no fence follows it before "
                                            "the barrier, so the block's reads may be served older data"))
        if arrivals == 0:
            findings.append(Finding(name, start, name, "no arrival (atomic add on a counter) in the kernel"))
    return checked, findings


def _ptx_key(nvcc: str, sources: tuple, include_dirs: tuple, flags: list[str]) -> str:
    """sha256 of what the PTX is made from: the compiler, its flags, the sources, the headers beside them and
    under the include folders."""
    from grader.check.build import HEADER_SUFFIXES

    h = hashlib.sha256(repr((nvcc, flags)).encode())
    files = [Path(s) for s in sources]
    for folder in {Path(s).parent for s in sources} | {Path(d) for d in include_dirs}:
        if folder.is_dir():
            files += sorted(p for p in folder.rglob("*") if p.suffix in HEADER_SUFFIXES and p.is_file())
    for f in files:
        data = f.read_bytes()
        h.update(f"{f}:{len(data)}:".encode() + data)
    return h.hexdigest()


@cache
def compile_ptx(sources: tuple, include_dirs: tuple, capability: tuple, cache_dir: Path | None = None) -> str | None:
    """The PTX of the .cu sources for this GPU's architecture; None without nvcc; raises on a compile error.
    cache_dir: PTX kept by the content of its inputs (a second exercise with the same sources, or a re-check of
    unchanged code, reads it instead of running nvcc again: ring_attention.cu takes 20 s)."""
    from grader.check.build import BASE_CUDA_FLAGS, TORCH_CUDA_DEFINES
    from grader.check.compile_check import nvcc_path

    nvcc = nvcc_path()
    if nvcc is None:
        return None
    arch = f"{capability[0]}{capability[1]}"
    flags = [*BASE_CUDA_FLAGS, *TORCH_CUDA_DEFINES, *[f"-I{d}" for d in include_dirs], f"-arch=compute_{arch}"]
    kept = Path(cache_dir) / "ptx" / f"{_ptx_key(str(nvcc), sources, include_dirs, flags)[:32]}.ptx" \
        if cache_dir else None
    if kept is not None and kept.is_file():
        return kept.read_text()
    out = []
    for src in sources:
        with tempfile.TemporaryDirectory() as tmp:
            ptx = Path(tmp) / "k.ptx"
            p = subprocess.run([nvcc, "-ptx", str(src), "-o", str(ptx), *flags], capture_output=True, text=True,
                               timeout=600)
            if p.returncode != 0:
                raise RuntimeError(f"nvcc -ptx failed: {(p.stderr or p.stdout).strip()[:300]}")
            out.append(ptx.read_text())
    text = "\n".join(out)
    if kept is not None:  # written whole, then renamed: a reader never sees half a file
        kept.parent.mkdir(parents=True, exist_ok=True)
        tmp = kept.with_name(f".{kept.name}.{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, kept)
    return text
