"""Task definitions: what an exercise computes, independent of who implements it.

A task module provides (see tasks/softmax.py, tasks/matmul.py, tasks/attention.py):
  make_inputs(shape, dtype, generator, device, **params) -> dict of input tensors (fresh random data)
  make_outputs(inputs, **params) -> dict of output tensors (uninitialised; the grader poisons them)
  reference(**inputs, **params) -> tuple of fp64 tensors, one per output
  library(*inputs, *outputs, **params) -> None: the vendor implementation the report compares against;
      LIBRARY names it in reports ("torch.softmax")
  probes: dict name -> function(inputs, generator) -> inputs, adversarial variants of the random inputs
  bytes_moved(**inputs, **params) -> int: memory-bound tasks, reported as GB/s and % of a copy of those bytes
  flops(**inputs, **params) -> int: reported as TFLOP/s
  ceiling(**inputs, **params) -> (label, zero-argument callable), optional: the practical peak for this shape
      (e.g. cuBLAS fp32 GEMM), timed in the same run; reported as "% of <label>", usable as a baseline;
      None where it cannot run these inputs (e.g. SDPA's cuDNN backend on fp32)
**params are a case's params from course.yaml (e.g. causal); the op receives their values after its outputs.
"""
