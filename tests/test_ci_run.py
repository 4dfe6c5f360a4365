""".ci/run's apt_get: another apt's lock is waited for (bounded, and said) instead of failing CI at once; any other
apt error fails at once. Run on a stand-in apt-get that plays the lock's holder, so no real lock is taken."""
import os
import subprocess
import time
from pathlib import Path

from tests.conftest import ROOT

HELD = "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (apt-get)"
# A stand-in apt-get: each call appends its arguments to calls; it fails as a held lock does while a "held" count is
# left, prints what `apt-get -q install` prints while it waits for dpkg's lock when WAITING is set, and fails as an
# unknown package does when told to.
FAKE = f"""#!/bin/sh
echo "$*" >> "$FAKE_DIR/calls"
n=$(cat "$FAKE_DIR/held" 2>/dev/null || echo 0)
if [ "$n" -gt 0 ]; then echo $((n - 1)) > "$FAKE_DIR/held"; echo "{HELD}" >&2; exit 100; fi
[ -z "$WAITING" ] || echo "Waiting for cache lock: Could not get lock /var/lib/dpkg/lock-frontend. It is held by \\
process 4242 (unattended-upgr)..."
[ -z "$UNKNOWN" ] || {{ echo "E: Unable to locate package $UNKNOWN" >&2; exit 100; }}
echo "Reading package lists..."
"""
RUN_S = 30  # one apt_get on the stand-in: 0.05-0.65 s here; the longest waits WAIT_S by design
WAIT_S = 2  # the bound of the test whose lock is never released (bash's SECONDS counts whole seconds: 2, not 1)


def _apt_get_block() -> str:
    """.ci/run's lines from APT_LOCK_WAIT_S= to the end of apt_get()."""
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("APT_LOCK_WAIT_S="))
    end = next(i for i in range(start, len(lines)) if lines[i] == "}")
    return "\n".join(lines[start:end + 1])


def _run(tmp_path: Path, *args, held=0, **env) -> tuple[subprocess.CompletedProcess, list[str], float]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "apt-get").write_text(FAKE)
    (bin_dir / "apt-get").chmod(0o755)
    (tmp_path / "held").write_text(str(held))
    script = f"set -euo pipefail\n{_apt_get_block()}\nSUDO=\napt_get {' '.join(args)}\n"
    t0 = time.monotonic()
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=RUN_S,
                       env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
                            "FAKE_DIR": str(tmp_path), "APT_LOCK_POLL_S": "0.1", **env})
    calls = (tmp_path / "calls").read_text().splitlines() if (tmp_path / "calls").exists() else []
    return r, calls, time.monotonic() - t0


def test_a_held_lists_lock_is_waited_for_and_said_once(tmp_path):
    r, calls, _ = _run(tmp_path, "update", held=3)
    assert r.returncode == 0, r.stderr
    assert len(calls) == 4 and all("update" in c and "-o DPkg::Lock::Timeout=" in c for c in calls), calls
    said = [ln for ln in r.stderr.splitlines() if "waiting up to 600 s" in ln]
    assert said == [f"apt: {HELD} (waiting up to 600 s)"], r.stderr


def test_a_lock_held_past_the_bound_fails_with_apts_words(tmp_path):
    r, calls, took = _run(tmp_path, "update", held=10**6, APT_LOCK_WAIT_S=str(WAIT_S))
    assert r.returncode != 0 and HELD in r.stderr.splitlines()[-1], r.stderr
    assert WAIT_S - 1 < took < WAIT_S + 2, took  # the bound; past it, one more poll and bash's exit


def test_install_waits_for_dpkgs_lock_itself_and_says_so(tmp_path):
    r, calls, _ = _run(tmp_path, "install", "-y", "slurm-wlm", WAITING="1")
    assert r.returncode == 0 and len(calls) == 1, r.stderr
    assert calls[0].startswith("-q -o DPkg::Lock::Timeout=") and calls[0].endswith("install -y slurm-wlm"), calls
    assert "apt: Waiting for cache lock: Could not get lock /var/lib/dpkg/lock-frontend" in r.stderr, r.stderr
    assert "Reading package lists" not in r.stdout + r.stderr  # its other output stays hidden


def test_any_other_apt_error_fails_at_once(tmp_path):
    r, calls, _ = _run(tmp_path, "install", "-y", "nope", UNKNOWN="nope")
    assert r.returncode != 0 and len(calls) == 1, r.stderr
    assert "E: Unable to locate package nope" in r.stderr and "waiting" not in r.stderr, r.stderr
