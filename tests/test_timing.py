import itertools
import random

import pytest

from grader.check.timing import geomean, median_stderr, run_until_stable


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def sampler(values, clock=None, cost_s=0.0):
    it = itertools.cycle(values)
    calls = []

    def sample(k):
        calls.append(k)
        if clock is not None:
            clock.t += cost_s * k
        return [next(it) for _ in range(k)]

    sample.calls = calls
    return sample


def test_steady_timings_stop_after_min_reps():
    s = sampler([1.00, 1.01, 0.99])
    st = run_until_stable(s, min_reps=10, max_reps=1000, budget_s=10, rel_stderr=0.01)
    assert st.stable and st.reps == 10 and st.median_ms == pytest.approx(1.0, abs=0.011)


def test_noisy_timings_grow_the_sample_until_the_median_settles():
    rng = random.Random(0)
    values = [1 + rng.gauss(0, 0.08) for _ in range(5000)]
    s = sampler(values)
    st = run_until_stable(s, min_reps=10, max_reps=5000, budget_s=1e9, rel_stderr=0.01)
    assert st.stable and st.reps > 10 and s.calls[:3] == [10, 10, 20]  # doubling batches
    assert median_stderr(values[: st.reps]) <= 0.01 * st.median_ms


def test_budget_ends_an_unstable_measurement():
    clock = FakeClock()
    s = sampler([1, 10, 100, 1000], clock, cost_s=0.01)
    st = run_until_stable(s, min_reps=10, max_reps=10**6, budget_s=0.5, rel_stderr=0.001, clock=clock)
    assert not st.stable and st.reps < 100


def test_max_reps_caps_the_sample():
    s = sampler([1, 10, 100, 1000])
    st = run_until_stable(s, min_reps=10, max_reps=40, budget_s=1e9, rel_stderr=1e-6)
    assert not st.stable and st.reps == 40


def test_outliers_do_not_move_the_median():
    s = sampler([1.0] * 19 + [50.0])
    st = run_until_stable(s, min_reps=20, max_reps=20, budget_s=1, rel_stderr=0.5)
    assert st.median_ms == 1.0 and st.min_ms == 1.0


def test_geomean():
    assert geomean([2, 8]) == pytest.approx(4)
    assert geomean([3]) == pytest.approx(3)
