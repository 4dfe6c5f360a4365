"""Figures typed in lessons against the measurements they stand for (measured/claims.yaml): each claim's text is in
its lesson, and every value in it is what its source in measured/ gives, printed as the lesson prints it."""
import json
import math
import re

import pytest
import yaml

from tests.conftest import ROOT

# measured/claims.yaml, then one file per lesson in measured/claims/ (dayNN.yaml)
CLAIMS = [c for p in [ROOT / "measured" / "claims.yaml", *sorted((ROOT / "measured" / "claims").glob("*.yaml"))]
          for c in yaml.safe_load(p.read_text()) or []]
REDUCE = {"min": min, "max": max, "geomean": lambda v: math.exp(sum(map(math.log, v)) / len(v)),
          "one": lambda v: v[0] if len(v) == 1 else pytest.fail(f"`one` selected {len(v)} values")}


def _at(doc, path: str) -> list:
    """The items a dotted path names: keys, list indices, and `*` for every item."""
    items = [doc]
    for part in path.split("."):
        nxt = []
        for x in items:
            if part == "*":
                nxt += list(x.values()) if isinstance(x, dict) else list(x)
            else:
                nxt.append(x[int(part)] if isinstance(x, list) else x[part])
        items = nxt
    return [y for x in items for y in (x if isinstance(x, list) else [x])]


def _field(case: dict, name: str):
    """A case's field by a dotted name (time.median_ms), None where it has none."""
    for part in name.split("."):
        case = case.get(part) if isinstance(case, dict) else None
    return case


def _matches(case: dict, where: dict) -> bool:
    for key, want in (where or {}).items():
        got = case.get(key)
        if isinstance(want, dict):
            if "re" in want and not re.search(want["re"], str(got)):
                return False
            if "not" in want and re.search(want["not"], str(got)):
                return False
        elif got != want:
            return False
    return True


def _squeeze(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("claim", CLAIMS, ids=[f"{c['lesson'].split('/')[1]}-{i}" for i, c in enumerate(CLAIMS)])
def test_a_typed_figure_is_what_was_measured(claim):
    lesson = _squeeze((ROOT / claim["lesson"]).read_text())
    text = _squeeze(claim["text"])
    assert text in lesson, f"{claim['lesson']} no longer says: {text}"
    doc = json.loads((ROOT / claim["source"]).read_text())
    for v in claim["values"]:
        cases = [c for c in _at(doc, v["cases"]) if _matches(c, v.get("where")) and _field(c, v["field"]) is not None]
        values = [_field(c, v["field"]) for c in cases]
        if "pair" in v:  # each case's partner (same dtype, its label + the suffix) over the case itself
            by = {(c.get("dtype"), c.get("label")): _field(c, v["field"]) for c in cases}
            values = [by[(c.get("dtype"), c.get("label") + v["pair"])] / _field(c, v["field"]) for c in cases
                      if (c.get("dtype"), c.get("label") + v["pair"]) in by]
        if "over" in v:  # a rate of the baseline: the case's field over another of its fields (tflops / vs_library)
            values = [x / _field(c, v["over"]) for x, c in zip(values, cases)]
        values = [x * v.get("scale", 1) for x in values]
        assert values, f"nothing in {claim['source']} at {v['cases']} matches {v.get('where')}"
        shown = v["format"].format(REDUCE[v["reduce"]](values))
        assert shown in text, f"{claim['lesson']}: measured {v['reduce']} {v['field']} is {shown}, the text says: {text}"
