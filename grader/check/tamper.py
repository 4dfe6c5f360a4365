"""A tripwire for an op that rewrites its judge. The student's op runs in the worker's own process (its module is
imported there, a torch extension's pybind11 code can call into Python), so one line of it can replace the worker's
`summarize`, a task's comparison or torch's event timer and turn a wrong output into a pass. Before the first
student module is loaded, `Tripwire(torch)` records the identity of every function, class and method of the
grader's loaded modules (the worker's `__main__` included) and of torch's timing and comparison entry points; its
`changed()` names what differs since. The worker asks after the op's calls, before their results are judged and
again before a case's verdict is sent.

A tripwire, not a wall: code in the same process can also find and disarm it, or write to the event pipe itself.
What it stops is the simple rewrite, which a student can write by accident of curiosity; the judge in a process of
its own is the real fix (measured/NOTES.md)."""
from __future__ import annotations

import sys
import types


# torch's top level holds thousands of names: only those the judging and the timing call are watched there (its
# cuda and linalg modules, and the Tensor, Event and Stream classes, are watched whole)
TORCH_FUNCTIONS = ("where", "isnan", "isfinite", "isinf", "equal", "empty", "empty_like", "zeros_like", "ones",
                   "randint", "Generator", "compile")


def _watched_modules(torch) -> dict[str, object]:
    mods = {name: m for name, m in list(sys.modules.items())
            if m is not None and (name == "__main__" or name == "grader" or name.startswith("grader."))}
    if torch is not None:
        mods.update({"torch.cuda": torch.cuda, "torch.linalg": torch.linalg})
    return mods


def _callables(namespace: dict) -> dict[str, int]:
    return {k: id(v) for k, v in list(namespace.items())
            if isinstance(v, (types.FunctionType, types.BuiltinFunctionType, type, staticmethod, classmethod,
                              property, types.MethodType))}


def _classes(torch) -> dict[str, type]:
    out = {}
    if torch is not None:
        out.update({"torch.Tensor": torch.Tensor, "torch.cuda.Event": torch.cuda.Event,
                    "torch.cuda.Stream": torch.cuda.Stream})
    return out


class Tripwire:
    def __init__(self, torch=None):
        self.torch = torch
        mods = _watched_modules(torch)
        spaces = {name: vars(m) for name, m in mods.items()}  # live views: read again at each look
        for name, cls in _classes(torch).items():
            spaces[name] = vars(cls)
        for name, mod in mods.items():
            for k, v in list(vars(mod).items()):
                if isinstance(v, type) and getattr(v, "__module__", "") == getattr(mod, "__name__", name):
                    spaces[f"{name}.{k}"] = vars(v)  # the grader's own classes: their methods
        # each namespace: its watched names, their objects' ids and its size (a size that changes: a name added).
        # A name added to a class shadows the method it inherits (torch.Tensor.isclose over TensorBase's); a name
        # added to a module shadows nothing, and torch.compile adds its own (__compiled_fn_…) to the globals of the
        # code it compiles, the grader's extra checks included: modules are watched for replaced names only.
        self.spaces = []
        for name, ns in spaces.items():
            keys = tuple(_callables(dict(ns)))
            is_class = not isinstance(ns, dict)  # a class's vars() is a mappingproxy, a module's a dict
            self.spaces.append((name, ns, keys, [id(ns.get(k)) for k in keys], len(ns) if is_class else None))
        self.top = {f: id(getattr(torch, f, None)) for f in TORCH_FUNCTIONS} if torch is not None else {}

    def changed(self) -> list[str]:
        """What was replaced, removed or added (a method that shadows an inherited one) since arming, in the
        namespaces watched then (a module imported since is not watched)."""
        out = [f"torch.{f}" for f, i in self.top.items() if id(getattr(self.torch, f, None)) != i]
        for name, ns, keys, ids, size in self.spaces:
            now = [id(ns.get(k)) for k in keys]
            if now != ids:
                out += [f"{name}.{k}" for k, a, b in zip(keys, ids, now) if a != b]
            if size is not None and len(ns) != size:
                added = set(_callables(dict(ns))) - set(keys)
                out += [f"{name}.{k}" for k in added]
        return sorted(out)


def message(changed: list[str]) -> str:
    shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
    return (f"the op replaced the grader's or torch's own code ({shown}): a verdict its code rewrote is no verdict; "
            "an op computes its outputs and touches nothing else")
