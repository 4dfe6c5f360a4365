"""`grader sanitize dayNN`: a day's correctness cases under compute-sanitizer, errors named at the student's
file:line, one table.

`grader check` already reruns a failing case under memcheck, and an exercise can require a tool (`sanitize:` in
course.yaml); this command is the tool on demand, for any day and any tool: the run a student makes when a kernel
is right on every shape but one, or right today and wrong tomorrow. The worker is the same as `grader check`'s (it
builds with -lineinfo, so the report has lines), started under the tool with nothing timed and nothing profiled."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

from grader.check.job import make_job
from grader.check.sanitizer import SanitizerError, headline, run_under_sanitizer
from grader.paths import Paths, relative_path
from grader.verdicts import EXIT_ENV, EXIT_FAIL, EXIT_PASS

DEFAULT_TOOL = "memcheck"
SHOWN_ERRORS = 5  # per exercise and tool, below the table


@dataclass
class ToolRun:
    exercise: str
    tool: str
    cases: int  # how many cases the worker finished under the tool
    planned: int
    seconds: float
    errors: list[SanitizerError] = field(default_factory=list)
    problem: str | None = None  # the run could not say clean or not: no GPU, a build error, a hang, ...
    env: bool = False  # the problem is the machine's (no GPU), not the code's
    log: str = ""

    @property
    def own(self) -> list[SanitizerError]:
        first = headline(self.errors)
        return [e for e in self.errors if e.in_sources or e is first]

    @property
    def clean(self) -> bool:
        return self.problem is None and not self.own


def tools_for(ex, tool: str | None) -> list[str]:
    """--tool, else the tools the exercise requires, else memcheck."""
    return [tool] if tool else (list(ex.sanitize) or [DEFAULT_TOOL])


def run_tool(*, course, root: Path, day, ex, src_dir: Path, variant: str, tool: str, seed: int,
             dtypes: list[str], timeout_s: float, sanitizer: str) -> ToolRun:
    job = make_job(course=course, root=root, day=day, ex=ex, src_dir=src_dir, seed=seed, dtypes=dtypes,
                   correctness_only=True)
    indices = [c.index for c in job.cases if c.kind == "correctness" and c.probe is None]
    logs = Paths(root).logs()
    job_path = job.write(logs / f"{day.id}-{ex.name}-{variant}-sanitize.job.json")
    events: list[dict] = []
    t0 = time.monotonic()
    errors, _, code = run_under_sanitizer(job_path, tool, indices, root, timeout_s, sanitizer=sanitizer,
                                          events=events)
    run = ToolRun(ex.name, tool, sum(1 for e in events if e.get("ev") == "case"), len(indices),
                  time.monotonic() - t0, errors,
                  log=relative_path(job_path.with_name(job_path.name.removesuffix(".job.json") + f".{tool}.log"),
                                    root))
    kinds = {e.get("ev"): e for e in events}
    if "no_gpu" in kinds:
        run.problem, run.env = "no CUDA GPU here: compute-sanitizer watches kernels as they run", True
    elif "build" in kinds and not all(e["ok"] for e in events if e.get("ev") == "build"):
        bad = next(e for e in events if e.get("ev") == "build" and not e["ok"])
        first = (bad.get("diagnostics") or ["see the log"])[0]
        run.problem = f"the code does not compile: {first}"
    elif "missing_op" in kinds:
        run.problem = f"the built module has no `{ex.op}`: not implemented yet"
    elif "env_error" in kinds or "internal_error" in kinds:
        ev = kinds.get("env_error") or kinds["internal_error"]
        run.problem, run.env = ev.get("message", "environment error"), True
    elif code is None:
        run.problem = (f"did not finish in {timeout_s:g} s ({run.cases} of {len(indices)} cases ran): a hang, or a "
                       "tool much slower on this code (raise --timeout)")
    return run


def render(console: Console, runs: list[ToolRun]) -> None:
    t = Table(title="compute-sanitizer", title_justify="left", box=None, pad_edge=False)
    for col in ("exercise", "tool", "cases", "errors", "first error in your code", "time s"):
        t.add_column(col, justify="right" if col in ("cases", "errors", "time s") else "left")
    for r in runs:
        own = r.own
        if r.problem:
            first = f"[yellow]{r.problem}[/]"
        elif own:
            first = f"[red]{own[0].kind} at {own[0].where()}[/]"
        else:
            first = "[green]clean[/]" + (f" ({len(r.errors)} in library code)" if r.errors else "")
        t.add_row(r.exercise, r.tool, f"{r.cases}/{r.planned}", str(sum(e.count for e in own)), first,
                  f"{r.seconds:.0f}")
    console.print(t)
    for r in runs:
        if r.own:
            console.print(f"[bold]{r.exercise} · {r.tool}[/]", highlight=False)
            for e in r.own[:SHOWN_ERRORS]:
                console.print(f"  {e.describe()}", markup=False, highlight=False)
                if e.message:
                    console.print(f"    {e.message}", style="dim", markup=False, highlight=False)
            if len(r.own) > SHOWN_ERRORS:
                console.print(f"  … and {len(r.own) - SHOWN_ERRORS} more places")
        if r.own or r.problem:
            console.print(f"  full report: {r.log}", style="dim", markup=False, highlight=False)


def exit_code(runs: list[ToolRun]) -> int:
    if any(r.own or (r.problem and not r.env) for r in runs):
        return EXIT_FAIL
    return EXIT_ENV if any(r.env for r in runs) else EXIT_PASS


def missing_tool_message() -> str:
    return ("compute-sanitizer was not found (it ships with the CUDA toolkit, in its bin/ folder): put that folder "
            "on PATH or set CUDA_HOME, then run again")
