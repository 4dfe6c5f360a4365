"""An instructor's commands: release, publish, syllabus, leaderboard, gradebook, grade and site."""
from __future__ import annotations

import re
import time
from pathlib import Path

from rich.text import Text


from grader import clock
from grader.classroom import hidden
from grader.authoring import release
from grader.check.ranked import ranked_secret
from grader.errors import GraderError
from grader.paths import Paths, relative_path
from grader.verdicts import EXIT_ENV as ENV
from grader.verdicts import EXIT_FAIL as FAIL
from grader.commands.shared import _load, console


def cmd_release(args) -> int:
    if args.to:
        return release_to(args)
    if args.hidden:
        raise GraderError("--hidden names the hidden cases a release to a student repository (--to DIR) leaves out; "
                          "without --to the release only writes stubs into days/")
    root, _, course = _load(args)
    plan = release.release_plan(course, root, args.days or None)
    if args.check:
        stale = release.stale(plan)
        for p in stale:
            console.print(f"[red]out of date:[/] {relative_path(p, root)}")
        if stale:
            console.print("days/ differs from what `grader release` generates from solutions/: run `grader release`")
            return FAIL
        console.print(f"days/ is up to date ({len(plan)} files)")
        return 0
    backup = Paths(root).backups() / time.strftime("%Y%m%d-%H%M%S")
    written, saved = release.write(plan, backup)
    for p in written:
        console.print(f"wrote {relative_path(p, root)}")
    if saved:
        console.print(f"[yellow]the previous versions of {len(saved)} file(s) are saved in "
                      f"{relative_path(backup, root)}[/]")
    console.print(f"{len(written)} of {len(plan)} stub files changed")
    return 0


def release_to(args) -> int:
    """`grader release --to DIR`: the student repository, as of today's date."""
    from grader.authoring import student_repo

    if args.days:
        raise GraderError("--to writes every day released by today (course.yaml's `release:` dates), not chosen days: "
                          f"drop {' '.join(args.days)}")
    if args.check:
        raise GraderError("--check compares days/ with what solutions/ generate; it does not combine with --to")
    root, course_path, course = _load(args)
    overlay = hidden.locate(course_path, args.hidden)
    today = clock.today()
    dest = Path(args.to).expanduser()
    try:  # an earlier release there: the days whose solutions it holds, whose answers may now go out
        before = student_repo.read_manifest(dest.resolve()) if dest.is_dir() else None
    except OSError:
        before = None
    with console.status("building the student repository…"):
        tree = student_repo.build(root, course_path, course, today, overlay,
                                  published=set((before or {}).get("published", {})))
    names = {hidden.FILE_NAME} | ({overlay.name} if overlay else set())
    try:
        res = student_repo.write(tree, dest, root, course, names)
    except OSError as e:
        raise GraderError(f"--to: cannot write into {dest}: {e.strerror or e}") from None
    published = set((student_repo.read_manifest(dest.resolve()) or {}).get("published", {}))
    waits, unknown = student_repo.forecast(root, course_path, course, today, overlay, published)
    later = [f"{d.id} ({d.release.isoformat()}" + (f", once {', '.join(waits[d.id])} "
                                                  f"{'is' if len(waits[d.id]) == 1 else 'are'} published" if
                                                  d.id in waits else "") + ")"
             for d in course.days if d.status == "ready" and d.release and d.release > today]
    span = f"{tree.days[0]} … {tree.days[-1]}" if len(tree.days) > 1 else "".join(tree.days) or "no day"
    console.print(f"released {len(tree.days)} day(s) ({span}) into {dest}: {len(res.written)} file(s) written, "
                  f"{len(res.removed)} removed, {res.unchanged} unchanged")
    if later:
        console.print(f"not yet released: {', '.join(later)}", style="dim")
    if unknown:
        console.print(f"which later days wait for which could not be worked out here: {unknown}", style="dim")
    for line in student_repo.late_waits(course, waits):
        console.print(f"[yellow]warning:[/] {line}")
    left = ", ".join(f"{why} ({n})" for why, n in sorted(tree.left_out.items()))
    console.print(f"left out: {left}", style="dim")
    for hold in tree.held:  # each day held back, each file that holds it and the day it waits for
        console.print(Text(f"{hold} (`grader publish {hold.waits_for} --to {dest}`, then release again)",
                           style="yellow"))
    if tree.uncommitted:
        console.print(f"[yellow]note:[/] {len(tree.uncommitted)} tracked file(s) have uncommitted changes, released "
                      f"as they are in the working tree (first: {tree.uncommitted[0]})")
    if res.changed_by_hand:
        console.print(f"[yellow]note:[/] {len(res.changed_by_hand)} file(s) of the previous release were edited in "
                      f"{dest} and are now replaced (first: {res.changed_by_hand[0]})")
    doc = student_repo.read_manifest(dest.resolve()) or {}
    waiting = [(ex, b) for ex, b in tree.baselines if b not in doc.get("published", {})]
    if waiting:
        console.print(f"[yellow]note:[/] {len(waiting)} timed exercise(s) are timed against a solution the student "
                      "repository gets only with `grader publish` (until then `grader check` checks their correctness "
                      f"only); first: {waiting[0][0]}, against {waiting[0][1]}")
    return 0


def cmd_publish(args) -> int:
    from grader.authoring.publish import publish

    root, _, course = _load(args)
    dest = Path(args.to).expanduser()
    try:
        res = publish(root, course, args.day, dest, clock.today(), force=args.force)
    except OSError as e:
        raise GraderError(f"--to: cannot write into {dest}: {e.strerror or e}") from None
    day = course.day(args.day)
    if res.forced:
        console.print(f"[yellow]published before it is due (--force):[/] {res.forced}")
    console.print(f"published {day.id}'s solution into {dest / 'solutions' / day.id}: {len(res.written)} file(s) "
                  f"written, {len(res.removed)} removed, {res.unchanged} unchanged")
    return 0


def cmd_syllabus(args) -> int:
    from grader.authoring.syllabus import render

    from grader.authoring.semester import manifest_of

    root, _, course = _load(args)
    path, text = root / "syllabus.md", render(course, manifest_of(root))  # a student repository's: its release's
    current = path.read_text() if path.is_file() else None
    if args.check:
        if current != text:
            console.print("syllabus.md is out of date with course.yaml: run `grader syllabus`")
            return FAIL
        console.print("syllabus.md is up to date")
        return 0
    if current != text:
        path.write_text(text)
        console.print("wrote syllabus.md")
    return 0


# -- leaderboard --------------------------------------------------------------------------------------------
def cmd_leaderboard(args) -> int:
    from grader.classroom import leaderboard as lb

    if args.seed_sha256 and not re.fullmatch(r"[0-9a-f]{64}", args.seed_sha256):
        raise GraderError("--seed-sha256 takes the 64 hex digits a ranked run prints and records (seed_sha256)")
    max_age = None if args.max_age_days == 0 else args.max_age_days
    _, _, course = _load(args)  # which steps are optional is the course's to say (leaderboard.read_entry)
    optional = {d.id: frozenset(e.name for e in d.exercises if e.optional) for d in course.days}
    board = lb.build(args.results, max_age_days=max_age, seed_sha256=args.seed_sha256, optional=optional)
    out = Path(args.out).expanduser()
    lb.write(board, out)
    for r in board.rejected:
        console.print(Text.assemble(("rejected", "yellow"), f" {r.source} ({r.kind}): {r.reason}"))
    for r in board.not_entered:
        console.print(Text.assemble(("not entered", "dim"), f" {r.source} ({r.kind.replace('_', ' ')}): {r.reason}"))
    for b in board.boards:
        top = b["entries"][0]
        console.print(f"{b['day']} on {b['gpu']}: {len(b['entries'])} ranked, first {top['name']} "
                      f"{top['speedup']:.2f}x")
    apart = f", {len(board.not_entered)} not entered (missing or compiled only)" if board.not_entered else ""
    console.print(f"{board.accepted} result(s) ranked on {len(board.boards)} board(s), {len(board.rejected)} "
                  f"rejected{apart}; written into {out} (leaderboard.md, leaderboard.json, rejected.json, plots/)")
    return 0


# -- gradebook ----------------------------------------------------------------------------------------------
def cmd_gradebook(args) -> int:
    from grader.classroom import gradebook
    from grader.classroom.leaderboard import result_files

    _, _, course = _load(args)
    files = result_files(args.results)
    if not files:
        raise GraderError("no result files (*.json) found in what was given")
    with console.status("writing the gradebook (nbgrader)…"):
        res = gradebook.write(files, args.db, course, args.assignment)
    for f, why in res.skipped:
        console.print(Text.assemble(("skipped", "yellow"), f" {f}: {why}"))
    for student, assignment, score, top in res.written:
        console.print(f"{student}: {assignment} {score:g} of {top:g}", style="dim")
    console.print(f"{len(res.written)} result(s) written into {args.db}, {len(res.skipped)} skipped; "
                  "`nbgrader export` gives them with the notebooks' scores")
    if not res.written:
        return ENV
    return FAIL if res.skipped else 0


# -- grade --------------------------------------------------------------------------------------------------
def cmd_grade(args) -> int:
    from grader.classroom import executors, grade
    from grader.classroom.grade_task import default_command

    root, course_path, course = _load(args)
    days = grade.parse_days(args.days, course)
    submissions = Path(args.submissions).expanduser().resolve()
    subs = grade.find_submissions(submissions)
    out = Path(args.out).expanduser().resolve()
    grade.check_out_dir(out, submissions)
    if args.ranked:
        ranked_secret(root)  # a missing secret is said once, here, not by every grading
    if args.executor == "slurm":
        if args.workers or args.timeout:
            raise GraderError("--workers and --timeout are the local executor's: on Slurm, set array_parallelism and "
                              "timeout_min in --slurm-config")
        config = executors.load_slurm_config(args.slurm_config)
        executor, timeout_s = executors.SlurmExecutor(config, out / ".submitit"), config.task_timeout_s
    else:
        if args.slurm_config:
            raise GraderError("--slurm-config configures --executor slurm: add it, or drop --slurm-config")
        executor, timeout_s = executors.LocalExecutor(args.workers), args.timeout or grade.DEFAULT_TIMEOUT_S
    options = ("--correctness-only",) * args.correctness_only + ("--ranked",) * args.ranked
    if args.no_sandbox:
        from grader.sandbox import GIVES_UP

        console.print(f"--no-sandbox: {GIVES_UP}", style="yellow")
    elif args.executor == "local":  # a Slurm node says so itself, in the grading's error record
        from grader.sandbox import require

        require()
    options += ("--no-sandbox",) if args.no_sandbox else ("--sandbox",)
    p = grade.plan(subs, days, out, course_path=course_path, timeout_s=timeout_s, command=default_command(),
                   options=options, regrade=args.regrade)
    missing = f", {p.missing} without the day's folder (recorded as not implemented)" if p.missing else ""
    missing += (f", {p.refused} refused: a link or a special file where the sources should be (recorded as a build "
                "error)" if p.refused else "")
    missing += (f", {p.incomplete} lacking a file the course gives (recorded as a build error)"
                if p.incomplete else "")
    console.print(f"{len(subs)} submission(s) × {len(days)} day(s): {len(p.tasks)} to grade, {p.skipped} already "
                  f"graded{missing}; {executor.describe()}")
    second, errors = grade.run(executor, p.tasks, {d.id: d.exercises for d in days}, console) if p.tasks else (0, {})
    grade.summarize(subs, days, out, console)
    again = f" ({second} on the second attempt)" if second else ""
    console.print(f"graded {len(p.tasks) - len(errors)} pair(s){again}, skipped {p.skipped} already graded; results "
                  f"in {out}")
    if errors:
        console.print(f"[red]{len(errors)} grading(s) failed twice[/] and are recorded as errors (a later run grades "
                      f"them again); first: {next(iter(errors))}: {next(iter(errors.values()))}", highlight=False)
        return FAIL
    return 0


# -- site ---------------------------------------------------------------------------------------------------
def cmd_site(args) -> int:
    from grader.site.build import build, require

    require()  # before loading anything else: a missing extra gets its own message
    root, _, course = _load(args)
    out = Path(args.out).resolve() if args.out else Paths(root).site()
    board = Path(args.leaderboard).expanduser().resolve() if args.leaderboard else Paths(root).leaderboard()
    if args.leaderboard and not (board / "leaderboard.md").is_file():
        raise GraderError(f"--leaderboard: {args.leaderboard} holds no leaderboard.md (write one with "
                          "`grader leaderboard build RESULTS… --out DIR`)")
    with console.status("building the course website (MkDocs, Material theme)…"):
        res = build(root, course, out, strict=args.strict, leaderboard=board)
    for w in res.warnings:
        console.print(Text.assemble(("warning:", "yellow"), f" {w}"))
    console.print(f"built {res.pages} pages and {res.terms} glossary term{'' if res.terms == 1 else 's'} into "
                  f"{relative_path(res.site, root)} in {res.seconds:.1f} s")
    if args.site_cmd == "build":
        return 0
    import threading

    from grader.site.serve import make_server, watch

    try:
        server = make_server(res.site, args.host, args.port)
    except OSError as e:
        raise GraderError(f"cannot listen on {args.host}:{args.port}: {e.strerror or e}") from None
    host, port = server.server_address[:2]
    console.print(f"serving on http://{host}:{port}/ (Ctrl-C stops)" +
                  ("; rebuilding when a source changes" if not args.no_watch else ""))
    stop = threading.Event()

    def rebuild():
        try:
            r = build(root, _load(args)[2], out, strict=False, leaderboard=board)
            console.print(f"rebuilt in {r.seconds:.1f} s" + (f" ({len(r.warnings)} warnings)" if r.warnings else ""))
        except Exception as e:  # a broken source, or a file caught mid-save: say so, keep serving the last good site
            console.print(Text.assemble(("rebuild failed:", "red"), f" {e}"))

    if not args.no_watch:
        threading.Thread(target=watch, args=(root, rebuild, stop), daemon=True).start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        console.print("stopped")
    finally:
        stop.set()
        server.server_close()
    return 0


# -- entry --------------------------------------------------------------------------------------------------
# Option values checked as they are parsed: a bad one is argparse's usage error (exit 2) before anything runs.
