"""The attention backward's dK and dV alone (day 16): the inputs, outputs, reference, tolerances, probes and
refill are attention_bwd's; the exercise compares dk and dv only, and the FLOPs are the four N²·d products a dK/dV
kernel does (S again, dP, dV, dK: dQ's fifth is day 17's). dq stays among the outputs so that day 15's full
backward, the baseline, can run on the same cases; the day-16 op is not given it."""
from __future__ import annotations

from tasks import attention_bwd as _full
from tasks.attention_bwd import (check, error_blocks, library, make_inputs, make_outputs, probes,  # noqa: F401 (the protocol
                                 reference, refill)                                  # reads them here)

LIBRARY = _full.LIBRARY


def flops(q, k, v, o, lse, dout, causal=False):
    b, h, n, d = q.shape
    return 8 * b * h * n * n * d // (2 if causal else 1)
