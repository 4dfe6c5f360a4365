"""The rounding model behind course.yaml's tolerances, for every exercise family and dtype (issue 32).

A tolerance (atol, rtol, rel_l2) passes an output when |out - ref| <= atol + rtol·|ref| element by element and
||out - ref|| / ||ref|| <= rel_l2, against the fp64 reference of the stored inputs. Its ratio (grader/check/
compare.py's tol_ratio) is the larger of max |out - ref| / (atol + rtol·|ref|) and rel_l2 / its bound. A correct
kernel must stay at 0.5 or below on every seed (scripts/tolerance_sweep.py measures it on the GPU); a wrong one
must still fail, so no bound is wider than twice what this model says a correct kernel needs.

The model, one rounding at a time (u: unit roundoff, 2^-24 fp32, 2^-11 fp16, 2^-8 bf16):

1. The output's own rounding. A 16-bit output rounded once from an exact value is off by at most u·|y|: the
   elementwise ratio of a correctly rounded output reaches u·|y| / (atol + rtol·|y|) -> u/rtol on large elements,
   and its rel_l2 is 0.43·u (an error uniform within half an ulp, ulp = 2u·2^e for |y| in [2^e, 2^e+1): rel_l2 =
   u·sqrt(E[4^e] / 3) / rms(y), 0.425·u for normal values, the kind the course's outputs are; 0.39·u for mantissas
   spread logarithmically). So no 16-bit bound can pass the
   requirement with rtol < 2u or rel_l2 < 0.85u, whatever the kernel: `floor` below checks every course.yaml
   bound against it. fp16's u/rtol is 0.24 at rtol 2e-3; bf16's matmul rtol 8e-3 gives 0.49, the closest to the
   edge of any exercise (the accumulation adds nothing visible to it: see 2).
2. An fp32 sum. Each addition rounds at up to half an ulp of the running sum: a random walk whose variance is
   u²/3 · E[1/m²] · sum_k s_k² (s_k: the partial sums, E[1/m²] = 3 / (8 ln 2) for log-spread mantissas), so
   sigma = 0.42·u·sqrt(sum_k s_k²). Sequential over n terms of mean mu: sigma = 0.42·u·mu·n^1.5 / sqrt(3), a
   relative error of 0.25·u·sqrt(n) (day 1's softmax row sum; its heavy tail is simulated in
   solutions/day01/tolerance_model.py). A dot product of n terms of random sign and size a: sum_k s_k² = a²n²/2,
   sigma = 0.30·u·a·n. A split (strided lanes, split-K, a tree) shortens the walks. The worst of N such errors
   (elements x cases x seeds, 1e8 to 1e10 here) is about sqrt(2 ln N) = 6 to 7 sigma.
3. Matmul (tasks/matmul.py: entries of size K^-1/4, so c is an O(1) sum of K products): on CUDA cores
   (days 6-9) sigma = 0.30·u·sqrt(K) relative to |c|'s scale, 2e-6 at K = 1000: nothing next to atol 1e-4 in
   fp32, nothing next to the output's rounding in fp16/bf16. Split-K (day 9's stream-K) adds one rounding per
   segment. Tensor cores (day 11) multiply 16-bit inputs exactly and add in fp32 (truncating inside an mma step
   on some GPUs: a bias of up to one fp32 ulp per 16-term step, K/16 · 2^-23 = 7.6e-6 relative at K = 1024):
   again nothing next to the 16-bit output's rounding, so the bounds are 2-4 units of it (rtol 2e-3 fp16, 8e-3
   bf16) and the ratio is the floor of 1.
4. Softmax: the row sum's relative error (2) reaches every element of the row: an rtol term, simulated in
   solutions/day01/tolerance_model.py for the orders each day allows (fp32 rtol 4e-5: its tail over the sweep's rows
   needs 1.85e-5). In fp16/bf16 the output's
   rounding (1) dominates: rtol 1.5e-3 and 1e-2 are 3 and 2.6 units (ratio 0.33, 0.39). `softmax` below simulates
   day 05's packed 16-bit phases on the exercise's shapes and probes: `two` as shipped (each value's exp taken
   twice, the output rounded once) and `kept` (SOFTMAX_EXP_ONCE: the first exps kept as fp16, scaled by 2^15, and
   multiplied in the store): a second rounding at fp16's u, harmless next to a bf16 output's u, as large as an
   fp16 output's own (up to 2u: a ratio near 0.6 there, hence fp16 keeps two exps).
5. Attention forward (o, lse): three fp32 errors before o's rounding:
   - the scores: s = q·k / sqrt(d), a dot product of d terms (2), sigma_s = 0.30·u·|q_c k_c|·d / sqrt(d) for one
     FMA chain per score (0.22 in chunks of 32, the course's kernels). With unit-normal inputs that is 1e-7 and
     harmless. The sharp probe multiplies q by 30: sigma_s = 4e-6 at d = 64 and 6e-6 at d = 128 (measured on the
     CPU: 0.30 and 0.22 exactly), far above the rounding of s itself (u·|s|, 1e-6 at the same scores: the exact
     scores rounded once need a tenth of the atol);
   - exp (ex2.approx: 2 ulp) and the exponent's rounding, u·|s - m|: relative errors of p of 1e-7 to 1e-6;
   - a score's error moves o_i by p_ij (v_j - o_i) delta_s_ij: where P is nearly one-hot (the sharp probe) two
     keys of close scores share the row, and o moves by up to |v_j - v_k| / 4 · (delta_s_j - delta_s_k), with
     |v_j - v_k| up to 7. Simulated (`forward`, 100 seeds of both probe shapes, causal and not), the atol needed:
     chunks of 32 (day 10's kernels, the ring) median 1e-5, worst 2.4e-5; one FMA chain per score (the plainest
     correct kernel, and a CPU's matmul: day 19's ring_dist on gloo) median 2e-5, worst 6.2e-5 (d = 128). So fp32
     o needs atol up to 7e-5 where the sharp probe runs, and 1e-6 without it. (The issue's ring failure: 2.55e-5
     at 1x2x300x64 sharp, ranks = 2, against atol 2e-5.) rtol cannot help: the error is absolute, and o's
     elements there are often small.
   - lse = m + log l is fp32 whatever the dtype: u·|lse| (|lse| ~ 150 in the sharp probe: 9e-6) plus the
     scores' error, against atol + rtol·|lse| (1e-4 · 150).
   - fp16/bf16 (days 10, 12, 18, 19): o's rounding (1) dominates on CUDA cores; on tensor cores P is rounded to
     the dtype before P·V, a relative error of up to u per term that rows with few keys do not average: day 12's
     atol 1e-3 (fp16), 8e-3 (bf16).
   `forward` below simulates these kernels (day 10's flash walk and naive kernels, day 19's ring of R shards,
   day 12's tensor-core P) on the course's shapes and probes and reports the ratio each would have.
6. Attention backward (dq, dk, dv, days 15-18 and 20): solutions/day15/tolerance_model.py (fp32 P and dS in two
   summation orders, and --tensor-cores for P and dS rounded to 16 bits): D = rowsum(dO ∘ O) with O rounded to
   the dtype, lse's fp32 rounding through P in the sharp probe, and the gradients' own rounding. `backward` below
   runs its simulation through the tasks' own check (atol in units of the reference's RMS) and reports ratios.
7. The ring (day 19) is the forward's arithmetic in another order: each rank walks its key shards from its own
   backwards, tile by tile as day 10 does, and merges shard partials with the same online-softmax rule; every
   extra merge is one more rounding of (m, l, O~), so its errors are the forward's (5), simulated per ring size.
   The ring across processes (ring_dist) makes each part with fp32 matmuls (fp32: the forward's errors again) or
   SDPA's flash kernel (fp16/bf16: the part's (lse, 1, o) with o already rounded to the dtype, so a row's output
   carries one rounding per part before the last: up to twice the forward's floor of 1 where two parts weigh alike).

    python3 scripts/tolerance_model.py floor                    # every exercise x dtype x output: ratio floor (1)
    python3 scripts/tolerance_model.py rounded                  # the same, measured on the smallest cases
    python3 scripts/tolerance_model.py forward [--seeds 2] [--dtypes fp32] [--orders flash,naive,ring2,tc]
    python3 scripts/tolerance_model.py matmul [--seeds 2]
    python3 scripts/tolerance_model.py backward [--seeds 2] [--dtypes fp32]
    python3 scripts/tolerance_model.py softmax [--seeds 2] [--dtypes fp16,bf16] [--orders two,kept]
"""
from __future__ import annotations

import argparse
import importlib.util
import math
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

U = {"fp32": 2.0 ** -24, "fp16": 2.0 ** -11, "bf16": 2.0 ** -8}
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
RMS_ROUNDING = 0.425  # rel_l2 of a correctly rounded output of normal values, in units of u (docstring, 1)
LOG2E = 1.4426950408889634
LN2 = 0.69314718055994531


# -- 1. the floor: an output's own rounding ---------------------------------------------------------------------------
def floor_ratio(dtype: str, atol: float, rtol: float, rel_l2: float, scale: float = 1.0) -> dict:
    """The ratio a correctly rounded output reaches by its rounding alone: elementwise u·|y| / (atol + rtol·|y|)
    at the largest |y| (about `scale`·5 for the course's O(scale) outputs), and 0.43·u / rel_l2. fp32 outputs
    round at 2^-24: their floor is the accumulation's, not this."""
    u = U[dtype]
    y = 5.0 * scale
    return {"elem": u * y / (atol + rtol * y), "l2": RMS_ROUNDING * u / rel_l2,
            "limit": u / rtol if rtol else math.inf}


def floors(course) -> list[dict]:
    """Every ready exercise x dtype x compared output: its rounding floor against its bound."""
    out = []
    for day in course.days:
        if day.status != "ready":
            continue
        for ex in day.exercises:
            names = [o.name for o in ex.outputs] or ["*"]
            for d in ex.dtypes:
                for name in names:
                    tol = ex.tolerance(name, d)
                    # lse is fp32 whatever the dtype; the gradients' atol is in units of their RMS (scale 1).
                    dt = "fp32" if name == "lse" else d
                    f = floor_ratio(dt, tol.atol, tol.rtol, tol.rel_l2)
                    out.append({"exercise": f"{day.id}.{ex.name}", "dtype": d, "output": name, **f})
    return out


def rounded_reference_ratios(course, seeds: int = 20, smallest: int = 3) -> list[dict]:
    """The ratio a correctly rounded output reaches, measured: every ready exercise x dtype, on its `smallest`
    correctness cases (fewest elements: where one element's rounding is the whole rel_l2, e.g. matmul's 1x1x1, whose
    rel_l2 is that element's relative error, up to u rather than 0.43·u), the fp64 reference rounded once to each
    output's dtype and judged by the task's own check. No kernel does better, so none of these may exceed 0.5."""
    import torch

    from grader.check.plan import plan
    from grader.protocol import Task

    out = []
    for day in course.days:
        if day.status != "ready":
            continue
        for ex in day.exercises:
            task = Task.load(ex.task)
            for d in ex.dtypes:
                cases = [c for c in plan(ex, [d], benchmark=False) if c.probe is None]
                shapes = sorted({c.case.shape for c in cases}, key=math.prod)[:smallest]
                cases = [c for c in cases if c.case.shape in shapes]
                worst: dict[str, tuple[float, str]] = {}
                for pc in cases:
                    for seed in range(seeds):
                        case = task.materialize(torch, shape=pc.case.shape, dtype=d, params=dict(pc.case.params),
                                                seed=seed, device="cpu")
                        got = {k: case.reference[k].to(v.dtype) for k, v in case.outputs.items()}
                        for r in task.check(got, case, ex):
                            ratio = r.stats.get("tol_ratio")
                            if ratio is not None and ratio > worst.get(r.name, (-1.0, ""))[0]:
                                worst[r.name] = (ratio, f"{pc.named} seed {seed}")
                for name, (ratio, where) in worst.items():
                    out.append({"exercise": f"{day.id}.{ex.name}", "dtype": d, "output": name, "ratio": ratio,
                                "where": where})
    return out


# -- fp32 arithmetic, emulated: fp64 then one rounding ----------------------------------------------------------------
def fma(acc, a, b):
    """fp32 fmaf(a, b, acc): the product is exact in fp64, then one rounding (a double rounding now and then,
    which the model can afford)."""
    return (acc.double() + a.double() * b.double()).float()


def add(a, b):
    return (a.double() + b.double()).float()


def mul(a, b):
    return (a.double() * b.double()).float()


def exp2f(x, gen):
    """ex2.approx.f32: exp2 with up to 2 ulp of error, modelled as the exact value times (1 + e), e uniform in
    +-2^-23, rounded."""
    y = torch.exp2(x.double())
    e = (torch.rand(y.shape, generator=gen, dtype=torch.float64) * 2 - 1) * 2.0 ** -23
    return (y * (1 + e)).float()


def expf(x, gen):
    y = torch.exp(x.double())
    e = (torch.rand(y.shape, generator=gen, dtype=torch.float64) * 2 - 1) * 2.0 ** -23
    return (y * (1 + e)).float()


def dot_chunked(a, b, chunk=32):
    """[.., N, d] x [.., M, d] -> [.., N, M] in fp32: each chunk of `chunk` terms an FMA chain, the chunks added
    (day 10's kernels and the ring)."""
    d = a.shape[-1]
    s = torch.zeros(*a.shape[:-1], b.shape[-2], dtype=torch.float32)
    for c0 in range(0, d, chunk):
        part = torch.zeros_like(s)
        for c in range(c0, min(c0 + chunk, d)):
            part = fma(part, a[..., :, c, None], b[..., None, :, c])
        s = add(s, part)
    return s


def dot_tc(a, b, k=16):
    """Tensor cores: 16-bit products exact, each k-step's sum rounded once to fp32, the steps added in fp32."""
    d = a.shape[-1]
    s = torch.zeros(*a.shape[:-1], b.shape[-2], dtype=torch.float32)
    for c0 in range(0, d, k):
        step = (a[..., c0:c0 + k].double() @ b[..., c0:c0 + k].double().transpose(-1, -2)).float()
        s = add(s, step)
    return s


# -- 5. attention forward ---------------------------------------------------------------------------------------------
def _walk(s2, v, keys: range, causal_rows, gen, tc_dtype=None, bc=64):
    """Day 10's flash walk over `keys` in tiles of bc, from scratch: per row the running max m (log2 units), the
    sum l kept per lane (16 lanes, column j in lane j % 16, the lane's 4 columns added in order) and the
    unnormalized O~ (an FMA per key). tc_dtype: P rounded to it before P·V (tensor cores), P·V per tile in fp32.
    Returns (m, l summed over the lanes by a butterfly, O~)."""
    lead = s2.shape[:-1]
    m = torch.full(lead, -math.inf, dtype=torch.float32)
    lanes = torch.zeros(*lead, 16, dtype=torch.float32)
    acc = torch.zeros(*lead, v.shape[-1], dtype=torch.float32)
    for t0 in range(keys.start, keys.stop, bc):
        t1 = min(t0 + bc, keys.stop)
        st = s2[..., t0:t1]
        m_new = torch.maximum(m, st.max(-1).values)
        ref = torch.where(m_new == -math.inf, torch.zeros_like(m_new), m_new)
        alpha = exp2f((m.double() - ref.double()).float(), gen)
        p = exp2f((st.double() - ref[..., None].double()).float(), gen)
        padded = torch.zeros(*lead, bc, dtype=torch.float32)
        padded[..., :t1 - t0] = p
        part = torch.zeros_like(lanes)
        for b in range(bc // 16):
            part = add(part, padded[..., 16 * b:16 * b + 16])
        lanes = fma(part, lanes, alpha[..., None])
        acc = mul(acc, alpha[..., None])
        if tc_dtype is not None:
            pr = p.to(tc_dtype).double()
            acc = add(acc, (pr @ v[..., t0:t1, :].double()).float())
        else:
            for j in range(t0, t1):
                acc = fma(acc, p[..., j - t0, None], v[..., None, j, :])
        m = m_new
    width = 16
    while width > 1:
        width //= 2
        lanes = add(lanes[..., :width], lanes[..., width:2 * width])
    return m, lanes[..., 0], acc


def _scores2(q, k, causal, tc):
    """Scores in log2 units, fp32, masked: q·(log2(e)/sqrt(d)) rounded first, then the chunked dot product (CUDA
    cores); on tensor cores the exact-product dot, then times the constant."""
    n, d = q.shape[-2], q.shape[-1]
    c = torch.tensor(LOG2E / math.sqrt(d), dtype=torch.float32)
    if tc:
        s2 = mul(dot_tc(q, k), c)
    else:
        s2 = dot_chunked(mul(q.float(), c), k.float())
    if causal:
        s2 = s2.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), -math.inf)
    return s2


def flash(q, k, v, causal, gen, tc=False):
    """Day 10's flash_attention (tc: day 12's tensor-core kernel): o in the dtype, lse in fp32."""
    s2 = _scores2(q, k, causal, tc)
    m, lsum, acc = _walk(s2, v.float(), range(q.shape[-2]), causal, gen, q.dtype if tc else None)
    return _finish(m, lsum, acc, q.dtype)


def _finish(m, lsum, acc, dtype):
    inv = (1.0 / lsum.double()).float()
    o = mul(acc, inv[..., None]).to(dtype)
    lse = fma(torch.log(lsum.double()).float(), m, torch.tensor(LN2, dtype=torch.float32))
    return o, lse


def naive(q, k, v, causal, gen, chunk=32):
    """Day 10's attention_naive: S = scale·(q·k) in memory, a block's online (m, l) over the row (256 threads,
    strided, then a tree), p = exp(s - m) / l, O = P V by one FMA chain over the keys. chunk: the dot product's
    partial sums (32: the solution's; d: one FMA chain per score, the plainest correct kernel, and what a CPU's
    matmul does)."""
    n, d = q.shape[-2], q.shape[-1]
    s = mul(dot_chunked(q.float(), k.float(), chunk), torch.tensor(1.0 / math.sqrt(d), dtype=torch.float32))
    if causal:
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), -math.inf)
    m = s.max(-1).values
    e = expf((s.double() - m[..., None].double()).float(), gen)
    threads = 256
    steps = -(-n // threads)
    padded = torch.zeros(*e.shape[:-1], steps * threads, dtype=torch.float32)
    padded[..., :n] = e
    lanes = torch.zeros(*e.shape[:-1], threads, dtype=torch.float32)
    for t in range(steps):
        lanes = add(lanes, padded[..., t * threads:(t + 1) * threads])
    while lanes.shape[-1] > 1:
        h = lanes.shape[-1] // 2
        lanes = add(lanes[..., :h], lanes[..., h:])
    lsum = lanes[..., 0]
    p = (e.double() / lsum[..., None].double()).float()
    acc = torch.zeros(*q.shape, dtype=torch.float32)
    vf = v.float()
    for j in range(n):
        acc = fma(acc, p[..., j, None], vf[..., None, j, :])
    lse = add(m, torch.log(lsum.double()).float())
    return acc.to(q.dtype), lse


def ring(q, k, v, causal, gen, ranks):
    """Day 19: shards of ceil(ceil(N / R) / 64)·64 rows; rank r's queries walk shard j = r, r - 1, ... (mod R),
    skipping j > r when causal, each shard by day 10's walk from scratch, merged into the running (m, l, O~) by
    the online-softmax rule: m = max, factors exp2(m_a - m) and exp2(m_b - m), l = fma(l_a, f_a, l_b·f_b)."""
    n = q.shape[-2]
    shard = math.ceil(math.ceil(n / ranks) / 64) * 64
    s2 = _scores2(q, k, causal, False)
    vf = v.float()
    o = torch.empty(q.shape, dtype=q.dtype)
    lse = torch.empty(q.shape[:-1], dtype=torch.float32)
    for r in range(ranks):
        rows = range(r * shard, min((r + 1) * shard, n))
        if not len(rows):
            continue
        sr = s2[..., rows.start:rows.stop, :]
        m_a = l_a = acc_a = None
        for step in range(ranks):
            j = (r - step) % ranks
            if causal and j > r:
                continue
            keys = range(j * shard, min((j + 1) * shard, n))
            if not len(keys):
                continue
            m_b, l_b, acc_b = _walk(sr, vf, keys, causal, gen)
            if m_a is None:
                m_a, l_a, acc_a = m_b, l_b, acc_b
                continue
            m_new = torch.maximum(m_a, m_b)
            ref = torch.where(m_new == -math.inf, torch.zeros_like(m_new), m_new)
            fa = exp2f((m_a.double() - ref.double()).float(), gen)
            fb = exp2f((m_b.double() - ref.double()).float(), gen)
            l_a = fma(mul(l_b, fb), l_a, fa)
            acc_a = fma(mul(acc_b, fb[..., None]), fa[..., None], acc_a)
            m_a = m_new
        o[..., rows.start:rows.stop, :], lse[..., rows.start:rows.stop] = _finish(m_a, l_a, acc_a, q.dtype)
    return o, lse


FORWARD_ORDERS = {"flash": lambda q, k, v, c, g: flash(q, k, v, c, g),
                  "naive": naive,
                  "chain": lambda q, k, v, c, g: naive(q, k, v, c, g, chunk=q.shape[-1]),
                  "tc": lambda q, k, v, c, g: flash(q, k, v, c, g, tc=True),
                  **{f"ring{r}": (lambda r: lambda q, k, v, c, g: ring(q, k, v, c, g, r))(r) for r in (2, 3, 4, 8)}}


def forward_case(order: str, dtype: str, shape, probe, causal: bool, seed: int) -> tuple[dict, dict]:
    """One seeded case of the attention task (its inputs and probe): the fp64 reference and the simulated order's
    result, each {"o": ..., "lse": ...}."""
    from tasks import attention as task

    gen = torch.Generator().manual_seed(1000 * seed + 17)
    inputs = task.make_inputs(tuple(shape), DTYPES[dtype], gen, "cpu", causal=causal)
    if probe:
        inputs = task.probes[probe](inputs, gen)
    ref = dict(zip(("o", "lse"), task.reference(**inputs, causal=causal)))
    got = dict(zip(("o", "lse"), FORWARD_ORDERS[order](inputs["q"], inputs["k"], inputs["v"], causal, gen)))
    return ref, got


def forward_ratios(order: str, dtype: str, shapes, probes, seeds, tolerances: dict, causal=(False, True)):
    """The worst ratio of a simulated forward per output over the cases, with the task's inputs and probes and
    the tolerances given ({output: Tolerance}); also where it came from."""
    from grader.check.compare import compare

    worst: dict[str, tuple[float, str]] = {}
    for shape in shapes:
        for probe in probes:
            for c in causal:
                for seed in range(seeds):
                    ref, got = forward_case(order, dtype, shape, probe, c, seed)
                    for name in ("o", "lse"):
                        t = tolerances[name]
                        r = compare(got[name], ref[name], atol=t.atol, rtol=t.rtol, rel_l2=t.rel_l2,
                                    l2_floor=t.l2_floor).tol_ratio
                        label = f"{'x'.join(map(str, shape))}{' causal' if c else ''}{' ' + probe if probe else ''}" \
                                f" seed {seed}"
                        if r > worst.get(name, (-1.0, ""))[0]:
                            worst[name] = (r, label)
    return worst


def needed_atol(order: str, dtype: str, shape, probe, seeds, rtol: float, causal=(False, True)) -> float:
    """The smallest atol that covers every element of o given rtol, over the seeds: what a correct kernel of
    this order needs."""
    need = 0.0
    for c in causal:
        for seed in range(seeds):
            ref, got = forward_case(order, dtype, shape, probe, c, seed)
            o = got["o"].double()
            need = max(need, float(((o - ref["o"]).abs() - rtol * ref["o"].abs()).max()))
    return need


# -- 3. matmul ------------------------------------------------------------------------------------------------------
def matmul_sim(a, b, order: str):
    """c = a @ b as a kernel of `order` computes it: "fma" one FMA chain over K per output (days 6-9), "splitk4"
    four K-segments each a chain, added in order (day 9's stream-K), "tc" exact products, 16-term steps rounded
    to fp32 (day 11); the result rounded to the inputs' dtype."""
    af, bf = a.float(), b.float()
    kk = a.shape[1]
    if order == "tc":
        c = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float32)
        for k0 in range(0, kk, 16):
            c = add(c, (af[:, k0:k0 + 16].double() @ bf[k0:k0 + 16].double()).float())
        return c.to(a.dtype)
    segs = 4 if order == "splitk4" else 1
    bounds = [kk * i // segs for i in range(segs + 1)]
    c = None
    for lo, hi in zip(bounds, bounds[1:]):
        part = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float32)
        for k in range(lo, hi):
            part = fma(part, af[:, k, None], bf[None, k, :])
        c = part if c is None else add(c, part)
    return c.to(a.dtype)


def matmul_ratios(order, dtype, shapes, seeds, tol):
    from grader.check.compare import compare
    from tasks import matmul as task

    worst = (0.0, "")
    for shape in shapes:
        for seed in range(seeds):
            gen = torch.Generator().manual_seed(1000 * seed + 5)
            inputs = task.make_inputs(tuple(shape), DTYPES[dtype], gen, "cpu")
            ref = task.reference(**inputs)[0]
            r = compare(matmul_sim(inputs["a"], inputs["b"], order), ref, atol=tol.atol, rtol=tol.rtol,
                        rel_l2=tol.rel_l2).tol_ratio
            if r > worst[0]:
                worst = (r, f"{'x'.join(map(str, shape))} seed {seed}")
    return worst


# -- 6. attention backward: day 15's simulation through the task's check ---------------------------------------------
def _day15_model():
    spec = importlib.util.spec_from_file_location("day15_tolerance_model", ROOT / "solutions/day15/tolerance_model.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def backward_ratios(ex, dtype, shapes, probes, seeds, sequential=False, tensor_cores=False):
    from grader.protocol import CaseData
    from tasks import attention_bwd as task

    model = _day15_model()
    worst: dict[str, tuple[float, str]] = {}
    for shape in shapes:
        for probe in probes:
            for c in (False, True):
                for seed in range(seeds):
                    gen = torch.Generator().manual_seed(1000 * seed + 7)
                    inputs = task.make_inputs(tuple(shape), DTYPES[dtype], gen, "cpu", causal=c)
                    if probe:
                        inputs = task.probes[probe](inputs, gen)
                    ref = dict(zip(("dq", "dk", "dv"), task.reference(**inputs, causal=c)))
                    got = model.simulate(inputs, c, sequential, tensor_cores)
                    case = CaseData(dtype, {"causal": c}, inputs, {k: v.clone() for k, v in got.items()}, ref,
                                    tuple(shape))
                    for r in task.check(got, case, ex):
                        ratio = r.stats.get("tol_ratio", math.inf)
                        if ratio > worst.get(r.name, (-1.0, ""))[0]:
                            worst[r.name] = (ratio, f"{'x'.join(map(str, shape))}{' causal' if c else ''}"
                                                    f"{' ' + probe if probe else ''} seed {seed}")
    return worst


# -- 4. day 05's packed 16-bit softmax ------------------------------------------------------------------------------
def packed_softmax(x, dtype: str, order: str, values: int = 64):
    """Day 05's 16-bit phases (solutions/day05/softmax.cu, packed_max_sum and packed_store) on x (a 16-bit tensor,
    rows x cols), in fp64 with fp32 roundings where the kernel rounds: each thread's max m over its values (here
    runs of `values` columns: which columns a thread holds does not change the bound), e = 2^(v log2e - m log2e),
    the row's (M, S); `two`: y = 2^(v log2e - (M log2e + log2 S)); `kept`: e·2^15 rounded to fp16, then
    y = e · 2^((m - M) log2e - log2 S - 15). ex2.approx's own 2 ulp (2^-22) are left out: under fp16's u/1000.
    Returns y rounded to the dtype, as fp64."""
    f32 = lambda t: t.to(torch.float32).to(torch.float64)  # noqa: E731 -- one rounding to fp32
    v = x.to(torch.float64)
    rows, cols = v.shape
    pad = (-cols) % values
    g = torch.nn.functional.pad(v, (0, pad), value=-math.inf).reshape(rows, -1, values)
    m = g.amax(-1, keepdim=True)
    m_ref = torch.where(m == -math.inf, torch.zeros_like(m), m)  # a thread of only -inf: reference 0
    big_m = v.amax(-1, keepdim=True).unsqueeze(-1)
    shift = 15.0 if order == "kept" else 0.0
    m2 = f32(m_ref * LOG2E - shift)
    e = f32(torch.exp2(f32(g * LOG2E - m2)))
    s = e.sum(-1, keepdim=True) * 2.0 ** -shift
    row_s = (s * torch.exp(m_ref - big_m)).sum(-2, keepdim=True)  # fp64: the merge's own rounding is under u
    if order == "kept":
        factor = f32(torch.exp2(f32((m_ref - big_m) * LOG2E - (torch.log2(row_s) + shift))))
        y = f32(e.to(torch.float16).to(torch.float64) * factor)
    else:
        y = f32(torch.exp2(f32(g * LOG2E - f32(big_m * LOG2E + torch.log2(row_s)))))
    y = torch.where(big_m == -math.inf, torch.zeros_like(y), y)
    return y.reshape(rows, -1)[:, :cols].to(DTYPES[dtype]).to(torch.float64)


def softmax_ratios(order: str, dtype: str, shapes, probes, seeds: int, tol) -> tuple[float, str]:
    """The worst tolerance ratio of packed_softmax over the shapes x probes x seeds, through the task's own inputs
    and probes (tasks/softmax.py), and where it was."""
    from tasks import softmax as task

    worst = (0.0, "")
    for shape in shapes:
        for probe in probes:
            for seed in range(seeds):
                gen = torch.Generator().manual_seed(seed)
                inputs = task.make_inputs(shape, DTYPES[dtype], gen, "cpu")
                if probe:
                    inputs = task.probes[probe](inputs, gen)
                x = inputs["x"].reshape(-1, shape[-1])
                y, ref = packed_softmax(x, dtype, order), torch.softmax(x.double(), dim=-1)
                elem = ((y - ref).abs() / (tol.atol + tol.rtol * ref.abs())).max().item()
                l2 = ((y - ref).norm() / ref.norm()).item() / tol.rel_l2  # every row has a finite element
                r = max(elem, l2)
                if r > worst[0]:
                    worst = (r, f"{'x'.join(map(str, shape))} {probe or 'plain'} seed {seed}")
    return worst


# -- the command line -----------------------------------------------------------------------------------------------
def _course():
    from grader.course import load_course

    return load_course(ROOT / "course.yaml")


def _exercise(course, key):
    day, name = key.split(".")
    return next(e for e in course.day(day).exercises if e.name == name)


# Which exercise each simulated order stands for, and whose tolerances judge it.
FORWARD_EXERCISES = {"flash": "day10.flash_attention", "naive": "day10.attention_naive", "chain": "day10.attention_naive",
                     "tc": "day12.flash_attention_mma", "ring2": "day19.ring_attention",
                     "ring3": "day19.ring_attention", "ring4": "day19.ring_attention",
                     "ring8": "day19.ring_attention"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["floor", "rounded", "forward", "matmul", "backward", "softmax"])
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--dtypes", default="fp32,fp16,bf16")
    ap.add_argument("--orders", default="flash,naive,ring2,ring8,tc")
    ap.add_argument("--shapes", help="B,H,N,d (or M,N,K) ;-separated: instead of the course's")
    a = ap.parse_args(argv)
    course = _course()
    dtypes = a.dtypes.split(",")
    given = [tuple(map(int, s.split(","))) for s in a.shapes.split(";")] if a.shapes else None
    if a.what == "floor":
        rows = floors(course)
        print(f"{'exercise':42s} {'dtype':5s} {'output':6s} {'elem':>6s} {'limit':>6s} {'l2':>6s}")
        for r in rows:
            flag = "  <-- over 0.5" if max(r["elem"], r["l2"]) > 0.5 else ""
            print(f"{r['exercise']:42s} {r['dtype']:5s} {r['output']:6s} {r['elem']:6.3f} {r['limit']:6.3f} "
                  f"{r['l2']:6.3f}{flag}")
        return 0
    if a.what == "rounded":
        for r in rounded_reference_ratios(course, max(a.seeds, 20)):
            flag = "  <-- over 0.5" if r["ratio"] > 0.5 else ""
            print(f"{r['exercise']:42s} {r['dtype']:5s} {r['output']:6s} {r['ratio']:6.3f}  {r['where']}{flag}")
        return 0
    if a.what == "forward":
        for order in a.orders.split(","):
            ex = _exercise(course, FORWARD_EXERCISES[order])
            for d in dtypes:
                if d not in ex.dtypes:
                    continue
                tol = {n: ex.tolerance(n, d) for n in ("o", "lse")}
                shapes = given or [c.shape for c in ex.correctness]
                probe_shapes = given or [c.shape for c in ex.probe_shapes]
                w = forward_ratios(order, d, shapes, [None], a.seeds, tol)
                wp = forward_ratios(order, d, probe_shapes, ex.probes, a.seeds, tol)
                for name in ("o", "lse"):
                    for kind, got in (("plain", w), ("probes", wp)):
                        r, where = got[name]
                        print(f"{order:6s} {d:5s} {name:4s} {kind:6s} ratio {r:6.3f} ({where})", flush=True)
        return 0
    if a.what == "softmax":
        ex = _exercise(course, "day05.softmax")
        orders = [o for o in a.orders.split(",") if o in ("two", "kept")] or ["two", "kept"]
        for d in dtypes:
            if d == "fp32":
                continue  # fp32 rows take the fp32 tiles, not the packed phases
            for order in orders:
                for kind, shapes, probes in (("plain", given or [c.shape for c in ex.correctness], [None]),
                                             ("probes", given or [c.shape for c in ex.probe_shapes], ex.probes)):
                    r, where = softmax_ratios(order, d, shapes, probes, a.seeds, ex.tolerance("out", d))
                    print(f"{order:5s} {d:5s} {kind:6s} ratio {r:6.3f} ({where})", flush=True)
        return 0
    if a.what == "matmul":
        ex_cc, ex_tc = _exercise(course, "day09.matmul_pipelined"), _exercise(course, "day11.matmul_mma")
        shapes = given or [c.shape for c in ex_cc.correctness]
        for d in dtypes:
            for order, ex in (("fma", ex_cc), ("splitk4", ex_cc), ("tc", ex_tc)):
                if d not in ex.dtypes:
                    continue
                r, where = matmul_ratios(order, d, shapes, a.seeds, ex.tolerance("c", d))
                print(f"{order:8s} {d:5s} ratio {r:6.3f} ({where})", flush=True)
        return 0
    ex = _exercise(course, "day15.attention_bwd_naive")
    ex_tc = _exercise(course, "day20.attention_bwd_tc")
    for d in dtypes:
        for label, e, seq, tc in (("sequential", ex, True, False), ("torch", ex, False, False),
                                  ("tc", ex_tc, False, True)):
            if d not in e.dtypes:
                continue
            shapes = given or [c.shape for c in e.correctness]
            probe_shapes = given or [c.shape for c in e.probe_shapes]
            for kind, got in (("plain", backward_ratios(e, d, shapes, [None], a.seeds, seq, tc)),
                              ("probes", backward_ratios(e, d, probe_shapes, e.probes, a.seeds, seq, tc))):
                for name, (r, where) in got.items():
                    print(f"{label:10s} {d:5s} {name:3s} {kind:6s} ratio {r:6.3f} ({where})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
