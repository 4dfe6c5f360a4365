"""Figures typed in lessons against the measurements they stand for (measured/claims.yaml, measured/claims/dayNN.yaml).

A claim names its lesson, the `text` the lesson holds (whitespace aside), its record (`source`, a file under
measured/), the GPU the record was measured on (`gpu`: H100, H200), and for each figure of the text a value: where in
the record it is (`cases`, a dotted path to a list of results, `where` to pick cases, `field`), how the figure is made
from it (`pair`, `over`, `scale`, `reduce`) and how the lesson prints it (`format`, `{:.Nf}` with the text around it).

What is checked, claim by claim:
- the text is in the lesson;
- each value: the text holds the figure its `format` places, and the record's value is within half a unit of the
  figure's last written digit (the tolerance is the rounding of the figure as written: 0.005 for "1.57", 0.5 for
  "547"); a figure written with more or fewer digits than the format says fails;
- every number of every figure in the text (a ratio, a percentage, a size, a speed or a time: the figures
  scripts/figure_audit.py finds) is bound: values bind the text's figures in order, each the figure its format places
  and its record gives; a figure of the text that is no measurement (the size of the case a `where` picks) is listed
  in `given`, with why;
- the GPU: the record's (`gpu`, `device` or `info.gpu` on the path to the cases) is the claim's `gpu`, and every GPU
  the claim's text names is it; a GPU named in the text's sentence is the record's where the sentence names one.
  A record that carries no GPU (measured/day20/first-attempts-h200.json) has claims without `gpu` whose text names
  none.
"""
import copy
import importlib.util
import json
import math
import re
import sys

import pytest
import yaml

from tests.conftest import ROOT

spec = importlib.util.spec_from_file_location("figure_audit", ROOT / "scripts" / "figure_audit.py")
audit = sys.modules.get("figure_audit") or importlib.util.module_from_spec(spec)
if "figure_audit" not in sys.modules:
    sys.modules[spec.name] = audit
    spec.loader.exec_module(audit)

# measured/claims.yaml, then one file per lesson in measured/claims/ (dayNN.yaml)
CLAIMS = [c for p in [ROOT / "measured" / "claims.yaml", *sorted((ROOT / "measured" / "claims").glob("*.yaml"))]
          for c in yaml.safe_load(p.read_text()) or []]
REDUCE = {"min": min, "max": max, "geomean": lambda v: math.exp(sum(map(math.log, v)) / len(v))}
GPU_NAME = re.compile(r"(?<![\w-])(?:GH200|GB200|H100|H200|H20|A100|A10G?|B200|L40S?|L4|V100|T4)(?![\w-])")
NUMBER = r"\d[\d,]*(?:\.\d+)?"
SPEC = re.compile(r"\{:\.(\d+)f\}")


class Unchecked(Exception):
    """A claim that cannot be checked as written (a path that is not in its record, a format without a number)."""


def _at(doc, path: str) -> list:
    """(item, GPU) for each item a dotted path names: keys, list indices, `*` for every item; the GPU is the nearest
    one recorded on the way down to it, itself included (a node's `gpu`, `device` or `info.gpu`)."""
    items = [(doc, _gpu_of(doc))]
    for part in path.split("."):
        nxt = []
        for x, gpu in items:
            if part == "*":
                kids = list(x.values()) if isinstance(x, dict) else list(x)
            else:
                try:
                    kids = [x[int(part)] if isinstance(x, list) else x[part]]
                except (KeyError, IndexError, ValueError, TypeError):
                    raise Unchecked(f"`{path}`: no `{part}` in the record") from None
            nxt += [(k, _gpu_of(k) or gpu) for k in kids]
        items = nxt
    return [(y, _gpu_of(y) or gpu) for x, gpu in items for y in (x if isinstance(x, list) else [x])]


def _gpu_of(node) -> str | None:
    if not isinstance(node, dict):
        return None
    for name in (node.get("gpu"), node.get("device"), (node.get("info") or {}).get("gpu")):
        if isinstance(name, str) and GPU_NAME.search(name):
            return name
    return None


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


def measured(v: dict, doc) -> tuple[float, set[str]]:
    """(the figure a value stands for, the GPUs of the cases it was made from)."""
    picked = [(c, gpu) for c, gpu in _at(doc, v["cases"])
              if isinstance(c, dict) and _matches(c, v.get("where")) and _field(c, v["field"]) is not None]
    cases = [c for c, _ in picked]
    values = [_field(c, v["field"]) for c in cases]
    if "pair" in v:  # each case's partner (same dtype, its label + the suffix) over the case itself
        by = {(c.get("dtype"), c.get("label")): _field(c, v["field"]) for c in cases}
        values = [by[(c.get("dtype"), c.get("label") + v["pair"])] / _field(c, v["field"]) for c in cases
                  if (c.get("dtype"), c.get("label") + v["pair"]) in by]
    if "over" in v:  # a rate of the baseline: the case's field over another of its fields (tflops / vs_library)
        values = [x / _field(c, v["over"]) for x, c in zip(values, cases)]
    gpus = {gpu for _, gpu in picked if gpu}
    if "against" in v:  # each case's twin in another list of the record (same dtype and label): twin over case
        twins = {}
        for c, gpu in _at(doc, v["against"]):
            if isinstance(c, dict) and _field(c, v["field"]) is not None:
                twins[(c.get("dtype"), c.get("label"))] = _field(c, v["field"])
                gpus |= {gpu} if gpu else set()
        kept = [(c, x) for c, x in zip(cases, values) if (c.get("dtype"), c.get("label")) in twins]
        cases, values = [c for c, _ in kept], [twins[(c.get("dtype"), c.get("label"))] / x for c, x in kept]
    values = [x * v.get("scale", 1) + v.get("offset", 0) for x in values]
    if not values:
        raise Unchecked(f"nothing at {v['cases']} matches {v.get('where')} with a `{v['field']}`")
    if v["reduce"] == "one":
        if len(values) != 1:
            raise Unchecked(f"`one` selected {len(values)} values at {v['cases']} ({v.get('where')})")
        x = values[0]
    else:
        x = REDUCE[v["reduce"]](values)
    return x, gpus


def written(v: dict, text: str) -> list[tuple[int, int, str]]:
    """(start, end, figure) of each place in the text where the value's format puts a figure."""
    m = SPEC.search(v["format"])
    if not m or len(SPEC.findall(v["format"])) != 1:
        raise Unchecked(f"format {v['format']!r}: one {{:.Nf}} placeholder")
    pre, post = v["format"][:m.start()], v["format"][m.end():]
    return [(w.start(1), w.end(1), w.group(1))
            for w in re.finditer(rf"{re.escape(pre)}(?<![\d.,])({NUMBER})(?![\d]){re.escape(post)}", text)]


def _decimals(figure: str) -> int:
    return len(figure.split(".")[1]) if "." in figure else 0


def problems(claim: dict, lesson: str | None = None, doc=None) -> list[str]:
    """What is wrong with one claim (nothing, if it holds): its text against the lesson, each value against the
    record within the rounding of the figure as written, the GPU against the record's."""
    return check(claim, lesson, doc)[0]


def check(claim: dict, lesson: str | None = None, doc=None) -> tuple[list[str], list[tuple[int, int]]]:
    """(what is wrong with the claim, the spans of its text where a value's measured figure is written)."""
    out, spans = [], []
    lesson = _squeeze(lesson if lesson is not None else (ROOT / claim["lesson"]).read_text())
    text = _squeeze(claim["text"])
    if text not in lesson:
        out.append(f"{claim['lesson']} no longer says: {text}")
    if doc is None:
        doc = json.loads((ROOT / claim["source"]).read_text())
    gpus = set()
    for v in claim["values"]:
        try:
            x, found = measured(v, doc)
            places = written(v, text)
        except Unchecked as e:
            out.append(f"{claim['source']}: {e}")
            continue
        gpus |= found
        digits = int(SPEC.search(v["format"]).group(1))
        tol = 0.5 * 10 ** -digits
        near = [(a, b) for a, b, f in places
                if _decimals(f) == digits and abs(float(f.replace(",", "")) - x) <= tol * (1 + 1e-9)]
        # Values bind the text's figures in order: each the first one at or after the previous value's, or one an
        # earlier value bound (a range over two versions: both versions' minima are its low end).
        near = ([p for p in near if not spans or p[0] > spans[-1][0]] + [p for p in near if p in spans])[:1]
        spans += [p for p in near if p not in spans]
        if not near:
            shown = [f for _, _, f in places]
            out.append(f"{claim['lesson']}: {claim['source']} {v['cases']} {v.get('where') or ''} `{v['field']}` "
                       f"({v['reduce']}) is {x:.{digits + 2}f}; the text, at {v['format']!r}, writes "
                       f"{shown or 'no figure'} (written to {digits} decimal(s), so within ±{tol:g}): {text}")
    named = set(GPU_NAME.findall(text))
    if not gpus:
        if "gpu" in claim:
            out.append(f"{claim['source']} records no GPU on the path to its cases, the claim says {claim['gpu']}")
        if named:
            out.append(f"the text names {sorted(named)}, its record {claim['source']} no GPU")
        return out, spans
    want = claim.get("gpu")
    if not want:
        out.append(f"name the GPU of {claim['source']} ({sorted(gpus)}) as the claim's `gpu`")
        return out, spans
    for g in sorted(gpus):
        if want not in GPU_NAME.findall(g):
            out.append(f"the claim says {want}; {claim['source']} was measured on {g}")
    for g in sorted(named - {want}):
        out.append(f"the text names the {g}; its figures are from {claim['source']}, measured on {want}")
    sentence = _sentence(lesson, text)
    if sentence is not None:
        around = set(GPU_NAME.findall(sentence))
        if around and want not in around:
            out.append(f"the sentence names {sorted(around)}; its figures are from {claim['source']} ({want}): "
                       f"{sentence}")
    return out, spans


def _sentence(lesson: str, text: str) -> str | None:
    """The sentence (or table cell) around the text in the lesson."""
    k = lesson.find(text)
    if k < 0:
        return None
    start = max(lesson.rfind(". ", 0, k) + 1, lesson.rfind("| ", 0, k) + 1, 0)
    end = min(i for i in (lesson.find(". ", k + len(text)), lesson.find(" |", k + len(text)), len(lesson)) if i >= 0)
    return lesson[start:end + 1].strip()


def unbound(claims: list[dict], lesson: str | None = None) -> list[str]:
    """The numbers of the figures in the claims' texts (all of one lesson) that no value of a claim measures (a
    figure its format places and its record gives) and none lists in `given`. Found where the texts sit in the
    lesson, so that a figure two claims' texts share, or a text inside another's, is bound by either."""
    if lesson is None:
        lesson = (ROOT / claims[0]["lesson"]).read_text()
    lesson = _squeeze(lesson)
    covered, texts = set(), []
    for c in claims:
        text = _squeeze(c["text"])
        spans = check(c, lesson)[1]
        spans += [(at, at + len(g)) for g in c.get("given", {}) if (at := text.find(g)) >= 0]
        for k in [m.start() for m in re.finditer(re.escape(text), lesson)]:
            texts.append((k, text))
            covered |= {i for a, b in spans for i in range(k + a, k + b)}
    loose = []
    for k, text in sorted(set(texts)):
        for f in audit.FIGURE.finditer(text):
            for n in re.finditer(NUMBER, f.group(0)):
                s, e = k + f.start() + n.start(), k + f.start() + n.end()
                if not set(range(s, e)) <= covered:
                    loose.append(f"{n.group(0)} (in {f.group(0)!r} of: {text})")
    return loose


@pytest.mark.parametrize("claim", CLAIMS, ids=[f"{c['lesson'].split('/')[1]}-{i}" for i, c in enumerate(CLAIMS)])
def test_a_typed_figure_is_what_was_measured(claim):
    found = problems(claim)
    assert not found, "\n".join(found)


def test_every_figure_of_a_claimed_text_is_bound():
    """A claim's text covers its figures in the figure audit: each must be a value of a claim."""
    lessons = {}
    for c in CLAIMS:
        lessons.setdefault(c["lesson"], []).append(c)
    loose = [f"{lesson}: {n}" for lesson, cs in lessons.items() for n in unbound(cs)]
    assert not loose, "figures no value of a claim binds:\n" + "\n".join(loose)


def test_a_given_figure_says_why():
    """`given`: a figure of the text that is no measurement (the size of the case it picks), each with why."""
    for c in CLAIMS:
        for g, why in (c.get("given") or {}).items():
            assert audit.FIGURE.search(g) and g in c["text"] and str(why).strip(), \
                f"{c['lesson']}: given {g!r} must be a figure of the text, with why: {c['text']}"


def test_every_claim_whose_record_names_a_gpu_names_it():
    missing = [f"{c['lesson']}: {c['text'][:60]}" for c in CLAIMS if "gpu" not in c
               and any(g for v in c["values"] for _, g in _safe_at(c, v))]
    assert not missing, "claims without `gpu`:\n" + "\n".join(missing)


def _safe_at(c, v):
    try:
        return _at(json.loads((ROOT / c["source"]).read_text()), v["cases"])
    except Unchecked:
        return []


# Known-wrong claims: each must fail, and for the reason planted.

def _claim(lesson_day: str, needle: str) -> dict:
    return copy.deepcopy(next(c for c in CLAIMS if c["lesson"] == f"days/{lesson_day}/README.md"
                              and needle in c["text"]))


def test_a_planted_wrong_figure_fails():
    """A figure retyped in the lesson and the claim alike (1.57× → 1.61×) no longer matches its record."""
    c = _claim("day12", "per tile | 547 | 1.57× | 0.82×")
    lesson = (ROOT / c["lesson"]).read_text()
    assert not problems(c, lesson)
    c["text"] = c["text"].replace("1.57×", "1.61×")
    found = problems(c, _squeeze(lesson).replace("per tile | 547 | 1.57×", "per tile | 547 | 1.61×"))
    assert found and all("vs_library" in f and "1.61" in f for f in found), found


def test_a_figure_off_by_less_than_its_rounding_passes_and_by_more_fails():
    """The tolerance is the rounding of the figure as written: 547 stands for 546.5–547.5, not 548."""
    c = _claim("day12", "per tile | 547 | 1.57× | 0.82×")
    doc = json.loads((ROOT / c["source"]).read_text())
    tflops = next(v for v in c["values"] if v["field"] == "tflops")
    x, _ = measured(tflops, doc)
    lesson = _squeeze((ROOT / c["lesson"]).read_text())
    for typed, ok in ((f"{x:.0f}", True), (f"{round(x) + 1}", False), (f"{x:.1f}", False)):
        text = c["text"].replace("547", typed)
        found = problems({**c, "text": text}, lesson.replace(_squeeze(c["text"]), _squeeze(text)), doc)
        assert (not found) == ok, (typed, found)


def test_a_planted_wrong_gpu_fails():
    """The same figures said of the other GPU: in the claim's `gpu`, in its text, or in the sentence around it."""
    c = _claim("day12", "On an H200 they gave")
    lesson = _squeeze((ROOT / c["lesson"]).read_text())
    assert not problems(c, lesson)
    assert any("measured on NVIDIA H200" in f for f in problems({**c, "gpu": "H100"}, lesson))
    text = c["text"].replace("On an H200", "On an H100")
    found = problems({**c, "text": text}, lesson.replace(_squeeze(c["text"]), _squeeze(text)))
    assert any("names the H100" in f for f in found), found
    plain = _claim("day12", "per tile | 0.83–0.96× | 0.77–0.79×")
    assert not problems(plain, lesson)
    said = lesson.replace(_squeeze(plain["text"]), _squeeze(plain["text"]) + " on the H200")
    assert any("the sentence names ['H200']" in f for f in problems(plain, said)), problems(plain, said)


def test_a_claim_pointing_at_a_wrong_field_fails():
    """The number read from the wrong field (pct_of_ceiling for vs_library), a field the record lacks, a path it
    lacks: each fails."""
    c = _claim("day12", "per tile | 547 | 1.57× | 0.82×")
    lesson = (ROOT / c["lesson"]).read_text()
    for change, says in (({"field": "pct_of_ceiling"}, "1.57"), ({"field": "vs_libary"}, "`vs_libary`"),
                         ({"cases": "day12.exercises.7.cases"}, "no `7`")):
        wrong = copy.deepcopy(c)
        i = next(i for i, v in enumerate(wrong["values"]) if v["field"] == "vs_library")
        wrong["values"][i].update(change)
        found = problems(wrong, lesson) + unbound([wrong], lesson)
        assert any(says in f for f in found), (change, found)


def test_a_figure_no_value_binds_fails():
    """A number typed into a claimed text beside the measured ones is not covered by the claim."""
    c = _claim("day12", "per tile | 547 | 1.57× | 0.82×")
    lesson = _squeeze((ROOT / c["lesson"]).read_text())
    assert unbound([c], lesson) == []
    text = c["text"] + " and 12 % more"
    assert [n.split(" (")[0] for n in unbound([{**c, "text": text}], lesson.replace(c["text"], text))] == ["12"]
