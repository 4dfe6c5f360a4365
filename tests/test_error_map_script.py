"""scripts/error_maps.py on the CPU: the planted copy it checks is the GPU suite's (tests/known_wrong.py), and from a
check's result it writes the table row, the map's PNG and its text. The checks themselves need a GPU."""
import json

import torch

from grader.check.compare import compare, poison
from grader.check.error_map import Blocks
from tests.conftest import ROOT, load_script
from tests.known_wrong import KNOWN_WRONG, bug_id, check_args, check_env, plant

BUG = next(b for b in KNOWN_WRONG if b["name"] == "grid_rounds_down_last_rows_unwritten")


def _script():
    return load_script(ROOT / "scripts" / "error_maps.py")


def test_every_pattern_a_known_wrong_kernel_expects_is_one_the_detectors_name():
    from grader.check.error_map import PATTERNS

    unknown = [(b["name"], b["pattern"]) for b in KNOWN_WRONG if "pattern" in b and b["pattern"] not in PATTERNS]
    assert not unknown, f"{unknown}: use {', '.join(PATTERNS)}"


def test_the_planted_copy_and_its_check_arguments(tmp_path):
    src = plant(BUG, tmp_path)
    assert src == tmp_path / "day01" and BUG["replace"] in (src / BUG["file"]).read_text()
    assert BUG["find"] not in (src / BUG["file"]).read_text()
    assert check_args(BUG, src)[:3] == ["day01", "--dir", str(src)] and check_env(BUG) == {"GRADER_SANITIZE": "0"}


def test_an_edit_that_no_longer_finds_its_text_fails_loudly(tmp_path):
    import pytest

    with pytest.raises(AssertionError, match="no longer in the solution"):
        plant({**BUG, "find": "text that is in no solution"}, tmp_path)


def test_a_kept_result_becomes_a_row_a_png_and_the_text_grid(tmp_path, capsys):
    ref = torch.randn(100, 300, dtype=torch.float64)
    out = ref.float().clone()
    poison(out[96:])
    c = compare(out, ref, atol=1e-8, rtol=4e-5, rel_l2=2.5e-5, blocks=Blocks(block=(1, 32), diagonal=True))
    emap = {**c.error_map, "output": "out"}
    case = {"kind": "correctness", "dtype": "fp32", "label": "100x300", "ok": False, "category": c.category,
            "message": c.message, "pattern": c.pattern, "error_map": emap}
    doc = {"day": "day01", "exercises": [{"exercise": "softmax", "status": "fail", "cases": [
        {"kind": "correctness", "dtype": "fp32", "label": "1x1", "ok": True, "category": "pass"}, case]}]}
    name = bug_id(BUG)
    (tmp_path / f"{name}.json").write_text(json.dumps(doc))
    code = _script().main(["--out", str(tmp_path), "-k", name])
    printed = capsys.readouterr().out
    assert code == 0, printed
    row = json.loads((tmp_path / "table.json").read_text())[0]
    assert (row["pattern"], row["category"], row["output"], row["case"]) == ("last_tile", "unwritten", "out",
                                                                             "fp32 100x300")
    assert f"| day01 | {BUG['name']} | `{BUG['replace']}` | fp32 100x300 (out) | unwritten | last_tile |" in printed
    assert (tmp_path / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    assert "__________" in (tmp_path / f"{name}.txt").read_text()


def test_a_kernel_that_fails_otherwise_than_by_a_wrong_output_is_listed_unchecked(tmp_path, capsys):
    hang = next(b for b in KNOWN_WRONG if b["category"] == "timeout")
    assert _script().main(["--out", str(tmp_path), "-k", bug_id(hang)]) == 0
    row = json.loads((tmp_path / "table.json").read_text())[0]
    assert row["skipped"].startswith("fails as timeout: no output compared wrong") and not (tmp_path / "state").exists()


def test_without_a_gpu_a_kernel_not_yet_checked_says_so(tmp_path, capsys):
    if torch.cuda.is_available():
        import pytest

        pytest.skip("this machine has a GPU: the check would run")
    code = _script().main(["--out", str(tmp_path), "-k", bug_id(BUG)])
    assert code == 0
    row = json.loads((tmp_path / "table.json").read_text())[0]
    assert row["error"].startswith("no CUDA GPU here")


def _old_case(label, grid, block, extent, pattern, text):
    """A case as the H100 run of 2026-12-06 recorded it: the detectors of then named its pattern, and its map kept no
    properties of its rows."""
    emap = {"shape": list(extent), "panels": [], "panel_sizes": [], "panels_per_cell": 1, "rows": "row",
            "cols": "column", "natural_block": [1, 32], "block": list(block), "extent": list(extent), "diagonal": True,
            "grid": [grid], "ratios": [], "legend": "", "pattern": pattern, "pattern_text": text, "output": "out"}
    message = "wrong values" + (f"; pattern {pattern}: {text}" if pattern else "")
    return {"kind": "correctness", "dtype": "fp32", "label": label, "ok": False, "category": "mismatch",
            "message": message, "pattern": pattern, "error_map": emap,
            "checks": [{"name": "out", "ok": False, "message": message, "pattern": pattern, "error_map": dict(emap)}]}


def test_rederive_runs_this_trees_detectors_and_choice_on_the_kept_grids(tmp_path, capsys):
    # the first failing case, one cell, named probe_rows then; a larger one whose wrong rows all have a property
    one = _old_case("1x1", ["5"], (1, 32), (1, 1), "probe_rows", "every row is wrong, and every row of this case is "
                    "a row with one finite entry (the random cases' rows are not): look at how the kernel treats such rows")
    only = ("only rows whose max is very negative (below -100) are wrong: 2 of the 8 rows, all among the 3 rows whose "
            "max is very negative (below -100); the kernel mistreats such rows")
    probe = _old_case("8x64 [very_negative]", ["..", "55", "..", "..", "55", "..", "..", ".."], (1, 32), (8, 64),
                      "probe_rows", only)
    doc = {"day": "day01", "exercises": [{"exercise": "softmax", "status": "fail", "cases": [one, probe]}]}
    name = bug_id(BUG)
    (tmp_path / f"{name}.json").write_text(json.dumps(doc))
    assert _script().main(["--out", str(tmp_path), "-k", name, "--rederive"]) == 0
    row = json.loads((tmp_path / "table.json").read_text())[0]
    # the larger case is shown; its property, read back from the sentence, still names probe_rows
    assert (row["case"], row["pattern"], row["cells"]) == ("fp32 8x64 [very_negative]", "probe_rows", 16)
    text = (tmp_path / f"{name}.txt").read_text()
    assert text.count("; pattern probe_rows: only rows whose max is very negative") == 1
    # the one-cell case names nothing now (kept in the result file untouched: --rederive writes no JSON)
    assert json.loads((tmp_path / f"{name}.json").read_text())["exercises"][0]["cases"][0]["pattern"] == "probe_rows"
    doc["exercises"][0]["cases"] = [one]
    (tmp_path / f"{name}.json").write_text(json.dumps(doc))
    assert _script().main(["--out", str(tmp_path), "-k", name, "--rederive"]) == 0
    assert json.loads((tmp_path / "table.json").read_text())[0]["pattern"] is None


def test_rederive_checks_nothing_where_no_result_is_kept(tmp_path, capsys):
    assert _script().main(["--out", str(tmp_path), "-k", bug_id(BUG), "--rederive"]) == 0
    assert json.loads((tmp_path / "table.json").read_text())[0]["error"] == "no kept result to run the detectors on"


def test_an_exercise_that_could_not_run_says_why_not_no_case_failed(tmp_path, capsys):
    doc = {"day": "day01", "exercises": [{"exercise": "softmax", "status": "env_error", "cases": [],
                                          "message": "day01.softmax needs the Python package `cutlass`"}]}
    (tmp_path / f"{bug_id(BUG)}.json").write_text(json.dumps(doc))
    assert _script().main(["--out", str(tmp_path), "-k", bug_id(BUG), "--rederive"]) == 0
    row = json.loads((tmp_path / "table.json").read_text())[0]
    assert row["error"] == "not run: day01.softmax needs the Python package `cutlass`"
