"""Ranked runs: the secret a ranked check takes its inputs from (never printed, never stored: only its sha256 is),
the seeds derived from it, and one result from the runs it makes."""
from __future__ import annotations

import dataclasses
import hashlib
import math
import os
from pathlib import Path

from grader.errors import GraderError

# A ranked run's secret, from one of these: never printed, never stored; only its sha256 is.
RANKED_SEED_ENV, RANKED_SEED_FILE_ENV = "GRADER_RANKED_SEED", "GRADER_RANKED_SEED_FILE"
MIN_SECRET_BYTES = 16  # its hash is published with the results: a short secret could be guessed back from it
RANKED_RUNS = 2


@dataclasses.dataclass(frozen=True)
class Ranked:
    """A ranked run's seeds, derived from a secret that is never kept: only its hash is shown and stored."""
    seed_sha256: str
    seeds: tuple[int, ...] = dataclasses.field(repr=False)  # never printed

    @property
    def short(self) -> str:
        return f"{self.seed_sha256[:8]}…"


def _git_top(root: Path) -> Path:
    """The repository that holds the course (the nearest folder with .git upwards), else the course's folder."""
    for d in (root, *root.parents):
        if (d / ".git").exists():
            return d
    return root


def ranked_secret(root: Path, environ=None) -> bytes:
    """The secret of a ranked run: $GRADER_RANKED_SEED, or the content of the file $GRADER_RANKED_SEED_FILE names
    (outside the course's repository: a secret must never be committed)."""
    env = os.environ if environ is None else environ
    value, file = env.get(RANKED_SEED_ENV, ""), env.get(RANKED_SEED_FILE_ENV, "")
    make = 'python -c "import secrets; print(secrets.token_hex(32))"'
    if value and file:
        raise GraderError(f"--ranked: both {RANKED_SEED_ENV} and {RANKED_SEED_FILE_ENV} are set: set only one")
    if value:
        secret = value.strip().encode("utf-8", errors="surrogateescape")
        where = RANKED_SEED_ENV
    elif file:
        path = Path(file).expanduser()
        try:
            real = path.resolve(strict=True)
        except (OSError, RuntimeError):
            raise GraderError(f"--ranked: {RANKED_SEED_FILE_ENV} names {file}, which does not exist") from None
        top = _git_top(Path(root).resolve())
        if real == top or top in real.parents:
            raise GraderError(f"--ranked: the secret seed file {file} is inside the course repository ({top}): a "
                              "secret seed must not be committed; keep it outside, e.g. in ~/.config")
        if not real.is_file():
            raise GraderError(f"--ranked: {RANKED_SEED_FILE_ENV} names {file}, which is not a file")
        try:
            secret = real.read_bytes()[:4096].strip()
        except OSError as e:
            raise GraderError(f"--ranked: cannot read the secret seed file {file}: {e.strerror or e}") from None
        where = f"the file {file}"
    else:
        raise GraderError(f"--ranked needs a secret seed: set {RANKED_SEED_ENV}, or {RANKED_SEED_FILE_ENV} to a file "
                          f"outside the repository that holds one (make one with: {make})")
    if len(secret) < MIN_SECRET_BYTES:
        raise GraderError(f"--ranked: the secret seed in {where} is shorter than {MIN_SECRET_BYTES} characters, "
                          f"too short to stay secret once its hash is published; make one with: {make}")
    return secret


def ranked_seeds(secret: bytes, runs: int = RANKED_RUNS) -> Ranked:
    """Independent seeds for the runs (sha256(secret:k) reduced to 31 bits), and the secret's own sha256."""
    seeds = tuple(int.from_bytes(hashlib.sha256(secret + f":{k}".encode()).digest()[:8], "big") & (2**31 - 1)
                  for k in range(1, runs + 1))
    return Ranked(hashlib.sha256(secret).hexdigest(), seeds)


def combine_runs(runs: list, expected: int = RANKED_RUNS):
    """One ranked result from its runs (the runs after a failure are not made): it passes only if every run passed;
    it keeps every run's cases, each tagged with its run; its speedup is the lowest of the runs'; its seed is
    left out (the inputs stay secret)."""
    from grader.verdicts import Status

    for k, r in enumerate(runs, 1):
        for c in r.cases:
            c["run"] = k
    failed = next((k for k, r in enumerate(runs) if r.status != Status.PASS), None)
    if failed is not None:
        base = runs[failed]
    else:  # the slower run speaks for the exercise
        base = min(runs, key=lambda r: r.speedup if r.speedup is not None else math.inf)
    speedups = [r.speedup for r in runs if r.speedup is not None]
    info = {k: v for k, v in (runs[0].info or base.info).items() if k != "seed"}  # the worker echoes its seed
    out = dataclasses.replace(
        base, seed=None, speedup=min(speedups) if speedups else None, info=info,
        cases=[c for r in runs for c in r.cases],
        builds=[*runs[0].builds, *(b for r in runs[1:] for b in r.builds if not b.get("ok"))])
    if failed is not None and failed > 0:
        out.message = f"run {failed + 1} of {expected} (other inputs) failed: {base.message}"
    elif failed is None:
        out.message = f"{base.message} (the lower of {len(runs)} runs on independent inputs)"
    return out
