"""Compile results recorded in the repository, keyed by the content of every input, so that CI compiles only what
changed since a developer last compiled.

tests/data/compile-records.json maps a key to what a test asserts of one compile: for tests/test_compile.py a
source's compile report (ok, diagnostics, ptxas's kernels: registers, spills, smem, serialised wgmma), for
tests/test_ring_ordering.py the ordering check's findings on a PTX, for tests/test_cpu_compile.py a Python route's
compile-only report (python_kernels). The key is the sha256 of everything the result is made from:

- the source's name and bytes, and every header in its folder and its include folders (so that a new header which
  would shadow another changes the key too);
- every file the compiler read, as its `-MD` list names them, by content: the course's own headers in the record
  itself, the toolkit's, the C++ library's and torch's through the record file's `environments` (one list of the
  headers outside the course per compiler, with that compiler's `--version`); a Python route's compile names no
  such list, so its record takes every file of its folder by content, and its packages by version;
- the flags and arguments, and the code that runs the compiler and reads its report (the `code` of a Unit).

A recorded key gives the record's result without compiling; a key the records lack is compiled, once per run for
all xdist workers (a file lock in the run's shared state, tests/conftest.py's SHARED_STATE). A stale or forged record
cannot pass: every run also recompiles a sample of the recorded keys and fails the test that asked when the fresh
result differs from the record. The sample walks the keys in an order drawn from the run's seed and takes the first
MIN_SAMPLE, then every key that still fits in SAMPLE_FRACTION of the records' compile seconds (of their number where
a record has no seconds). So a run's sample costs that share of the compile time and never more, unless its first
key alone passes it (why it is drawn by seconds and passes over a key that does not fit: measured/NOTES.md). Every
key can come first, so every key is checked in some runs, and a key bigger than the share only in a run that draws
it first (how often, and what such a run costs CI: measured/NOTES.md).

`python3 scripts/compile_records.py --update` refreshes the file (README, Tests)."""
from __future__ import annotations

import difflib
import fcntl
import hashlib
import inspect
import json
import math
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from collections.abc import Callable

import pytest

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "tests" / "data" / "compile-records.json"
FORMAT = 1  # bump when what a record holds changes
SAMPLE_FRACTION = 0.03  # of the records' compile seconds (CI's time, issue 68; measured/NOTES.md)
MIN_SAMPLE = 1  # the keys taken whatever they cost: a key bigger than the share is checked only where it comes first
MODE_ENV = "COMPILE_RECORDS_MODE"  # unset: use the records; "update": also write what was used; "all": compile all
OUT_ENV = "COMPILE_RECORDS_OUT"  # the folder an update run's processes write their lines to
SEED_ENV = "COMPILE_RECORDS_SEED"  # the sample's seed (default: the xdist run's id, else random)
SAMPLE_ENV = "COMPILE_RECORDS_SAMPLE"  # the fraction sampled, instead of SAMPLE_FRACTION (1: every record)
REFRESH = "python3 scripts/compile_records.py --update"


@dataclass
class Unit:
    """One compile whose result a test asserts on. produce(depfile) compiles, has the compiler write the files it
    read to depfile, and gives (result, keep): keep False for a result that says nothing of the code (the compiler
    timed out or could not start), which is then neither recorded nor shared."""
    kind: str  # "nvcc", "c++", "ptx-ordering" or "python" (a route's CPU compile): the record's kind
    source: Path
    include_dirs: list
    args: list  # the caller's flags and arguments, paths as _path_id gives them
    code: tuple  # texts of the code that makes the result from the compiler's output
    produce: Callable[[Path], tuple]
    # The record file's environment the headers outside the course go to: a compile against an optional package's
    # headers (CUTLASS's wheel) keeps them in one of its own, so that a machine without the package misses only
    # that unit's records, not every nvcc record.
    environment: str | None = None

    @property
    def compiler(self) -> str:
        return self.environment or ("c++" if self.kind == "c++" else "nvcc")


# ---------------------------------------------------------------------------------------------- hashing inputs

def _hash(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        data = p if isinstance(p, bytes) else str(p).encode()
        h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def _outside_root(source: Path) -> bool:
    return not Path(source).resolve().is_relative_to(ROOT)


def _path_id(path: Path, source: Path) -> str:
    """A path as a record names it: inside a source folder outside the course (a temporary copy of a solution)
    `@src/...`; inside the course relative to it; elsewhere (toolkit, C++ library, torch) absolute."""
    p = Path(os.path.abspath(path))
    src_dir = Path(os.path.abspath(Path(source).parent))
    if _outside_root(source) and p.is_relative_to(src_dir):
        return "@src/" + p.relative_to(src_dir).as_posix() if p != src_dir else "@src"
    if p.resolve().is_relative_to(ROOT):
        return p.resolve().relative_to(ROOT).as_posix()
    return str(p)


def _resolve(path_id: str, source: Path) -> Path:
    if path_id == "@src":
        return Path(source).parent
    if path_id.startswith("@src/"):
        return Path(source).parent / path_id[len("@src/"):]
    return Path(path_id) if path_id.startswith("/") else ROOT / path_id


def _project(path_id: str) -> bool:
    return not path_id.startswith("/")


@cache
def identity(compiler: str) -> str | None:
    """The compiler's `--version`, as it says it; None where it is not installed (no record applies there).
    compiler: "nvcc", "c++", an environment of nvcc's own ("nvcc+cutlass", Unit.environment), or a Python route's
    packages ("python+cute": _python_identity)."""
    from grader.check.compile_check import nvcc_path

    if compiler.startswith("python+"):
        return _python_identity(compiler.partition("+")[2])
    if compiler.startswith("nvcc"):
        path = nvcc_path()
    else:
        path = shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++")
    if path is None:
        return None
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.strip() or None


def _python_identity(extra: str) -> str | None:
    """A Python route's compiler: Python's version, torch's, and those of the packages pyproject.toml's extra
    `extra` names and of what they require, as installed; None where the extra or one of its packages is not."""
    import importlib.metadata as md
    import platform
    import tomllib

    name = lambda requirement: re.match(r"[A-Za-z0-9_.-]+", requirement)[0]  # noqa: E731
    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"].get(extra)
    if listed is None:
        return None
    try:
        versions = {n: md.version(n) for n in ["torch", *map(name, listed)]}
    except md.PackageNotFoundError:
        return None
    for n in list(versions)[1:]:
        for r in md.requires(n) or []:
            try:
                versions.setdefault(name(r), md.version(name(r)))
            except md.PackageNotFoundError:  # an optional one, or another platform's
                pass
    return "; ".join([f"Python {platform.python_version()}", *(f"{n} {v}" for n, v in sorted(versions.items()))])


def _base(unit: Unit) -> str:
    """The key's part known before compiling: compiler, code, arguments, the source and the headers of the folders
    its `#include`s search."""
    from grader.check.compile_check import HEADER_SUFFIXES

    parts = [FORMAT, unit.kind, identity(unit.compiler), *unit.code, *unit.args,
             _path_id(unit.source, unit.source), unit.source.read_bytes()]
    for d in [unit.source.parent, *unit.include_dirs]:
        parts.append(_path_id(d, unit.source))
        for f in sorted(Path(d).rglob("*")) if Path(d).is_dir() else []:
            if f.suffix in HEADER_SUFFIXES and f.is_file():
                parts += [f.relative_to(d).as_posix(), f.read_bytes()]
    return _hash(*parts)


@cache
def _external_sha(path: str) -> str | None:
    """A header outside the course by content, hashed once per process: the toolkit, the C++ library and torch do
    not change while the tests run."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def environment_digest(env: dict) -> str | None:
    """The digest of a compiler's environment (its `--version` and every header outside the course its records
    read); None where the compiler says another version or a header is gone."""
    if identity(env["compiler"]) != env["identity"]:
        return None
    shas = [_external_sha(p) for p in env["headers"]]
    if None in shas:
        return None
    return _hash(env["compiler"], env["identity"], *[x for pair in zip(env["headers"], shas) for x in pair])


def dep_shas(deps: list, source: Path) -> list:
    """[path id, sha256 of its content] of each of the course's files a compile read (OSError: one is gone)."""
    return [[d, hashlib.sha256(_resolve(d, source).read_bytes()).hexdigest()] for d in sorted(deps)]


def key(base: str, env_digest: str, shas: list) -> str:
    """The record's key: the base, the environment and the course's files the compiler read, by content."""
    return _hash(base, env_digest, *[x for pair in shas for x in pair])


def read_depfile(path: Path, source: Path) -> tuple[list, list]:
    """(the course's files, the headers outside it) that a compile read, from its make-style -MD file; the source
    itself left out, and files the compile made for itself and removed (compile_host's stand-in header) too."""
    text = path.read_text(encoding="utf-8", errors="replace").replace("\\\n", " ")
    _, _, files = text.partition(": ")  # "k.o : k.cu a.h" (nvcc), "k.o: k.cu a.h" (gcc)
    project, external = set(), set()
    for raw in re.split(r"(?<!\\)\s+", files.strip()):
        name = raw.replace("\\ ", " ").replace("$$", "$")
        if not name or Path(os.path.abspath(name)) == Path(os.path.abspath(source)):
            continue
        pid = _path_id(Path(name), source)
        if _project(pid):
            project.add(pid)
        elif Path(pid).is_file():
            external.add(pid)
    return sorted(project), sorted(external)


# ------------------------------------------------------------------------------------------------ the records

@cache
def load() -> dict:
    """The record file ({"format", "environments", "records"}); empty where it is missing or of another format
    (every key is then compiled). A file that is not JSON (a merge's conflict markers) fails the test that reads
    it: CI would otherwise compile everything and stay green, slowly."""
    try:
        data = json.loads(RECORDS.read_text(encoding="utf-8"))
    except OSError:
        return {"format": FORMAT, "environments": {}, "records": {}}
    except ValueError as e:
        pytest.fail(f"{RECORDS.relative_to(ROOT) if RECORDS.is_relative_to(ROOT) else RECORDS} is not JSON ({e}): "
                    f"write it again with `{REFRESH}`", pytrace=False)
    if data.get("format") != FORMAT:
        return {"format": FORMAT, "environments": {}, "records": {}}
    return data


@cache
def _by_base() -> dict:
    out: dict = {}
    for k, rec in load()["records"].items():
        out.setdefault(rec["base"], []).append(k)
    return out


@cache
def _env_digest(compiler: str) -> str | None:
    env = load()["environments"].get(compiler)
    return environment_digest(env) if env else None


def seed() -> str:
    """The run's seed for the sample: $COMPILE_RECORDS_SEED, else the id xdist gives all workers of a run, else
    one drawn for this process (and kept in its environment, so a failure can name it)."""
    if not os.environ.get(SEED_ENV):
        os.environ[SEED_ENV] = os.environ.get("PYTEST_XDIST_TESTRUNUID") or secrets.token_hex(8)
    return os.environ[SEED_ENV]


@cache
def sample() -> frozenset:
    """The recorded keys this run recompiles (the module's docstring says how they are drawn); every worker of a run
    draws the same."""
    records = load()["records"]
    keys = sorted(records)
    fraction = float(os.environ.get(SAMPLE_ENV) or SAMPLE_FRACTION)  # more, never fewer than MIN_SAMPLE
    s = seed()
    order = sorted(keys, key=lambda k: _hash(s, k))
    seconds = [records[k].get("seconds") for k in order]
    if fraction >= 1 or not all(isinstance(x, (int, float)) and x >= 0 for x in seconds):
        n = min(len(keys), max(MIN_SAMPLE, math.ceil(fraction * len(keys))))
        return frozenset(order[:n])
    budget, spent, chosen = fraction * sum(seconds), 0.0, []
    for k, t in zip(order, seconds):  # a key that does not fit is passed over: a smaller one after it may
        if len(chosen) < MIN_SAMPLE or spent + t <= budget:
            chosen.append(k)
            spent += t
    return frozenset(chosen)


def _lookup(unit: Unit, base: str) -> tuple[str, dict] | None:
    digest = _env_digest(unit.compiler)
    if digest is None:
        return None
    for k in _by_base().get(base, []):
        rec = load()["records"][k]
        try:
            if key(base, digest, dep_shas(rec["deps"], unit.source)) == k:
                return k, rec
        except OSError:  # a header the record names is gone: not this record
            continue
    return None


def _stored(result: dict, source: Path) -> dict:
    """A result as recorded: the folder of a source outside the course (a temporary copy) as `@src`."""
    text = json.dumps(result, sort_keys=True)
    if _outside_root(source):
        for spelling in {os.path.abspath(source.parent), os.path.realpath(source.parent)}:
            text = text.replace(spelling + "/", "@src/")
    return json.loads(text)


def _restored(result: dict, source: Path) -> dict:
    if not _outside_root(source):
        return result
    return json.loads(json.dumps(result).replace("@src/", os.path.abspath(source.parent) + "/"))


def _read_by(fresh: dict, source: Path) -> list:
    """The content of every file a fresh compile read, as it is now (None for a file gone)."""
    try:
        shas = dep_shas(fresh["deps"], source)
    except OSError:
        return [None]
    return [shas, [_external_sha(p) for p in fresh["external"]]]


def _fresh(unit: Unit, base: str) -> tuple[dict | None, dict]:
    """(what a compile of the unit gives, as stored: result, deps, external; the result as produced). Compiled once
    per run: the first worker to ask holds the base's lock while it compiles, and the others read its result
    while every file it read is unchanged."""
    from tests.conftest import SHARED_STATE

    folder = SHARED_STATE / "compile-records"
    folder.mkdir(parents=True, exist_ok=True)
    done = folder / f"{base}.json"
    with open(folder / f"{base}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, even if the compile raises
        if done.is_file():
            fresh = json.loads(done.read_text(encoding="utf-8"))
            if fresh["read"] == _read_by(fresh, unit.source):
                return fresh, _restored(fresh["result"], unit.source)
        with tempfile.TemporaryDirectory() as tmp:
            depfile = Path(tmp) / "deps.d"
            t0 = time.perf_counter()
            result, keep = unit.produce(depfile)
            seconds = round(time.perf_counter() - t0, 2)
            if not keep or not depfile.is_file():
                return None, result
            deps, external = read_depfile(depfile, unit.source)
        fresh = {"result": _stored(result, unit.source), "deps": deps, "external": external, "seconds": seconds}
        fresh["read"] = _read_by(fresh, unit.source)
        part = done.with_suffix(f".{os.getpid()}.tmp")
        part.write_text(json.dumps(fresh), encoding="utf-8")
        part.replace(done)
    return fresh, result


def _emit(unit: Unit, base: str, deps: list, external: list | None, result: dict, seconds: float | None) -> None:
    """In an update run, the line scripts/compile_records.py makes the record from (external None: a record used
    as it was, whose headers are the environment's)."""
    if not os.environ.get(MODE_ENV):
        return
    out = Path(os.environ[OUT_ENV])
    line = {"base": base, "kind": unit.kind, "source": _path_id(unit.source, unit.source), "compiler": unit.compiler,
            "identity": identity(unit.compiler), "deps": dep_shas(deps, unit.source), "external": external,
            "result": result, "seconds": seconds}
    with open(out / f"{os.getpid()}.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")


def _mismatch(unit: Unit, k: str, rec: dict, fresh: dict) -> str | None:
    """Why a recorded key's fresh compile disagrees with its record, or None."""
    env = load()["environments"][unit.compiler]
    if fresh["deps"] != sorted(rec["deps"]):
        return f"the compile read {fresh['deps']}, the record lists {rec['deps']}"
    unlisted = sorted(set(fresh["external"]) - set(env["headers"]))
    if unlisted:
        return f"the compile read headers the record's environment does not list: {unlisted[:5]}"
    if fresh["result"] != rec["result"]:
        want = json.dumps(rec["result"], indent=1, sort_keys=True).splitlines()
        got = json.dumps(fresh["result"], indent=1, sort_keys=True).splitlines()
        diff = list(difflib.unified_diff(want, got, "recorded", "compiled now", n=1, lineterm=""))
        return "the result differs:\n" + "\n".join(diff[:40])
    return None


def result(unit: Unit) -> tuple[dict, str]:
    """(the unit's result, how it was had: "recorded", "sampled" (recompiled and equal to its record) or
    "compiled" (a key the records lack)). Fails the calling test when a sampled record is not what the compiler
    gives."""
    if identity(unit.compiler) is None:  # no compiler: no key; the unit says what it can
        return unit.produce(None)[0], "compiled"
    base = _base(unit)
    hit = None if os.environ.get(MODE_ENV) == "all" else _lookup(unit, base)
    if hit is not None and hit[0] not in sample():
        k, rec = hit
        _emit(unit, base, rec["deps"], None, rec["result"], rec.get("seconds"))
        return _restored(rec["result"], unit.source), "recorded"
    fresh, produced = _fresh(unit, base)
    if fresh is None:
        return produced, "compiled"
    if hit is not None:
        k, rec = hit
        why = _mismatch(unit, k, rec, fresh)
        _emit(unit, base, fresh["deps"], fresh["external"], fresh["result"], fresh.get("seconds"))
        if why:
            pytest.fail(f"{_path_id(unit.source, unit.source)}: the compile record {k[:16]} (tests/data/"
                        f"compile-records.json) is not what the compiler gives now: {why}\nA record must be the "
                        f"compiler's own result: refresh them with `{REFRESH}` (this run's sample seed: "
                        f"{SEED_ENV}={seed()}).", pytrace=False)
        return produced, "sampled"
    _emit(unit, base, fresh["deps"], fresh["external"], fresh["result"], fresh.get("seconds"))
    return produced, "compiled"


# ------------------------------------------------------------------------------------- compile-only reports

_REPORT_FIELDS = ("file", "ok", "tool", "note", "diagnostics", "kernels")


_PLAIN = (str, bytes, int, float, bool, type(None))


def _constant(value) -> str | None:
    """A module constant as text that is the same in every process and checkout (a set's order is not, a path
    names the checkout), or None for what is not such a constant (a module, an object, a path)."""
    if isinstance(value, re.Pattern):
        return f"re({value.pattern!r}, {value.flags})"
    if isinstance(value, _PLAIN):
        return repr(value)
    if isinstance(value, (tuple, list)):
        items = [_constant(v) for v in value]
        return None if None in items else f"{type(value).__name__}({', '.join(items)})"
    if isinstance(value, (set, frozenset)):
        items = [_constant(v) for v in value]
        return None if None in items else f"set({', '.join(sorted(items))})"
    if isinstance(value, dict):
        items = [(_constant(k), _constant(v)) for k, v in value.items()]
        return None if any(None in kv for kv in items) else f"dict({items})"
    return None


CODE_PACKAGES = ("grader.", "tasks.")  # whose functions a closure follows (the roots themselves may be anywhere)


def code_closure(*roots) -> tuple:
    """The source of every function and class of CODE_PACKAGES that the roots reach through the names their code
    loads (globals, `module.name`, imports inside a function), and the value of every constant they read: the code
    that turns the compiler's output into a result. An edit elsewhere in those modules (a message, another
    command) keeps the records."""
    import dis
    import importlib

    todo, seen, out = list(roots), set(), set()

    def reached(name: str, value) -> None:
        value = inspect.unwrap(value) if callable(value) else value
        if inspect.isfunction(value) or inspect.isclass(value):
            if value.__module__.startswith(CODE_PACKAGES):
                todo.append(value)
        elif (text := _constant(value)) is not None:
            out.add(f"{name} = {text}")

    while todo:
        obj = inspect.unwrap(todo.pop())
        if obj in seen:
            continue
        seen.add(obj)
        out.add(f"{obj.__module__}.{obj.__qualname__}:\n{inspect.getsource(obj)}")
        module = inspect.getmodule(obj)
        funcs = [obj] if inspect.isfunction(obj) else [f for f in vars(obj).values() if inspect.isfunction(f)]
        codes = [f.__code__ for f in funcs]
        while codes:
            code = codes.pop()
            codes += [c for c in code.co_consts if inspect.iscode(c)]  # nested functions, lambdas, comprehensions
            imported = last = None
            for ins in dis.get_instructions(code):
                if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") and hasattr(module, ins.argval):
                    last = getattr(module, ins.argval)
                    reached(f"{module.__name__}.{ins.argval}", last)
                elif ins.opname == "IMPORT_NAME":
                    try:
                        imported = importlib.import_module(ins.argval)
                    except ImportError:
                        imported = None
                elif ins.opname == "IMPORT_FROM" and imported is not None and hasattr(imported, ins.argval):
                    reached(f"{imported.__name__}.{ins.argval}", getattr(imported, ins.argval))
                elif ins.opname in ("LOAD_ATTR", "LOAD_METHOD") and inspect.ismodule(last):
                    name, last = f"{last.__name__}.{ins.argval}", getattr(last, ins.argval, None)
                    reached(name, last)
                else:
                    last = None
    return tuple(sorted(out))


@cache
def _report_code() -> tuple:
    """The code a compile report comes from: everything compile_cuda and compile_host reach (the command line,
    ptxas's report, the diagnostics), and the fields a record keeps."""
    from grader.check import compile_check as cc

    return (*code_closure(cc.compile_cuda, cc.compile_host), repr(_REPORT_FIELDS))


def _unkept(report) -> bool:
    """A report that says nothing of the code: the compiler ran out of time or could not start."""
    return "did not finish" in report.note or report.log.startswith("cannot run ")


def compile_sources(sources: list[Path], include_dirs: list[Path], extra_flags: list[str],
                    hows: list | None = None) -> list:
    """grader's compile_sources (the compile-only check of each source) with the reports of nvcc and the host
    compiler taken from the records where their key is recorded. A report from a record has no log. hows gets
    (file, how) for each source: result()'s "recorded", "sampled" or "compiled", or "unrecorded" (a report that
    takes no compiler: Python's syntax, a file that cannot be read)."""
    from grader.check import compile_check as cc

    hows = [] if hows is None else hows
    reports = []
    for s in sources:
        if problem := cc.source_problem(s, ROOT):
            reports.append(problem)
            hows.append((problem.file, "unrecorded"))
            continue
        if s.suffix == ".cu":
            kind = "nvcc"

            def produce(depfile, s=s):
                r = cc.compile_cuda(s, include_dirs, extra_flags, ROOT, depfile=depfile)
                return {f: getattr(r, f) for f in _REPORT_FIELDS}, not _unkept(r)
        elif s.suffix in cc.HOST_SOURCE_SUFFIXES:
            kind = "c++"

            def produce(depfile, s=s):
                r = cc.compile_host(s, include_dirs, ROOT, depfile=depfile)
                # "skipped": no torch or no C++ compiler here, so nothing was compiled
                return {f: getattr(r, f) for f in _REPORT_FIELDS}, not _unkept(r) and not r.note.startswith("skipped")
        else:  # Python's syntax, or a route compiled by its own compiler
            got = cc.compile_sources([s], include_dirs, extra_flags, ROOT)
            reports += got
            hows += [(r.file, "unrecorded") for r in got]
            continue
        unit = Unit(kind, s, list(include_dirs), [*(extra_flags if kind == "nvcc" else []),
                                                   *(_path_id(d, s) for d in include_dirs)],
                    _report_code(), produce)
        got, how = result(unit)
        reports.append(cc.CompileReport(**got, cached=how == "recorded"))
        hows.append((reports[-1].file, how))
    return reports


def python_kernels(source: Path, function: str, dtypes: list[str], extra: str) -> tuple:
    """(grader's compile_python_kernels report, how it was had): a Python route that builds its kernels with no GPU
    (course.yaml `cpu_compile:`), from the records where its key is recorded. Its compiler is the packages of
    pyproject.toml's extra `extra`, by version (the record file's environment "python+EXTRA"); the course's files it
    reads are every file of its folder, by content (a route reads its neighbours, as day 13's Mojo route reads its
    .mojo file, and Python names no such list as nvcc's -MD does)."""
    from grader.check import compile_check as cc

    def produce(depfile):
        r = cc.compile_python_kernels(source, function, dtypes, ROOT)
        if depfile is not None:
            files = sorted(str(p).replace(" ", "\\ ") for p in source.parent.iterdir() if p.is_file())
            depfile.write_text("route: " + " ".join(files) + "\n")
        return {f: getattr(r, f) for f in _REPORT_FIELDS}, not _unkept(r) and "is not installed" not in r.note

    unit = Unit("python", source, [], [function, *dtypes], (*code_closure(cc.compile_python_kernels),
                                                            repr(_REPORT_FIELDS)), produce, environment=f"python+{extra}")
    got, how = result(unit)
    return cc.CompileReport(**got, cached=how == "recorded"), how


# ------------------------------------------------------------------------------------------ the compile matrix
# ptxas's report for the image each class GPU runs (grader/gpu_support.py CLASS_GPUS), beside the compile check's
# sm_80 and sm_90 above: tests/test_compile_matrix.py and scripts/compile_matrix.py.

def image(extra_flags: list[str], cc: str) -> tuple[str, str] | None:
    """(the image a GPU of compute capability cc ("8.6") runs of an exercise built with extra_flags, as the
    `-gencode` that makes ptxas compile it for that GPU), or None where nothing in the build runs there. An exercise
    that lists no `-gencode` is built for the GPU at hand (PyTorch's native arch); one whose list is the whole build
    (days 11, 12, 20) runs the driver's choice from it: SASS of exactly this GPU (sm_90a on an H100), else SASS of
    its major and an older minor (sm_80 on any sm_8x), else the newest PTX not newer than the GPU, compiled by the
    driver: `code=sm_<cc>` of that PTX is what ptxas gives the driver's JIT here."""
    from grader.check.build import _GENCODE

    want = int(cc.replace(".", ""))
    listed = [(f, m) for f in extra_flags if (m := _GENCODE.match(f))]
    if not listed:
        return f"-gencode=arch=compute_{want},code=sm_{want}"
    sass = sorted((int(m["cc"]), f) for f, m in listed if m["kind"] == "sm"
                  and int(m["cc"]) // 10 == want // 10 and int(m["cc"]) <= want)
    if sass:
        return sass[-1][1]
    ptx = sorted(int(m["cc"]) for f, m in listed if m["kind"] == "compute" and int(m["cc"]) <= want)
    return f"-gencode=arch=compute_{ptx[-1]},code=sm_{want}" if ptx else None


def image_arch(gencode: str) -> str:
    """The arch ptxas names the image's kernels by ("sm_80", "sm_90a")."""
    return gencode.rpartition("code=")[2]


def compile_images(src: Path, include_dirs: list, flags: list, gencodes: list, depfile: Path | None) -> dict:
    """One nvcc run that compiles src for every image in gencodes (the compile check's compile_cuda, its own images
    left out): what a compile report holds."""
    from grader.check.compile_check import compile_cuda  # imported by name: code_closure follows it into the key

    r = compile_cuda(src, include_dirs, flags, ROOT, depfile=depfile, gencodes=gencodes)
    note = r.note or ("" if r.ok else "nvcc failed: " + "\n".join(r.diagnostics)[-3000:])
    return {"file": r.file, "ok": r.ok, "tool": "nvcc", "note": note, "diagnostics": r.diagnostics,
            "kernels": r.kernels}


def class_matrix(source: Path, include_dirs: list[Path], extra_flags: list[str], archs: list[str],
                 hows: list | None = None) -> list[dict]:
    """For each compute capability in archs: {"arch": "8.6", "image": its -gencode or None, "ok", "note",
    "kernels"} of the .cu source. The images the compile check builds (sm_80, sm_90 and the exercise's own
    list) come from its report (compile_sources, recorded); the others from one nvcc run with them all, recorded
    in the same way (result())."""
    from grader.check import compile_check as cc

    hows = [] if hows is None else hows
    (check,) = compile_sources([source], include_dirs, extra_flags, hows)
    checked = {image_arch(g) for g in [f"code=sm_{a}" for a in cc.ARCHS] + extra_flags if "code=sm_" in g}
    images = {a: image(extra_flags, a) for a in archs}
    rest = sorted({g for g in images.values() if g and image_arch(g) not in checked})
    rest_report = None
    if rest:
        flags = [f for f in extra_flags if not f.startswith("-gencode")]

        def produce(depfile):
            r = compile_images(source, include_dirs, flags, rest, depfile)
            return r, not r["note"].startswith("nvcc did not finish")

        unit = Unit("nvcc", source, list(include_dirs), [*flags, *rest, *(_path_id(d, source) for d in include_dirs)],
                    (*code_closure(compile_images), "class_matrix"), produce)
        rest_report, how = result(unit)
        hows.append((rest_report["file"] + " (" + " ".join(image_arch(g) for g in rest) + ")", how))
    out = []
    for a, g in images.items():
        if g is None:
            out.append({"arch": a, "image": None, "ok": True, "note": "", "kernels": []})
            continue
        rep = check.as_dict() if image_arch(g) in checked else rest_report
        out.append({"arch": a, "image": g, "ok": rep["ok"], "note": rep["note"],
                    "kernels": [k for k in rep["kernels"] if k["arch"] == image_arch(g)]})
    return out
