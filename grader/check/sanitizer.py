"""NVIDIA compute-sanitizer over one worker: find the tool, build its command line, run a job's case under it and
read its report into errors that name the student's own file and line.

A wrong value or a NaN says that something is wrong, not where. Run under memcheck, an out-of-bounds read is
caught at the instruction that made it: the kernel, the source line (the builds use -lineinfo), the thread, the
block and the address. initcheck does the same for reads of memory that nothing wrote, racecheck for shared-memory
hazards, synccheck for barriers that part of a block never reaches.

The report names the copy of the sources that was compiled (`.grader/build/<day>-<exercise>-work/src/`, see
build.py); `folders` maps that copy back to the folder it came from, so an error reads `days/day02/softmax.cu:42`.

PyTorch's caching allocator hands out slices of large blocks, so a read a little past a tensor usually lands in
memory the sanitizer considers valid: the runs here turn the cache off (PYTORCH_NO_CUDA_MEMORY_CACHING=1), which
makes every tensor an allocation of its own."""
from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from grader.check.build import map_paths
from grader.paths import relative_path

TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
ERROR_EXITCODE = 99
PRINT_LIMIT = 20
# Where a CUDA toolkit keeps its tools when compute-sanitizer is not on PATH (a list, so tests can empty it).
CUDA_BIN_DIRS = [Path("/usr/local/cuda/bin")]
# Environment of a sanitized run: every tensor its own cudaMalloc, so an access past its end is out of bounds.
SANITIZE_ENV = {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1", "PYTHONUNBUFFERED": "1"}
# Kernels of the libraries under the op (PyTorch's own, CUB, Thrust): not the student's code.
_LIBRARY_KERNEL = re.compile(r"^(?:void )?(?:at::|c10::|cub::|thrust::|cutlass::|cublas|cudnn|_ZN2at)")


@dataclass
class SanitizerError:
    tool: str
    kind: str  # "Invalid __global__ read of size 4 bytes", "Uninitialized __global__ memory read of size 4 bytes"
    kernel: str | None = None  # the kernel's name, without its parameters
    file: str | None = None  # the source of the access, relative to the course root where it is inside it
    line: int | None = None  # None: the code was built without -lineinfo
    thread: str | None = None  # "(31,0,0)"
    block: str | None = None
    address: str | None = None
    message: str = ""  # the rest of the report: "Address 0x... is out of bounds and is 4 bytes after ..."
    count: int = 1  # how many identical reports (same kind, file and line) this one stands for
    in_sources: bool = False  # the location is in one of the folders the code was built from (the student's)

    def where(self) -> str:
        if self.file is not None:
            return f"{self.file}:{self.line}" if self.line is not None else self.file
        return f"kernel {self.kernel}" if self.kernel else "an unknown location"

    def describe(self) -> str:
        """One line for a verdict: "Invalid __global__ read of size 4 bytes at days/day02/softmax.cu:42
        (softmax_kernel, thread (31,0,0) block (3,0,0))"."""
        where = " ".join(x for x in (f"thread {self.thread}" if self.thread else "",
                                     f"block {self.block}" if self.block else "") if x)
        who = [x for x in (self.kernel if self.file is not None else None, where or None,
                           f"{self.count} reports" if self.count > 1 else None) if x]
        return f"{self.kind} at {self.where()}" + (f" ({', '.join(who)})" if who else "")

    def as_dict(self) -> dict:
        return asdict(self)


# -- finding the tool and building its command -----------------------------------------------------------------
def find_sanitizer() -> str | None:
    """compute-sanitizer on PATH, else in $CUDA_HOME/bin (or $CUDA_PATH), the usual /usr/local/cuda/bin, or beside
    nvcc (the toolkit's bin/)."""
    exe = "compute-sanitizer"
    found = shutil.which(exe)
    if found:
        return found
    dirs = [Path(os.environ[v], "bin") for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    dirs += list(CUDA_BIN_DIRS)
    nvcc = shutil.which("nvcc")
    if nvcc:
        dirs += [Path(nvcc).parent, Path(os.path.realpath(nvcc)).parent]
    for d in dirs:
        p = d / exe
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    return None


def sanitize_command(tool: str, worker_cmd: list[str], *, sanitizer: str | None = None,
                     log_file: Path | None = None) -> list[str]:
    """compute-sanitizer's command line around worker_cmd (which starts with the program to run).

    --error-exitcode: the exit code when it found errors; --print-limit: the most errors it prints (one bug in
    every thread would print thousands); --show-backtrace device: the device frames of an error inside an inlined
    __device__ function, which lead back to the kernel; --target-processes all: processes the worker starts are
    checked too; --report-api-errors no: a failing CUDA API call is the op's exception to report, not a memory
    error (and CUDA 13's driver probes report some harmless ones); --strip-paths no: full paths, not bare file
    names (the default since 2024), so a file is found in its folder; --log-file: the report in a file of its own,
    apart from what the kernels print. memcheck: --leak-check no (the process ends right after, leaks are not
    what is asked)."""
    if tool not in TOOLS:
        raise ValueError(f"unknown compute-sanitizer tool {tool!r}: one of {', '.join(TOOLS)}")
    cmd = [sanitizer or find_sanitizer() or "compute-sanitizer", "--tool", tool,
           "--error-exitcode", str(ERROR_EXITCODE), "--print-limit", str(PRINT_LIMIT),
           "--show-backtrace", "device", "--target-processes", "all", "--report-api-errors", "no",
           "--strip-paths", "no"]
    if tool == "memcheck":
        cmd += ["--leak-check", "no"]
    if log_file is not None:
        cmd += ["--log-file", str(log_file)]
    return cmd + list(worker_cmd)


# -- reading the report ----------------------------------------------------------------------------------------
# Every line the tool writes starts with its prefix; the program's own output does not.
_PREFIX = re.compile(r"^(?:=========|==\d+==)(?: (?P<body>.*))?$")
# Lines at the top level that are not errors.
# The tool's own troubles ("Error: Target application terminated before first instrumented API call", "Error:
# process didn't terminate successfully") start like a race report but are not about the kernels.
_NOT_ERROR = re.compile(r"^(?:COMPUTE-SANITIZER|CUDA-MEMCHECK|(?:ERROR|LEAK|RACECHECK) SUMMARY\b|Program hit\b|"
                        r"Target application\b|Saved host backtrace|Leaked \d+ bytes|No CUDA-MEMCHECK|"
                        r"This can happen|(?:ERROR|Error|WARNING|Warning): (?!Race reported|Potential ))")
_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) errors?\s*$", re.M)
# Headers of errors (anything else at the top level counts as one if a location or a thread follows it).
_ERROR_HEADER = re.compile(r"^(?:Invalid |Misaligned |Out-of-range |Uninitialized |Barrier error|Warp |Illegal |"
                           r"Hardware |Malloc/Free |Host API memory access error|"
                           r"(?:(?:ERROR|Error|WARNING|Warning): )?(?:Race reported|Potential (?:RAW|WAR|WAW) hazard))")
_RACE = re.compile(r"^(?:(?P<sev>ERROR|Error|WARNING|Warning): )?Race reported between (?P<a>\w+) access at (?P<loc>.+?)"
                   r"(?: and (?P<b>\w+) access at (?P<loc2>.+?))?(?: \[(?P<n>\d+) hazards?\])?$")
_RACE_MORE = re.compile(r"^and (?P<b>\w+) access at (?P<loc>.+?)(?: \[(?P<n>\d+) hazards?\])?$")
_HAZARD = re.compile(r"^(?:(?:ERROR|Error|WARNING|Warning): )?Potential (?P<h>RAW|WAR|WAW) hazard detected at "
                     r"(?P<space>\S+) (?P<addr>0x[0-9a-fA-F]+)(?: in block \((?P<block>[^)]*)\))?")
_HAZARD_THREAD = re.compile(r"^(?P<a>Read|Write)\w* Thread \((?P<t>[^)]*)\) at (?P<loc>.+)$")
_BY_THREAD = re.compile(r"^by thread \((?P<t>[^)]*)\) in block \((?P<b>[^)]*)\)")
_ADDRESS = re.compile(r"^(?:Address|Access to) (?P<addr>0x[0-9a-fA-F]+)")  # "Access to": 2025.x
_FRAME = re.compile(r"^Device Frame: ?(?P<loc>.+)$")
# Locations: "kernel(args)+0x1b0 in /path/file.cu:42", "kernel(args)+0x1b0" (no -lineinfo); the older form
# "0x8f0 in /path/file.cu:20:kernel(args)", "0x150 in kernel(args)"; a frame may end in " (kernel : 0x8f0)".
_LOC_NEW = re.compile(r"^(?P<fn>.+?)\+0x[0-9a-fA-F]+(?: in (?P<file>.+?):(?P<line>\d+))?$")
_LOC_OLD = re.compile(r"^0x[0-9a-fA-F]+ in (?:(?P<file>[^:]+):(?P<line>\d+):)?(?P<fn>.+)$")
_LOC_FILE_FIRST = re.compile(r"^(?P<file>/[^:]+):(?P<line>\d+):(?P<fn>.+)$")


def _kernel_name(fn: str) -> str:
    """`void ns::kern<float, 4>(const float *, int)` -> `ns::kern<float, 4>`: the name without its return type and
    parameters."""
    fn = fn.strip().replace("(anonymous namespace)", "{anon}")
    depth, cut = 0, len(fn)
    for i, ch in enumerate(fn):
        if ch in "<[":
            depth += 1
        elif ch in ">]":
            depth -= 1
        elif ch == "(" and depth == 0:
            cut = i
            break
    name, depth, start = fn[:cut].strip(), 0, 0
    for i, ch in enumerate(name):  # the last word at the top level: the return type's words go
        if ch in "<[":
            depth += 1
        elif ch in ">]":
            depth -= 1
        elif ch == " " and depth == 0:
            start = i + 1
    return name[start:].replace("{anon}", "(anonymous namespace)")


def _location(text: str) -> tuple[str | None, str | None, int | None]:
    """(kernel, file, line) of a location in either of the tool's forms; file and line None without -lineinfo."""
    text = re.sub(r" \((?:[^()]|\([^()]*\))* : 0x[0-9a-fA-F]+\)$", "", text.strip())
    text = re.sub(r"^at ", "", text)
    m = _LOC_OLD.match(text) or _LOC_FILE_FIRST.match(text) or _LOC_NEW.match(text)
    if not m:
        return _kernel_name(text) or None, None, None
    line = m.group("line")
    return _kernel_name(m["fn"]), m.group("file"), int(line) if line else None


def _blocks(text: str) -> list[tuple[str, list[str]]]:
    """The report as (top-level line, the indented lines under it), the program's own lines dropped."""
    out: list[tuple[str, list[str]]] = []
    for raw in text.splitlines():
        m = _PREFIX.match(raw.rstrip())
        if not m:
            continue
        body = m["body"] or ""
        if not body.strip():
            continue
        if body[0] != " ":
            out.append((body.strip(), []))
        elif out:
            out[-1][1].append(body.strip())
    return out


def _in_folders(path: str, folders: dict[Path, Path] | None) -> bool:
    p = os.path.abspath(path)
    for real in (folders or {}).values():
        for spelling in {os.path.abspath(real), os.path.realpath(real)}:
            if p.startswith(spelling.rstrip(os.sep) + os.sep):
                return True
    return False


def parse_report(text: str, folders: dict[Path, Path] | None = None, *, tool: str | None = None,
                 root: Path | None = None) -> list[SanitizerError]:
    """The errors in compute-sanitizer's text output, in the order reported, identical ones (same kind, file and
    line) merged into one with its count.

    folders maps a compiled copy of the sources to the folder it was copied from (build.py's map_paths); root, when
    given, makes paths relative to the course root (`days/day02/softmax.cu`). The location is the first frame (the
    access itself, else the inlined calls that lead to it) in the mapped folders; the kernel is the outermost
    device frame. tool names the tool when the report does not (it never says which tool wrote it)."""
    tool = tool or "memcheck"
    merged: dict[tuple, SanitizerError] = {}
    order: list[SanitizerError] = []

    def place(path: str | None) -> tuple[str | None, bool]:
        if path is None:
            return None, False
        if not os.path.isabs(path):  # a bare name (--strip-paths yes): the file of that name in a folder, if any
            path = next((str(Path(real) / path) for built, real in (folders or {}).items()
                         if (Path(real) / path).is_file() or (Path(built) / path).is_file()), path)
        mapped = map_paths(path, folders)
        own = _in_folders(mapped, folders)
        return (relative_path(Path(mapped), root) if root is not None else mapped), own

    for header, lines in _blocks(text):
        if _NOT_ERROR.match(header):
            continue
        frames: list[tuple[str | None, str | None, int | None]] = []  # (kernel, file, line), innermost first
        thread = block = address = None
        details: list[str] = []
        kind = header.rstrip(".: ")
        race, hazard = _RACE.match(header), _HAZARD.match(header)
        if race:
            accesses = [race["a"]]
            frames.append(_location(race["loc"]))
            if race["b"]:
                accesses.append(race["b"])
                frames.append(_location(race["loc2"]))
            hazards = int(race["n"]) if race["n"] else 0
        elif hazard:
            kind = f"Potential {hazard['h']} hazard on {hazard['space']} memory"
            address, block = hazard["addr"], (f"({hazard['block'].replace(' ', '')})" if hazard["block"] else None)
        for ln in lines:
            if race and (m := _RACE_MORE.match(ln)):
                accesses.append(m["b"])
                frames.append(_location(m["loc"]))
                hazards += int(m["n"]) if m["n"] else 0
            elif hazard and (m := _HAZARD_THREAD.match(ln)):
                frames.append(_location(m["loc"]))
                thread = thread or f"({m['t'].replace(' ', '')})"
                details.append(f"{m['a']} by thread ({m['t'].replace(' ', '')})")
            elif ln.startswith("at "):
                frames.insert(0, _location(ln))
            elif m := _FRAME.match(ln):
                frames.append(_location(m["loc"]))
            elif m := _BY_THREAD.match(ln):
                thread, block = f"({m['t']})", f"({m['b']})"
            elif m := _ADDRESS.match(ln):
                address = m["addr"]
                details.append(ln)
            elif ln.startswith("and ") and details:
                details[-1] += " " + ln
            elif ln.startswith(("Host Frame", "in ", "Saved host backtrace", "Device Frame")):
                continue
            elif not frames and not details:
                details.append(ln)
        if not (frames or thread or _ERROR_HEADER.match(header)):
            continue  # a note of the tool's, not an error
        if race:
            where = [f"{a} access at {_location_text(f, place)}" for a, f in zip(accesses, frames)]
            kind = "Race reported between " + " and ".join(f"{a} access" for a in accesses[:2])
            details = [("warning: " if race["sev"] and race["sev"].lower() == "warning" else "") + "; ".join(where)
                       + (f" [{hazards} hazards]" if hazards else "")]
        placed = [(k, *place(f), ln_) for k, f, ln_ in frames]  # (kernel, file, own, line)
        best = next((p for p in placed if p[2]), None) or next((p for p in placed if p[1]), None)
        kernel = next((p[0] for p in reversed(placed) if p[0]), None)
        e = SanitizerError(tool=tool, kind=kind, kernel=kernel, file=best[1] if best else None,
                           line=best[3] if best else None, thread=thread, block=block, address=address,
                           message=" ".join(details), in_sources=bool(best and best[2]))
        key = (e.kind, e.file, e.line, e.kernel if e.file is None else None)
        if key in merged:
            merged[key].count += 1
        else:
            merged[key] = e
            order.append(e)
    return order


def _location_text(frame: tuple[str | None, str | None, int | None], place: Callable) -> str:
    kernel, file, line = frame
    if file is None:
        return kernel or "?"
    return f"{place(file)[0]}:{line}" if line is not None else place(file)[0]


def error_count(text: str) -> int | None:
    """The tool's own count ("ERROR SUMMARY: 3 errors"), or None if the report has no summary (it was cut off)."""
    counts = [int(n) for n in _SUMMARY.findall(text)]
    return sum(counts) if counts else None


def _nameable(e: SanitizerError) -> bool:
    """In the student's sources, or in a kernel without line information that is not a library's."""
    return e.in_sources or (e.file is None and bool(e.kernel) and not _LIBRARY_KERNEL.match(e.kernel or ""))


def headline(errors: list[SanitizerError]) -> SanitizerError | None:
    """The error to name in a verdict: the first in the student's sources, else the first in a kernel that is
    not a library's (built without -lineinfo); None when every report is about library code (not the student's
    to fix)."""
    return next((e for e in errors if e.in_sources), None) or next((e for e in errors if _nameable(e)), None)


def summary(tool: str, errors: list[SanitizerError]) -> str | None:
    """"compute-sanitizer memcheck: Invalid __global__ read of size 4 bytes at days/day02/softmax.cu:42
    (softmax_kernel, thread (31,0,0) block (3,0,0))", and how many other places; None if there is none to name."""
    first = headline(errors)
    if first is None:
        return None
    others = sum(1 for e in errors if e is not first and _nameable(e))
    return f"compute-sanitizer {tool}: {first.describe()}" + (f" (and {others} more)" if others else "")


# -- running a job's case under the tool ------------------------------------------------------------------------
def worker_command(job_path: Path, cases: int | list[int] | None, *, worker: str = "grader.check.worker") -> list[str]:
    """The worker's command for these cases alone (None: the job's correctness cases), as a sanitized run (no
    attribution, no extra checks, nothing timed), without its event channel (--fd)."""
    cmd = [sys.executable, "-m", worker, str(job_path), "--sanitized"]
    if cases is None:
        return cmd
    cases = [cases] if isinstance(cases, int) else cases
    return cmd + ["--only", ",".join(str(i) for i in cases)]


def run_under_sanitizer(job_path: Path, tool: str, case_index: int | list[int] | None, root: Path, timeout_s: float, *,
                        worker: str = "grader.check.worker", log_path: Path | None = None,
                        sanitizer: str | None = None, events: list[dict] | None = None,
                        sandbox=None) -> tuple[list[SanitizerError], str, int | None]:
    """Runs the job's case case_index (a list: those cases; None: every correctness case) in a worker under
    compute-sanitizer's tool, at most
    timeout_s seconds. Returns (errors, the tool's report, its exit code: ERROR_EXITCODE when it found errors,
    None when it was stopped at the time limit). The worker's output, its events and the report go to log_path
    (default: next to the job, `<job>.<tool>.log`); events, when given, receives the worker's events. sandbox: the
    CheckSandbox the tool and the worker run in (the tool writes its report into the sandbox's reports folder)."""
    from grader.check.job import Job
    from grader.check.worker_process import run_worker

    job_path, root = Path(job_path), Path(root)
    job = Job.read(job_path)
    sanitizer = sanitizer or find_sanitizer()
    if sanitizer is None:
        raise FileNotFoundError("compute-sanitizer not found: put the CUDA toolkit's bin/ on PATH or set CUDA_HOME")
    log_path = Path(log_path) if log_path else job_path.with_name(job_path.name.removesuffix(".job.json") + f".{tool}.log")
    report_path = log_path.with_name(log_path.name + ".report")
    if sandbox is not None:
        report_path = sandbox.reports / report_path.name
    report_path.unlink(missing_ok=True)
    prefix = sandbox.for_job(job, timed=False) if sandbox is not None else []
    base = worker_command(job_path, case_index, worker=worker)
    events = [] if events is None else events

    def on_event(ev: dict) -> float:
        events.append(ev)
        return timeout_s

    with open(log_path, "w") as log:
        which = case_index if case_index is not None else "all"
        log.write(f"== compute-sanitizer {tool}, case(s) {which}\n")
        log.flush()
        end = run_worker(lambda fd: sanitize_command(tool, [*base, "--fd", str(fd)], sanitizer=sanitizer,
                                                     log_file=report_path),
                         cwd=root, log=log, on_event=on_event, first_wait=timeout_s, total_s=timeout_s,
                         env=SANITIZE_ENV, grace_s=5.0, prefix=prefix)
        if sandbox is not None:  # written inside: never followed if it became a link
            report = sandbox.read_report(report_path)
        else:
            try:
                report = report_path.read_text(errors="replace")
            except OSError:
                report = ""
        log.write("\n== events\n" + "".join(f"{ev}\n" for ev in events))
        how = f"stopped after {timeout_s:g} s" if end.stalled else f"exit code {end.returncode}"
        log.write(f"\n== report ({how})\n")
        log.write(report)
    report_path.unlink(missing_ok=True)
    errors = parse_report(report, folders_of(job, sandbox.builds() if sandbox is not None else None), tool=tool,
                          root=root)
    return errors, report, None if end.stalled else end.returncode


def folders_of(job, builds: Path | None = None) -> dict[Path, Path]:
    """The compiled copies of the job's sources (the exercise's and the baseline's) and the folders they came from.
    builds: where they were built, when not in this course's state (a sandboxed worker's own)."""
    from grader.check.build import build_unit, source_folders, workspaces

    root = Path(job.root)
    out = {}
    for t in (job.target, job.baseline_target):
        if t is not None and t.exercise.build != "python":
            for work in workspaces(root, t.day, build_unit(t.exercise), builds):  # whichever compiled this code
                out.update(source_folders(t.exercise, work / "src", Path(t.src_dir)))
    return out
