"""The leaderboard: ranked `grader check --json` results, one board per course day and GPU model, ordered by the
geometric-mean speedup over the baseline each result timed in its own run.

Every result file is judged on its own first, then against the others; one that cannot be trusted is left off the
board with a stated reason (its kind, one of KINDS, and a sentence). The output folder gets leaderboard.json,
leaderboard.md (the site's page), rejected.json and one plot per board, each written to a temporary file and
renamed, all under a file lock, so two builds at once leave the files of one build, never a mixture.

Result files are laid out RESULTS/<participant>/<anything>.json: the participant is the folder's name.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import re
import time
import uuid
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from grader.check.physical import FALLBACK_CLOCK_GHZ, MARGIN, peak_tflops
from grader.errors import GraderError
from grader.classroom.grade import SUMMARY_FILE
from grader.verdicts import Status

# Why a result is left off, in the order they are looked for.
MALFORMED, NOT_RANKED, INCONSISTENT, IMPOSSIBLE, FAILED, UNTIMED, STALE, DUPLICATE = (
    "malformed", "not_ranked", "inconsistent", "impossible", "failed", "untimed", "stale", "duplicate")
KINDS = (MALFORMED, NOT_RANKED, INCONSISTENT, IMPOSSIBLE, FAILED, UNTIMED, STALE, DUPLICATE)

# What every exercise of one entry must share: one machine, one software stack.
SAME = ("gpu", "capability", "sms", "torch", "cuda", "driver")
REL = 1e-3  # a derived figure (speedup, rate) agrees with the times it came from within this (JSON keeps 17 digits)
MAX_GBPS = 10_000  # above any GPU's memory (B200: 8 TB/s): a rate beyond it is impossible whatever the copy says
FUTURE_SLACK = timedelta(hours=1)  # clocks differ a little between machines; a result from later than this is wrong
MAX_BYTES = 20 * 1024 * 1024  # a check's JSON is a few hundred KiB; anything far larger is not one
LOCK_WAIT_S = 300.0
FILES = ("leaderboard.json", "leaderboard.md", "rejected.json")


class Reject(Exception):
    def __init__(self, kind: str, reason: str):
        super().__init__(reason)
        self.kind, self.reason = kind, reason


# Results of another kind, not faulty ones: counted and listed apart from the rejections, in their own words.
MISSING, COMPILED_ONLY = "missing", "compiled_only"


class NotEntered(Reject):
    """A valid result that is no entry: `grader grade`'s record of a day the submission has no folder for, or a
    check that only compiled (no GPU ran it)."""


@dataclass
class Rejected:
    source: str
    kind: str
    reason: str


@dataclass
class Entry:
    name: str
    day: str
    gpu: str
    when: str
    speedup: float  # geometric mean of the timed exercises' speedups
    roofline: float | None  # geometric mean of the fraction of the memory (or compute) ceiling, where measured
    exercises: dict[str, float]
    torch: str
    driver: str | None
    seed_sha256: str
    source: str
    digest: str = field(repr=False, default="")
    rank: int = 0


@dataclass
class Board:
    build: str
    built_at: str
    boards: list[dict]
    rejected: list[Rejected]
    accepted: int
    not_entered: list[Rejected] = field(default_factory=list)  # kind MISSING or COMPILED_ONLY


# -- reading one result -------------------------------------------------------------------------------------------
def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= REL * max(abs(a), abs(b))


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def parse_when(text) -> datetime:
    if not isinstance(text, str):
        raise ValueError
    t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def _median(t, what: str) -> float:
    v = t.get("median_ms") if isinstance(t, dict) else None
    if not _num(v) or v <= 0:
        raise Reject(MALFORMED, f"{what} has no positive median time")
    return float(v)


def _check_case(ex: str, c: dict, peak_bound) -> None:
    """A benchmark case's figures against its own times, then against what hardware can do."""
    label = f"{ex} {c.get('dtype', '?')} {c.get('label', '?')}"
    ms, base_ms = _median(c.get("time"), label), _median(c.get("baseline_time"), f"{label}'s baseline")
    sp = c.get("speedup")
    if not _num(sp) or sp <= 0:
        raise Reject(MALFORMED, f"{label}: no positive speedup")
    if not _close(sp, base_ms / ms):
        raise Reject(INCONSISTENT, f"{label}: speedup {sp:.4g}x does not follow from its times (baseline "
                                   f"{base_ms:.4g} ms / kernel {ms:.4g} ms = {base_ms / ms:.4g}x)")
    for rate, amount, scale, unit in (("tflops", "flops", 1e9, "TFLOP/s"), ("gbps", "bytes", 1e6, "GB/s")):
        if c.get(rate) is None:
            continue
        r, a = c.get(rate), c.get(amount)
        if not (_num(r) and _num(a)) or r < 0 or a < 0:
            raise Reject(MALFORMED, f"{label}: {rate} without a valid {amount}")
        if not _close(r, a / ms / scale):
            raise Reject(INCONSISTENT, f"{label}: {r:,.4g} {unit} does not follow from {a:,.0f} {amount} in "
                                       f"{ms:.4g} ms ({a / ms / scale:,.4g} {unit})")
    if c.get("pct_of_copy") is not None:
        p, copy_ms = c["pct_of_copy"], c.get("copy_ms")
        if not (_num(p) and _num(copy_ms)):
            raise Reject(MALFORMED, f"{label}: pct_of_copy without a valid copy time")
        if not _close(p, copy_ms / ms):
            raise Reject(INCONSISTENT, f"{label}: {p:.1%} of a copy does not follow from the copy's "
                                       f"{copy_ms:.4g} ms and the kernel's {ms:.4g} ms")
        if p > MARGIN:
            raise Reject(IMPOSSIBLE, f"{label}: {p:.0%} of a device copy of the same bytes: faster than memory")
    if _num(c.get("gbps")) and c["gbps"] > MAX_GBPS:
        raise Reject(IMPOSSIBLE, f"{label}: {c['gbps']:,.0f} GB/s is above any GPU's memory ({MAX_GBPS:,} GB/s)")
    bound = peak_bound(c.get("dtype"))
    if _num(c.get("tflops")) and c["tflops"] > bound:
        raise Reject(IMPOSSIBLE, f"{label}: {c['tflops']:,.0f} TFLOP/s is above the peak any GPU of this kind "
                                 f"could reach ({bound:,.0f})")


def _check_exercise(ex: dict, peak_bound) -> tuple[float | None, float | None]:
    """(speedup, fraction of the ceiling) of one passed exercise, each checked against its cases."""
    name = ex["exercise"]
    bench = [c for c in ex.get("cases") or [] if isinstance(c, dict) and c.get("kind") == "benchmark"]
    for c in bench:
        _check_case(name, c, peak_bound)
    sp = ex.get("speedup")
    if sp is None:
        if bench:
            raise Reject(MALFORMED, f"{name} has timed cases but no speedup")
        return None, None
    if not _num(sp) or sp <= 0:
        raise Reject(MALFORMED, f"{name}: speedup {sp!r} is not a positive number")
    if not bench:
        raise Reject(INCONSISTENT, f"{name} claims a speedup of {sp:.4g}x without a timed case")
    runs: dict = {}
    for c in bench:
        runs.setdefault(c.get("run", 1), []).append(c["speedup"])
    # A ranked result keeps the lower of its runs' geometric means (grader.check.ranked.combine_runs).
    expected = min(_geomean(v) for v in runs.values())
    if not _close(sp, expected):
        raise Reject(INCONSISTENT, f"{name}: speedup {sp:.4g}x is not the geometric mean of its timed cases "
                                   f"({expected:.4g}x)")
    fracs = [c["pct_of_copy"] for c in bench if _num(c.get("pct_of_copy"))] or \
            [c["pct_of_ceiling"] for c in bench if _num(c.get("pct_of_ceiling")) and c["pct_of_ceiling"] > 0]
    return float(sp), (_geomean(fracs) if fracs else None)


def _peak_bound(info: dict):
    """dtype -> the highest TFLOP/s this GPU could reach (at a clock above any datacenter GPU's), with the margin."""
    try:
        cap = tuple(int(x) for x in str(info.get("capability", "")).split("."))
        cap = cap if len(cap) == 2 else (0, 0)
    except ValueError:
        cap = (0, 0)
    sms = info.get("sms") if _num(info.get("sms")) and info.get("sms") > 0 else 1000
    return lambda dtype: peak_tflops(cap, int(sms), FALLBACK_CLOCK_GHZ, dtype or "bf16") * MARGIN


def _participant(path: Path) -> str:
    name = path.resolve().parent.name
    return re.sub(r"[^\w.@+-]", "_", name) or "unknown"


def read_entry(path: Path, *, now: datetime, max_age: timedelta | None, seed_sha256: str | None,
               optional: dict[str, frozenset[str]] | None = None) -> Entry:
    """One result file as a leaderboard entry, or Reject(kind, reason). optional: day -> the exercises course.yaml
    marks optional (day 11's Hopper track): they neither reject an entry (left as released, or skipped on a GPU that
    does not grade them) nor enter its ranking, so entries on every GPU rank the same mandatory steps. The course
    says which, never the result file (a result could mark a slow mandatory step optional)."""
    try:
        if path.stat().st_size > MAX_BYTES:
            raise Reject(MALFORMED, f"{path.stat().st_size:,} bytes: not a check's results")
        raw = path.read_bytes()
        doc = json.loads(raw)
    except OSError as e:
        raise Reject(MALFORMED, f"cannot read it: {e.strerror or e}") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise Reject(MALFORMED, f"not JSON: {e}") from None
    if not isinstance(doc, dict):
        raise Reject(MALFORMED, "not a `grader check --json` result (not an object)")
    day, exercises = doc.get("day"), doc.get("exercises")
    if not isinstance(day, str) or not day or not isinstance(exercises, list) or not exercises:
        raise Reject(MALFORMED, "not a `grader check --json` result (no day, or no exercises)")
    for i, ex in enumerate(exercises):
        if not (isinstance(ex, dict) and isinstance(ex.get("exercise"), str) and isinstance(ex.get("status"), str)
                and isinstance(ex.get("info", {}), dict) and isinstance(ex.get("cases", []), list)):
            raise Reject(MALFORMED, f"exercise {i + 1} lacks its name, status, info or cases")
    grade = doc.get("grade")
    if isinstance(grade, dict) and grade.get("missing") is True:
        raise NotEntered(MISSING, f"the submission has no {day} folder: nothing was graded")
    if all(ex["status"] == Status.NO_GPU for ex in exercises):
        raise NotEntered(COMPILED_ONLY, "compiled only: no GPU ran it, so neither correctness nor speed is known")
    try:
        when = parse_when(doc.get("when"))
    except ValueError:
        raise Reject(MALFORMED, "no valid `when` (results of `grader check --json` record when they ran)") from None
    # ranked: the run and every exercise marked, with one secret's hash
    sha = doc.get("seed_sha256")
    if doc.get("ranked") is not True or not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{64}", sha):
        raise Reject(NOT_RANKED, "not a ranked run (`grader check --ranked`): only ranked results are ranked")
    odd = [ex["exercise"] for ex in exercises if ex.get("ranked") is not True or ex.get("seed_sha256") != sha]
    if odd:
        raise Reject(NOT_RANKED, f"{', '.join(odd)} not marked ranked with the run's seed hash")
    # one machine and one software stack
    info = exercises[0].get("info") or {}
    if not info.get("gpu") or not info.get("torch"):
        raise Reject(MALFORMED, f"{exercises[0]['exercise']} does not say which GPU and torch it ran on")
    if "simulating" in str(info.get("gpu")):  # GRADER_SIMULATE_GPU: another class's rules and bars on this GPU
        raise Reject(INCONSISTENT, f"ran as a simulated GPU ({info['gpu']}): a ranked entry runs as the GPU it is on")
    for ex in exercises[1:]:
        other = ex.get("info") or {}
        diff = [k for k in SAME if info.get(k) != other.get(k)]
        if diff:
            k = diff[0]
            raise Reject(INCONSISTENT, f"{k} differs within the entry: {info.get(k)!r} for "
                                       f"{exercises[0]['exercise']}, {other.get(k)!r} for {ex['exercise']}")
    if when > now + FUTURE_SLACK:
        raise Reject(INCONSISTENT, f"ran at {when.isoformat()}, later than now ({now.isoformat()})")
    bound = _peak_bound(info)
    extra = (optional or {}).get(day, frozenset())
    failed = [ex for ex in exercises if ex["status"] != Status.PASS and ex["exercise"] not in extra]
    speedups, fracs = {}, []
    for ex in exercises:
        if ex in failed or ex["exercise"] in extra:
            continue
        sp, frac = _check_exercise(ex, bound)
        if sp is not None:
            speedups[ex["exercise"]] = sp
        if frac is not None:
            fracs.append(frac)
    if failed:
        ex = failed[0]
        raise Reject(FAILED, f"{ex['exercise']}: {ex['status']}: {str(ex.get('message', ''))[:200]}")
    if not speedups:
        raise Reject(UNTIMED, "no exercise was timed: nothing to rank")
    if max_age is not None and now - when > max_age:
        raise Reject(STALE, f"ran at {when:%Y-%m-%d %H:%M} UTC, more than {max_age.days} day(s) ago")
    if seed_sha256 and sha != seed_sha256:
        raise Reject(STALE, f"ranked with another secret (seed hash {sha[:8]}…, the current one is "
                            f"{seed_sha256[:8]}…)")
    body = json.dumps({"day": day, "exercises": exercises}, sort_keys=True).encode()
    return Entry(name=_participant(path), day=day, gpu=str(info["gpu"]), when=when.isoformat(),
                 speedup=_geomean(list(speedups.values())), roofline=_geomean(fracs) if fracs else None,
                 exercises=speedups, torch=str(info["torch"]), driver=info.get("driver"), seed_sha256=sha,
                 source=str(path), digest=hashlib.sha256(body).hexdigest())


# -- all of them ----------------------------------------------------------------------------------------------------
def result_files(paths: Iterable[str | Path]) -> list[Path]:
    """The JSON files named, and those under the folders named (recursively), each once, in a stable order."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            # `grader grade --out` also writes its own summary beside the participants' folders: not a result
            out += sorted(f for f in p.rglob("*.json") if f.is_file() and f != p / SUMMARY_FILE)
        elif p.is_file():
            out.append(p)
        else:
            raise GraderError(f"{p} does not exist: give result files of `grader check --json`, or folders of them")
    seen, unique = set(), []
    for f in out:
        if f.resolve() not in seen:
            seen.add(f.resolve())
            unique.append(f)
    return unique


def collect(files: list[Path], *, now: datetime | None = None, max_age_days: float | None = 30,
            seed_sha256: str | None = None,
            optional: dict[str, frozenset[str]] | None = None) -> tuple[list[Entry], list[Rejected], list[Rejected]]:
    """(entries, rejected, not entered)."""
    now = now or datetime.now(timezone.utc)
    max_age = timedelta(days=max_age_days) if max_age_days is not None else None
    entries, rejected, not_entered = [], [], []
    for f in files:
        try:
            entries.append(read_entry(f, now=now, max_age=max_age, seed_sha256=seed_sha256, optional=optional))
        except NotEntered as r:
            not_entered.append(Rejected(str(f), r.kind, r.reason))
        except Reject as r:
            rejected.append(Rejected(str(f), r.kind, r.reason))
    # The same result twice (copied under another name), then a participant's older results for a day and GPU.
    kept, by_digest = [], {}
    for e in entries:
        if e.digest in by_digest:
            rejected.append(Rejected(e.source, DUPLICATE, f"the same result as {by_digest[e.digest]}"))
        else:
            by_digest[e.digest] = e.source
            kept.append(e)
    latest: dict[tuple, Entry] = {}
    for e in sorted(kept, key=lambda e: (e.when, e.source), reverse=True):
        key = (e.name, e.day, e.gpu)
        if key in latest:
            rejected.append(Rejected(e.source, DUPLICATE, f"{e.name} has a later ranked result for {e.day} on "
                                                          f"{e.gpu} ({latest[key].source}); the latest counts"))
        else:
            latest[key] = e
    return list(latest.values()), rejected, not_entered


def rank(entries: list[Entry]) -> list[dict]:
    """One board per (day, GPU model), best geometric-mean speedup first."""
    groups: dict[tuple[str, str], list[Entry]] = {}
    for e in entries:
        groups.setdefault((e.day, e.gpu), []).append(e)
    boards = []
    for (day, gpu), es in sorted(groups.items()):
        es.sort(key=lambda e: (-e.speedup, e.when, e.name))
        for i, e in enumerate(es, 1):
            e.rank = i
        boards.append({"day": day, "gpu": gpu, "plot": f"plots/{slug(day)}--{slug(gpu)}.png",
                       "entries": [{k: v for k, v in asdict(e).items() if k != "digest"} for e in es]})
    return boards


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def build(paths: Iterable[str | Path], *, now: datetime | None = None, max_age_days: float | None = 30,
          seed_sha256: str | None = None, optional: dict[str, frozenset[str]] | None = None) -> Board:
    files = result_files(paths)
    if not files:
        raise GraderError("no result files (*.json) found in what was given")
    entries, rejected, not_entered = collect(files, now=now, max_age_days=max_age_days, seed_sha256=seed_sha256,
                                             optional=optional)
    rejected.sort(key=lambda r: r.source)
    not_entered.sort(key=lambda r: r.source)
    return Board(build=uuid.uuid4().hex[:12], built_at=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                 boards=rank(entries), rejected=rejected, accepted=len(entries), not_entered=not_entered)


# -- rendering ----------------------------------------------------------------------------------------------------
def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("<", "&lt;").replace("\n", " ")


def markdown(board: Board) -> str:
    lines = ["# Leaderboard", "",
             "Ranked runs only (`grader check --ranked`: two runs on inputs from a secret seed). One board per day "
             "and GPU model, ordered by the geometric mean of each mandatory exercise's speedup over its baseline, "
             "timed in the same run; *% of ceiling* is the geometric mean of the kernel against a device copy of the same "
             "bytes (or, for compute-bound exercises, the ceiling op), where the result measured it.", "",
             f"<!-- build {board.build} -->", f"Built {board.built_at}: {board.accepted} result(s) ranked, "
             f"{len(board.rejected)} rejected" + (f", {len(board.not_entered)} not entered (missing or compiled only)"
                                                   if board.not_entered else "") + ".", ""]
    if not board.boards:
        lines += ["No ranked results yet.", ""]
    for b in board.boards:
        lines += [f"## {_cell(b['day'])} · {_cell(b['gpu'])}", "",
                  "| # | participant | speedup | % of ceiling | exercises | torch | ran (UTC) |",
                  "|---:|---|---:|---:|---|---|---|"]
        for e in b["entries"]:
            roof = f"{e['roofline']:.0%}" if e["roofline"] is not None else "—"
            exs = ", ".join(f"{k} {v:.2f}x" for k, v in e["exercises"].items())
            lines.append(f"| {e['rank']} | {_cell(e['name'])} | {e['speedup']:.2f}x | {roof} | {_cell(exs)} | "
                         f"{_cell(e['torch'])} | {e['when'][:16].replace('T', ' ')} |")
        lines += ["", f"![{_cell(b['day'])} on {_cell(b['gpu'])}]({b['plot']})", ""]
    if board.not_entered:
        lines += ["## Not entered", "", "Results of another kind, not faults: a day a submission has no folder for, "
                  "or a check that only compiled.", "", "| result | kind | what it is |", "|---|---|---|"]
        lines += [f"| {_cell(Path(r.source).parent.name + '/' + Path(r.source).name)} | {r.kind.replace('_', ' ')} | "
                  f"{_cell(r.reason)} |" for r in board.not_entered]
        lines.append("")
    if board.rejected:
        lines += ["## Rejected", "", "| result | why | reason |", "|---|---|---|"]
        lines += [f"| {_cell(Path(r.source).parent.name + '/' + Path(r.source).name)} | {r.kind} | {_cell(r.reason)} |"
                  for r in board.rejected]
        lines.append("")
    return "\n".join(lines)


def plot(b: dict, path: Path) -> None:
    """A horizontal bar per participant: the speedup, the baseline's 1x marked."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    es = b["entries"]
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.35 * len(es)), dpi=100)
    try:
        names = [f"{e['rank']}. {e['name']}" for e in es][::-1]
        ax.barh(names, [e["speedup"] for e in es][::-1], color="#3f6fb5")
        ax.axvline(1.0, color="#999", linestyle="--", linewidth=1)
        ax.set_xlabel("geometric-mean speedup over the baseline (x)")
        ax.set_title(f"{b['day']} on {b['gpu']}")
        fig.tight_layout()
        fig.savefig(path, format="png")
    finally:
        plt.close(fig)


# -- writing ------------------------------------------------------------------------------------------------------
def _replace(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:6]}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


class _Lock:
    """An exclusive lock on out/.leaderboard.lock (flock: released by the kernel if the holder dies)."""

    def __init__(self, out: Path, wait_s: float = LOCK_WAIT_S):
        self.path, self.wait_s, self.fd = out / ".leaderboard.lock", wait_s, None

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.wait_s
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(self.fd)
                    raise GraderError(f"another leaderboard build has held {self.path} for {self.wait_s:.0f} s: "
                                      "wait for it, or stop it") from None
                time.sleep(0.05)

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def write(board: Board, out: Path) -> list[Path]:
    """Plots, then rejected.json, leaderboard.json and leaderboard.md, each atomically, all under the lock; plots of
    boards that no longer exist are removed."""
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / "plots").mkdir(exist_ok=True)
    except OSError as e:
        raise GraderError(f"--out: cannot create {out}: {e.strerror or e}") from None
    doc = {"build": board.build, "built_at": board.built_at, "accepted": board.accepted, "boards": board.boards,
           "rejected": len(board.rejected), "not_entered": [asdict(r) for r in board.not_entered]}
    rej = {"build": board.build, "rejected": [asdict(r) for r in board.rejected]}
    written = []
    try:
        with _Lock(out):
            wanted = set()
            for b in board.boards:
                p = out / b["plot"]
                tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp.png")
                try:
                    plot(b, tmp)
                    os.replace(tmp, p)
                finally:
                    tmp.unlink(missing_ok=True)
                wanted.add(p.name)
                written.append(p)
            for old in (out / "plots").glob("*.png"):
                if old.name not in wanted:
                    old.unlink(missing_ok=True)
            for name, data in (("rejected.json", json.dumps(rej, indent=1)),
                               ("leaderboard.json", json.dumps(doc, indent=1)),
                               ("leaderboard.md", markdown(board))):
                _replace(out / name, data.encode())
                written.append(out / name)
    except OSError as e:
        raise GraderError(f"--out: cannot write into {out}: {e.strerror or e}") from None
    return written
