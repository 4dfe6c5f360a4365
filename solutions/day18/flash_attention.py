"""Day 18: what PyTorch needs besides the CUDA code of course::flash_attention and its backward.

flash_attention_op.cpp defined the two ops (schemas) and their CUDA implementations. The grader loads that library,
then imports this file, which registers:
  - fake implementations: the outputs' shapes, dtypes and devices computed without touching data. torch.compile
    traces the program with fake tensors and asks each op for these; an op without one breaks the trace.
  - the autograd formula: which tensors the backward needs (saved in setup_context) and how the gradients of q, k,
    v follow from dout (backward, which calls the backward op, so that it is itself traceable).
"""
import torch

# BEGIN SOLUTION: fake implementations of both ops (register_fake): new tensors of the real outputs' shapes and dtypes


@torch.library.register_fake("course::flash_attention")
def _flash_attention_fake(q, k, v, causal):
    torch._check(q.dim() == 4, lambda: f"q must be [B, H, N, d], got {tuple(q.shape)}")
    torch._check(k.shape == q.shape and v.shape == q.shape, lambda: "k and v must have q's shape")
    b, h, n, d = q.shape
    return q.new_empty((b, h, n, d)), q.new_empty((b, h, n), dtype=torch.float32)


@torch.library.register_fake("course::flash_attention_backward")
def _flash_attention_backward_fake(dout, q, k, v, o, lse, causal):
    return q.new_empty(q.shape), q.new_empty(k.shape), q.new_empty(v.shape)
# END SOLUTION


# BEGIN SOLUTION: setup_context (save what the backward needs; lse is not differentiable), backward, register_autograd
def _setup_context(ctx, inputs, output):
    q, k, v, causal = inputs
    o, lse = output
    ctx.save_for_backward(q, k, v, o, lse)
    ctx.causal = causal
    # lse is an output for the backward's sake; gradients do not flow through it. Without the second line autograd
    # would hand the backward a gradient for lse anyway, a tensor of zeros it fills on the GPU for nothing.
    ctx.mark_non_differentiable(lse)
    ctx.set_materialize_grads(False)


def _backward(ctx, dout, _dlse):  # _dlse: None (lse is not differentiable)
    q, k, v, o, lse = ctx.saved_tensors
    dq, dk, dv = torch.ops.course.flash_attention_backward(dout, q, k, v, o, lse, ctx.causal)
    return dq, dk, dv, None  # no gradient for `causal`


torch.library.register_autograd("course::flash_attention", _backward, setup_context=_setup_context)
# END SOLUTION
