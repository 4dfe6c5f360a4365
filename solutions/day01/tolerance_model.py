"""The rounding model behind the softmax days' fp32 tolerances (course.yaml, the `softmax` exercise defaults).

A correct fp32 softmax kernel, simulated on the CPU in float32 and compared with the task's fp64 reference on
the shapes the softmax days check and time, with the task's inputs (N(0, 9) logits):

    m   = max_j x_j                          exact
    e_j = expf(x_j - m)                      one rounding for the difference, one for exp
    s   = sum_j e_j                          the order is the kernel's: see below
    y_j = e_j * (1 / s)                      two roundings

Almost all of the error is the sum's. Its relative error is shared by every element of a row, so it is an rtol
term (the elements it moves most in absolute terms are a row's dominant ones, with y near 1). Orders simulated:
  - sequential: one thread adds the row's terms one after another (day 1). Each addition rounds at half an ulp of
    the running sum, so the sum's relative error is a random walk over the row: about sqrt(cols) · 2^-25, and the
    worst of many rows sits several standard deviations out;
  - strided T: T threads each add every T-th term, then a tree of T/2, T/4, ... adds (a warp's shuffles, a
    block's shared-memory reduction): each thread's walk is sqrt(T) times shorter;
  - online T: strided T with the running-max rescaling of a one-pass softmax in each thread, and a tree that
    merges the threads' (max, sum) pairs.
A sequential sum over a long row is not modelled beyond day 1's 4096 columns: there the running sum grows so far
above the terms that most of them fall under half its ulp and are lost (a bias, not a random walk: at 262144
columns about 5e-4 relative), and no one-thread-per-row kernel is fast enough to pass a later day anyway.
For each order and shape the script prints the smallest rtol that covers every element (given the day's atol)
and the worst relative L2 error, over the seeds. course.yaml's fp32 rtol is about twice the worst over the orders a
correct kernel of each softmax day can use: sequential up to day 1's longest row (4096 columns), strided and online
beyond it.

    python3 solutions/day01/tolerance_model.py [--seeds 4]
"""
from __future__ import annotations

import argparse

import numpy as np

ATOL = 1.0e-8  # course.yaml's fp32 atol for the softmax days


def _logits(rows: int, cols: int, rng: np.random.Generator) -> np.ndarray:
    return (rng.standard_normal((rows, cols), dtype=np.float32) * np.float32(3.0)).astype(np.float32)


def _exps(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    m = x.max(axis=1, keepdims=True)
    d = (x - m).astype(np.float32)  # fp32 subtraction, rounded
    e = np.exp(d.astype(np.float64)).astype(np.float32)  # expf, modelled as correctly rounded
    return e, m


def _sum_sequential(e: np.ndarray) -> np.ndarray:
    s = np.zeros(e.shape[0], dtype=np.float32)
    for j in range(e.shape[1]):
        s += e[:, j]
    return s


def _sum_strided(e: np.ndarray, threads: int) -> np.ndarray:
    rows, cols = e.shape
    steps = -(-cols // threads)
    padded = np.zeros((rows, steps * threads), dtype=np.float32)
    padded[:, :cols] = e
    lanes = padded.reshape(rows, steps, threads)
    acc = np.zeros((rows, threads), dtype=np.float32)
    for k in range(steps):
        acc += lanes[:, k, :]
    width = threads
    while width > 1:
        width //= 2
        acc = acc[:, :width] + acc[:, width:2 * width]
    return acc[:, 0]


def _online(x: np.ndarray, threads: int) -> np.ndarray:
    # One pass per thread over every T-th column: its running sum is rescaled by exp(m_old - m_new) whenever its
    # running max grows; then a tree merges the threads' (m, s) pairs, and the output pass divides.
    rows, cols = x.shape
    steps = -(-cols // threads)
    padded = np.full((rows, steps * threads), -np.inf, dtype=np.float32)
    padded[:, :cols] = x
    lanes = padded.reshape(rows, steps, threads)

    def rescale(s, m_old, m_new):
        d = np.where(np.isneginf(m_old), -np.inf, m_old - m_new).astype(np.float32)
        return (s * np.exp(d.astype(np.float64)).astype(np.float32)).astype(np.float32)

    m = np.full((rows, threads), -np.inf, dtype=np.float32)
    s = np.zeros((rows, threads), dtype=np.float32)
    for k in range(steps):
        xk = lanes[:, k, :]
        m_new = np.maximum(m, xk)
        d = np.where(np.isneginf(xk), -np.inf, xk - m_new).astype(np.float32)
        s = (rescale(s, m, m_new) + np.exp(d.astype(np.float64)).astype(np.float32)).astype(np.float32)
        m = m_new
    width = threads
    while width > 1:
        width //= 2
        m1, m2, s1, s2 = m[:, :width], m[:, width:2 * width], s[:, :width], s[:, width:2 * width]
        mm = np.maximum(m1, m2)
        s = (rescale(s1, m1, mm) + rescale(s2, m2, mm)).astype(np.float32)
        m = mm
    e = np.exp((x - m[:, :1]).astype(np.float32).astype(np.float64)).astype(np.float32)
    inv = (np.float32(1.0) / s[:, 0]).astype(np.float32)
    return (e * inv[:, None]).astype(np.float32)


def _softmax(x: np.ndarray, order: str) -> np.ndarray:
    if order.startswith("online"):
        return _online(x, int(order.split("-")[1]))
    e, _ = _exps(x)
    s = _sum_sequential(e) if order == "sequential" else _sum_strided(e, int(order.split("-")[1]))
    inv = (np.float32(1.0) / s).astype(np.float32)
    return (e * inv[:, None]).astype(np.float32)


def _reference(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def needed(x: np.ndarray, order: str) -> tuple[float, float]:
    """The smallest rtol covering every element given ATOL, and the relative L2 error."""
    y = _softmax(x, order).astype(np.float64)
    ref = _reference(x)
    err = np.abs(y - ref)
    rtol = float(np.max(np.maximum(err - ATOL, 0.0) / np.abs(ref)))
    rel_l2 = float(np.linalg.norm(y - ref) / np.linalg.norm(ref))
    return rtol, rel_l2


# Day 1's shapes (its longest row is 4096) and the later days' long rows.
SHAPES_DAY1 = [(257, 4096), (4096, 4096), (16384, 1024), (1000, 37), (3, 1025)]
SHAPES_LATER = [(5, 70001), (5, 262143), (64, 262144), (1024, 32768), (8192, 8192), (32768, 4096)]
ORDERS_DAY1 = ["sequential", "strided-32", "strided-256"]
ORDERS_LATER = ["strided-32", "strided-256", "strided-1024", "online-32"]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=4)
    args = p.parse_args()
    worst = 0.0
    print(f"{'shape':>14} {'order':>13} {'rtol needed':>12} {'rel_l2':>9}")
    for shapes, orders in ((SHAPES_DAY1, ORDERS_DAY1), (SHAPES_LATER, ORDERS_LATER)):
        for rows, cols in shapes:
            for order in orders:
                r_max, l2_max = 0.0, 0.0
                for seed in range(args.seeds):
                    rng = np.random.default_rng(seed)
                    r, l2 = needed(_logits(rows, cols, rng), order)
                    r_max, l2_max = max(r_max, r), max(l2_max, l2)
                worst = max(worst, r_max)
                print(f"{rows:>6}x{cols:<7} {order:>13} {r_max:12.2e} {l2_max:9.2e}", flush=True)
    print(f"worst rtol needed: {worst:.2e} (course.yaml: about twice this)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
