"""Day 18: what PyTorch needs besides the CUDA code of course::flash_attention and its backward.

flash_attention_op.cpp defined the two ops (schemas) and their CUDA implementations. The grader loads that library,
then imports this file, which registers:
  - fake implementations: the outputs' shapes, dtypes and devices computed without touching data. torch.compile
    traces the program with fake tensors and asks each op for these; an op without one breaks the trace.
  - the autograd formula: which tensors the backward needs (saved in setup_context) and how the gradients of q, k,
    v follow from dout (backward, which calls the backward op, so that it is itself traceable).
"""
import torch

# YOUR CODE HERE: fake implementations of both ops (register_fake): new tensors of the real outputs' shapes and dtypes


# YOUR CODE HERE: setup_context (save what the backward needs; lse is not differentiable), backward, register_autograd
