"""Error maps (grader/check/error_map.py): the folding of each task's outputs onto its blocks, each detector on
made-up error fields (and fields that must name no pattern), the renderers, the JSON round trip, the hint keyed by
a pattern, and that a passing output builds no map."""
import json
import textwrap

import pytest
import torch
from rich.console import Console

from grader.check import error_map, report
from grader.check.compare import compare, poison
from grader.check.error_map import Blocks
from grader.protocol import Task

MATMUL = Blocks(block=(32, 32), rows="row", cols="column", diagonal=True)
SOFTMAX = Blocks(block=(1, 32), rows="row", cols="column", diagonal=True)
ATTENTION = Blocks(block=(32, 16), panels=("batch", "head"), rows="query", cols="dim")
TOL = dict(atol=1e-4, rtol=1e-4, rel_l2=3e-5)


def _field(shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    ref = torch.randn(shape, generator=g, dtype=torch.float64)
    return ref, ref.float().clone()


def _pattern(out, ref, blocks):
    c = compare(out, ref, blocks=blocks, **TOL)
    assert not c.ok and c.error_map is not None
    return c.pattern


# -- the detectors ----------------------------------------------------------------------------------------------
def test_only_the_last_row_block_is_the_last_tile():
    ref, out = _field((100, 200))
    out[96:] += 1
    assert _pattern(out, ref, MATMUL) == "last_tile"


def test_only_the_last_column_block_unwritten_is_the_last_tile():
    ref, out = _field((100, 200))
    poison(out[:, 192:])
    c = compare(out, ref, blocks=MATMUL, **TOL)
    assert c.category == "unwritten" and c.pattern == "last_tile"
    assert "columns 192-199 of 200" in c.error_map["pattern_text"]


def test_the_last_rows_and_columns_together_are_the_last_tile():
    ref, out = _field((100, 200))
    out[96:] += 1
    out[:, 192:] += 1
    assert _pattern(out, ref, MATMUL) == "last_tile"


def test_every_second_column_block_is_every_kth():
    ref, out = _field((64, 1000))
    for start in range(32, 1000, 64):  # column blocks 1, 3, 5, ...
        out[:, start:start + 32] *= 1.5
    c = compare(out, ref, blocks=SOFTMAX, **TOL)
    assert c.pattern == "every_kth" and "every 2nd column block from block 1" in c.error_map["pattern_text"]


def test_every_fourth_row_tile_is_every_kth():
    ref, out = _field((512, 64))
    for start in range(96, 512, 128):  # row tiles 3, 7, 11, 15
        out[start:start + 32] += 1
    c = compare(out, ref, blocks=MATMUL, **TOL)
    assert c.pattern == "every_kth" and "every 4th row block from block 3" in c.error_map["pattern_text"]


def test_the_second_eight_rows_of_every_mma_fragment_on_the_tasks_own_blocks():
    """day 11's ldmatrix bug: rows 8-15 of each 16-row fragment of C wrong, seen on matmul's 8 x 8 blocks."""
    case = Task.load("tasks.matmul").materialize(torch, shape=(37, 1, 129), dtype="fp32", params={}, seed=1,
                                                 device="cpu")
    ref = case.reference["c"]
    out = ref.float().clone()
    out[8:16] += 1
    out[24:32] += 1
    c = compare(out, ref, blocks=case.blocks("c"), **TOL)
    assert c.pattern == "every_kth" and "every 2nd row block from block 1 (8 rows each)" in c.error_map["pattern_text"]


def test_a_triangle_above_or_below_the_diagonal():
    ref, out = _field((128, 128))
    upper = torch.ones(128, 128, dtype=torch.bool).triu(1)
    above = out.clone()
    above[upper] += 1
    assert _pattern(above, ref, MATMUL) == "above_diagonal"
    below = out.clone()
    below[upper.T] += 1
    assert _pattern(below, ref, MATMUL) == "below_diagonal"
    # attention's columns are head-dim columns, not keys: no diagonal there
    assert not ATTENTION.diagonal


def test_one_head_one_batch_and_one_panel():
    ref, out = _field((2, 3, 129, 64))
    head = out.clone()
    head[:, 1] += 1
    c = compare(head, ref, blocks=ATTENTION, **TOL)
    assert c.pattern == "one_head" and "head 1 (in every batch)" in c.error_map["pattern_text"]
    batch = out.clone()
    batch[1] += 1
    assert _pattern(batch, ref, ATTENTION) == "one_batch"
    single = out.clone()
    single[1, 2, :40] += 1
    c = compare(single, ref, blocks=ATTENTION, **TOL)
    assert c.pattern == "one_head" and "batch 1, head 2" in c.error_map["pattern_text"]


def test_the_first_block_of_every_head():
    ref, out = _field((1, 4, 129, 64))
    out[:, :, :32] += 1
    assert _pattern(out, ref, ATTENTION) == "first_block"


def _softmax_case(shape, seed=0):
    t = Task.load("tasks.softmax")
    case = t.materialize(torch, shape=shape, dtype="fp32", params={}, seed=seed, device="cpu")
    return case, case.reference["out"], torch.softmax(case.inputs["x"].double(), -1).float()


def test_rows_with_a_probes_property_are_named_from_the_case():
    case, ref, out = _softmax_case((64, 1000))
    rows = torch.tensor([3, 17, 40])
    case.inputs["x"][rows] -= 1000  # these rows' max is now very negative (the very_negative probe's kind)
    case.reference = Task.load("tasks.softmax").reference(case)
    ref = case.reference["out"]
    out = torch.softmax(case.inputs["x"].double(), -1).float()
    out[rows] = float("nan")  # a running max that starts at 0: sum 0, NaN
    c = compare(out, ref, blocks=case.blocks("out"), **TOL)
    assert c.category == "nonfinite" and c.pattern == "probe_rows"
    assert "whose max is very negative" in c.error_map["pattern_text"]


def test_a_probe_case_whose_rows_all_have_the_property_and_all_fail_names_nothing():
    # no row without the property is there to be right: the map cannot tell the property from a kernel wrong
    # everywhere (day02's all_zeros named probe_rows so on a 1x1 case, whose one row has "one finite entry")
    t = Task.load("tasks.softmax")
    case = t.materialize(torch, shape=(64, 1000), dtype="fp32", params={}, seed=1, device="cpu",
                         probe="very_negative")
    out = torch.full_like(case.outputs["out"], float("nan"))
    c = compare(out, case.reference["out"], blocks=case.blocks("out"), **TOL)
    assert c.pattern is None
    # the property is recorded all the same, so the detectors can be run again on the JSON
    assert c.error_map["properties"] == [["whose max is very negative (below -100)", 64, 64, 64, 64]]


def test_a_property_the_wrong_rows_do_not_share_names_nothing():
    case, ref, out = _softmax_case((64, 1000))
    case.inputs["x"][[3, 17]] -= 1000
    case.reference = Task.load("tasks.softmax").reference(case)
    out = torch.softmax(case.inputs["x"].double(), -1).float()
    out[[5, 30, 51]] *= 1.5  # other rows than the property's, scattered
    assert _pattern(out, case.reference["out"], case.blocks("out")) is None


@pytest.mark.parametrize("how", ["uniform", "scattered", "l2_only", "everything_unwritten_but_one"])
def test_fields_that_show_no_pattern(how):
    ref, out = _field((256, 256), seed=3)
    if how == "uniform":
        out *= 1.01
    elif how == "scattered":
        g = torch.Generator().manual_seed(5)
        out[torch.rand(out.shape, generator=g) < 0.05] += 1
    elif how == "l2_only":  # every element inside atol + rtol|ref|, the relative L2 bound alone exceeded
        out = (ref + 0.9e-4).float()
    else:
        keep = out[100, 100].item()
        poison(out)
        out[100, 100] = keep
    c = compare(out, ref, blocks=MATMUL, **TOL)
    assert not c.ok and c.pattern is None and c.error_map["pattern"] is None, c.error_map["pattern_text"]
    assert "pattern" not in c.message


# -- folding onto each task's blocks ----------------------------------------------------------------------------
@pytest.mark.parametrize("task,shape,params,output,block,grid,rows,cols", [
    ("tasks.softmax", (64, 1000), {}, "out", [4, 32], (1, 16, 32), "row", "column"),
    ("tasks.softmax", (4096, 4096), {}, "out", [256, 128], (1, 16, 32), "row", "column"),
    ("tasks.softmax", (3, 4097), {}, "out", [1, 256], (1, 3, 17), "row", "column"),  # 129 column blocks: 8 a cell
    ("tasks.matmul", (100, 200, 64), {}, "c", [8, 8], (1, 13, 25), "row", "column"),
    ("tasks.matmul", (2176, 2176, 8), {}, "c", [256, 128], (1, 9, 17), "row", "column"),
    ("tasks.matmul_tc", (37, 1, 5), {}, "c", [8, 8], (1, 5, 1), "row", "column"),
    ("tasks.attention", (2, 3, 129, 64), {"causal": True}, "o", [16, 16], (6, 9, 4), "query", "dim"),
    ("tasks.attention", (2, 3, 129, 64), {"causal": True}, "lse", [16, 1], (6, 9, 1), "query", None),
    ("tasks.attention_bwd", (1, 2, 37, 128), {"causal": False}, "dk", [16, 16], (2, 3, 8), "key", "dim"),
    ("tasks.attention_bwd", (1, 2, 37, 128), {"causal": False}, "dq", [16, 16], (2, 3, 8), "query", "dim"),
    ("tasks.attention", (2, 1, 1000, 128), {"causal": False}, "o", [64, 16], (2, 16, 8), "query", "dim"),
])
def test_each_task_folds_its_outputs_onto_its_own_blocks(task, shape, params, output, block, grid, rows, cols):
    t = Task.load(task)
    case = t.materialize(torch, shape=shape, dtype="fp32", params=params, seed=2, device="cpu")
    ref = case.reference[output]
    out = (ref * 1.5).float()
    c = compare(out, ref, blocks=case.blocks(output), **TOL)
    m = c.error_map
    assert m["block"] == block and (len(m["grid"]), len(m["grid"][0]), len(m["grid"][0][0])) == grid
    assert (m["rows"], m["cols"]) == (rows, cols)
    assert len(m["ratios"]) == grid[0] and len(m["ratios"][0][0]) == grid[2]


def test_every_task_of_the_course_names_its_panels_as_the_patterns_do(course):
    """one_<panel> patterns are hint keys (PATTERNS): a task's panels must be among them."""
    for day in course.days:
        for ex in day.exercises:
            t = Task.load(ex.task)
            if not t.has("error_blocks"):
                continue
            for name in [o.name for o in ex.outputs] or ["out", "c", "o"]:
                spec = t.module.error_blocks(name, (2, 3, 8, 16), **{})
                assert spec is None or all(f"one_{p}" in error_map.PATTERNS for p in spec.get("panels", ()))


# -- drawing it -------------------------------------------------------------------------------------------------
def _small_map():
    ref, out = _field((100, 200))
    out[96:, :64] += 1e-2  # shade 2: 10-100x the tolerance
    out[96:, 64:128] = float("nan")
    poison(out[96:, 192:])
    c = compare(out, ref, blocks=MATMUL, **TOL)
    return c


GRID = """\
error map: one cell = 32 rows x 32 columns (of 100 x 200)
  .......
  .......
  .......
  22!!.._
  . right · 1-9 wrong, worst error up to 10^n x the tolerance · _ never written · ! NaN/inf"""


def test_the_text_grid_without_colour_exactly():
    c = _small_map()
    assert c.category == "unwritten"
    assert "\n".join(error_map.text(c.error_map, width=200)) == GRID
    assert error_map.strip(c.error_map) == "[...!] last_tile"  # a row's worst: NaN before unwritten
    console = Console(record=True, width=200, no_color=True)
    report.render_map(console, c.error_map)
    assert console.export_text() == "".join(f"    {line}\n" for line in GRID.splitlines())


def test_panels_side_by_side_wrap_at_the_width():
    ref, out = _field((2, 3, 40, 32))
    out[:, 1] += 1
    c = compare(out, ref, blocks=ATTENTION, **TOL)
    lines = error_map.text(c.error_map, width=24)
    assert lines[1] == "  b0 h0  b0 h1  b0 h2" and lines[2] == "  ..     44     .."
    assert lines[4] == "  b1 h0  b1 h1  b1 h2"  # the second row of panels
    assert error_map.strip(c.error_map) == "[..44....44..] one_head"


def test_the_png_is_written(tmp_path):
    c = _small_map()
    path = tmp_path / "map.png"
    error_map.png(c.error_map, path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# -- the map as data, and where it goes ---------------------------------------------------------------------------
def test_the_map_round_trips_through_json_and_the_kept_result(tmp_path):
    from grader import results

    c = _small_map()
    assert json.loads(json.dumps(c.as_dict())) == c.as_dict()
    case = {"kind": "correctness", "dtype": "fp32", "label": "100x200x64", "ok": False, "category": c.category,
            "message": c.message, "pattern": c.pattern, "error_map": c.error_map}
    results.save(tmp_path, "day07", "student", [{"exercise": "matmul", "status": "fail", "cases": [case]}])
    kept = results.last(tmp_path, "day07")["exercises"][0]["cases"][0]
    assert kept["error_map"] == c.error_map and kept["pattern"] == "last_tile"
    png = results.map_path(tmp_path, "day07", "student", "matmul")
    assert png.read_bytes()[:4] == b"\x89PNG"
    # fixed: the next result has no failing case, and the old picture goes
    results.save(tmp_path, "day07", "student", [{"exercise": "matmul", "status": "pass", "cases": []}])
    assert not png.exists()


def test_the_classroom_formats_carry_the_map_as_text():
    from grader.classroom import formats

    c = _small_map()
    case = {"kind": "correctness", "dtype": "fp32", "label": "100x200x64", "ok": False, "category": c.category,
            "message": c.message, "pattern": c.pattern, "error_map": c.error_map}
    doc = {"day": "day07", "exercises": [{"exercise": "matmul", "status": "fail", "message": f"1 case(s) failed; "
                                          f"first: fp32 100x200x64: {c.message}", "cases": [case]}]}
    gs = formats.gradescope(doc, {"matmul": 10})["tests"][0]["output"]
    assert "```\n100x200x64:\nerror map: one cell = 32 rows" in gs and "  22!!.._" in gs
    assert "  22!!.._" in formats.junit(doc, {"matmul": 10})
    cl = formats.classroom(doc, {"matmul": 10})["tests"][0]
    assert "pattern last_tile" in cl["message"] and "  22!!.._" in cl["output"]


def _failed(pattern, grid, shape, label="case"):
    """A failed case as the JSON has it: its pattern beside the map it came from (what choose() reads of it)."""
    return {"kind": "correctness", "dtype": "fp32", "label": label, "ok": False, "category": "mismatch",
            "message": "wrong", "pattern": pattern,
            "error_map": {"grid": [grid], "shape": list(shape), "block": [8, 8], "natural_block": [8, 8]}}


def test_grade_summary_names_each_failing_exercises_pattern():
    from grader.classroom.grade import patterns

    # the pattern of the map that says the most (sixteen cells), not of the first failing case (two cells)
    doc = {"exercises": [{"exercise": "matmul", "cases": [{"ok": True, "category": "pass"},
                                                          _failed("every_kth", [".4"], (1, 37)),
                                                          _failed("last_tile", ["...4"] * 4, (100, 200))]},
                         {"exercise": "other", "cases": [{"ok": False, "category": "mismatch"}]}]}
    assert patterns(doc) == {"matmul": "last_tile"} and patterns(None) == {}


def test_hints_key_on_a_pattern_before_the_category(course):
    from grader.check.verdict import ExerciseResult, hint

    ex = course.day("day07").exercises[0]
    assert "last_tile" in ex.hints, "course.yaml's matmul has a last_tile hint"
    case = _failed("last_tile", ["...4"] * 4, (100, 200), "100x200x64")
    # the hint follows the map the report draws (the most cells), not a first case of two cells
    res = ExerciseResult("day07", ex.name, "student", "days/day07", 1, status="fail",
                         cases=[_failed("every_kth", [".4"], (1, 37), "1x37x5"), case])
    assert hint(res, ex, course.hints) == ex.hints["last_tile"]
    res.cases = [{**case, "pattern": "every_kth"}]  # no hint for it: the category's
    assert hint(res, ex, course.hints) == (ex.hints.get("every_kth") or ex.hints["mismatch"])
    res.cases = [{**case, "pattern": None}]
    assert hint(res, ex, course.hints) == ex.hints["mismatch"]


def test_hints_for_an_unknown_pattern_are_refused(tmp_path):
    from grader.course import load_course

    text = (tmp_path / "c.yaml")
    src = (__import__("tests.conftest", fromlist=["ROOT"]).ROOT / "course.yaml").read_text()
    text.write_text(src.replace("hints:\n  not_implemented:", "hints:\n  last_tiel: \"typo\"\n  not_implemented:", 1))
    with pytest.raises(Exception, match="last_tiel"):
        load_course(text)


# -- the passing path ---------------------------------------------------------------------------------------------
def test_a_passing_output_builds_no_map(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("a map built for a passing output")

    monkeypatch.setattr(error_map, "build", refuse)
    asked = []
    monkeypatch.setattr(Task, "blocks", lambda self, case, name: asked.append(name))  # nor asks the task
    ref, out = _field((256, 256))
    c = compare(out, ref, blocks=MATMUL, **TOL)
    assert c.ok and c.error_map is None and c.pattern is None
    case = Task.load("tasks.matmul").materialize(torch, shape=(64, 64, 32), dtype="fp32", params={}, seed=1,
                                                 device="cpu")
    from grader.protocol import check

    ex = type("Ex", (), {"outputs": [], "tolerance": lambda self, n, d: type("T", (), dict(
        atol=1e-4, rtol=1e-4, rel_l2=3e-5, l2_floor=0.0))()})()
    got = {"c": (case.reference["c"]).float()}
    [r] = check(got, case, ex)
    assert r.ok and "error_map" not in r.stats and "pattern" not in r.stats and not asked


# -- end to end on the CPU: the real runner and worker, a Python op ----------------------------------------------
COURSE = '''
title: Error map test
repository: https://example.invalid/course
days:
  - id: day01
    title: Softmax
    track: tools
    status: ready
    exercises:
      - name: softmax
        task: tasks.softmax
        op: softmax
        signature: "softmax(x, out) -> None"
        build: python
        sources: [softmax.py]
        args: [x, out]
        dtypes: [fp32]
        correctness: [[100, 300]]
        tolerances:
          fp32: {atol: 1.0e-8, rtol: 4.0e-5, rel_l2: 2.5e-5}
        hints:
          last_tile: "the last rows: ceil-divide"
        points: 1
'''


def test_a_check_on_the_cpu_names_the_pattern_and_draws_the_map(tmp_path):
    from grader.check.job import make_job
    from grader.check.runner import run_job
    from grader.check.verdict import hint
    from grader.course import load_course

    (tmp_path / "course.yaml").write_text(COURSE)
    src = tmp_path / "solutions" / "day01"
    src.mkdir(parents=True)
    (src / "softmax.py").write_text(textwrap.dedent("""\
        import torch


        def softmax(x, out):
            rows = x.shape[0] // 32 * 32  # a grid that rounds down: the last partial block of rows never written
            out[:rows] = torch.softmax(x[:rows].float(), -1)
        """))
    course = load_course(tmp_path / "course.yaml")
    day = course.day("day01")
    ex = day.exercises[0]
    job = make_job(course=course, root=tmp_path, day=day, ex=ex, src_dir=src, seed=3, device="cpu")
    res = run_job(job, variant="solution")
    [case] = res.cases
    assert case["category"] == "unwritten" and case["pattern"] == "last_tile"
    assert case["error_map"]["grid"][0][-1] == "_" * 10 and "pattern last_tile" in res.message
    assert hint(res, ex, course.hints) == "the last rows: ceil-divide"
    console = Console(record=True, width=120, no_color=True)
    report.render(console, res, ex, hint(res, ex, course.hints))
    text = console.export_text()
    assert "out: error map: one cell = 8 rows x 32 columns (of 100 x 300)" in text and "    ..........\n" in text
    assert "    __________\n" in text and "hint: the last rows: ceil-divide" in text
    assert "rows 96-99 of 100" in case["message"]
    assert report.compact(res, ex)[1] == "  map fp32 100x300: [............_] last_tile"
