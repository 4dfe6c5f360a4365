"""The attention backward on tensor cores (day 20): attention_bwd's problem (inputs, outputs, fp64 reference,
gradient-scaled check, probes, refill, FLOPs) with the libraries a tensor-core kernel is measured against.

The library is SDPA's FlashAttention-2 backend, its backward alone: aten's flash backward op called with the
case's own o and lse (the forward's saved outputs, the same inputs the student's kernel gets), so nothing but the
backward is timed. The ceiling is SDPA's cuDNN backend's backward, timed the same way on the o and lse that its own
forward produced (cuDNN keeps its statistics in its own layout). Both take fp16 and bf16 only; where either cannot
run (another dtype, a GPU or build without the backend), the report leaves it out rather than time something else.
"""
from __future__ import annotations

import torch

from tasks.attention_bwd import (LAYOUTS, check, error_blocks, flops, make_inputs, make_outputs,  # noqa: F401 (the protocol
                                 probes, reference, refill)                           # reads them here)

LIBRARY = "SDPA flash bwd"


def _flash_forward(q, k, v, causal):
    return torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, causal, False)


_flash_state: dict = {}  # per (device, causal): the forward's RNG state tensors, which the backward op requires


def _flash_backward_call(q, k, v, o, lse, dout, causal):
    key = (q.device, causal)
    if key not in _flash_state:
        got = _flash_forward(q[:1, :1, :1], k[:1, :1, :1], v[:1, :1, :1], causal)
        _flash_state[key] = (got[6], got[7])  # philox seed and offset (unused without dropout)
    seed, offset = _flash_state[key]
    n = q.shape[2]
    return torch.ops.aten._scaled_dot_product_flash_attention_backward(
        dout, q, k, v, o, lse, None, None, n, n, 0.0, causal, seed, offset)


def library(q, k, v, o, lse, dout, dq, dk, dv, causal=False):
    # The gradients stay in the op's own tensors (it has no out=): a copy into dq, dk, dv would time work the
    # kernels do not do. The grader discards the library's outputs.
    _flash_backward_call(q, k, v, o, lse, dout, causal)


def ceiling(q, k, v, o, lse, dout, causal=False):
    """SDPA's cuDNN backend's backward; None where it cannot run these inputs."""
    if q.dtype not in (torch.float16, torch.bfloat16):
        return None
    try:
        fwd = torch.ops.aten._scaled_dot_product_cudnn_attention(q, k, v, None, True, 0.0, causal, False)
        out, stats, seed, offset = fwd[0], fwd[1], fwd[6], fwd[7]
        n = q.shape[2]

        def call():
            return torch.ops.aten._scaled_dot_product_cudnn_attention_backward(
                dout, q, k, v, out, stats, seed, offset, None, None, None, n, n, 0.0, causal)
        call()
        return "SDPA cuDNN bwd", call
    except (RuntimeError, AttributeError, TypeError):
        return None
