"""scripts/update_readmes.py on a run of some of a day's exercises (`grader check dayNN --exercise X`): X's table is
replaced, the day's other tables are kept with the dates they were measured on, and nothing is lost."""
import importlib.util
import sys

from tests.conftest import ROOT

spec = importlib.util.spec_from_file_location("update_readmes_merge", ROOT / "scripts" / "update_readmes.py")
update_readmes = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = update_readmes
spec.loader.exec_module(update_readmes)

ORDER = ["a", "b", "c"]


def _ex(name, speedup, date=None):
    return {"exercise": name, "speedup": speedup, "cases": [], **({"date": date} if date else {})}


def test_a_run_of_one_exercise_replaces_it_and_keeps_the_others_with_their_dates():
    stored = {"day": "day20", "date": "2026-11-20", "exercises": [_ex("a", 1.0), _ex("b", 2.0), _ex("c", 3.0)]}
    run = {"day": "day20", "date": "2026-11-27", "exercises": [_ex("b", 2.5)]}
    merged = update_readmes.merge_exercises(stored, run, ORDER)
    assert [(e["exercise"], e["speedup"], e["date"]) for e in merged["exercises"]] == [
        ("a", 1.0, "2026-11-20"), ("b", 2.5, "2026-11-27"), ("c", 3.0, "2026-11-20")]
    assert merged["date"] == "2026-11-27"


def test_a_whole_day_run_replaces_every_exercise_and_drops_one_the_course_no_longer_has():
    stored = {"day": "day20", "date": "2026-11-20", "exercises": [_ex("a", 1.0), _ex("gone", 9.0)]}
    run = {"day": "day20", "date": "2026-11-27", "exercises": [_ex("c", 3.0), _ex("a", 1.5), _ex("b", 2.0)]}
    merged = update_readmes.merge_exercises(stored, run, ORDER)
    assert [(e["exercise"], e["date"]) for e in merged["exercises"]] == [
        ("a", "2026-11-27"), ("b", "2026-11-27"), ("c", "2026-11-27")]


def test_without_a_stored_day_the_run_is_kept_as_it_is():
    run = {"day": "day20", "date": "2026-11-27", "exercises": [_ex("b", 2.0)]}
    merged = update_readmes.merge_exercises(None, run, ORDER)
    assert [(e["exercise"], e["date"]) for e in merged["exercises"]] == [("b", "2026-11-27")]


def test_each_table_names_the_date_of_its_own_run(course):
    day = course.day("day05")
    base = {"day": "day05", "date": "2026-11-27", "exercises": []}
    for name, date in (("softmax_vec", "2026-11-20"), ("softmax_regs", "2026-11-27")):
        base["exercises"].append({"exercise": name, "date": date, "status": "pass", "speedup": 1.2, "threshold": 1.1,
                                  "cases": [{"kind": "benchmark", "label": "4x4", "dtype": "fp32", "gbps": 1.0,
                                             "pct_of_copy": 0.5, "speedup": 1.2, "vs_library": 1.0,
                                             "time": {"median_ms": 0.01}}]})
    table = update_readmes.day_table(base, {e.name: e for e in day.exercises}, "NVIDIA H100", "2026-11-27")
    first, second = table.split("**softmax_regs**")
    assert "H100, 2026-11-20, by" in first and "H100, 2026-11-27, by" in second


def test_the_ladder_names_the_gpu_it_is_on_so_a_run_on_another_keeps_it(tmp_path):
    readme = tmp_path / "track.md"
    readme.write_text("# t\n\n<!-- ladder:begin -->\nEach step's solution as **% of copy** (timed in the same run) and, "
                      "after the dot, its GB/s; NVIDIA H100 80GB HBM3, 2026-11-27, from `grader check --solution`.\n"
                      "\n| step |\n<!-- ladder:end -->\n")
    assert update_readmes.ladder_gpu(readme) == "NVIDIA H100 80GB HBM3"
    readme.write_text("# t\n\nno ladder yet\n")
    assert update_readmes.ladder_gpu(readme) is None
