"""Honest kernel timing: CUDA events, L2 flushed before every timed call, warm-up discarded, repeated until
the median is stable or a time budget ends.

The stopping rule is separate from the clock (`run_until_stable` takes any sampler), so it is tested on the CPU
with a fake timer; `CudaTimer` is the only part that touches the GPU.
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import asdict, dataclass, replace
from collections.abc import Callable, Sequence

L2_FLUSH_BYTES = 256 * 1024 * 1024  # several times any current L2 (H100 50 MB, H200 60 MB)


@dataclass(frozen=True)
class Stats:
    median_ms: float
    q1_ms: float
    q3_ms: float
    min_ms: float
    reps: int
    stable: bool  # False when the budget ended before the median settled
    host_ms_per_rep: float | None = None  # host clock over the batches, the whole device fenced at their end

    def as_dict(self):
        return asdict(self)


def median_stderr(samples: Sequence[float]) -> float:
    """Standard error of the median, from the interquartile range (robust to the odd slow outlier)."""
    n = len(samples)
    if n < 3:
        return math.inf
    q = statistics.quantiles(samples, n=4)
    sigma = (q[2] - q[0]) / 1.349  # IQR of a normal distribution is 1.349 sigma
    return 1.2533 * sigma / math.sqrt(n)


def summarize(samples: Sequence[float], stable: bool) -> Stats:
    q = statistics.quantiles(samples, n=4) if len(samples) >= 2 else [samples[0]] * 3
    return Stats(statistics.median(samples), q[0], q[2], min(samples), len(samples), stable)


def run_until_stable(sample: Callable[[int], list[float]], *, min_reps: int, max_reps: int, budget_s: float,
                     rel_stderr: float, clock: Callable[[], float] = time.perf_counter) -> Stats:
    """Call sample(k) (which returns k timings in ms) in growing batches until the median's standard error is
    under rel_stderr of the median, max_reps is reached, or budget_s has passed (at least min_reps always)."""
    samples: list[float] = []
    start = clock()
    batch = min_reps
    while True:
        samples += sample(batch)
        med = statistics.median(samples)
        if med > 0 and median_stderr(samples) <= rel_stderr * med:
            return summarize(samples, True)
        if len(samples) >= max_reps or clock() - start >= budget_s:
            return summarize(samples, False)
        batch = min(len(samples), max_reps - len(samples))  # double the sample each round


class CudaTimer:
    """Times fn() on the current stream: for each rep, prepare (e.g. fresh inputs, outside the timed region), flush
    L2, record start, call, record end. Each batch of reps ends with a device-wide synchronize, so work left on any
    stream is finished before the next batch; the host's clock over the batch is kept beside the events'."""

    def __init__(self, torch, warmup: int, min_reps: int, max_reps: int, budget_s: float, rel_stderr: float):
        self.torch = torch
        self.warmup, self.min_reps, self.max_reps = warmup, min_reps, max_reps
        self.budget_s, self.rel_stderr = budget_s, rel_stderr
        self._flush_buf = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda")

    def flush_l2(self):
        self._flush_buf.zero_()

    def time(self, fn: Callable[[], object], prepare: Callable[[], object] | None = None) -> Stats:
        torch = self.torch
        for _ in range(self.warmup):
            if prepare:
                prepare()
            fn()
        torch.cuda.synchronize()
        host = [0.0, 0]

        def sample(k: int) -> list[float]:
            events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(k)]
            t0 = time.perf_counter()
            for start, end in events:
                if prepare:
                    prepare()
                self.flush_l2()
                start.record()
                fn()
                end.record()
            torch.cuda.synchronize()
            host[0] += (time.perf_counter() - t0) * 1e3
            host[1] += k
            return [s.elapsed_time(e) for s, e in events]

        stats = run_until_stable(sample, min_reps=self.min_reps, max_reps=self.max_reps,
                                 budget_s=self.budget_s, rel_stderr=self.rel_stderr)
        return replace(stats, host_ms_per_rep=host[0] / host[1])


def geomean(xs: Sequence[float]) -> float:
    xs = [x for x in xs if x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")
