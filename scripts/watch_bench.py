"""The student's loop, timed: a cold `grader check`, an unchanged re-check, and under `grader watch` the time from
saving a one-line kernel edit to the verdict line. Runs on its own, with nothing to answer:

    python3 scripts/watch_bench.py [--day day03] [--edits 5] [--rechecks 5] [--out DIR]

It works on a temporary copy of the day's solution, in a temporary course root (links to the checkout's folders and
a copy of course.yaml), so "cold" means an empty build cache and the checkout's own .grader/ is never touched. Each
step has a time limit; a step that fails or runs out says so in the table instead of stopping the run. On a machine
without a GPU every verdict is the compile-only one (the numbers then measure compiling, not checking).

Targets (issue 19): edit -> verdict <= 3 s for day03 and an unchanged check <= 5 s, on the H100."""
from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINKED = ("days", "solutions", "tasks", "common", "grader")  # what a course root needs beside course.yaml
sys.path.insert(0, str(ROOT))  # the grader's own modules (course, paths), read here as well as run


@dataclass
class Step:
    name: str
    seconds: list[float] = field(default_factory=list)
    note: str = ""

    def row(self) -> tuple[str, str, str]:
        if not self.seconds:
            return self.name, "-", self.note or "no measurement"
        med = statistics.median(self.seconds)
        spread = f"median of {len(self.seconds)}, {min(self.seconds):.1f}–{max(self.seconds):.1f}" \
            if len(self.seconds) > 1 else "one run"
        return self.name, f"{med:.1f}", "; ".join(filter(None, [spread, self.note]))


def table(title: str, steps: list[Step]) -> str:
    rows = [("step", "seconds", "notes"), *(s.row() for s in steps)]
    w = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [title, ""] + [f"{a:<{w[0]}}  {b:>{w[1]}}  {c}" for a, b, c in rows]
    lines.insert(3, f"{'-' * w[0]}  {'-' * w[1]}  {'-' * w[2]}")
    return "\n".join(lines)


def course_root(tmp: Path) -> Path:
    """A course root of its own (its .grader/ starts empty): course.yaml copied, the folders linked."""
    root = tmp / "course"
    root.mkdir()
    shutil.copy2(ROOT / "course.yaml", root / "course.yaml")
    for name in LINKED:
        if (ROOT / name).exists():
            (root / name).symlink_to(ROOT / name)
    return root


def kernel_file(day: str, folder: Path) -> Path:
    """The first CUDA source of the day's first exercise (read from course.yaml)."""
    from grader.course import load_course

    ex = load_course(ROOT / "course.yaml").day(day).exercises[0]
    name = next((s for s in ex.sources if s.endswith(".cu")), ex.sources[0])
    return folder / name


def gpu_name() -> str:
    try:
        p = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                           text=True, timeout=30)
        name = p.stdout.strip().splitlines()[0] if p.returncode == 0 and p.stdout.strip() else ""
    except (OSError, subprocess.TimeoutExpired, IndexError):
        name = ""
    return name or "no GPU (compile-only verdicts)"


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            "PYTHONUNBUFFERED": "1"}


def grader(root: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "grader", "--course", str(root / "course.yaml"), *args]


def timed_check(root: Path, day: str, folder: Path, seed: int, limit_s: float, log: Path | None) -> tuple[float | None, str]:
    """Wall seconds of one `grader check` (None if it ran out of time) and a note (its exit code)."""
    t0 = time.monotonic()
    try:
        p = subprocess.run(grader(root, "check", day, "--dir", str(folder), "--seed", str(seed), "--timings"),
                           cwd=root, capture_output=True, text=True, timeout=limit_s, env=env())
    except subprocess.TimeoutExpired:
        return None, f"no verdict in {limit_s:g} s"
    secs = time.monotonic() - t0
    if log is not None:
        log.write_text(p.stdout + "\n--- stderr ---\n" + p.stderr)
    return secs, f"exit {p.returncode}"


class Lines:
    """A process's stdout, line by line with the time each arrived, read in a thread (so waits can time out)."""

    def __init__(self, proc: subprocess.Popen, keep: list[str]):
        self.q: queue.Queue = queue.Queue()
        self.keep = keep

        def read():
            for line in proc.stdout:
                self.q.put((time.monotonic(), line.rstrip("\n")))
            self.q.put((time.monotonic(), None))

        threading.Thread(target=read, daemon=True).start()

    def until(self, want, limit_s: float) -> tuple[float, str] | None:
        """The first line for which want(line) holds, with its arrival time; None at the end of the output or the
        limit."""
        end = time.monotonic() + limit_s
        while True:
            try:
                t, line = self.q.get(timeout=max(0.01, end - time.monotonic()))
            except queue.Empty:
                return None
            if line is None:
                return None
            self.keep.append(line)
            if want(line):
                return t, line


def is_verdict(line: str, day: str) -> bool:
    """A watch verdict's first line: `HH:MM:SS ✓ day03.softmax: ...` (or ✗, or … for not implemented)."""
    parts = line.split(" ", 2)
    return (len(parts) == 3 and parts[1] in ("✓", "✗", "…") and parts[2].startswith(f"{day}.")
            and ":" in parts[2].split(" ", 1)[0])


def is_last_line(line: str) -> bool:
    """The speed line that follows a correct verdict when the exercise was timed."""
    return line.startswith("  ") and " speed: " in line


def bench_watch(root: Path, day: str, folder: Path, kernel: Path, seed: int, edits: int, first_s: float,
                edit_s: float, log: Path | None) -> tuple[Step, Step, Step]:
    """Start `grader watch`, wait for its first verdict, then save `edits` one-line edits of the kernel one after
    another, timing each from the write to the verdict line (and to the speed line when there is one)."""
    first, verdict, speed = Step("watch: first verdict (cold worker)"), Step("watch: edit -> verdict line"), \
        Step("watch: edit -> speed line")
    exercise = day
    out: list[str] = []
    proc = subprocess.Popen(grader(root, "watch", day, "--dir", str(folder), "--seed", str(seed),
                                   "--max-runs", str(edits), "--timings"),  # each edit's steps, kept in watch.log
                            cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env(),
                            start_new_session=True)
    lines = Lines(proc, out)
    try:
        t0 = time.monotonic()
        got = lines.until(lambda s: is_verdict(s, exercise), first_s)
        if got is None:
            first.note = f"no verdict in {first_s:g} s"
            return first, verdict, speed
        first.seconds.append(got[0] - t0)
        timed = lines.until(is_last_line, 5.0) is not None if got[1].split(" ", 2)[1] == "✓" else False
        for k in range(edits):
            time.sleep(0.5)  # let the watcher settle (and the previous check's stragglers print)
            text = kernel.read_text()
            t_write = time.monotonic()
            kernel.write_text(text + f"// watch_bench edit {k}\n")
            got = lines.until(lambda s: is_verdict(s, exercise), edit_s)
            if got is None:
                verdict.note = f"edit {k + 1}: no verdict in {edit_s:g} s"
                break
            verdict.seconds.append(got[0] - t_write)
            if timed and got[1].split(" ", 2)[1] == "✓":
                last = lines.until(is_last_line, edit_s)
                if last is not None:
                    speed.seconds.append(last[0] - t_write)
        if not timed:
            speed.note = "not timed (no GPU, or the first verdict failed)"
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        pass
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 2)  # Ctrl-C, as a student stops it
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()
        lines.until(lambda s: False, 1.0)
        if log is not None:
            log.write_text("\n".join(out) + "\n")
    return first, verdict, speed


def ninja_steps(state: Path) -> dict[str, list[float]]:
    """Seconds of each build step ninja ran under the grader's state folder ({output file: [seconds, ...]}), from
    the workspaces' .ninja_log (tab-separated: start ms, end ms, mtime, output, hash): which part of a rebuild is
    the edited file's nvcc and which the link."""
    steps: dict[str, list[float]] = {}
    for log in sorted(state.rglob(".ninja_log")):
        for line in log.read_text(errors="replace").splitlines():
            parts = line.split("\t")
            if len(parts) >= 4 and parts[0].isdigit() and parts[1].isdigit():
                steps.setdefault(Path(parts[3]).name, []).append((int(parts[1]) - int(parts[0])) / 1000)
    return steps


def nvcc_phases(csv_path: Path) -> dict[str, list[float]]:
    """Seconds of each nvcc phase (cudafe++, cicc, ptxas, the host compiler's passes) from the CSV that nvcc's
    --time writes (given through NVCC_APPEND_FLAGS to the watched checks)."""
    import csv

    phases: dict[str, list[float]] = {}
    try:
        rows = list(csv.reader(csv_path.read_text(errors="replace").splitlines()))
    except OSError:
        return phases
    for row in rows[1:]:
        cells = [c.strip() for c in row]
        if len(cells) >= 8 and cells[-1] == "ms":
            try:
                phases.setdefault(cells[1], []).append(float(cells[-2]) / 1000)
            except ValueError:
                continue
    return phases


def breakdown(title: str, steps: dict[str, list[float]]) -> str:
    rows = [f"  {name:<28} median {statistics.median(v):.3f} s of {len(v)} ({min(v):.3f}–{max(v):.3f})"
            for name, v in steps.items() if v]
    return "\n".join([title, *(rows or ["  none (nothing built this way in this run)"])])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--day", default="day03")
    p.add_argument("--edits", type=int, default=5, help="one-line kernel edits timed under watch (default: 5)")
    p.add_argument("--rechecks", type=int, default=5, help="unchanged re-checks timed (default: 5, as many as the edits)")
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--check-limit", type=float, default=600.0, help="seconds a check may take (default: 600)")
    p.add_argument("--edit-limit", type=float, default=120.0, help="seconds an edit's verdict may take (default: 120)")
    p.add_argument("--out", metavar="DIR", help="keep each run's output (with --timings) and the table here")
    a = p.parse_args(argv)
    out = Path(a.out).resolve() if a.out else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
    steps: list[Step] = []
    with tempfile.TemporaryDirectory(prefix="watch-bench-") as tmp:
        root = course_root(Path(tmp))
        folder = Path(tmp) / a.day
        shutil.copytree(ROOT / "solutions" / a.day, folder)
        kernel = kernel_file(a.day, folder)
        cold = Step("cold grader check (empty build cache)")
        secs, cold.note = timed_check(root, a.day, folder, a.seed, a.check_limit, out and out / "cold.log")
        cold.seconds += [secs] if secs is not None else []
        steps.append(cold)
        same = Step("unchanged grader check")
        for k in range(a.rechecks):
            secs, note = timed_check(root, a.day, folder, a.seed, a.check_limit, out and out / f"unchanged-{k}.log")
            if secs is None:
                same.note = note
                break
            same.seconds.append(secs)
            same.note = note
        steps.append(same)
        if out:  # nvcc's phases of the watched rebuilds (its flags, and so the build keys, are unchanged)
            os.environ["NVCC_APPEND_FLAGS"] = " ".join(filter(None, [os.environ.get("NVCC_APPEND_FLAGS"), "--time",
                                                                     str(out / "nvcc-phases.csv")]))
        steps += bench_watch(root, a.day, folder, kernel, a.seed, a.edits, a.check_limit, a.edit_limit,
                             out and out / "watch.log")
        from grader.paths import Paths

        ninja = ninja_steps(Paths(root).state)
        nvcc = nvcc_phases(out / "nvcc-phases.csv") if out else {}
        parts = [breakdown("build steps (ninja, every build of the run):", ninja)]
        if nvcc:
            parts.append(breakdown("nvcc phases (the watched rebuilds):", nvcc))
    title = f"grader watch benchmark: {a.day} on {gpu_name()}, {time.strftime('%Y-%m-%d %H:%M')}"
    text = table(title, steps) + "\n\n" + "\n".join(parts)
    print(text)
    if out:
        (out / "watch_bench.txt").write_text(text + "\n")
        (out / "watch_bench.json").write_text(json.dumps({"title": title, "steps": [s.__dict__ for s in steps],
                                                          "ninja_seconds": ninja, "nvcc_seconds": nvcc},
                                                         indent=1))
    return 0 if all(s.seconds for s in steps if "speed" not in s.name) else 1


if __name__ == "__main__":
    sys.exit(main())
