"""The task protocol: what a task module (tasks/<name>.py) provides, and what the grader does where it provides
nothing. `grader check`, `grader profile` and the worker all go through `Task`; nothing else calls a task module.

Data hooks (module-level names in the task):
  make_inputs(shape, dtype, generator, device, **params) -> {name: tensor}      fresh random inputs (required)
  make_outputs(inputs, **params) -> {name: tensor}      the outputs, in the task's order (required); for `call: out`
      they are what the op writes into, poisoned before every call
  reference(**inputs, **params) -> fp64 tensors, a tuple in output order or a dict by name (required)
  library(**inputs, **outputs, **params)                the vendor op the report compares with; LIBRARY names it
  ceiling(**inputs, **params) -> (label, thunk) | None  the practical peak for this shape, timed in the same run
  flops(**inputs, **params), bytes_moved(**inputs, **params)   for TFLOP/s, GB/s and % of a copy
  probes = {name: fn(inputs, generator) -> inputs}      adversarial variants of the random inputs
  refill(inputs, generator, **params)                   new values in place before each timed call (default:
      make_inputs again, copied in)
  CHECKS = {name: fn(ctx) -> Result | None}             extra checks an exercise can name (besides CHECKS below)
Protocol hooks (define one in the task to replace the default of the same name below):
  resolve(module, exercise) -> the op, or None if the built module does not define it
  call(fn, case, exercise) -> thunk: one call of the op, returning its outputs by name
  check(got, case, exercise) -> [Result]: named comparisons against the reference
Arguments are passed by name: the exercise's `args:` list names inputs, outputs and a case's params in order.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from functools import cache, partial
from pathlib import Path
from typing import Any
from collections.abc import Callable

from grader.check.compare import compare, poison
from grader.verdicts import Category

TORCH_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


class CourseConfigError(Exception):
    """course.yaml asks for something its task cannot do: the course's problem, not the student's."""


class OpContractError(Exception):
    """The op broke its calling convention (returned the wrong number of tensors, say): the student's error."""


@dataclass
class Result:
    """One named verdict within a case: an output against its reference, or an extra check."""
    name: str
    ok: bool
    category: str
    message: str
    stats: dict = field(default_factory=dict)  # numbers for reports (max_abs, rel_l2, worst_index, ...)

    def as_dict(self) -> dict:
        return {"name": self.name, "ok": self.ok, "category": self.category, "message": self.message, **self.stats}


@dataclass
class CaseData:
    """One case made concrete: its tensors on the device, and the fp64 reference by output name."""
    dtype: str
    params: dict
    inputs: dict
    outputs: dict
    reference: dict = field(default_factory=dict)
    shape: tuple = ()
    blocks: Callable[[str], Any] | None = None  # output name -> how it folds into an error map (Task.blocks)

    def with_outputs(self, outputs: dict) -> CaseData:
        return CaseData(self.dtype, self.params, self.inputs, outputs, self.reference, self.shape, self.blocks)


@dataclass
class CheckContext:
    """What an extra check sees: the op, the case, the exercise, and one call of the op."""
    task: Task
    fn: Any
    case: CaseData
    exercise: Any
    call: Callable[[], dict]
    src_dir: Path | None = None  # the folder the exercise's sources were built from
    root: Path | None = None  # the course root (include_dirs are relative to it)
    capability: tuple[int, int] = (0, 0)  # the GPU's compute capability


# -- defaults of the protocol hooks ---------------------------------------------------------------------------
def resolve(module, exercise):
    """The op: an attribute of the built module, or torch.ops.<namespace>.<name> for `op: namespace::name`."""
    if "::" in exercise.op:
        import torch

        ns, name = exercise.op.split("::")
        try:
            return getattr(getattr(torch.ops, ns), name)
        except (AttributeError, RuntimeError):
            return None
    return getattr(module, exercise.op, None)


def arg_names(case: CaseData, exercise) -> list[str]:
    if exercise.args:
        return list(exercise.args)
    outs = list(case.outputs) if exercise.call == "out" else []
    return [*case.inputs, *outs, *case.params]


def arg_values(case: CaseData, exercise) -> list:
    pools = (("input", case.inputs), ("output", case.outputs if exercise.call == "out" else {}),
             ("param", case.params))
    values = []
    for name in arg_names(case, exercise):
        for _, pool in pools:
            if name in pool:
                values.append(pool[name])
                break
        else:
            have = "; ".join(f"{kind}s {', '.join(pool) or '-'}" for kind, pool in pools)
            raise CourseConfigError(f"`args:` names {name!r}, which this case does not have ({have})")
    return values


def call(fn, case: CaseData, exercise) -> Callable[[], dict]:
    """out: the op writes into the outputs it is given; returns: it returns them, in the task's output order."""
    args = arg_values(case, exercise)
    if exercise.call == "out":
        outs = case.outputs

        def run_out():
            fn(*args)
            return outs
        return run_out
    names = list(case.outputs)

    def run_returns():
        ret = fn(*args)
        got = tuple(ret) if isinstance(ret, (tuple, list)) else (ret,)
        if len(got) != len(names):
            raise OpContractError(f"the op returned {len(got)} value(s); it must return {len(names)} "
                                  f"({', '.join(names)})")
        return dict(zip(names, got))
    return run_returns


def check(got: dict, case: CaseData, exercise) -> list[Result]:
    """Every compared output against its fp64 reference, with that output's tolerance for the case's dtype."""
    names = [o.name for o in exercise.outputs] or list(case.outputs)
    out = []
    for name in names:
        if name not in case.reference:
            raise CourseConfigError(f"output {name!r} has no reference (the task's outputs: "
                                    f"{', '.join(case.reference)})")
        t, ref, want = got.get(name), case.reference[name], case.outputs.get(name)
        shape_ok = t is not None and hasattr(t, "shape") and tuple(t.shape) == tuple(ref.shape)
        if not shape_ok or (want is not None and t.dtype != want.dtype):
            what = ("nothing" if t is None else f"{tuple(t.shape)} {t.dtype}" if hasattr(t, "shape")
                    else type(t).__name__)
            expected = f"{tuple(ref.shape)} {want.dtype if want is not None else ''}".strip()
            out.append(Result(name, False, Category.MISMATCH, f"got {what}, expected a tensor {expected}"))
            continue
        tol = exercise.tolerance(name, case.dtype)
        c = compare(t, ref, atol=tol.atol, rtol=tol.rtol, rel_l2=tol.rel_l2, l2_floor=tol.l2_floor,
                    blocks=partial(case.blocks, name) if case.blocks else None)
        if c.error_map is not None:
            c.error_map["output"] = name
        stats = {k: v for k, v in c.as_dict().items() if k not in ("ok", "category", "message", "extra")
                 and (v is not None or k not in ("error_map", "pattern"))}
        out.append(Result(name, c.ok, c.category, c.message, stats))
    return out


# -- extra checks any exercise can name -----------------------------------------------------------------------
def _opcheck(ctx: CheckContext) -> Result | None:
    import torch

    if not isinstance(ctx.fn, (torch._ops.OpOverloadPacket, torch._ops.OpOverload)):
        return Result("opcheck", False, Category.OPCHECK, f"`{ctx.exercise.op}` is not a registered torch op: "
                      "define it with TORCH_LIBRARY and name it `namespace::name` in course.yaml")
    try:
        torch.library.opcheck(ctx.fn, tuple(arg_values(ctx.case, ctx.exercise)))
    except Exception as e:  # opcheck raises OpCheckError naming the failed test
        return Result("opcheck", False, Category.OPCHECK, f"torch.library.opcheck: {_first_line(e)}")
    return Result("opcheck", True, Category.PASS, "torch.library.opcheck passed")


def _torch_compile(ctx: CheckContext) -> Result | None:
    import torch

    torch._dynamo.reset()
    compiled = torch.compile(lambda: ctx.call(), fullgraph=True)
    for o in ctx.case.outputs.values():
        poison(o)
    try:
        got = compiled()
    except Exception as e:
        return Result("torch_compile", False, Category.TORCH_COMPILE, f"torch.compile(fullgraph=True): "
                      f"{_first_line(e)}")
    bad = [r for r in check(got, ctx.case, ctx.exercise) if not r.ok]
    if bad:
        return Result("torch_compile", False, Category.TORCH_COMPILE,
                      f"under torch.compile, {bad[0].name}: {bad[0].message}")
    return Result("torch_compile", True, Category.PASS, "same results under torch.compile(fullgraph=True)")


def _no_local_memory(ctx: CheckContext) -> Result | None:
    """Every kernel of the exercise's .cu files keeps its variables in registers: ptxas reports no stack frame and
    no spills for this GPU's architecture. A per-thread array indexed by a value known only at run time, or more
    live values than the registers hold, go to local memory: off-chip, as slow as global memory."""
    if ctx.src_dir is None or ctx.root is None:
        return None
    ex = ctx.exercise
    sources = tuple(ctx.src_dir / s for s in ex.sources if s.endswith(".cu"))
    kernels = _ptxas_resources(sources, tuple(ctx.root / d for d in ex.include_dirs), tuple(ex.extra_cuda_cflags),
                               tuple(ctx.capability))
    if kernels is None:
        return Result("no_local_memory", False, Category.CHECK_FAILED, "nvcc is needed to read ptxas's report (its "
                      "registers, stack and spills) and was not found: put the CUDA toolkit's bin/ on PATH")
    bad = [k for k in kernels.values() if k["stack_bytes"] or k["spill_stores"] or k["spill_loads"]]
    if not bad:
        return Result("no_local_memory", True, Category.PASS,
                      f"ptxas: no stack frame and no spills in {len(kernels)} kernel(s)")
    k = bad[0]
    more = f" (and {len(bad) - 1} more kernel(s))" if len(bad) > 1 else ""
    return Result("no_local_memory", False, Category.LOCAL_MEMORY,
                  f"ptxas: {k['demangled'].split('(')[0]} uses local memory: {k['stack_bytes']} bytes of stack, "
                  f"{k['spill_stores']} bytes of spill stores, {k['spill_loads']} bytes of spill loads, "
                  f"{k['registers']} registers{more}", {"kernels": len(kernels)})


@cache
def _ptxas_resources(sources: tuple, include_dirs: tuple, flags: tuple, capability: tuple) -> dict | None:
    from grader.check.compile_check import nvcc_path
    from grader.profile.ptxas_report import kernel_resources

    if nvcc_path() is None:
        return None
    return kernel_resources(list(sources), list(include_dirs), list(flags), capability)


CHECKS: dict[str, Callable[[CheckContext], Result | None]] = {"opcheck": _opcheck, "torch_compile": _torch_compile,
                                                              "no_local_memory": _no_local_memory}


def _first_line(e: BaseException) -> str:
    lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
    return lines[0] if lines else type(e).__name__


# -- a task module seen through the protocol ------------------------------------------------------------------
class Task:
    """A task module, with the defaults above for the protocol hooks it does not define."""

    REQUIRED = ("make_inputs", "make_outputs", "reference")

    def __init__(self, module):
        self.module = module
        missing = [h for h in self.REQUIRED if not hasattr(module, h)]
        if missing:
            raise CourseConfigError(f"task {module.__name__} does not define {', '.join(missing)}")
        self.resolve = getattr(module, "resolve", resolve)
        self.call = getattr(module, "call", call)
        self.check = getattr(module, "check", check)
        self.probes = getattr(module, "probes", {})
        self.library_name = getattr(module, "LIBRARY", "library")

    @classmethod
    def load(cls, name: str) -> Task:
        try:
            module = importlib.import_module(name)
        except ImportError as e:
            raise CourseConfigError(f"task {name!r} cannot be imported: {e}") from None
        return cls(module)

    def has(self, hook: str) -> bool:
        return hasattr(self.module, hook)

    def extra_check(self, name: str):
        found = getattr(self.module, "CHECKS", {}).get(name) or CHECKS.get(name)
        if found is None:
            raise CourseConfigError(f"no check {name!r} (the grader has {', '.join(CHECKS)}; a task adds its own in "
                                    "CHECKS)")
        return found

    # -- making a case --------------------------------------------------------------------------------------
    def materialize(self, torch, *, shape, dtype: str, params: dict, seed: int, offset: int = 0,
                    out_offset: int | None = None, layout: str | None = None, probe: str | None = None,
                    device: str = "cuda", reference: bool = True) -> CaseData:
        """The case's tensors: seeded random inputs (a probe's variant of them), outputs to write, `offset`
        elements past an aligned allocation (the outputs `out_offset` past theirs, when given) or, with a `layout`,
        views in the task's layout of that name; and the fp64 reference by output name."""
        tdtype = getattr(torch, TORCH_DTYPES[dtype])
        gen = torch.Generator(device=device).manual_seed(seed)
        inputs = {k: place(torch, v, offset) for k, v in
                  self.module.make_inputs(tuple(shape), tdtype, gen, device, **params).items()}
        if probe:
            if probe not in self.probes:
                raise CourseConfigError(f"the task has no probe {probe!r} (it has: {', '.join(self.probes) or '-'})")
            inputs = {k: place(torch, v, offset) for k, v in self.probes[probe](inputs, gen).items()}
        out_at = offset if out_offset is None else out_offset
        outputs = {k: place(torch, v, out_at) for k, v in self.module.make_outputs(inputs, **params).items()}
        if layout is not None:
            arrange = self.layout(layout)
            inputs, outputs = arrange(inputs), arrange(outputs)
        case = CaseData(dtype, dict(params), inputs, outputs, shape=tuple(shape))
        case.blocks = lambda name: self.blocks(case, name)
        if reference:
            case.reference = self.reference(case)
        return case

    def layout(self, name: str):
        """The task's function for layout `name`: a dict of tensors -> the same values, as views in that layout
        (the tensors it does not rearrange unchanged)."""
        found = getattr(self.module, "LAYOUTS", {}).get(name)
        if found is None:
            have = ", ".join(getattr(self.module, "LAYOUTS", {})) or "none"
            raise CourseConfigError(f"task {self.module.__name__} has no layout {name!r} (its LAYOUTS: {have})")
        return found

    def reference(self, case: CaseData) -> dict:
        """The fp64 reference of the case's current inputs, by output name."""
        refs = self.module.reference(**case.inputs, **case.params)
        if isinstance(refs, dict):
            return refs
        refs = tuple(refs) if isinstance(refs, (tuple, list)) else (refs,)
        if len(refs) != len(case.outputs):
            raise CourseConfigError(f"{self.module.__name__}.reference returned {len(refs)} tensor(s) for "
                                    f"{len(case.outputs)} output(s) ({', '.join(case.outputs)})")
        return dict(zip(case.outputs, refs))

    def blocks(self, case: CaseData, name: str):
        """How output `name` folds into an error map (grader/check/error_map.py), from the task's
        `error_blocks(name, shape, **params)` -> {block: [rows, cols], panels, rows, cols, diagonal} (None: no map),
        with the rows' properties from its `row_properties(**inputs, **params)`, computed only if a map is built."""
        from grader.check.error_map import Blocks

        if not self.has("error_blocks") or name not in case.outputs:
            return None
        spec = self.module.error_blocks(name, tuple(case.outputs[name].shape), **case.params)
        if spec is None:
            return None
        props = ((lambda: self.module.row_properties(**case.inputs, **case.params))
                 if self.has("row_properties") else None)
        return Blocks(block=tuple(spec["block"]), panels=tuple(spec.get("panels", ())), rows=spec.get("rows", "row"),
                      cols=spec.get("cols", "column"), diagonal=bool(spec.get("diagonal", False)), properties=props)

    def refill(self, torch, case: CaseData, generator) -> None:
        """New random values in the case's input tensors, in place (same addresses): a timed call never sees an
        input it has seen before, so a result cached from an earlier call cannot be replayed. A task whose inputs
        are costly to make (a backward's saved forward) defines `refill(inputs, generator, **params)` to change
        what it can cheaply, in place."""
        if self.has("refill"):
            self.module.refill(case.inputs, generator, **case.params)
            return
        device = next(iter(case.inputs.values())).device
        fresh = self.module.make_inputs(case.shape, getattr(torch, TORCH_DTYPES[case.dtype]), generator, device,
                                        **case.params)
        for k, v in fresh.items():
            case.inputs[k].copy_(v)

    # -- named-argument calls of the data hooks -------------------------------------------------------------
    def kwargs(self, case: CaseData, outputs: dict | None = None) -> dict:
        return {**case.inputs, **(case.outputs if outputs is None else outputs), **case.params}

    def library(self, case: CaseData, outputs: dict) -> Callable[[], Any]:
        fn, kw = self.module.library, self.kwargs(case, outputs)
        return lambda: fn(**kw)

    def ceiling(self, case: CaseData):
        return self.module.ceiling(**case.inputs, **case.params) if self.has("ceiling") else None

    def flops(self, case: CaseData) -> int | None:
        return int(self.module.flops(**case.inputs, **case.params)) if self.has("flops") else None

    def bytes_moved(self, case: CaseData) -> int | None:
        return int(self.module.bytes_moved(**case.inputs, **case.params)) if self.has("bytes_moved") else None


def place(torch, t, offset: int):
    """The same values, `offset` elements past an aligned allocation (rows start unaligned)."""
    if offset == 0:
        return t.contiguous()
    buf = torch.empty(t.numel() + offset, dtype=t.dtype, device=t.device)
    view = buf[offset:].view(t.shape)
    view.copy_(t)
    return view
