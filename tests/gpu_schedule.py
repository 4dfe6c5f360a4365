"""The GPU suite's order and its predicted wall time, from the seconds each test took in the last recorded suite
(measured/gpu-suite.json, taken at the same parallelism, so the seconds already include the GPU and the CPUs
shared with the other workers).

pytest-xdist's load scheduling (run with --maxschedchunk 1, scripts/device_run.sh) keeps two tests queued on each
worker: the one it runs and the next. Its first hand-out gives each worker two consecutive tests of the collection,
so a plain slowest-first order puts the two slowest tests on one worker, one after the other (the suite of
2026-12-03 spent 377 s on a part whose slowest test took 257 s: 257 + the 113 s of the next). `order` pairs the
slowest test with the fastest of the first hand-out, the second slowest with the second fastest, and so on; the
rest follow slowest first. `simulate` replays that scheduler over the recorded seconds; `predict` adds the tests
that run alone afterwards (gpu_alone) and the run's fixed start-up."""
from __future__ import annotations

import heapq
import re
import statistics

NEW_TEST_S = 60.0  # a GPU test of a day the record has no test of
START_S = 20.0  # collection and the start of the workers, when no one-call run has measured it


def _day(nodeid: str) -> str | None:
    m = re.search(r"\[(day\d+)", nodeid)
    return m.group(1) if m else None


def _function(nodeid: str) -> str:
    return nodeid.split("[")[0]


def estimate(nodeid: str, seconds: dict[str, float]) -> float:
    """A test's seconds: the recorded ones, else an estimate from its day's recorded tests. A new known-wrong
    kernel or a new case costs about what the slowest test of its function on that day costs (a rebuild of the
    day and a check); a test of a day the record has no function of, the slowest test of that day (its build is
    the bulk); else the median of its function over the days, else NEW_TEST_S."""
    if nodeid in seconds:
        return seconds[nodeid]
    day, fn = _day(nodeid), _function(nodeid)
    same_fn = [s for t, s in seconds.items() if _function(t) == fn]
    if day:
        same = [s for t, s in seconds.items() if _function(t) == fn and _day(t) == day]
        if same:
            return max(same)
        of_day = [s for t, s in seconds.items() if _day(t) == day]
        if of_day:
            return max(of_day)
    return statistics.median(same_fn) if same_fn else NEW_TEST_S


def order(ids: list[str], seconds: dict[str, float], workers: int) -> list[str]:
    """The suite's order for `workers` xdist workers: the first 2·workers tests (the first hand-out, two to each
    worker) as pairs of the k-th slowest and the k-th fastest of them, then the rest slowest first. Ties go by
    name, so that every process computes the same order."""
    ranked = sorted(ids, key=lambda t: (-estimate(t, seconds), t))
    if workers <= 1:
        return ranked
    first, rest = ranked[:2 * workers], ranked[2 * workers:]
    paired = []
    for k in range(len(first) // 2):
        paired += [first[k], first[len(first) - 1 - k]]
    if len(first) % 2:
        paired.append(first[len(first) // 2])
    return paired + rest


def simulate(ordered: list[str], seconds: dict[str, float], workers: int) -> float:
    """The wall time of xdist's load scheduling with --maxschedchunk 1 over `ordered`: each worker first gets two
    consecutive tests, then one more each time it finishes one, so it always holds the test it runs and the next."""
    if not ordered:
        return 0.0
    workers = max(1, min(workers, len(ordered)))
    queue = list(ordered)
    if len(queue) < 2 * workers:  # fewer tests than two a worker: round-robin, one at a time
        held = [[] for _ in range(workers)]
        for k, t in enumerate(queue):
            held[k % workers].append(t)
        return max(sum(estimate(t, seconds) for t in h) for h in held)
    held = [queue[2 * w:2 * w + 2] for w in range(workers)]
    queue = queue[2 * workers:]
    # each worker: (time its current test ends, worker); its held[w][0] is running, held[w][1:] waits
    events = [(estimate(held[w][0], seconds), w) for w in range(workers)]
    heapq.heapify(events)
    end = 0.0
    while events:
        now, w = heapq.heappop(events)
        end = max(end, now)
        held[w].pop(0)
        if queue:
            held[w].append(queue.pop(0))
        if held[w]:
            heapq.heappush(events, (now + estimate(held[w][0], seconds), w))
    return end


def predict(ids: list[str], seconds: dict[str, float], workers: int, alone: list[str] = (),
            start_s: float = START_S) -> dict:
    """The suite's predicted wall time in one call: the parallel phase (every test of ids not in alone, in `order`,
    over `workers`), then the gpu_alone tests one at a time, plus the start-up."""
    alone_set = set(alone)
    parallel = [t for t in ids if t not in alone_set]
    par = simulate(order(parallel, seconds, workers), seconds, workers)
    alone_s = sum(estimate(t, seconds) for t in ids if t in alone_set)
    new = sorted(t for t in ids if t not in seconds)
    return {"wall_s": round(start_s + par + alone_s, 1), "parallel_s": round(par, 1), "alone_s": round(alone_s, 1),
            "start_s": round(start_s, 1), "workers": workers, "tests": len(ids),
            "test_seconds": round(sum(estimate(t, seconds) for t in ids), 1), "estimated": new}
