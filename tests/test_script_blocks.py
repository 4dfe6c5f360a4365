"""Every table a script writes into a lesson (`<!-- NAME:begin -->` ... `<!-- NAME:end -->`) is what that script writes
from a file committed in measured/: the "Measured" blocks from scripts/update_readmes.py's day_table over a
measured/<track>-<gpu>.json, day 19's ring tables from measured/day19/dist-*.json, a variant's from its own file
(tests/test_variant_tables.py), and each lesson script's table from one of the measured files. A block edited by
hand, or left behind when its script changed, fails here; one that still holds its script's PLACEHOLDER line (it
states no figure) is skipped as not measured yet."""
import copy
import json
import re
import sys

import pytest

from tests.conftest import ROOT, load_script

LESSON_SCRIPTS = ["cute_measure", "cutlass_measure", "day18_measure", "day18_timeline", "day19_measure", "day20_measure",
                  "day20_story", "fma_measure", "pinned_measure", "thunder_measure"]


sys.path[:0] = [str(ROOT / "scripts"), str(ROOT / "scripts" / "lessons")]
UPDATE = load_script(ROOT / "scripts" / "update_readmes.py")
RING = load_script(ROOT / "scripts" / "lessons" / "day19_ring_measure.py")
BLOCKS = [(f.parent.name, m.group(1), m.group(2)) for f in sorted((ROOT / "days").glob("day*/README.md"))
          for m in re.finditer(r"<!-- ([\w.-]+):begin -->\n(.*?)\n<!-- \1:end -->", f.read_text(), re.S)]
DOCS = {p.relative_to(ROOT).as_posix(): json.loads(p.read_text()) for p in sorted((ROOT / "measured").rglob("*.json"))}


def _measured_tables(day, course):
    """day_table of every committed run of the day (measured/<track>-<gpu>.json and the like)."""
    for name, doc in DOCS.items():
        data = doc.get(day) if isinstance(doc, dict) else None
        if isinstance(data, dict) and "exercises" in data and "how" not in data:
            data = copy.deepcopy(data)
            UPDATE.drop_unrun(data)  # as update_readmes.py does: an exercise the machine could not run has no row
            UPDATE._trim(data)
            yield name, UPDATE.day_table(data, {e.name: e for e in course.day(day).exercises},
                                         data["exercises"][0]["info"].get("gpu", "unknown GPU"),
                                         data.get("date") or "unknown date")


def _lesson_tables():
    for script in LESSON_SCRIPTS:
        mod = load_script(ROOT / "scripts" / "lessons" / f"{script}.py")
        for name, doc in DOCS.items():
            try:
                yield f"{script} on {name}", mod.table(doc)
            except Exception:  # noqa: BLE001 -- not this script's file
                continue


@pytest.mark.parametrize("day, block, text", BLOCKS, ids=[f"{d}-{b}" for d, b, _ in BLOCKS])
def test_a_scripts_block_is_what_it_writes_from_measured(day, block, text, course):
    if block == "mma-sync":
        pytest.skip("a variant's block: tests/test_variant_tables.py")
    placeholders = {getattr(load_script(ROOT / "scripts" / "lessons" / f"{s}.py"), "PLACEHOLDER", None) for s in LESSON_SCRIPTS}
    if text in placeholders:  # a script's own "not measured yet" line: it states no figure, and says so
        pytest.skip(f"days/{day}/README.md's {block} block is not measured yet")
    if block == "measured":
        sources = _measured_tables(day, course)
    elif block == RING.BLOCK:
        sources = [("measured/day19/dist-*.json", RING.lesson_block(
            [d for n, d in DOCS.items() if n.startswith("measured/day19/dist-") and "rows" in d]))]
    else:
        sources = _lesson_tables()
    found = [name for name, table in sources if table == text]
    assert found, (f"days/{day}/README.md's {block} block is not what its script writes from any file in measured/: "
                   "rerun the script's --insert (or update_readmes.py) on the run it came from")


TRACKS = [(f.stem, m.group(1)) for f in sorted((ROOT / "tracks").glob("*.md"))
          for m in re.finditer(r"<!-- ladder:begin -->\n(.*?)\n<!-- ladder:end -->", f.read_text(), re.S)]


@pytest.mark.parametrize("track, text", TRACKS, ids=[t for t, _ in TRACKS])
def test_a_tracks_ladder_is_what_update_readmes_writes_from_measured(track, text, course):
    found = []
    for name, doc in DOCS.items():
        if re.fullmatch(rf"measured/{re.escape(track)}-[\w.-]+\.json", name) and isinstance(doc, dict):
            gpus = {d["exercises"][0]["info"].get("gpu") for d in doc.values() if isinstance(d, dict) and d.get("exercises")}
            found += [name for gpu in gpus if UPDATE.ladder(copy.deepcopy(doc), course, gpu) == text]
    assert found, f"tracks/{track}.md's ladder is not what update_readmes.py writes from measured/{track}-<gpu>.json"

