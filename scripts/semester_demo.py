"""The course's first releases, as a class lives them, graded on this machine's GPU. For each of the first N release
dates of course.yaml's calendar, with the clock set to that date ($GRADER_TODAY):

1. publish every released day whose due date has passed into the student repository (`grader publish`);
2. release into the same student repository (`grader release --to`, an update, as a class pulls it);
3. three students hand in the days new in that release (scripts/grade_demo.py, with the stubs taken from the
   student repository): `solution`, `stub` and `known_wrong`;
4. grade them (`grader grade --ranked`), then build the leaderboard over every release so far.

The course released is this working tree as it stands (tracked and untracked files that git does not ignore),
committed into WORK/course first: the release is made of what git tracks, and a device's copy of the tree may
carry an index older than its files.

    python3 scripts/semester_demo.py WORK [--releases 3]

Prints one table last: release date, day, and each submission's statuses. Exits 1 if a step fails."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from grader.course import load_course  # noqa: E402

import grade_demo  # noqa: E402


COURSE: list[str] = []  # --course of the snapshot, once made


def grader(*args: str, today: str, log: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "GRADER_TODAY": today}
    r = subprocess.run([sys.executable, "-m", "grader", *COURSE, *args], cwd=ROOT, capture_output=True, text=True,
                       env=env)
    log.append(f"$ GRADER_TODAY={today} grader {' '.join(args)}   (exit {r.returncode})\n{r.stdout}{r.stderr}")
    return r


def snapshot(work: Path) -> Path:
    """The course as it stands in this working tree, committed into a repository of its own (the release is made
    of what git tracks): what would be released if this tree were committed, whatever the checkout's index says."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode("utf-8", "surrogateescape").split("\0")
    course = work / "course"
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file() and not src.is_symlink():
            (course / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, course / rel)
    git(course, "init", "-q")
    git(course, "add", "-A")
    git(course, "commit", "-q", "-m", "the course as in the working tree")
    return course


def manifest(student: Path) -> dict:
    p = student / ".release.json"
    return json.loads(p.read_text()) if p.is_file() else {"days": [], "published": {}}


def git(student: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=class", "-c", "user.email=class@example.org", "-c", "commit.gpgsign=false",
                    *args], cwd=student, check=True, capture_output=True)


def statuses(results: Path, submission: str, day: str) -> str:
    try:
        doc = json.loads((results / submission / f"{day}.json").read_text())
    except (OSError, ValueError):
        return "no result"
    return ",".join(e.get("status", "?") for e in doc.get("exercises", [])) or "-"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("work", type=Path, help="a new folder for the student repository, submissions and results")
    p.add_argument("--releases", type=int, default=3)
    p.add_argument("--grade-timeout", type=float, default=500.0, help="seconds one release's grading may take")
    a = p.parse_args(argv)
    course = load_course(ROOT / "course.yaml")
    if not (os.environ.get("GRADER_RANKED_SEED") or os.environ.get("GRADER_RANKED_SEED_FILE")):
        import secrets

        os.environ["GRADER_RANKED_SEED"] = secrets.token_hex(16)  # this run's secret: its ranked inputs are new
    dates = sorted({d.release for d in course.days if d.status == "ready" and d.release is not None})
    if not dates:
        sys.exit("course.yaml gives no day a release date: there is no semester to walk")
    student, log, rows, failed = a.work / "student", [], [], False
    student.mkdir(parents=True)
    COURSE[:] = ["--course", str(snapshot(a.work) / "course.yaml")]
    git(student, "init", "-q")
    for when in dates[: a.releases]:
        today = when.isoformat()
        before = manifest(student)
        for day in before["days"]:
            due = course.day(day).due
            if due is not None and due < when and day not in before["published"]:
                failed |= grader("publish", day, "--to", str(student), today=today, log=log).returncode != 0
        r = grader("release", "--to", str(student), today=today, log=log)
        if r.returncode != 0:
            print(log[-1])
            return 1
        git(student, "add", "-A")
        git(student, "commit", "-q", "--allow-empty", "-m", f"release of {today}")
        new = [d for d in manifest(student)["days"] if d not in before["days"]]
        print(f"== {today}: released {', '.join(new) or 'nothing new'}", flush=True)
        if not new:
            continue
        subs, results = a.work / f"subs-{today}", a.work / "results" / today
        grade_demo.main(subs, new, stubs=student / "days")
        try:
            r = subprocess.run([sys.executable, "-m", "grader", *COURSE, "grade", str(subs), "--days", *new, "--out",
                                str(results), "--ranked"], cwd=ROOT, capture_output=True, text=True,
                               timeout=a.grade_timeout, env={**os.environ, "GRADER_TODAY": today})
            log.append(f"$ grader grade {subs} --days {' '.join(new)} --ranked   (exit {r.returncode})\n"
                       f"{r.stdout[-4000:]}{r.stderr[-2000:]}")
        except subprocess.TimeoutExpired:
            log.append(f"grader grade of {today}: no end in {a.grade_timeout:g} s")
            failed = True
        for day in new:
            rows.append((today, day, *(statuses(results, s, day) for s in ("solution", "stub", "known_wrong"))))
    graded = sorted(str(f) for f in (a.work / "results").glob("*") if f.is_dir())  # one folder per release
    lb = subprocess.run([sys.executable, "-m", "grader", "leaderboard", "build", *graded, "--out",
                         str(a.work / "leaderboard")], cwd=ROOT, capture_output=True, text=True)
    log.append(f"$ grader leaderboard build   (exit {lb.returncode})\n{lb.stdout}{lb.stderr}")
    (a.work / "semester.log").write_text("\n".join(log) + "\n")
    print(lb.stdout[-3000:])
    print("| release | day | solution | stub | known_wrong |\n|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 1 if failed or lb.returncode != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
