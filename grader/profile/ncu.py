"""Nsight Compute (ncu): finding it, the command line that profiles only the student's op, and reading the raw
page of its report.

ncu replays every profiled kernel once per group of counters (dozens of passes), so it is told to profile only
kernels launched inside one NVTX range (RANGE): the warm-up call, input generation and torch's own kernels stay
outside it, and no kernel name has to be known in advance.
"""
from __future__ import annotations

import csv
import glob
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

from grader.errors import GraderError

RANGE = "grader_op"
SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "MemoryWorkloadAnalysis")
# FLOPs per counted thread instruction: a fused multiply-add is two. These are the counters Nsight Compute's own
# roofline charts use; tensor-core work is not in them (the matmul track runs on CUDA cores).
FLOP_WEIGHTS = {
    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum": 2,
    "sm__sass_thread_inst_executed_op_fadd_pred_on.sum": 1,
    "sm__sass_thread_inst_executed_op_fmul_pred_on.sum": 1,
    "sm__sass_thread_inst_executed_op_hfma_pred_on.sum": 2,
    "sm__sass_thread_inst_executed_op_hadd_pred_on.sum": 1,
    "sm__sass_thread_inst_executed_op_hmul_pred_on.sum": 1,
}
# Collected on top of the sections, so the roofline inputs are there whatever a section holds in this version.
EXTRA_METRICS = (*FLOP_WEIGHTS, "dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum",
                 "lts__t_sector_hit_rate.pct")
TIMEOUT_S = 600.0
_USUAL = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu", "/usr/local/NVIDIA-Nsight-Compute*/ncu")


# -- finding ncu --------------------------------------------------------------------------------------------
def find_ncu(explicit: str | None = None) -> str:
    """--ncu PATH, else $NSIGHT_COMPUTE (the binary or its folder), else PATH, else the usual install places."""
    if explicit:
        return _usable(Path(explicit), "--ncu")
    env = os.environ.get("NSIGHT_COMPUTE")
    if env:
        return _usable(Path(env), "NSIGHT_COMPUTE")
    found = shutil.which("ncu")
    if found:
        return found
    cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    guesses = [str(Path(cuda_home, "bin", "ncu"))] if cuda_home else []
    for pattern in guesses + list(_USUAL):
        hits = sorted(glob.glob(pattern))
        if hits and os.access(hits[-1], os.X_OK):
            return hits[-1]  # the newest version when several are installed
    raise GraderError("Nsight Compute (ncu) was not found: it comes with the CUDA toolkit, usually as "
                      "/usr/local/cuda/bin/ncu (or /opt/nvidia/nsight-compute/<version>/ncu). Put its folder on PATH, "
                      "set NSIGHT_COMPUTE=/path/to/ncu, or pass --ncu /path/to/ncu")


def _usable(p: Path, via: str) -> str:
    if p.is_dir():
        p = p / "ncu"
    if not p.is_file() or not os.access(p, os.X_OK):
        raise GraderError(f"{via} points at {p}, which is not an executable ncu: give the path of Nsight Compute's "
                          "`ncu` (usually /usr/local/cuda/bin/ncu)")
    return str(p)


# -- running it ---------------------------------------------------------------------------------------------
def profile_command(ncu: str, report: Path, target: list[str]) -> list[str]:
    return [ncu, "--target-processes", "all", "--nvtx", "--nvtx-include", f"{RANGE}/",
            # Boost clocks as in `grader check`'s timings (ncu would otherwise lock them to base clocks).
            "--clock-control", "none",
            *[a for s in SECTIONS for a in ("--section", s)], "--metrics", ",".join(EXTRA_METRICS),
            "--export", str(report), "--force-overwrite", *target]


def import_command(ncu: str, report: Path) -> list[str]:
    # Base units (ns, byte) instead of auto-scaled ones, mangled names to match ptxas's report exactly.
    return [ncu, "--import", str(report), "--csv", "--page", "raw", "--print-units", "base",
            "--print-kernel-base", "mangled"]


def raw_csv(ncu: str, report: Path, timeout_s: float = 300) -> str:
    """The report's raw page as CSV (ncu's output, warnings included: parse_raw_csv skips them)."""
    try:
        p = subprocess.run(import_command(ncu, report), capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise GraderError(f"reading {report} back with `ncu --import` took over {timeout_s:g} s") from None
    return p.stdout + ("\n" + p.stderr if p.returncode else "")


def run_logged(cmd: list[str], log: Path, cwd: Path, timeout_s: float) -> str | None:
    """Runs cmd with its output in `log` and returns that output; None if it ran past timeout_s (it is then
    killed with everything it started: ncu and the profiled process)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=cwd,
                                start_new_session=True)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill(proc)
            return None
        except BaseException:  # Ctrl-C: never leave a profiler holding the GPU
            _kill(proc)
            raise
    return log.read_text(errors="replace")


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def explain_failure(output: str, log: Path) -> str | None:
    """A message for ncu failures a student can fix, or None when the output shows none of them."""
    if "ERR_NVGPUCTRPERM" in output:
        return ("Nsight Compute may not read the GPU's performance counters (ERR_NVGPUCTRPERM). By default only "
                "admin users may: run with sudo, or have the driver loaded with the option "
                "`NVreg_RestrictProfilingToAdminUsers=0` (a file in /etc/modprobe.d, then reboot); in a container, "
                "start it with the SYS_ADMIN capability (docker run --cap-add SYS_ADMIN). See "
                "https://developer.nvidia.com/ERR_NVGPUCTRPERM")
    m = re.search(r"Failed to find metric[^\n]*", output)
    if m:
        return f"this Nsight Compute does not know a metric the grader asks for ({m.group(0).strip()}); log: {log}"
    if re.search(r"No kernels were profiled", output):
        return "no_kernels"
    return None


# -- reading the raw page -----------------------------------------------------------------------------------
_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][-+]?\d+)?")
_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30,
           "Ti": 2.0**40, "n": 1e-9, "u": 1e-6, "µ": 1e-6, "m": 1e-3}
_BASE = {"byte": "byte", "B": "byte", "second": "second", "s": "second", "Hz": "hertz", "hz": "hertz",
         "hertz": "hertz"}
_UNIT = re.compile(r"(?P<prefix>Ki|Mi|Gi|Ti|K|M|G|T|n|u|µ|m)?(?P<base>byte|B|second|s|hertz|Hz|hz|inst|cycle|warp|"
                   r"thread|block|register|sector|request|wavefront|instruction)")
# Columns that describe a launch rather than measure it.
INFO_COLUMNS = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
                "Grid Size", "Device", "CC")


def parse_number(text: str) -> float | None:
    """'1,234.5' -> 1234.5; 'n/a', '' and anything not a number -> None."""
    s = text.strip()
    if not s or not _NUMBER.fullmatch(s) or not any(c.isdigit() for c in s):
        return None
    return float(s.replace(",", ""))


def _unit_factor(part: str) -> tuple[float, str]:
    m = _UNIT.fullmatch(part.strip())
    if not m:
        return 1.0, part.strip()
    base = m["base"]
    return _PREFIX[m["prefix"] or ""], _BASE.get(base, base)


def to_base_units(value: float, unit: str) -> tuple[float, str]:
    """(12.5, 'usecond') -> (1.25e-05, 'second'); (3.2, 'Tbyte/second') -> (3.2e12, 'byte/second');
    (48, 'Kbyte/block') -> (48000.0, 'byte/block'). Unknown units pass through unchanged."""
    if not unit or unit == "%":
        return value, unit
    num, _, den = unit.partition("/")
    f_num, u_num = _unit_factor(num)
    if not den:
        return value * f_num, u_num
    f_den, u_den = _unit_factor(den)
    return value * f_num / f_den, f"{u_num}/{u_den}"


def parse_raw_csv(text: str) -> list[dict]:
    """`ncu --csv --page raw`: a row of column names, usually a row of units, then one row per profiled kernel.

    Returns one dict per kernel: id, name, info (launch descriptions, NVTX columns), metrics (name -> value in
    base units: seconds, bytes, bytes/second, %; None for n/a) and units (name -> the base unit)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        raise ValueError("no CSV header (a row starting with \"ID\") in ncu's output")
    rows = [r for r in csv.reader(lines[start:]) if r]
    names = rows[0]
    has_units = len(rows) > 1 and rows[1][0].strip() == ""
    units = rows[1] if has_units else [""] * len(names)
    kernels = []
    for r in rows[2 if has_units else 1:]:
        if len(r) != len(names):
            continue  # a truncated or foreign line (a warning printed into the CSV stream)
        k = {"id": None, "name": "", "info": {}, "metrics": {}, "units": {}}
        for name, unit, cell in zip(names, units, r):
            value = parse_number(cell)
            if name in INFO_COLUMNS or "Range:" in name or (value is None and cell.strip().lower() not in ("n/a", "")):
                k["info"][name] = cell
                continue
            if value is None:
                k["metrics"][name], k["units"][name] = None, unit
            else:
                k["metrics"][name], k["units"][name] = to_base_units(value, unit)
        k["name"] = k["info"].get("Kernel Name", "")
        kid = parse_number(k["info"].get("ID", ""))
        k["id"] = None if kid is None else int(kid)
        kernels.append(k)
    return kernels


# -- names --------------------------------------------------------------------------------------------------
def short_name(name: str, width: int = 60) -> str:
    """'void softmax_warp_kernel<float, 4>(const T1 *, T1 *, int, int)' -> 'softmax_warp_kernel<float, 4>'."""
    s = name.strip()
    if s.endswith(")"):
        depth = 0
        for i in range(len(s) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(s[i], 0)
            if depth == 0:
                if i > 0:  # "(anonymous namespace)" alone is not a parameter list
                    s = s[:i]
                break
    s = re.sub(r"^(?:void|static|__global__)\s+", "", s).strip()
    return s if len(s) <= width else s[: width - 1] + "…"
