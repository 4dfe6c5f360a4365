"""The `grader` command: check, watch, profile, list, calendar, doctor, release, publish, syllabus, leaderboard,
gradebook, grade, site.

Exit codes: 0 pass, 1 fail (wrong, slow, not implemented, does not compile), 2 usage or environment error.
Every error reaches the user as a message; an unexpected one also leaves its traceback in .grader/logs.
"""
from __future__ import annotations

import argparse
import importlib
import math
import os
import re
import sys
import traceback
from pathlib import Path

from rich.text import Text

from grader import results, timings

from grader.check.ranked import RANKED_SEED_ENV, RANKED_SEED_FILE_ENV
from grader.check.sanitizer import TOOLS as SANITIZER_TOOLS
from grader.errors import GraderError
from grader.paths import HIDDEN_ENV, HIDDEN_FILE, Paths
from grader.verdicts import EXIT_ENV as ENV
from grader.commands.shared import console


def _command(module: str, name: str):
    """A command's function, whose module is imported when the command runs: `grader check` then loads neither the
    instructors' modules (grader/commands/teaching.py and what it imports) nor what the other commands need."""
    def run(args):
        return getattr(importlib.import_module(f"grader.commands.{module}"), name)(args)
    return run


cmd_check, cmd_doctor, cmd_list, cmd_profile, cmd_sanitize, cmd_watch = (
    _command("checking", f"cmd_{n}") for n in ("check", "doctor", "list", "profile", "sanitize", "watch"))
cmd_grade, cmd_gradebook, cmd_leaderboard, cmd_publish, cmd_release, cmd_site, cmd_syllabus = (
    _command("teaching", f"cmd_{n}") for n in ("grade", "gradebook", "leaderboard", "publish", "release", "site",
                                               "syllabus"))
cmd_calendar = _command("calendar", "cmd_calendar")


def positive_seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(v) or v <= 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, not {text}")
    return v


def _int_in(text: str, lo: int, hi: int, what: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not lo <= v <= hi:
        raise argparse.ArgumentTypeError(f"{what} must be from {lo} to {hi}, not {text}")
    return v


def seed_value(text: str) -> int:
    return _int_in(text, 0, 2**63 - 1, "a seed")


def port_value(text: str) -> int:
    return _int_in(text, 0, 65535, "a port")


def variant_name(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][\w.-]{0,63}", text) or text == results.RANKED:
        raise argparse.ArgumentTypeError(f"{text!r} is not a name for a variant (letters, digits, . _ -)")
    return text


def json_path(text: str) -> str:
    """A file the results can be written to, checked before the run (not after it): "-" is stdout where the option
    allows it (its const)."""
    if text == "-":
        return text
    p = Path(text).expanduser()
    if text.endswith(("/", os.sep)) or p.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder: give a file name, e.g. {Path(text) / 'results.json'}")
    parent = p.parent
    if not parent.is_dir():
        what = "is not a folder" if parent.exists() else "does not exist"
        raise argparse.ArgumentTypeError(f"cannot write {text}: the folder {parent} {what} (create it first)")
    if not os.access(parent, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise argparse.ArgumentTypeError(f"cannot write {text}: permission denied")
    return str(p)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="grader", description="Build, check and time the course's CUDA exercises.")
    p.add_argument("--course", help="path to course.yaml (default: found from the current folder upwards)")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    c = sub.add_parser("check", help="check a day: build, correctness in every dtype, speed vs the baseline")
    c.add_argument("day", help="day01, day1 or 1")
    c.add_argument("--solution", action="store_true", help="check the instructor's solution instead of days/")
    c.add_argument("--dir", help="check the files in this folder instead of days/dayNN")
    c.add_argument("--exercise", help="only this exercise of the day")
    c.add_argument("--dtype", action="append", help="only this dtype (repeatable): fp32, fp16, bf16")
    c.add_argument("--case", action="append", metavar="TEXT",
                   help="only the cases whose name, as the verdict prints it (e.g. 'fp16 1x2x37x64 causal'), contains "
                        "TEXT (repeatable): a quick re-check of the case that failed; not saved as the day's result")
    c.add_argument("--seed", type=seed_value, help="seed for the random inputs (default: a fresh one, printed)")
    c.add_argument("--correctness-only", action="store_true",
                   help="skip timing, and with it the timed shapes (each is checked for correctness when it is timed): "
                        "only the correctness cases run")
    c.add_argument("--timeout", type=positive_seconds, help="seconds one case may take before it counts as hung")
    c.add_argument("--json", metavar="PATH", type=json_path, help="also write the full results as JSON")
    c.add_argument("--results-dir", metavar="DIR", help="also write the results for Gradescope (results.json), JUnit "
                   "(junit.xml) and GitHub Classroom (classroom.json) into DIR")
    c.add_argument("--format", action="append", choices=["gradescope", "junit", "classroom"],
                   help="with --results-dir: only this format (repeatable)")
    c.add_argument("--ranked", action="store_true",
                   help=f"for the leaderboard: two runs on inputs from a secret seed (${RANKED_SEED_ENV}, or a file "
                        f"named by ${RANKED_SEED_FILE_ENV}); both must pass, the lower speedup counts")
    c.add_argument("--timings", action="store_true", help=f"print timestamps of each step to stderr (also: "
                                                           f"${timings.ENV}=1)")
    box = c.add_mutually_exclusive_group()
    box.add_argument("--sandbox", action="store_true", help="build and run the code in a sandbox: no network, "
                     "nothing of the course but what the check needs, a private /tmp (default with --ranked)")
    box.add_argument("--no-sandbox", action="store_true", help="never sandbox the code, not even with --ranked "
                     "(says what that gives up)")
    c.add_argument("--hidden", metavar="PATH",
                   help=f"with --ranked: the instructor's hidden cases (default: ${HIDDEN_ENV}, else "
                        f"{HIDDEN_FILE} beside course.yaml, if there is one)")
    c.add_argument("--on", choices=["slurm", "cpu"],
                   help="slurm: run the check as one Slurm job on the cluster's GPUs (from a login node; the course's "
                        "slurm.yaml says what the job asks for). cpu: the exercises that run in several processes "
                        "(course.yaml `processes:`), in CPU processes over gloo, for correctness only: a check of your "
                        "protocol where there are too few GPUs, not the day's graded result")
    c.add_argument("--slurm-config", metavar="YAML", help="with --on slurm: your own settings, on top of the course's "
                                                          "slurm.yaml (default: ~/.config/grader/slurm.yaml, if any)")
    c.add_argument("--variant", type=variant_name, help=argparse.SUPPRESS)  # a job's check, named as the student's
    c.set_defaults(fn=cmd_check)
    w = sub.add_parser("watch", help="check a day again on every save, in one warm worker: a compact verdict in "
                                     "seconds (compile-only without a GPU)")
    w.add_argument("day", help="day01, day1 or 1")
    w.add_argument("--solution", action="store_true", help="watch the instructor's solution instead of days/")
    w.add_argument("--dir", help="watch the files in this folder instead of days/dayNN")
    w.add_argument("--exercise", help="only this exercise of the day")
    w.add_argument("--dtype", action="append", help="only this dtype (repeatable): fp32, fp16, bf16")
    w.add_argument("--seed", type=seed_value, help="seed for the random inputs, the same for every check of the "
                                                   "session (default: a fresh one, printed)")
    w.add_argument("--correctness-only", action="store_true",
                   help="skip timing and the timed shapes: only the correctness cases run")
    w.add_argument("--timeout", type=positive_seconds, help="seconds one case may take before it counts as hung")
    w.add_argument("--timings", action="store_true", help=f"print timestamps of each step to stderr (also: "
                                                           f"${timings.ENV}=1)")
    w.add_argument("--max-runs", type=lambda t: _int_in(t, 1, 10**9, "--max-runs"), help=argparse.SUPPRESS)
    w.set_defaults(fn=cmd_watch)
    z = sub.add_parser("sanitize", help="a day's correctness cases under compute-sanitizer (memcheck, racecheck, "
                                        "initcheck, synccheck), errors named at your file:line")
    z.add_argument("day", help="day01, day1 or 1")
    z.add_argument("--tool", choices=list(SANITIZER_TOOLS),
                   help="default: the tools the exercise requires (course.yaml `sanitize:`), else memcheck")
    z.add_argument("--solution", action="store_true", help="the instructor's solution instead of days/")
    z.add_argument("--dir", help="the files in this folder instead of days/dayNN")
    z.add_argument("--exercise", help="only this exercise of the day")
    z.add_argument("--dtype", action="append", help="these dtypes (repeatable; default: the exercise's first)")
    z.add_argument("--seed", type=seed_value, help="seed for the random inputs (default: a fresh one, printed)")
    z.add_argument("--timeout", type=positive_seconds, default=600.0,
                   help="seconds one tool may run over all the cases (default: 600; the tools slow kernels 10-100x)")
    z.set_defaults(fn=cmd_sanitize)
    f = sub.add_parser("profile", help="Nsight Compute on your kernels: speed of light, occupancy, spills, and a "
                                       "roofline plot against ceilings measured on this GPU")
    f.add_argument("day", help="day01, day1 or 1")
    f.add_argument("--solution", action="store_true", help="profile the instructor's solution instead of days/")
    f.add_argument("--dir", help="profile the files in this folder instead of days/dayNN")
    f.add_argument("--exercise", help="only this exercise of the day (default: every one)")
    f.add_argument("--dtype", choices=["fp32", "fp16", "bf16"], help="default: the exercise's first dtype")
    f.add_argument("--shape", help="sizes separated by commas, e.g. 4096,4096,4096 (default: the first benchmark "
                                   "shape)")
    f.add_argument("--ncu", metavar="PATH", help="the ncu to use (default: $NSIGHT_COMPUTE, PATH, "
                                                 "/usr/local/cuda/bin/ncu)")
    f.add_argument("--remeasure-ceilings", action="store_true",
                   help="measure this GPU's memory and compute ceilings again instead of using the cached ones")
    f.add_argument("--json", nargs="?", const="-", metavar="PATH", type=json_path,
                   help="also write the results as JSON to PATH, or to stdout without PATH (always saved under "
                        ".grader/profile)")
    f.set_defaults(fn=cmd_profile)
    sub.add_parser("list", help="days, their status and your last results").set_defaults(fn=cmd_list)
    sub.add_parser("doctor", help="check GPU, driver, torch CUDA, nvcc, ninja").set_defaults(fn=cmd_doctor)
    k = sub.add_parser("calendar", help="the semester: each day's release and due dates and where it stands today")
    k.add_argument("--to", metavar="DIR", help="(instructors) what the student repository DIR (written by `release "
                                               "--to`) holds: the days released and published there")
    k.add_argument("--json", nargs="?", const="-", metavar="PATH", type=json_path,
                   help="write the calendar as JSON to PATH, or to stdout without PATH")
    k.set_defaults(fn=cmd_calendar)
    r = sub.add_parser("release", help="(instructors) generate the student stubs in days/ from solutions/, or write "
                                       "the student repository (--to DIR)")
    r.add_argument("days", nargs="*", help="days to release (default: every ready day)")
    r.add_argument("--check", action="store_true", help="only report whether days/ is up to date (CI)")
    r.add_argument("--to", metavar="DIR", help="write the student repository into DIR (new, empty, or an earlier "
                                               "release): the days released by today, no solutions, no hidden cases")
    r.add_argument("--hidden", metavar="PATH", help=f"with --to: the hidden cases to keep out (default: "
                                                    f"${HIDDEN_ENV}, else {HIDDEN_FILE} beside course.yaml)")
    r.set_defaults(fn=cmd_release)
    u = sub.add_parser("publish", help="(instructors) add a day's solution to a student repository once it is due")
    u.add_argument("day", help="day01, day1 or 1")
    u.add_argument("--to", metavar="DIR", required=True, help="the student repository (written by `release --to`)")
    u.add_argument("--force", action="store_true", help="publish before the due date (or without one)")
    u.set_defaults(fn=cmd_publish)
    y = sub.add_parser("syllabus", help="(instructors) render syllabus.md from course.yaml")
    y.add_argument("--check", action="store_true", help="only report whether syllabus.md is current (CI)")
    y.set_defaults(fn=cmd_syllabus)
    lb = sub.add_parser("leaderboard", help="(instructors) the leaderboard of ranked results, per day and GPU model")
    lbs = lb.add_subparsers(dest="leaderboard_cmd", required=True, metavar="ACTION")
    b = lbs.add_parser("build", help="rank `grader check --ranked --json` results; reject the untrustworthy, saying why")
    b.add_argument("results", nargs="+", metavar="RESULTS",
                   help="result files, or folders of them laid out RESULTS/<participant>/<day>.json")
    b.add_argument("--out", metavar="DIR", required=True, help="where leaderboard.md/.json, rejected.json and the "
                                                                "plots go (the site reads it: `grader site build`)")
    b.add_argument("--max-age-days", type=lambda t: _int_in(t, 0, 100000, "--max-age-days"), default=30,
                   help="results older than this are stale (default: 30; 0 keeps every age)")
    b.add_argument("--seed-sha256", metavar="HEX", help="the current secret's hash: results ranked with another "
                                                         "secret are stale")
    b.set_defaults(fn=cmd_leaderboard)
    g = sub.add_parser("gradebook", help="(instructors) kernel grades into an nbgrader gradebook, for `nbgrader "
                                         "export` with the notebooks")
    g.add_argument("results", nargs="+", metavar="RESULTS",
                   help="`grader check --json` files, or folders of them laid out RESULTS/<student>/<day>.json")
    g.add_argument("--db", required=True, metavar="PATH", help="the gradebook: a sqlite file (nbgrader's "
                                                                "gradebook.db) or an SQLAlchemy URL")
    g.add_argument("--assignment", default="{day}-kernels", metavar="TEMPLATE",
                   help="the assignment each day's kernels go to (default: {day}-kernels, a row of its own in the "
                        "export; '{day}' adds them to the day's notebook assignment)")
    g.set_defaults(fn=cmd_gradebook)
    g = sub.add_parser("grade", help="(instructors) grade a class: every submission × day, on this machine or on "
                                     "Slurm, one result file per pair (resumable)")
    g.add_argument("submissions", metavar="SUBMISSIONS_DIR",
                   help="one folder per submission: a student repository (days/dayNN/) or a copy of its days/")
    g.add_argument("--days", nargs="+", required=True, metavar="DAY", help="the days to grade: day01 day03, 1,3, or all")
    g.add_argument("--out", required=True, metavar="RESULTS_DIR",
                   help="where the results go: RESULTS_DIR/<submission>/<day>.json, as `grader check --json` writes")
    g.add_argument("--executor", choices=["local", "slurm"], default="local",
                   help="local (default): one worker per GPU, or per core without one (compile-only); slurm: a job "
                        "array through submitit")
    g.add_argument("--workers", type=lambda s: _int_in(s, 1, 4096, "--workers"),
                   help="local: gradings at once (default: one per GPU, else one per core)")
    g.add_argument("--timeout", type=positive_seconds,
                   help="local: seconds one grading may take (default: 1800)")
    g.add_argument("--slurm-config", metavar="YAML", help="slurm: partition, gpus_per_task, cpus_per_task, mem_gb, "
                                                         "timeout_min, setup … (see README.md)")
    g.add_argument("--correctness-only", action="store_true",
                   help="skip timing and the timed shapes: only the correctness cases run")
    g.add_argument("--ranked", action="store_true", help=f"ranked gradings, for the leaderboard (the secret: "
                                                        f"${RANKED_SEED_ENV} or ${RANKED_SEED_FILE_ENV})")
    g.add_argument("--regrade", action="store_true", help="grade every pair again, even those with a result")
    g.add_argument("--no-sandbox", action="store_true", help="grade without the sandbox each submission's code "
                   "otherwise runs in (says what that gives up)")
    g.set_defaults(fn=cmd_grade)
    s = sub.add_parser("site", help="the course website, made from course.yaml, syllabus.md and the lessons")
    ss = s.add_subparsers(dest="site_cmd", required=True, metavar="ACTION")
    for name, text in (("build", "build the static site (into .grader/site/html)"),
                       ("serve", "build it, serve it locally and rebuild when a source changes")):
        a = ss.add_parser(name, help=text)
        a.add_argument("--out", metavar="DIR", help="build folder (default: .grader/site)")
        a.add_argument("--strict", action="store_true", help="fail on any MkDocs warning (e.g. a broken link)")
        a.add_argument("--leaderboard", metavar="DIR", help="add the leaderboard page from this `grader leaderboard "
                                                             "build --out` folder (default: .grader/leaderboard, if "
                                                             "there is one)")
        if name == "serve":
            a.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
            a.add_argument("--port", type=port_value, default=8000, help="port (default: 8000; 0 picks a free one)")
            a.add_argument("--no-watch", action="store_true", help="do not rebuild when a source changes")
        a.set_defaults(fn=cmd_site)
    return p


def _interruptible() -> None:
    """Ctrl-C (or `kill -INT`) interrupts the grader however it was started. A shell without job control starts a
    background command (`grader watch day03 &` in a script, a CI step) with SIGINT ignored, and Python keeps an
    ignored SIGINT ignored: the grader could then be neither stopped nor make its Slurm job's scancel. Taking it
    back also reaches what the grader starts afterwards (a handled signal is reset to its default by exec): the
    compilers in its own process group stop with it; its workers, in sessions of their own, are ended by it."""
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        try:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        except ValueError:  # not the main thread (the grader called in-process): signals are its caller's
            pass


def main(argv: list[str] | None = None) -> int:
    _interruptible()
    timings.mark("grader imported")
    args = parser().parse_args(argv)
    if getattr(args, "timings", False):
        timings.enable()
        timings.mark("grader imported")
    try:
        return args.fn(args)
    except GraderError as e:
        # Messages quote compilers, ncu and the student's own errors: brackets in them are text, not markup.
        console.print(Text.assemble(("error:", "red"), f" {e}"))
        return e.exit_code
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/]")
        return 130
    except OSError as e:
        state = _state_problem(e)
        if state is None:
            return _internal_error(e)
        console.print(Text.assemble(("error:", "red"), f" {state}"))
        return ENV
    except Exception as e:  # a bug in the grader: say so, keep the traceback out of the user's way
        return _internal_error(e)


def _state_problem(e: OSError) -> str | None:
    """The message for a state folder (.grader/ or $GRADER_STATE) that cannot be used, if that is what e is: one
    that is read-only, or a file where the folder should be. None for any other OSError."""
    from grader.paths import STATE_ENV

    names = [Path(n) for n in (e.filename, e.filename2) if n]
    roots = [Path(os.environ[STATE_ENV])] if os.environ.get(STATE_ENV) else []
    roots += [d / ".grader" for d in (Path.cwd(), *Path.cwd().parents)]
    for n in names:
        for r in roots:
            try:
                inside = n.resolve() == r.resolve() or r.resolve() in n.resolve().parents
            except OSError:
                inside = False
            if inside:
                how = "a file, not a folder" if r.is_file() else (e.strerror or str(e)).lower()
                fix = (f"point ${STATE_ENV} at a folder you can write" if os.environ.get(STATE_ENV) else
                       f"make {r} writable (or remove it), or point ${STATE_ENV} at a folder you can write")
                return (f"the grader keeps its builds, logs and results in {r}, and it cannot write there ({how}: "
                        f"{n}): {fix}")
    return None


def _internal_error(e: BaseException) -> int:
    """A bug in the grader: say so, keep the traceback out of the user's way."""

    log = Paths(Path.cwd()).logs() / "internal-error.log"
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(traceback.format_exc())
        where = f"details in {log}"
    except OSError:
        where = "no log could be written"
    console.print(Text.assemble(("internal error in the grader:", "red"),
                                f" {type(e).__name__}: {e} ({where}); please report it"))
    return ENV


if __name__ == "__main__":
    sys.exit(main())
