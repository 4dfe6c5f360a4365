"""scripts/error_map_screens.py on the CPU: from a recorded failing result it draws what `grader check` and
`grader watch` print for it (the same report functions), with the pattern and the hint that pattern picks."""
import json

import torch

from grader.check.compare import compare, poison
from grader.check.error_map import Blocks
from tests.conftest import ROOT, load_script


def _recorded(tmp_path):
    ref = torch.randn(100, 300, dtype=torch.float64)
    out = ref.float().clone()
    poison(out[96:])
    c = compare(out, ref, atol=1e-8, rtol=4e-5, rel_l2=2.5e-5, blocks=Blocks(block=(1, 32), diagonal=True))
    case = {"kind": "correctness", "dtype": "fp32", "label": "100x300", "ok": False, "category": c.category,
            "message": c.message, "pattern": c.pattern, "error_map": {**c.error_map, "output": "out"}}
    doc = {"day": "day02", "exercises": [{
        "day": "day02", "exercise": "softmax", "variant": "student", "source": "planted", "seed": 7, "status": "fail",
        "message": "1 case(s) failed", "cases": [
            {"kind": "correctness", "dtype": "fp32", "label": "1x1", "ok": True, "category": "pass"}, case]}]}
    (tmp_path / "day02-rows_past_the_grid.json").write_text(json.dumps(doc))
    return c


def test_the_terminal_and_the_watch_line_show_the_map_pattern_and_its_hint(tmp_path):
    c = _recorded(tmp_path)
    assert c.pattern == "last_tile"
    code = load_script(ROOT / "scripts" / "error_map_screens.py").main(
        [str(tmp_path), "--kernel", "day02-rows_past_the_grid", "--out", str(tmp_path / "shots"),
         "--chromium", str(tmp_path / "no-chromium")])
    assert code == 0
    terminal = (tmp_path / "shots" / "day02-rows_past_the_grid-terminal.svg").read_text()
    watch = (tmp_path / "shots" / "day02-rows_past_the_grid-watch.svg").read_text()
    # rich writes each text run into the SVG; spaces become &#160;
    flat = terminal.replace("&#160;", " ")
    assert "last_tile" in flat and "never written" in flat and "hint:" in flat and "ceil-divide" in flat
    assert "last_tile" in watch.replace("&#160;", " ") and "map fp32" in watch.replace("&#160;", " ")


def test_a_kernel_without_a_recorded_result_is_a_clear_error(tmp_path, capsys):
    code = load_script(ROOT / "scripts" / "error_map_screens.py").main(
        [str(tmp_path), "--kernel", "day02-nothing", "--out", str(tmp_path / "shots")])
    assert code == 2 and "run scripts/error_maps.py first" in capsys.readouterr().err
