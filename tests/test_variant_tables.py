"""A variant's tables (scripts/update_readmes.py --block: a solution checked again with one of its knobs, e.g. day
20's mma.sync walk) are written from measured/ alone: each measured/<day>/<block>-<gpu>.json that carries its `how`
gives back exactly the README block of that name."""
import importlib.util
import json
import re
import sys

import pytest

from tests.conftest import ROOT

spec = importlib.util.spec_from_file_location("update_readmes", ROOT / "scripts" / "update_readmes.py")
update_readmes = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = update_readmes
spec.loader.exec_module(update_readmes)

def _is_variant(doc) -> bool:
    return isinstance(doc, dict) and any(isinstance(v, dict) and "how" in v for v in doc.values())


VARIANTS = sorted(p for p in (ROOT / "measured").glob("day*/*.json") if _is_variant(json.loads(p.read_text())))


def test_there_is_a_variant_to_check():
    assert VARIANTS, "no measured variant: day 20's mma-sync-<gpu>.json should be one"


@pytest.mark.parametrize("path", VARIANTS, ids=[str(p.relative_to(ROOT)) for p in VARIANTS])
def test_a_variants_block_is_what_its_measurement_writes(path, course):
    block = path.stem.rsplit("-", 1)[0]  # mma-sync-h200 -> mma-sync
    for day_id, data in json.loads(path.read_text()).items():
        text = (ROOT / "days" / day_id / "README.md").read_text()
        m = re.search(rf"<!-- {re.escape(block)}:begin -->\n(.*?)\n<!-- {re.escape(block)}:end -->", text, re.S)
        assert m, f"days/{day_id}/README.md has no {block} block"
        assert m.group(1) == update_readmes.variant_table(day_id, data, course), f"{path.name}: rerun --block {block}"


def test_an_exercise_the_machine_could_not_run_gets_no_table_and_the_others_keep_theirs():
    day = {"day": "day11", "exercises": [{"exercise": "matmul_wgmma", "status": "pass", "speedup": 0.9, "cases": []},
                                         {"exercise": "matmul_cute", "status": "env_error", "speedup": None,
                                          "cases": []}]}
    assert update_readmes.drop_unrun(day) == ["matmul_cute"]
    assert [e["exercise"] for e in day["exercises"]] == ["matmul_wgmma"]
    assert update_readmes.drop_unrun(day) == []
