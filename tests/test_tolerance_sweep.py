"""The seed sweep's table against course.yaml (issue 32), and the sweep's machinery on the CPU.

measured/tolerance-sweep-<gpu>.json is written on a GPU by scripts/tolerance_sweep.py: every ready exercise's
solution over at least 200 seeds x every correctness case and probe x every dtype, with the worst ratio of error to
tolerance. Here: every exercise x dtype of course.yaml is in it, with the tolerances course.yaml has now and the
cases it checks now (an edit to either makes the table stale: run the sweep again), and a correct kernel's worst
is at most half its bound."""
from __future__ import annotations

import functools
import importlib.util
import json
import re
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from grader.check.compare import compare
from grader.check.plan import plan
from grader.check.worker import summarize
from grader.course import load_course
from grader.protocol import Result

ROOT = Path(__file__).resolve().parents[1]
SWEEPS = sorted((ROOT / "measured").glob("tolerance-sweep-*.json"))
NO_SWEEP = ("no measured/tolerance-sweep-<gpu>.json yet: it is made on a GPU by `python3 scripts/tolerance_sweep.py "
            "--out measured/tolerance-sweep-<gpu>.json` (see the script's docstring)")


@functools.cache
def _sweep_module():
    spec = importlib.util.spec_from_file_location("tolerance_sweep", ROOT / "scripts" / "tolerance_sweep.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def _course():
    return load_course(ROOT / "course.yaml")


def _exercise(course, day, name):
    return next(e for e in course.day(day).exercises if e.name == name)


# -- the table ------------------------------------------------------------------------------------------------------
@pytest.fixture(params=SWEEPS or [None], ids=lambda p: p.name if p else "none")
def table(request):
    if request.param is None:
        pytest.skip(NO_SWEEP)
    return json.loads(request.param.read_text())


def test_every_ready_exercise_and_dtype_is_swept():
    """By the tables together (one per GPU): a step added later may have been swept on another GPU than the rest."""
    if not SWEEPS:
        pytest.skip(NO_SWEEP)
    tables = [json.loads(p.read_text()) for p in SWEEPS]
    have = {(r["day"], r["exercise"], r["dtype"]) for t in tables for r in t["rows"] if not r["order"]}
    want = {(d.id, e.name, t) for d in _course().days if d.status == "ready" for e in d.exercises for t in e.dtypes}
    # exercises no table could run (a process group), each with its reason; only those may be missing
    excused = {(n["day"], n["exercise"], t) for tab in tables for n in tab.get("not_swept", []) if n["why"]
               for t in n["dtypes"]}
    assert all(_exercise(_course(), d, e).processes > 1 for d, e, _ in excused), excused
    want -= excused
    assert not want - have, f"not in the sweep (run it again for these): {sorted(want - have)}"


def test_rows_were_made_with_the_current_tolerances_and_cases(table):
    sweep, course = _sweep_module(), _course()
    for r in table["rows"]:
        day = course.day(r["day"])
        ex = _exercise(course, r["day"], r["exercise"])
        where = f"{r['day']}.{r['exercise']}" + (f" [{r['order']}]" if r["order"] else "") + f" {r['dtype']}"
        assert r["tolerances"], where
        if ex.outputs:
            assert set(r["tolerances"]) == {o.name for o in ex.outputs}, where
        for name, tol in r["tolerances"].items():
            assert ex.tolerance(name, r["dtype"]).model_dump() == tol, \
                f"{where}: {name}'s tolerance changed since the sweep ({tol}): run it again"
        run = sweep.exercise_of(course, sweep.Entry(day.id, ex.name, r["order"], r["flags"], r["variants"]))
        assert r["cases_per_seed"] == len(plan(run, [r["dtype"]], benchmark=False)), \
            f"{where}: the correctness cases changed since the sweep: run it again"


def test_every_row_has_200_seeds_no_failure_and_half_its_bound_at_most(table):
    bad = []
    for r in table["rows"]:
        w = r["worst"]
        where = f"{r['day']}.{r['exercise']}" + (f" [{r['order']}]" if r["order"] else "") + f" {r['dtype']}"
        if r["error"]:
            bad.append(f"{where}: {r['error'].strip().splitlines()[0]}")
        elif r["seeds"] < table["required_seeds"] or r["seeds"] < 200:
            bad.append(f"{where}: {r['seeds']} seeds")
        elif r["case_runs"] != r["seeds"] * r["cases_per_seed"]:
            bad.append(f"{where}: {r['case_runs']} case runs for {r['seeds']} x {r['cases_per_seed']}")
        elif r["failures"]:
            bad.append(f"{where}: {r['failures']} failed, first {r['first_failure']}")
        elif w is None or not w["tol_ratio"] <= 0.5:
            bad.append(f"{where}: worst ratio {w and w['tol_ratio']:.3f} ({w})")
    assert not bad, "\n".join(bad)


# -- the ratio ------------------------------------------------------------------------------------------------------
def test_ratio_is_the_worst_element_and_the_l2_against_their_bounds():
    g = torch.Generator().manual_seed(3)
    ref = torch.randn(50, 40, generator=g, dtype=torch.float64)
    out = (ref + 1e-4 * torch.randn(50, 40, generator=g, dtype=torch.float64)).float()
    atol, rtol, rel_l2 = 1e-4, 1e-3, 1e-3
    c = compare(out, ref, atol=atol, rtol=rtol, rel_l2=rel_l2)
    err = (out.double() - ref).abs()
    elem = float((err / (atol + rtol * ref.abs())).max())
    l2 = float((out.double() - ref).norm() / ref.norm())
    assert c.elem_ratio == pytest.approx(elem, rel=1e-12)
    assert c.l2_ratio == pytest.approx(l2 / rel_l2, rel=1e-12)
    assert c.tol_ratio == max(c.elem_ratio, c.l2_ratio)
    # The ratio and the verdict agree: over 1 fails, and the same output against half the bounds doubles it.
    assert c.ok == (c.tol_ratio <= 1)
    half = compare(out, ref, atol=atol / 2, rtol=rtol / 2, rel_l2=rel_l2 / 2)
    assert half.tol_ratio == pytest.approx(2 * c.tol_ratio, rel=1e-9)


def test_ratio_of_an_exact_output_is_zero_even_with_zero_atol():
    ref = torch.tensor([0.0, 1.0, -2.5], dtype=torch.float64)
    c = compare(ref.float(), ref, atol=0.0, rtol=1e-5, rel_l2=1e-5)
    assert c.ok and c.tol_ratio == 0.0 and c.worst_index == [0]


def test_case_keeps_the_output_closest_to_its_bound_not_the_worst_rel_l2():
    # o has the larger rel_l2 but a loose bound; lse the smaller rel_l2 and the larger ratio
    results = [Result("o", True, "pass", "", {"rel_l2": 1e-4, "tol_ratio": 0.1}),
               Result("lse", True, "pass", "", {"rel_l2": 1e-6, "tol_ratio": 0.4})]
    res = summarize(results, ["o", "lse"])
    assert res["rel_l2"] == 1e-4 and res["tol_ratio"] == 0.4 and res["tol_ratio_output"] == "lse"


def test_backward_all_zero_reference_has_the_elementwise_ratio():
    # N = 1: dq and dk are exactly 0, so rel_l2 is undefined and the elementwise bound alone judges (and is the ratio)
    from tasks import attention_bwd as task

    course = _course()
    ex = _exercise(course, "day15", "attention_bwd_naive")
    inputs = task.make_inputs((1, 1, 1, 64), torch.float32, torch.Generator().manual_seed(0), "cpu")
    ref = dict(zip(("dq", "dk", "dv"), task.reference(**inputs)))
    got = {k: v.float() + (1e-9 if k == "dq" else 0.0) for k, v in ref.items()}
    from grader.protocol import CaseData

    results = task.check(got, CaseData("fp32", {}, inputs, {k: v.float() for k, v in ref.items()}, ref), ex)
    dq = next(r for r in results if r.name == "dq")
    assert dq.ok and "l2_ratio" not in dq.stats and dq.stats["tol_ratio"] == dq.stats["elem_ratio"] > 0


# -- the sweep's machinery ------------------------------------------------------------------------------------------
def test_gpu_slug():
    slug = _sweep_module().gpu_slug
    assert slug("NVIDIA H100 80GB HBM3") == "h100"
    assert slug("NVIDIA H200") == "h200"
    assert slug("NVIDIA A100-SXM4-80GB") == "a100"


def test_orders_name_exercises_and_knobs_that_exist():
    sweep, course = _sweep_module(), _course()
    for key, orders in sweep.ORDERS.items():
        day, name = key.split(".")
        ex = _exercise(course, day, name)
        text = "".join(p.read_text() for p in (ROOT / "solutions" / day).glob("*.cu"))
        for label, flags, variants in orders:
            for f in flags:
                knob = re.fullmatch(r"-D(\w+)=\w+", f).group(1)
                assert f"#ifndef {knob}" in text, f"{key} [{label}]: no knob {knob} in solutions/{day}"
            for v in variants:
                assert set(v) <= set(ex.args), f"{key} [{label}]: {v} is not among the op's arguments"
                assert v not in ex.variants, f"{key} [{label}]: {v} is checked already"


OP_RIGHT = "import torch\n\ndef softmax(x, out):\n    out.copy_(torch.softmax(x.float(), -1).to(out.dtype))\n"
OP_WRONG = "import torch\n\ndef softmax(x, out):\n    out.copy_((torch.softmax(x.float(), -1) * 1.01).to(out.dtype))\n"


def _toy_course(tmp_path: Path) -> Path:
    ex = """\
      - name: {name}
        task: tasks.softmax
        op: softmax
        signature: "softmax(x, out)"
        build: python
        sources: [{name}.py]
        dtypes: [fp32, fp16]
        correctness: [[3, 5], [1, 37], {{shape: [4, 9], offset: 1}}]
        probes: [neg_inf]
        probe_shapes: [[2, 9]]
        tolerances:
          fp32: {{atol: 1.0e-8, rtol: 3.0e-5, rel_l2: 2.0e-5}}
          fp16: {{atol: 1.0e-7, rtol: 1.5e-3, rel_l2: 1.0e-3}}
        points: 1
"""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "course.yaml").write_text(textwrap.dedent("""\
        title: toy
        repository: https://example.invalid/toy
        days:
          - id: day01
            title: Toy
            track: softmax
            status: ready
            exercises:
        """) + ex.format(name="right") + ex.format(name="wrong"))
    sol = tmp_path / "solutions" / "day01"
    sol.mkdir(parents=True)
    (sol / "right.py").write_text(OP_RIGHT)
    (sol / "wrong.py").write_text(OP_WRONG)
    return tmp_path


def test_sweep_on_the_cpu_finds_the_wrong_op_and_passes_the_right_one(tmp_path):
    sweep = _sweep_module()
    root = _toy_course(tmp_path / "course")
    out = tmp_path / "sweep.json"
    code = sweep.main(["--root", str(root), "--device", "cpu", "--seeds", "3", "--procs", "1", "--out", str(out)])
    table = json.loads(out.read_text())
    rows = {(r["exercise"], r["dtype"]): r for r in table["rows"]}
    assert set(rows) == {(e, d) for e in ("right", "wrong") for d in ("fp32", "fp16")}
    assert code == 1  # the wrong op fails, and 3 seeds are fewer than required
    for (name, dtype), r in rows.items():
        assert not r["error"], r["error"]
        assert r["seeds"] == 3 and r["seed_list"] == [1, 2, 3] and r["cases_per_seed"] == 4
        assert r["case_runs"] == 12
        assert r["tolerances"] == {"out": _exercise(load_course(root / "course.yaml"), "day01", name)
                                   .tolerance("out", dtype).model_dump()}
        w = r["worst"]
        assert w["seed"] in (1, 2, 3) and w["output"] == "out"
        # the sweep's deferred numbers are the grader's: its worst case checked again with the grader's compare
        assert w["exact"]["tol_ratio"] == pytest.approx(w["tol_ratio"], rel=1e-9)
        assert w["exact"]["ok"] == (name == "right")
        if name == "right":
            assert r["failures"] == 0 and w["tol_ratio"] < 0.5
        else:  # 1% too large: 300x fp32's rtol, 7x fp16's
            assert r["failures"] == 12 and w["tol_ratio"] > 5 and r["first_failure"]["seed"] == 1
            assert "wrong values" in r["first_failure"]["message"]
    # The two exercises make the same cases: each unit runs them both, each case made once per seed.
    units = sweep.plan_units(root, sweep.select(load_course(root / "course.yaml")), range(1, 4), 1, "cpu")
    assert all(len(u["entries"]) == 2 for u in units)
    assert sorted(s for u in units for s in u["seeds"]) == [1, 2, 3]
    # With more processes than one group needs, its seeds are dealt out in turn: each process from the start
    dealt = sweep.plan_units(root, sweep.select(load_course(root / "course.yaml")), range(1, 8), 3, "cpu")
    assert [u["seeds"] for u in dealt] == [[1, 4, 7], [2, 5], [3, 6]]


def test_tables_of_other_seeds_merge(tmp_path):
    sweep = _sweep_module()
    root = _toy_course(tmp_path / "course")
    parts = []
    for start in (1, 3):
        out = tmp_path / f"part{start}.json"
        sweep.main(["--root", str(root), "--device", "cpu", "--seeds", "2", "--seed-start", str(start),
                    "--exercise", "right", "--dtypes", "fp32", "--procs", "1", "--out", str(out)])
        parts.append(out)
    merged = tmp_path / "merged.json"
    sweep.main(["--merge", *map(str, parts), "--out", str(merged)])
    (row,) = json.loads(merged.read_text())["rows"]
    singles = [json.loads(p.read_text())["rows"][0] for p in parts]
    assert row["seed_list"] == [1, 2, 3, 4] and row["seeds"] == 4 and row["case_runs"] == 16
    assert row["worst"]["tol_ratio"] == max(s["worst"]["tol_ratio"] for s in singles)


def test_a_later_table_over_the_same_seeds_replaces_the_earlier_row(tmp_path):
    # The sweep run again after a kernel changed: merged into the stored table, its rows must be what the code does
    # now, not both runs' cases added up; a later run over only some of the earlier's seeds cannot be merged.
    sweep = _sweep_module()
    root = _toy_course(tmp_path / "course")

    def run(name, start, seeds):
        out = tmp_path / f"{name}.json"
        sweep.main(["--root", str(root), "--device", "cpu", "--seeds", str(seeds), "--seed-start", str(start),
                    "--exercise", "right", "--dtypes", "fp32", "--procs", "1", "--out", str(out)])
        return out

    old, new, part = run("old", 1, 4), run("new", 1, 4), run("part", 3, 1)
    merged = tmp_path / "merged.json"
    sweep.main(["--merge", str(old), str(new), "--out", str(merged)])
    (row,) = json.loads(merged.read_text())["rows"]
    assert row == json.loads(new.read_text())["rows"][0] and row["case_runs"] == 16
    with pytest.raises(SystemExit, match="share 1 of their seeds"):
        sweep.main(["--merge", str(old), str(part), "--out", str(merged)])


def test_sweep_runs_a_process_group_exercise_in_its_processes(tmp_path):
    # Day 19's ring across processes (processes: 2), over gloo on the CPU as the grader's own CPU tests run it: one
    # unit per seed range, its ranks started by rank 0 and stopping together.
    sweep = _sweep_module()
    out = tmp_path / "ring.json"
    sweep.main(["--exercise", "day19.ring_dist", "--dtypes", "fp32", "--device", "cpu", "--seeds", "2", "--procs", "1",
                "--out", str(out)])
    table = json.loads(out.read_text())
    (row,) = table["rows"]
    assert table["gpu"] == "CPU" and row["processes"] == 2 and not table["not_swept"]
    assert not row["error"] and row["seeds"] == 2 and row["failures"] == 0
    assert row["case_runs"] == 2 * row["cases_per_seed"] == 2 * 18
    assert set(row["tolerances"]) == {"o", "lse"} and 0 < row["worst"]["tol_ratio"] <= 0.5


@pytest.mark.parametrize("day,exercise,shape,params", [
    ("day03", "softmax", (33, 129), {}),
    ("day09", "matmul", (37, 1, 129), {}),
    ("day10", "flash_attention", (1, 2, 37, 64), {"causal": True}),
    ("day15", "attention_bwd_naive", (1, 1, 1, 64), {"causal": False}),  # dq, dk exactly 0: judged by atol alone
    ("day15", "attention_bwd_naive", (1, 2, 37, 64), {"causal": True}),
])
def test_deferred_compare_gives_the_graders_ratios(day, exercise, shape, params):
    # The sweep's check (compare deferred on the device) against the grader's own, on outputs a little off their
    # reference: the same ratio for every output, and a failure where the grader fails.
    from grader.protocol import Task

    sweep = _sweep_module()
    ex = _exercise(_course(), day, exercise)
    task = Task.load(ex.task)
    for dtype in ex.dtypes:
        case = task.materialize(torch, shape=shape, dtype=dtype, params=params, seed=3, device="cpu")
        g = torch.Generator().manual_seed(4)
        for scale in (0.0, 1e-5, 3e-3):
            # relative noise, and a little absolute noise (an all-zero reference gets some too)
            got = {k: (case.reference[k] * (1 + scale * torch.randn(case.reference[k].shape, generator=g,
                                                                      dtype=torch.float64))
                       + 1e-3 * scale * torch.randn(case.reference[k].shape, generator=g,
                                                    dtype=torch.float64)).to(v.dtype)
                   for k, v in case.outputs.items()}
            exact = {r.name: r for r in task.check(got, case, ex)}
            deferred = {r.name: r for r in sweep._deferred_check(task, got, case, ex)}
            assert exact.keys() == deferred.keys()
            for name, r in exact.items():
                d = deferred[name].stats
                assert float(d["tol_ratio"]) == pytest.approx(r.stats["tol_ratio"], rel=1e-9, abs=1e-12), \
                    (dtype, scale, name)
                assert (bool(d["bad"]) or float(d["tol_ratio"]) > 1) == (not r.ok), (dtype, scale, name)
    # an output left poisoned (never written) fails both ways
    from grader.check.compare import poison

    got = {k: v.clone() for k, v in case.outputs.items()}
    for v in got.values():
        poison(v)
    assert all(bool(r.stats["bad"]) for r in sweep._deferred_check(task, got, case, ex))
