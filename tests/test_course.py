import copy

import pytest
import yaml

from grader.course import load_course, normalize_day_id
from grader.errors import GraderError


def test_course_lists_twenty_days_with_mandatory_milestones(course):
    assert [d.id for d in course.days] == [f"day{i:02d}" for i in range(1, 21)]
    mandatory = {d.id for d in course.days if d.mandatory}
    assert mandatory == {"day10", "day20"}
    assert "FlashAttention-2" in course.day("day10").title and "FlashAttention-2" in course.day("day20").title


def test_ready_days_declare_complete_exercises(course):
    ready = [d for d in course.days if d.status == "ready"]
    # Days 1-10 (through the first mandatory milestone) are ready; later days become ready as they are written.
    assert {f"day{i:02d}" for i in range(1, 11)} <= {d.id for d in ready}
    for d in ready:
        for ex in d.exercises:
            assert set(ex.dtypes) <= set(ex.tolerances)
            assert ex.points > 0 or ex.optional  # an optional step may be worth nothing
            assert (ex.threshold or 0) > 0 if ex.timed else ex.threshold is None  # untimed: pass on correctness
            shapes = [c.shape for c in ex.correctness]
            # awkward shapes: a size-1 dimension (one row, one column, one query) and a size that is no
            # multiple of 32 (a ragged tile), in some case of every exercise
            assert any(1 in s for s in shapes)
            assert any(any(x % 32 for x in s) for s in shapes)
    assert set(course.day("day03").exercises[0].dtypes) == {"fp32", "fp16", "bf16"}


def test_day_ids_normalize():
    assert normalize_day_id("7") == "day07"
    assert normalize_day_id("day7") == "day07"
    assert normalize_day_id("Day07") == "day07"
    with pytest.raises(GraderError, match="no day 'day42'"):
        load_course(__import__("tests.conftest", fromlist=["ROOT"]).ROOT / "course.yaml").day("day42")


def _broken(tmp_path, root, mutate):
    raw = yaml.safe_load((root / "course.yaml").read_text())
    raw = copy.deepcopy(raw)
    mutate(raw)
    p = tmp_path / "course.yaml"
    p.write_text(yaml.safe_dump(raw))
    with pytest.raises(GraderError) as e:
        load_course(p)
    return str(e.value)


@pytest.mark.parametrize("mutate, expected", [
    (lambda r: r["days"][3]["exercises"][0].update(threshold="fast"),
     "days[3] (day04).exercises[0].threshold: Input should be a valid number"),
    (lambda r: r["days"][0].pop("title"), "days[0] (day01).title: Field required"),
    (lambda r: r["days"][0].update(status="done"), "days[0] (day01).status: Input should be 'ready' or 'planned'"),
    (lambda r: r["days"][0]["exercises"][0].update(dtypes=["fp8"]), "dtypes[0]: Input should be 'fp32'"),
    (lambda r: r["days"][0]["exercises"][0].update(correctness=[[0, 3]]), "every dimension must be a positive"),
    (lambda r: r["days"][1]["exercises"][0].update(baseline={"solution": "day99"}), "is not a ready day"),
    (lambda r: r["days"][1]["exercises"][0].update(baseline={"library": True, "ceiling": True}),
     "give exactly one of"),
    (lambda r: r["days"][1]["exercises"][0].update(baseline={"library": True, "exercise": "softmax"}),
     "give `solution:` too"),
    (lambda r: r["days"][1]["exercises"][0].update(baseline={"solution": "day02"}), "cannot be its own baseline"),
    (lambda r: r["days"][1]["exercises"][0].update(baseline={"solution": "day01", "exercise": "nope"}),
     "has no exercise 'nope'"),
    (lambda r: r["days"][1]["exercises"][0].update(baseline={"solution": "day01", "library": True}),
     "exactly one of"),
    (lambda r: r["days"][4].update(prerequisites=["day07"]), "prerequisite 'day07' must come before it"),
    (lambda r: r["days"][4].update(id="day5"), "day id must look like day01"),
    (lambda r: r["days"][2]["exercises"][0].update(tolerances={"fp32": {"atol": 0, "rtol": 0, "rel_l2": 1e-5}}),
     "tolerances missing for dtype fp16"),
    (lambda r: r["days"][2]["exercises"][0]["tolerances"].update(fp32={"atol": 0, "rtol": 0, "rel_l2": 1.0}),
     "rel_l2: Input should be less than 1"),
    (lambda r: r["days"][0]["exercises"][0].update(sources=["../../etc/passwd"]), "must be a file name inside"),
    (lambda r: r["days"][0].update(exercises=[]), "a ready day must list at least one exercise"),
    (lambda r: r["days"][0]["exercises"][0].update(typo_key=1), "typo_key: Extra inputs are not permitted"),
    (lambda r: r.update(limts={"case_s": 5}), "limts: Extra inputs are not permitted"),  # a top-level typo too
    (lambda r: r["days"][0]["exercises"][0].update(build="python"), "lists its Python file (the one defining the op) first"),
    (lambda r: r["days"][0]["exercises"][0].update(sources=["softmax.py"]), "at least one C++/CUDA source besides"),
    (lambda r: r["days"][1]["exercises"][0].update(uses=["../day01/softmax.cu"]), "must be `dayNN/file.cu`"),
    (lambda r: r["days"][1]["exercises"][0].update(sanitize_shapes=[[1, 1]]), "but there are none"),
    (lambda r: r["days"][1]["exercises"][0].update(sanitize=["racecheck"], sanitize_shapes=[[7, 7, 7]]),
     "7x7x7 is not one of the correctness shapes"),
    (lambda r: r["days"][1]["exercises"][0].update(uses=["day03/softmax.cu"]), "day03 is not a day before day02"),
    (lambda r: r["days"][1]["exercises"][0].update(uses=["day01/softmax.cu"], build="python", sources=["s.py"]),
     "a `build: python` exercise compiles its kernels itself"),
    (lambda r: r["days"][0]["exercises"][0].update(build="python", sources=["s.py"], extra_cuda_cflags=["-G"]),
     "extra_cuda_cflags apply to torch extensions"),
])
def test_malformed_course_names_the_key(tmp_path, root, mutate, expected):
    assert expected in _broken(tmp_path, root, mutate)


def test_invalid_yaml_and_missing_file(tmp_path):
    p = tmp_path / "course.yaml"
    p.write_text("days: [unclosed\n")
    with pytest.raises(GraderError, match="not valid YAML"):
        load_course(p)
    with pytest.raises(GraderError, match="not found"):
        load_course(tmp_path / "nope.yaml")
    p.write_text("- a list\n")
    with pytest.raises(GraderError, match="expected a mapping"):
        load_course(p)


def test_baselines_resolve_by_op_or_by_exercise_name(course):
    def base(day, name):
        ex = next(e for e in course.day(day).exercises if e.name == name)
        found = course.baseline_exercise(ex)
        return None if found is None else (found[0].id, found[1].name)

    assert base("day06", "matmul") == ("day06", "matmul_uncoalesced")  # same day, named
    assert base("day08", "matmul_2d") == ("day07", "matmul")           # other op, named
    assert base("day07", "matmul") == ("day06", "matmul")              # same op
    assert base("day09", "matmul_vec") == ("day08", "matmul_2d")       # the ladder: other day, named
    assert base("day09", "matmul_warptile") == ("day09", "matmul_vec")  # same day, named
    matmul = next(e for e in course.day("day09").exercises if e.name == "matmul")
    assert base("day09", "matmul") is None and matmul.baseline.ceiling


def test_variants_multiply_cases_and_label_them(course):
    from grader.check.plan import plan

    ex = course.day("day07").exercises[0].model_copy(update={"variants": [{"causal": False}, {"causal": True}]})
    cases = plan(ex, ["fp32"])
    corr = [c for c in cases if c.kind == "correctness"]
    assert len(corr) == 2 * len(ex.correctness)
    assert [c.case.params for c in corr[:2]] == [{"causal": False}, {"causal": True}]
    assert corr[0].label == "1x1x1" and corr[1].label == "1x1x1 causal"
    # a case's own params win over the variant's; each case keeps its own seed
    c = ex.correctness[0].model_copy(update={"params": {"causal": True}}).with_params({"causal": False})
    assert c.params == {"causal": True}
    assert len({p.seed(1) for p in corr}) == len(corr)


def test_class_thresholds_need_a_timed_exercise_one_bar_a_class_and_a_reason():
    from pydantic import ValidationError

    from grader.course import Exercise

    base = {"name": "e", "task": "tasks.softmax", "op": "softmax", "signature": "s", "sources": ["a.cu"],
            "dtypes": ["fp32"], "correctness": [[1, 1]], "tolerances": {"fp32": {"atol": 1e-5, "rtol": 1e-5, "rel_l2": 1e-5}},
            "benchmark": [[4, 4]], "baseline": {"library": True}, "threshold": 1.2, "points": 1}
    bar = {"capability": ["8.6"], "threshold": 1.1, "reason": "one block an SM"}
    assert Exercise.model_validate({**base, "class_thresholds": [bar]}).threshold_on("8.6") == (1.1, "one block an SM")
    for bad, words in (({"threshold": None, "benchmark": [], "baseline": None}, "give `threshold:` too"),
                       ({"class_thresholds": [bar, {**bar, "threshold": 1.0}]}, "one bar"),
                       ({"class_thresholds": [{**bar, "reason": ""}]}, "at least 1 character"),
                       ({"class_thresholds": [{**bar, "capability": ["sm_86"]}]}, "pattern")):
        with pytest.raises(ValidationError, match=words):
            Exercise.model_validate({**base, "class_thresholds": [bar], **bad})
