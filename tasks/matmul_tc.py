"""Matrix multiply on tensor cores (day 11): c[M, N] = a[M, K] @ b[K, N], row-major, fp16 or bf16 storage, fp32
accumulation, c rounded once to the inputs' dtype.

The inputs, the fp64 reference and the FLOP count are tasks.matmul's. What changes is the yardstick: in fp16/bf16
torch.matmul is cuBLAS on the tensor cores, the fastest GEMM there is for these inputs, so the library op is the
ceiling and there is no separate `ceiling` (cuBLAS's fp32 GEMM, the CUDA-core days' yardstick, is some 15x
slower than either). The report's "vs cuBLAS" column is the ratio to cuBLAS in the same dtype.
A case's shape is [M, N, K].
"""
from __future__ import annotations

from tasks.matmul import error_blocks, flops, library, make_inputs, make_outputs, reference  # noqa: F401  (the task interface)

LIBRARY = "cuBLAS (torch.matmul)"
