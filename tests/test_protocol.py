"""The task protocol end to end on the CPU: a new task added as one task module plus YAML (nothing under grader/),
with two named outputs, per-output tolerances, `determinism: required` and no timing, checked by the real runner
and worker against a correct op, a racy one, and one wrong only in its second output."""
import textwrap

import pytest

from grader.check.job import make_job
from grader.check.runner import run_job
from grader.course import load_course
from grader.protocol import CaseData, arg_values, check
from grader.verdicts import Category, Status

TASK = '''
"""Row statistics: the mean of each row (in the input's dtype) and its sum of squares (always fp32)."""
import torch


def make_inputs(shape, dtype, generator, device):
    return {"x": torch.randn(shape, generator=generator, device=device, dtype=torch.float32).to(dtype)}


def make_outputs(inputs):
    x = inputs["x"]
    return {"mean": torch.empty(x.shape[:-1], dtype=x.dtype, device=x.device),
            "sumsq": torch.empty(x.shape[:-1], dtype=torch.float32, device=x.device)}


def reference(x):
    return {"mean": x.double().mean(-1), "sumsq": (x.double() ** 2).sum(-1)}
'''

COURSE = '''
title: Protocol test
repository: https://example.invalid/course
days:
  - id: day01
    title: Row statistics
    track: tools
    status: ready
    exercises:
      - name: rowstats
        task: mytasks.rowstats
        op: rowstats
        signature: "rowstats(x, sumsq, mean) -> None"
        build: python
        sources: [rowstats.py]
        args: [x, sumsq, mean]          # not the task's order: the op's own
        dtypes: [fp32, bf16]
        correctness: [[1, 1], [7, 33], [64, 1000]]
        determinism: required
        tolerances:                     # the mean, in the input's dtype
          fp32: {atol: 1.0e-6, rtol: 1.0e-5, rel_l2: 1.0e-5}
          bf16: {atol: 1.0e-2, rtol: 1.6e-2, rel_l2: 8.0e-3}
        outputs:
          - mean
          - name: sumsq                 # fp32 whatever the input: tighter in bf16 than the mean
            tolerances:
              bf16: {atol: 1.0e-4, rtol: 1.0e-5, rel_l2: 1.0e-5}
        points: 5
'''

OPS = {
    "correct": "mean.copy_(x.float().mean(-1).to(mean.dtype)); sumsq.copy_((x.float() ** 2).sum(-1))",
    # Right to within a few ulps, but a different few every call: a race's signature.
    "racy": "mean.copy_(x.float().mean(-1).to(mean.dtype)); "
            "sumsq.copy_((x.float() ** 2).sum(-1) * (1 + torch.rand(sumsq.shape) * 1e-6))",
    "second_output_wrong": "mean.copy_(x.float().mean(-1).to(mean.dtype)); sumsq.copy_((x.float() ** 2).sum(-1) * 1.01)",
    # Wrong outputs, and the worker's own summarize replaced so that every comparison reads as passed (the worker
    # runs as __main__): without the tripwire this passes every case (seen on 2026-12-07).
    "rewrites_the_judge": "mean.fill_(0.5); sumsq.fill_(0.5); import sys, dataclasses; w = sys.modules['__main__']; "
                          "o = getattr(w, '_orig', None) or w.summarize; w._orig = o; "
                          "w.summarize = lambda rs, outs: o([dataclasses.replace(r, ok=True, category='pass', "
                          "message='') for r in rs], outs)",
    # The same by torch's side: every tensor comparison the grader makes now says "equal"
    "rewrites_torch": "mean.fill_(0.5); sumsq.fill_(0.5); torch.Tensor.isclose = lambda *a, **k: torch.ones((), "
                      "dtype=torch.bool)",
}


def _course(tmp_path, op: str):
    (tmp_path / "course.yaml").write_text(COURSE)
    (tmp_path / "mytasks").mkdir()
    (tmp_path / "mytasks" / "__init__.py").write_text("")
    (tmp_path / "mytasks" / "rowstats.py").write_text(TASK)
    src = tmp_path / "solutions" / "day01"
    src.mkdir(parents=True)
    (src / "rowstats.py").write_text(textwrap.dedent(f"""\
        import torch


        def rowstats(x, sumsq, mean):
            {OPS[op]}
        """))
    return load_course(tmp_path / "course.yaml"), src


def _check(tmp_path, op: str):
    course, src = _course(tmp_path, op)
    day = course.day("day01")
    job = make_job(course=course, root=tmp_path, day=day, ex=day.exercises[0], src_dir=src, seed=3, device="cpu")
    return run_job(job, variant="solution")


def test_a_correct_op_passes_on_correctness_alone(tmp_path):
    res = _check(tmp_path, "correct")
    assert res.status == Status.PASS, (res.message, res.cases[:2])
    assert res.points == 5 and "not timed" in res.message and res.speedup is None
    assert len(res.cases) == 6 and all(c["kind"] == "correctness" for c in res.cases)
    assert {ch["name"] for ch in res.cases[0]["checks"]} == {"mean", "sumsq"}


def test_a_racy_op_fails_as_nondeterministic(tmp_path):
    res = _check(tmp_path, "racy")
    assert res.status == Status.FAIL
    bad = [c for c in res.cases if not c["ok"]]
    assert bad and all(c["category"] == Category.NONDETERMINISTIC for c in bad)
    assert "two calls on the same input gave different bits in sumsq" in bad[0]["message"]


def test_an_op_wrong_only_in_its_second_output_is_named(tmp_path):
    res = _check(tmp_path, "second_output_wrong")
    assert res.status == Status.FAIL
    bad = [c for c in res.cases if not c["ok"]]
    assert bad and all(c["category"] == Category.MISMATCH for c in bad)
    assert all(c["message"].startswith("sumsq: wrong values") for c in bad), bad[0]["message"]
    checks = {ch["name"]: ch["ok"] for ch in bad[0]["checks"]}
    assert checks == {"mean": True, "sumsq": False}
    assert "sumsq: wrong values" in res.message


def test_per_output_tolerances_apply_by_name(tmp_path):
    course, _ = _course(tmp_path, "correct")
    ex = course.day("day01").exercises[0]
    assert ex.tolerance("sumsq", "bf16").atol == 1e-4 and ex.tolerance("mean", "bf16").atol == 1e-2
    assert ex.tolerance("sumsq", "fp32") == ex.tolerance("mean", "fp32")  # falls back to the exercise's


def test_arguments_follow_args_by_name_and_unknown_names_are_the_courses_error(tmp_path):
    import torch

    from grader.protocol import CourseConfigError

    course, _ = _course(tmp_path, "correct")
    ex = course.day("day01").exercises[0]
    x, m, s = torch.ones(2, 3), torch.empty(2), torch.empty(2)
    case = CaseData("fp32", {}, {"x": x}, {"mean": m, "sumsq": s})
    assert [id(a) for a in arg_values(case, ex)] == [id(x), id(s), id(m)]
    with pytest.raises(CourseConfigError, match="names 'y'"):
        arg_values(case, ex.model_copy(update={"args": ["x", "y"]}))


def test_a_returned_output_of_the_wrong_shape_is_a_mismatch_not_a_crash(tmp_path):
    import torch

    course, _ = _course(tmp_path, "correct")
    ex = course.day("day01").exercises[0]
    case = CaseData("fp32", {}, {"x": torch.ones(2, 3)}, {"mean": torch.empty(2), "sumsq": torch.empty(2)},
                    {"mean": torch.ones(2, dtype=torch.float64), "sumsq": torch.full((2,), 3.0, dtype=torch.float64)})
    got = {"mean": torch.ones(3), "sumsq": torch.full((2,), 3.0)}
    r = {x.name: x for x in check(got, case, ex)}
    assert not r["mean"].ok and "expected a tensor (2,)" in r["mean"].message and r["sumsq"].ok


def test_a_task_can_refill_its_inputs_cheaply_before_timed_calls():
    """attention_bwd's inputs carry a saved forward: its refill draws a new dout only, in place."""
    import torch

    from grader.protocol import Task

    t = Task.load("tasks.attention_bwd")
    c = t.materialize(torch, shape=(1, 2, 37, 64), dtype="bf16", params={"causal": True}, seed=1, device="cpu")
    dout, q, ptr = c.inputs["dout"].clone(), c.inputs["q"].clone(), c.inputs["dout"].data_ptr()
    t.refill(torch, c, torch.Generator().manual_seed(3))
    assert not torch.equal(dout, c.inputs["dout"]) and c.inputs["dout"].data_ptr() == ptr
    assert torch.equal(q, c.inputs["q"])


def test_a_case_layout_gives_the_same_values_as_views():
    """`layout: model` (tasks/attention.py): q, k, v slices of one [B, N, 3, H, d] buffer, o and dout in
    [B, N, H, d] memory, the gradients and lse untouched; the values and the reference are the plain case's."""
    import torch

    from grader.protocol import Task

    t = Task.load("tasks.attention_bwd")
    kw = dict(shape=(2, 3, 17, 64), dtype="bf16", params={"causal": True}, seed=4, device="cpu")
    plain, views = t.materialize(torch, **kw), t.materialize(torch, layout="model", **kw)
    b, h, n, d = kw["shape"]
    for name in ("q", "k", "v", "o", "dout", "lse"):
        assert torch.equal(plain.inputs[name], views.inputs[name]), name
    q, k, v = (views.inputs[x] for x in "qkv")
    assert q.stride() == (n * 3 * h * d, d, 3 * h * d, 1) and k.data_ptr() - q.data_ptr() == h * d * q.element_size()
    assert q.untyped_storage().data_ptr() == v.untyped_storage().data_ptr()
    for name in ("o", "dout"):
        assert views.inputs[name].stride() == (n * h * d, d, h * d, 1), name
    assert views.inputs["lse"].is_contiguous() and all(t_.is_contiguous() for t_ in views.outputs.values())
    for name, ref in plain.reference.items():
        assert torch.equal(ref, views.reference[name]), name
    fwd = Task.load("tasks.attention").materialize(torch, layout="model", **kw)
    assert fwd.outputs["o"].stride() == (n * h * d, d, h * d, 1) and fwd.outputs["lse"].is_contiguous()


def test_an_unknown_case_layout_is_the_courses_error_naming_the_tasks_layouts():
    import torch

    from grader.protocol import CourseConfigError, Task

    with pytest.raises(CourseConfigError, match=r"no layout 'bshd' \(its LAYOUTS: model\)"):
        Task.load("tasks.attention").materialize(torch, shape=(1, 1, 5, 64), dtype="fp32", params={}, seed=1,
                                                 device="cpu", layout="bshd")


def test_every_case_layout_in_the_course_is_one_its_task_defines():
    from pathlib import Path

    from grader.protocol import Task

    course = load_course(Path(__file__).resolve().parents[1] / "course.yaml")
    seen = 0
    for day in course.days:
        for ex in day.exercises:
            for case in [*ex.correctness, *ex.benchmark, *ex.probe_shapes, *ex.sanitize_shapes]:
                if case.layout:
                    seen += 1
                    assert case.layout in getattr(Task.load(ex.task).module, "LAYOUTS", {}), (ex.name, case.label())
    assert seen >= 4  # days 12 and 20 have model-layout cases


def test_a_case_with_both_an_offset_and_a_layout_is_refused():
    from pydantic import ValidationError

    from grader.course import Case

    assert Case.model_validate({"shape": [1, 2, 5, 64], "layout": "model"}).label() == "1x2x5x64 model"
    with pytest.raises(ValidationError, match="an offset or a layout, not both"):
        Case.model_validate({"shape": [1, 2, 5, 64], "offset": 1, "layout": "model"})
    with pytest.raises(ValidationError, match="an offset or a layout, not both"):
        Case.model_validate({"shape": [1, 2, 5, 64], "out_offset": 1, "layout": "model"})


def test_out_offset_places_the_outputs_at_their_own_alignment():
    """Day 05's all-scalar path runs only when x and out sit at different offsets from a 16-byte boundary."""
    import torch

    from grader.course import Case
    from grader.protocol import Task

    case = Case.model_validate({"shape": [3, 37], "offset": 1, "out_offset": 0})
    assert case.label() == "3x37+1 out+0" and not case.same_tensors(Case.model_validate({"shape": [3, 37], "offset": 1}))
    assert Case.model_validate({"shape": [3, 37], "offset": 2, "out_offset": 2}).label() == "3x37+2"
    t = Task.load("tasks.softmax")
    for offset, out_offset in ((1, 0), (0, 3), (2, None)):
        c = t.materialize(torch, shape=(3, 37), dtype="fp32", params={}, seed=1, offset=offset, out_offset=out_offset,
                          device="cpu")
        want_out = offset if out_offset is None else out_offset
        assert c.inputs["x"].storage_offset() == offset
        assert c.outputs["out"].storage_offset() == want_out
        assert torch.equal(c.inputs["x"], t.materialize(torch, shape=(3, 37), dtype="fp32", params={}, seed=1,
                                                        device="cpu").inputs["x"])


@pytest.mark.parametrize("op", ["rewrites_the_judge", "rewrites_torch"])
def test_an_op_that_rewrites_its_judge_fails_as_tampered_in_every_case(tmp_path, op):
    """grader/check/tamper.py: the op runs in the worker's process; replacing the worker's or torch's code trips
    the wire before its outputs are judged, each case in a fresh worker (the tampered one is not reused)."""
    res = _check(tmp_path, op)
    assert res.status == Status.FAIL, res.message
    ran = [c["category"] for c in res.cases if c["category"] != Category.NOT_RUN]  # the runner's restarts run out
    assert ran and set(ran) == {Category.TAMPERED}, [c["category"] for c in res.cases]
    assert "the op replaced the grader's or torch's own code" in res.cases[0]["message"]
    assert ("summarize" if op == "rewrites_the_judge" else "torch.Tensor.isclose") in res.cases[0]["message"]


def test_an_honest_op_trips_nothing(tmp_path):
    res = _check(tmp_path, "correct")
    assert res.status == Status.PASS and not any(c.get("tampered") for c in res.cases)
