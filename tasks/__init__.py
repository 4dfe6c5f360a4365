"""Task definitions: what an exercise computes, independent of who implements it.

Each module here is a task in the sense of grader/protocol.py, which lists the hooks a task defines (inputs,
outputs, fp64 reference, library op, ceiling, FLOPs or bytes, probes) and the protocol hooks it may replace
(resolve, call, check). See tasks/softmax.py for the smallest one.
"""
