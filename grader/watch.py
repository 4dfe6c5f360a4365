"""`grader watch dayNN`: check a day again on every save, in one warm worker.

The worker (grader.check.worker --serve, driven by runner.WorkerSession) keeps torch imported, the CUDA context
alive and the modules it loaded; the content-keyed build cache rebuilds only what an edit changed (ninja recompiles
the edited file alone), and the library or baseline it is compared with is timed once per session. Each check is
`grader check`'s own (day_check.check_exercise, with the session); only its printing is shorter (report.compact). A
crash or hang replaces the worker and watching goes on. Without a GPU each save gets the compile-only verdict."""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from grader.check import report
from grader.check.build import HEADER_SUFFIXES, source_paths, used_folders
from grader.check.worker_process import WorkerSession
from grader.paths import Paths, relative_path


def exercise_files(ex, src_dir: Path, root: Path) -> set[Path]:
    """The files whose change can change an exercise's verdict (besides headers: see affected)."""
    files = [*source_paths(ex, src_dir), *(Path(src_dir) / s for s in ex.sources)]
    return {p.resolve() for p in files}


def watched_folders(exercises, src_dir: Path, root: Path) -> list[Path]:
    """The day's folder, the earlier days' folders it compiles files from, and the shared include folders."""
    found = [Path(src_dir)]
    for ex in exercises:
        found += list(used_folders(ex, src_dir).values()) + [root / i for i in ex.include_dirs]
    out = []
    for p in found:
        p = p.resolve()
        if p.is_dir() and p not in out:
            out.append(p)
    return out


def affected(exercises, changed: Iterable[Path], src_dir: Path, root: Path) -> list:
    """The exercises a batch of changed files concerns: one whose own file changed; every one that sees a header
    that changed (beside the sources, in a used day's folder, or in its include folders)."""
    changed = {Path(p).resolve() for p in changed}
    out = []
    for ex in exercises:
        folders = {Path(src_dir).resolve(), *(f.resolve() for f in used_folders(ex, src_dir).values())}
        includes = [(root / i).resolve() for i in ex.include_dirs]
        for p in changed:
            header = p.suffix in HEADER_SUFFIXES
            if (p in exercise_files(ex, src_dir, root) or (header and p.parent in folders)
                    or (header and any(inc == p or inc in p.parents for inc in includes))):
                out.append(ex)
                break
    return out


def file_changes(folders: list[Path], stop=None) -> Iterator[set[Path]]:
    """Batches of changed files under the folders (watchfiles: inotify, or polling where it has none)."""
    import watchfiles

    for batch in watchfiles.watch(*folders, step=50, stop_event=stop, raise_interrupt=True):
        yield {Path(p) for _, p in batch}


def watch(*, check: Callable, console, root: Path, day, exercises, src_dir: Path, seed: int, worker: str,
          hints: Callable, changes: Iterable[set[Path]] | None = None, max_runs: int | None = None) -> int:
    """Checks every exercise once, then the affected ones after each batch of changes, until interrupted (or after
    max_runs re-checks). check(ex, session, correct): one exercise's result (day_check.check_exercise); it calls
    correct(n) when its n correctness cases have passed and the timing starts, so that the verdict is printed then
    and the speed line follows when the timing ends. Returns 0."""
    folders = watched_folders(exercises, src_dir, root)
    log = Paths(root).logs() / f"watch-{day.id}.log"
    stamp = lambda: time.strftime("%H:%M:%S")  # noqa: E731

    def restarted(why: str) -> None:
        console.print(f"{stamp()} worker restarted: {why}; still watching", style="yellow", markup=False)

    def run(batch: list) -> None:
        for ex in batch:
            t0 = time.monotonic()
            told = []

            def correct(n: int, ex=ex, t0=t0, told=told) -> None:  # every correctness case passed; timing next
                told.append(report.correct_line(day.id, ex.name, n))
                console.print(f"{stamp()} {told[0]}  [{time.monotonic() - t0:.1f} s]; timing…", markup=False)

            res = check(ex, session, correct)
            lines = report.compact(res, ex)
            if told and lines[0] == told[0] and len(lines) > 1:  # said already: the speed line carries the time
                lines = lines[1:]
                console.print(f"{lines[0]}  [{time.monotonic() - t0:.1f} s]", markup=False)
            else:
                console.print(f"{stamp()} {lines[0]}  [{time.monotonic() - t0:.1f} s]", markup=False)
            for line in lines[1:]:
                console.print(line, markup=False)
            h = hints(res, ex)
            if h and res.status != "pass":
                console.print(f"  hint: {h}", style="cyan", markup=False)

    shown = ", ".join(relative_path(f, root) for f in folders)
    console.print(f"watching {shown} (seed {seed}; worker log {relative_path(log, root)}); Ctrl-C stops",
                  style="dim", markup=False)
    session = WorkerSession(cwd=root, log_path=log, worker=worker, on_restart=restarted)
    runs = 0
    try:
        run(exercises)
        source = changes if changes is not None else file_changes(folders)
        for batch in source:
            todo = affected(exercises, batch, src_dir, root)
            if not todo:
                continue
            names = sorted({relative_path(p, root) for p in batch if affected(exercises, {p}, src_dir, root)})
            console.print(f"{stamp()} changed: {', '.join(names[:3])}" + (" …" if len(names) > 3 else ""),
                          style="dim", markup=False)
            run(todo)
            runs += 1
            if max_runs is not None and runs >= max_runs:
                break
    except KeyboardInterrupt:
        console.print("stopped watching", style="dim")
    finally:
        session.close()
    return 0
