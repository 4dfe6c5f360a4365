"""Where the seconds of a plain `grader check` go, stage by stage, in one fresh process: the imports, the CUDA
context, then the worker's own run of the exercise's job with its stages timed (build lookup, inputs, the op and
the fp64 reference, the profiler's attribution, NVML queries, the timer). Run it after a `grader check` of the
same exercise, so the build is cached and what is left is what an unchanged re-check pays:

    python3 scripts/startup_probe.py [--day day03] [--exercise softmax] [--seed 3] [--correctness-only]

Prints each stage's first call, its count and its total; the first case is where one-time costs hide."""
from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

T0 = time.perf_counter()
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--day", default="day03")
    p.add_argument("--exercise")
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--correctness-only", action="store_true")
    a = p.parse_args()
    marks: list[tuple[float, str]] = [(time.perf_counter() - T0, "interpreter and argparse")]

    def mark(what: str) -> None:
        marks.append((time.perf_counter() - T0, what))

    import torch
    mark("import torch")
    torch.cuda.init()
    mark("torch.cuda.init")
    torch.cuda.get_device_properties(0)
    mark("device properties")
    torch.empty(1, device="cuda")
    torch.cuda.synchronize()
    mark("first allocation (CUDA context)")
    import grader.check.worker as worker
    from grader.check import attribution
    from grader.check.job import make_job
    from grader.course import load_course
    from grader.paths import Paths
    from grader.protocol import Task
    mark("grader imports")
    course = load_course(ROOT / "course.yaml")
    day = course.day(a.day)
    ex = next(e for e in day.exercises if a.exercise in (None, e.name))
    job = make_job(course=course, root=ROOT, day=day, ex=ex, src_dir=Paths(ROOT).solution(day.id), seed=a.seed,
                   correctness_only=a.correctness_only)
    mark("course loaded, job planned")

    stages: dict[str, list[float]] = defaultdict(list)

    def timed(owner, name: str, label: str | None = None):
        fn = getattr(owner, name)

        def wrapper(*args, **kw):
            t = time.perf_counter()
            try:
                return fn(*args, **kw)
            finally:
                stages[label or name].append(time.perf_counter() - t)
        setattr(owner, name, wrapper)

    for name in ("build_exercise", "judge", "attribute", "benchmark", "driver_version", "max_sm_clock_ghz",
                 "peak_tflops", "_owner", "make_timer"):
        timed(worker, name)
    timed(attribution, "record", "attribution.record (profiler)")
    timed(Task, "materialize", "Task.materialize (inputs)")
    timed(Task, "check", "Task.check (fp64 reference, compare)")
    timed(Task, "load", "Task.load")

    events: list[tuple[float, dict]] = []
    worker.run(job, lambda ev, **kw: events.append((time.perf_counter() - T0, {"ev": ev, **kw})))
    mark(f"worker.run ({sum(1 for _, e in events if e['ev'] == 'case')} cases)")

    print(f"startup probe: {a.day}.{ex.name} on {torch.cuda.get_device_name(0)}")
    prev = 0.0
    print(f"{'stage':<44} {'at s':>7} {'took s':>7}")
    for t, what in marks:
        print(f"{what:<44} {t:7.3f} {t - prev:7.3f}")
        prev = t
    print(f"\n{'inside worker.run':<44} {'first s':>7} {'calls':>5} {'total s':>7}")
    for name, secs in sorted(stages.items(), key=lambda kv: -sum(kv[1])):
        print(f"{name:<44} {secs[0]:7.3f} {len(secs):5d} {sum(secs):7.3f}")
    starts = [t for t, e in events if e["ev"] == "case_start"]
    ends = [t for t, e in events if e["ev"] == "case"]
    if starts and ends:
        print(f"\nfirst case {ends[0] - starts[0]:.3f} s; the others {sum(e - s for s, e in zip(starts[1:], ends[1:])):.3f}"
              f" s together")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
