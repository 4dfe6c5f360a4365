"""Typed figures in the lessons (scripts/figure_audit.py): in an audited lesson (one with measured/figures/dayNN.yaml)
every figure is in a script's block, a claim (tests/test_claims.py recomputes those), or a listed figure that is not
a measurement, whose kind is checked here as far as a file can check it. A measurement listed as a figure (the
retired `kind: notes`, a figure known only from measured/NOTES.md's prose) fails: no test can read prose."""
import importlib.util
import re
import sys

import pytest

from tests.conftest import ROOT

spec = importlib.util.spec_from_file_location("figure_audit", ROOT / "scripts" / "figure_audit.py")
audit = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = audit
spec.loader.exec_module(audit)

KINDS = {
    "datasheet": "a vendor's specification (why names the GPU and the document)",
    "threshold": "a bar course.yaml sets for this day (its number is in the day's course.yaml entry)",
    "design": "a size, count or ratio that follows from the code or the lesson's own arithmetic, or a goal the course "
              "sets itself (why shows it)",
    "published": "a figure from a paper, a blog or a library's documentation (why cites it; the lesson names it)",
}
# A measurement is a claim on its JSON record (tests/test_claims.py), never a listed figure: one known only from the
# prose of measured/NOTES.md is said without its number, or measured again into a record.
MEASURED_ELSEWHERE = {"notes", "measured", "measurement"}
AUDITED = sorted(p.stem for p in (ROOT / "measured" / "figures").glob("day*.yaml"))


_squeeze = audit._squeeze


@pytest.mark.parametrize("day", AUDITED)
def test_every_figure_of_an_audited_lesson_is_accounted_for(day):
    found, missing = audit.figures(day)
    assert not missing, f"{day}: listed or claimed texts no longer in the lesson: {missing}"
    assert not found, f"{day}: figures nothing accounts for:\n" + "\n".join(
        f"  {f.lesson}:{f.line}: {f.text!r} | {f.context}" for f in found)


def listed_problems(day: str, listed: list[dict]) -> list[str]:
    """What is wrong with a lesson's listed figures (measured/figures/DAY.yaml's entries), as far as a file can tell."""
    course = (ROOT / "course.yaml").read_text()
    block = re.search(rf"^  - id: {day}\n.*?(?=^  - id: day|\Z)", course, re.S | re.M)
    out = []
    for f in listed:
        kind = f.get("kind")
        if kind in MEASURED_ELSEWHERE:
            out.append(f"{day}: {f['text']!r}: kind {kind!r} is not a listed figure: a measurement is a claim in "
                       f"measured/claims/{day}.yaml on the JSON record that holds it (tests/test_claims.py recomputes "
                       f"it); one that only measured/NOTES.md's prose gives is said in the lesson without its number")
            continue
        if kind not in KINDS:
            out.append(f"{day}: {f['text']!r}: kind must be one of {sorted(KINDS)}")
            continue
        if not (f.get("why") or "").strip():
            out.append(f"{day}: {f['text']!r}: say why")
        if not audit.FIGURE.search(f["text"]):
            out.append(f"{day}: {f['text']!r} holds no figure: list only what needs it")
        if kind == "threshold":
            if not block:
                out.append(f"{day} is not in course.yaml")
                continue
            nums = [re.match(r"[\d.]+", m.group(0)).group(0).rstrip(".") for m in audit.FIGURE.finditer(f["text"])]
            out += [f"{day}: {f['text']!r}: {n} is not a number of {day}'s entry in course.yaml" for n in nums
                    if not re.search(rf"(?<![\d.]){re.escape(n)}(?![\d])", block.group(0))]
    return out


@pytest.mark.parametrize("day", AUDITED)
def test_each_listed_figure_says_what_it_is(day):
    found = listed_problems(day, audit.listed_figures(day) or [])
    assert not found, "\n".join(found)


def test_a_measurement_listed_as_a_figure_fails():
    """Known-wrong entries: a figure traced to measured/NOTES.md's prose (the retired `kind: notes`), and one with no
    kind at all, fail; the same text listed as a design figure with its why passes."""
    text = "It was reported at 6.7x on the H100"
    found = listed_problems("day02", [{"text": text, "kind": "notes", "why": "measured/NOTES.md, first attempts"}])
    assert len(found) == 1 and "kind 'notes'" in found[0] and "measured/claims/day02.yaml" in found[0], found
    assert listed_problems("day02", [{"text": text, "why": "x"}]) == [
        f"day02: {text!r}: kind must be one of {sorted(KINDS)}"]
    assert not listed_problems("day02", [{"text": text, "kind": "design", "why": "made up for this test"}])


def test_the_audit_covers_the_lessons_it_says():
    """The scanner itself: a figure in prose is found; in a block, a code span or a claim it is not."""
    text = "It runs at 1.5× the library and 3.2 TB/s.\n<!-- t:begin -->\n9.9 ms\n<!-- t:end -->\n`7 ms` 16 × 64\n"
    found = [m.group(0) for m in audit.FIGURE.finditer(audit._blank(audit._blank(text, audit.BLOCK), audit.CODE))]
    assert found == ["1.5×", "3.2 TB/s"]


def test_a_ratio_before_a_name_is_a_figure_and_a_shape_with_a_letter_is_not():
    """"0.61× SDPA flash" was read as a shape ("× S", like "× N") and slipped past the audit; a single letter after ×
    is a shape's dimension and a letter with digits a count's name (2 × H200), a word is what the ratio is of."""
    text = "0.61× SDPA flash; 1.2× cuBLAS; 2 × H200; 128 × d and 64 × N tiles; 4096x4096"
    assert [m.group(0) for m in audit.FIGURE.finditer(text)] == ["0.61×", "1.2×"]


def test_every_lesson_is_audited():
    """A new day's lesson gets its measured/figures/dayNN.yaml (an empty list if every figure is a claim)."""
    assert set(audit.days()) <= set(AUDITED), f"not audited yet: {sorted(set(audit.days()) - set(AUDITED))}"


def test_a_figure_typed_into_an_audited_lesson_or_a_claim_edited_away_is_caught():
    """Known-wrong edits: a new speed in prose, a claimed figure retyped, a listed text reworded."""
    lesson = (ROOT / "days" / "day06" / "README.md").read_text()
    added = lesson.replace("\n## ", "\nThis version runs at 12.5 TB/s on the H200.\n\n## ", 1)
    found, _ = audit.figures("day06", added)
    assert [f.text for f in found] == ["12.5 TB/s"]
    claim = next(c for c in _claims_of("day06"))
    first = audit.FIGURE.search(claim["text"]).group(0)
    retyped = _squeeze(lesson).replace(_squeeze(claim["text"]),
                                       _squeeze(claim["text"]).replace(first, "77 GB/s", 1), 1)
    _, missing = audit.figures("day06", retyped)
    assert claim["text"] in missing


def _claims_of(day):
    """The claims of a lesson whose text holds a figure."""
    import yaml

    return [c for c in yaml.safe_load((ROOT / "measured" / "claims" / f"{day}.yaml").read_text())
            if audit.FIGURE.search(c["text"])]
