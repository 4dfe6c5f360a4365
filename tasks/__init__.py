"""Task definitions: what an exercise computes, independent of who implements it.

A task module provides (see tasks/softmax.py):
  make_inputs(shape, dtype, generator, device) -> dict of input tensors (fresh random data)
  make_outputs(inputs) -> dict of output tensors (uninitialised; the grader poisons them)
  reference(**inputs) -> tuple of fp64 tensors, one per output
  library(**inputs, **outputs) -> None: the vendor implementation the report compares against
  probes: dict name -> function(inputs, generator) -> inputs, adversarial variants of the random inputs
  bytes_moved(**inputs) -> int, and/or flops(**inputs) -> int: what one call must move or compute
"""
