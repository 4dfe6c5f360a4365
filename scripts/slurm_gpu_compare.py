"""`grader check --on slurm` beside a local check on this GPU machine (issue 38): each day's solution checked here and
through a single-node Slurm started here with the GPU as a generic resource (scripts/slurm_single_node.sh), --runs
times each (the first run of each side builds cold: the job keeps its builds apart from the local ones), then a table:
day × (local verdict, Slurm verdict, local seconds, Slurm seconds). Run it as root from the repository's root:

    python3 scripts/slurm_gpu_compare.py [--days 01 05 12] [--runs 2] [--out FILE.json] [--debs DIR]

Where Slurm is not installed, --debs DIR names a folder of Debian's packages to unpack first (made on a machine with
apt: `apt-get download slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge libmunge2 libhwloc15 libnuma1
libdbus-1-3`; slurmd's cgroup/v2 plugin needs libdbus);
submitit must be importable (its wheel on PYTHONPATH will do). Without either it says why, and still times the local
checks: the Slurm columns then say why not. Each row is printed as it is measured, and --out is rewritten after each,
so a run cut off by a time limit keeps what it measured. Exit code: 0 when every verdict and exit code agree, 1 when
one differs, 2 when Slurm could not be used."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "slurm_single_node.sh"
CHECK_S = 900  # one check, either side
DAEMONS = ("slurmctld", "slurmd", "slurmstepd")  # Debian installs them as <name>-wlm behind alternatives


def free_port_pair() -> int:
    """A port p with p and p + 1 free (slurmctld's and slurmd's), so a cluster already on this machine is no bother."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            p = s.getsockname()[1]
        if p < 65535:
            try:
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p + 1))
                return p
            except OSError:
                continue
    raise RuntimeError("no two free ports in a row")


def unpack_debs(folder: Path) -> str | None:
    """Unpack the packages of folder into / (slurmd runs slurmstepd, and loads its plugins, from the paths it was
    built with), skipping those already installed; link the daemons' plain names; add the munge user. Why not, or
    None."""
    debs = sorted(Path(folder).glob("*.deb"))
    if not debs:
        return f"--debs {folder}: no .deb files there"
    for deb in debs:
        name = subprocess.run(["dpkg-deb", "-f", str(deb), "Package"], capture_output=True, text=True).stdout.strip()
        if name and subprocess.run(["dpkg", "-s", name], capture_output=True).returncode == 0:
            continue
        # Not `dpkg -x DEB /`: its tar replaces a directory symlink with a directory, and on a merged-/usr system
        # (/lib -> usr/lib) that hides the C library's files from the linker (seen on the H100 image: every build
        # then failed with "cannot find /lib/x86_64-linux-gnu/libm.so.6"). --keep-directory-symlink keeps them.
        r = subprocess.run(f"dpkg-deb --fsys-tarfile {shlex.quote(str(deb))} | tar -x --keep-directory-symlink -C /",
                           shell=True, capture_output=True, text=True)
        if r.returncode != 0:
            return f"unpacking {deb.name} failed: {r.stderr.strip()[-500:]}"
    for name in DAEMONS:
        plain, wlm = Path("/usr/sbin") / name, Path("/usr/sbin") / f"{name}-wlm"
        if not plain.exists() and wlm.exists():
            plain.symlink_to(wlm)
    if subprocess.run(["id", "munge"], capture_output=True).returncode != 0:
        r = subprocess.run(["useradd", "--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin",
                            "munge"], capture_output=True, text=True)
        if r.returncode != 0:
            return f"cannot add the user munge runs as: {r.stderr.strip()}"
    return None


def slurm_unusable(debs: str | None) -> str | None:
    """Why Slurm cannot be used here (None: it can)."""
    if os.geteuid() != 0:
        return "starting Slurm's daemons needs root"
    missing = [c for c in ("slurmctld", "slurmd", "munged", "sbatch") if shutil.which(c) is None]
    if missing and debs:
        why = unpack_debs(Path(debs))
        if why:
            return why
        missing = [c for c in ("slurmctld", "slurmd", "munged", "sbatch") if shutil.which(c) is None]
    if missing:
        return (f"{', '.join(missing)} not installed and nothing to install them from (--debs DIR; this machine "
                "cannot reach a package registry)")
    try:
        import submitit  # noqa: F401
    except ImportError:
        return "submitit is not importable (carry its wheel and put it on PYTHONPATH)"
    return None


def check(day: str, env: dict, json_path: Path, slurm_config: Path | None) -> dict:
    cmd = [sys.executable, "-m", "grader", "check", day, "--solution", "--json", str(json_path)]
    if slurm_config:
        cmd += ["--on", "slurm", "--slurm-config", str(slurm_config)]
    json_path.unlink(missing_ok=True)
    t0 = time.monotonic()
    try:
        r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=CHECK_S)
        code, out = r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired as e:
        code, out = None, f"timed out after {CHECK_S} s: {(e.stdout or '')[-2000:]}"
    seconds = time.monotonic() - t0
    try:
        statuses = [e["status"] for e in json.loads(json_path.read_text())["exercises"]]
    except (OSError, ValueError, KeyError):
        statuses = []
    return {"exit_code": code, "statuses": statuses, "seconds": round(seconds, 2), "tail": out[-1500:]}


def verdict(run: dict | None) -> str:
    if run is None:
        return "-"
    return f"{', '.join(run['statuses']) or 'no result'} (exit {run['exit_code']})"


def table(rows: list[dict], slurm_why: str | None) -> str:
    out = ["| day | local verdict | Slurm verdict | local s | Slurm s | same |", "|---|---|---|---|---|---|"]
    for row in rows:
        local, slurm = row["local"], row["slurm"]
        same = "-" if not slurm else "yes" if all(
            (a["statuses"], a["exit_code"]) == (b["statuses"], b["exit_code"]) for a, b in zip(local, slurm)) else "NO"
        secs = lambda runs: " / ".join(f"{r['seconds']:.1f}" for r in runs) or "-"
        out.append(f"| {row['day']} | {verdict(local[-1])} | {verdict(slurm[-1]) if slurm else slurm_why} | "
                   f"{secs(local)} | {secs(slurm)} | {same} |")
    return "\n".join(out)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--days", nargs="+", default=["01", "05", "12"])
    p.add_argument("--runs", type=int, default=2, help="checks of each day on each side (default 2: cold, then warm)")
    p.add_argument("--out", type=Path, help="also write the measurements here as JSON")
    p.add_argument("--debs", help="a folder of Debian packages of Slurm and munge, unpacked if Slurm is missing")
    args = p.parse_args()
    days = [d if d.startswith("day") else f"day{int(d):02d}" for d in args.days]
    work = Path(tempfile.mkdtemp(prefix="slurm-compare-"))
    env = {**os.environ, "GRADER_STATE": str(work / "state"), "XDG_CONFIG_HOME": str(work / "config"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                         text=True).stdout.strip().splitlines() if shutil.which("nvidia-smi") else []
    doc = {"date": time.strftime("%Y-%m-%d"), "gpu": gpu[0] if gpu else None, "cpus": os.cpu_count(), "rows": []}
    slurm_why = slurm_unusable(args.debs)
    cluster = work / "cluster"
    if slurm_why is None:
        r = subprocess.run(["bash", str(SCRIPT), "start", str(cluster)], capture_output=True, text=True, timeout=300,
                           env={**env, "GRADER_SLURM_PORT": str(free_port_pair())})
        print(r.stdout.strip(), flush=True)
        if r.returncode != 0:
            slurm_why = "the single-node Slurm did not start: " + (r.stdout + r.stderr).strip()[-800:]
    doc["slurm"] = slurm_why or "single-node Slurm, the GPU as gres/gpu"
    config = work / "slurm.yaml"
    config.write_text(f"gpus_per_task: 1\ncpus_per_task: {max(1, min(8, (os.cpu_count() or 2) - 1))}\n"
                      f"timeout_min: 20\npoll_s: 1\ngrace_s: 5\nfolder: {work / 'jobs'}\n")
    env_slurm = {**env, "SLURM_CONF": str(cluster / "slurm.conf")}
    if slurm_why:
        print(f"Slurm: not used here: {slurm_why}", flush=True)
    try:
        for day in days:
            row = {"day": day, "local": [], "slurm": []}
            for k in range(args.runs):
                row["local"].append(check(day, env, work / "local.json", None))
                if slurm_why is None:
                    row["slurm"].append(check(day, env_slurm, work / "slurm.json", config))
                print(f"{day} run {k + 1}: local {verdict(row['local'][-1])} {row['local'][-1]['seconds']:.1f} s"
                      + (f"; Slurm {verdict(row['slurm'][-1])} {row['slurm'][-1]['seconds']:.1f} s"
                         if row["slurm"] else ""), flush=True)
            doc["rows"].append(row)
            if args.out:
                args.out.write_text(json.dumps(doc, indent=1))
    finally:
        if (cluster / "pids").exists():
            subprocess.run(["bash", str(SCRIPT), "stop", str(cluster)], capture_output=True, timeout=120)
    print()
    print(f"{doc['gpu'] or 'no GPU'}, {doc['cpus']} CPUs, {doc['date']}; seconds per run (cold / warm)")
    print(table(doc["rows"], slurm_why))
    for row in doc["rows"]:
        for side in ("local", "slurm"):
            bad = [r for r in row[side] if r["exit_code"] is None or not r["statuses"]]
            for r in bad[:1]:
                print(f"\n{row['day']} {side}: {r['tail']}")
    if slurm_why:
        return 2
    same = all((a["statuses"], a["exit_code"]) == (b["statuses"], b["exit_code"])
               for row in doc["rows"] for a, b in zip(row["local"], row["slurm"]))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
