"""The worker's scratch measure (grader/check/worker.py Device.peak_scratch): a peak taken from `base`, so nothing
may be freed behind the op's back while it runs. Python's cyclic collector is the one thing that can: it is paused
for the call and restored after, also when the op raises."""
import gc
import types

import pytest

from grader.check.worker import Device


class _FakeCuda:
    """Counts bytes as the caching allocator's statistics would; `free_garbage` is what a collection would free."""

    def __init__(self):
        self.allocated, self.peak, self.garbage = 0, 0, 0

    def Stream(self):
        return None

    def reset_peak_memory_stats(self):
        self.peak = self.allocated

    def memory_allocated(self):
        return self.allocated

    def max_memory_allocated(self):
        return self.peak

    def alloc(self, n):
        self.allocated += n
        self.peak = max(self.peak, self.allocated)

    def free(self, n):
        self.allocated -= n


def _device():
    cuda = _FakeCuda()
    return Device(types.SimpleNamespace(cuda=cuda), "cuda"), cuda


def test_a_collection_due_during_the_op_does_not_shrink_its_scratch():
    dev, cuda = _device()
    cuda.alloc(100)  # an earlier case's tensors, held only by a reference cycle

    def op():
        if gc.isenabled():  # what the collector would do at this allocation: free the earlier case's 100
            cuda.free(100)
        cuda.alloc(256)
        cuda.free(256)
        return "out"

    got, scratch = dev.peak_scratch(op)
    assert (got, scratch) == ("out", 256)
    assert gc.isenabled()


def test_the_collector_is_restored_as_it_was_even_when_the_op_raises():
    dev, _ = _device()

    def boom():
        raise RuntimeError("kernel failed")

    with pytest.raises(RuntimeError):
        dev.peak_scratch(boom)
    assert gc.isenabled()
    gc.disable()
    try:
        dev.peak_scratch(lambda: None)
        assert not gc.isenabled()  # a caller that had paused it keeps it paused
    finally:
        gc.enable()
