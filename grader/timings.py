"""Timestamps of a check's steps, printed to stderr when GRADER_TIMINGS is set (or `--timings` is given, which sets
it for the worker too): to measure where the seconds of `grader check` go rather than guess."""
from __future__ import annotations

import os
import sys
import time

ENV = "GRADER_TIMINGS"
_T0 = time.perf_counter()


def _since_process_start() -> float:
    """Seconds from this process's start to importing this module (Linux /proc), else 0."""
    try:
        ticks = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19])
        uptime = float(open("/proc/uptime").read().split()[0])
        return max(0.0, uptime - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


_BEFORE = _since_process_start()


def enabled() -> bool:
    return os.environ.get(ENV, "") not in ("", "0")


def enable() -> None:
    os.environ[ENV] = "1"


def mark(what: str) -> None:
    """`[timings]   1.234 s  what`: seconds since this process started (to 10 ms; /proc's clock ticks)."""
    if enabled():
        print(f"[timings] {_BEFORE + time.perf_counter() - _T0:7.3f} s  {what}", file=sys.stderr, flush=True)


def event(ev: dict) -> None:
    """A worker's event, as it reaches the grader."""
    if enabled():
        kind = ev.get("ev")
        detail = {"phase": ev.get("target"), "build": f"{ev.get('target')} ok={ev.get('ok')} {ev.get('seconds', '')}s",
                  "case_start": f"{ev.get('index')} {ev.get('kind')} {ev.get('dtype')} {ev.get('label')}",
                  "case": f"{ev.get('index')} ok={ev.get('ok')}"}.get(kind, "")
        mark(f"worker {kind} {detail}".rstrip())
