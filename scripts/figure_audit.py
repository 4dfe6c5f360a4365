"""Typed figures in the lessons: every number with a unit of speed, time, size or ratio that a lesson states outside
the blocks its scripts write, and whether something accounts for it.

A figure is accounted for when it lies inside
- a block a script writes (`<!-- NAME:begin -->` … `<!-- NAME:end -->`), or a code span or fenced code;
- the text of a claim (measured/claims.yaml, measured/claims/dayNN.yaml): tests/test_claims.py recomputes it from
  measured/;
- the text of a listed figure that is not a measurement (measured/figures/dayNN.yaml, each with its kind and why:
  `datasheet`, a vendor's value; `threshold`, a bar course.yaml sets; `design`, a size or ratio that follows from
  the code or the lesson's own arithmetic, or a goal the course sets itself; `published`, a figure with its
  citation).

A measurement is never a listed figure: it is a claim on the JSON record under measured/ that holds it. One that
only the prose of measured/NOTES.md gives (the retired `kind: notes`) is said in the lesson without its number;
tests/test_figure_audit.py fails on any other kind.

A lesson is audited once its measured/figures/dayNN.yaml exists (an empty list if every figure is a claim or in a
block); tests/test_figure_audit.py then fails on any figure in it that nothing accounts for.

    python3 scripts/figure_audit.py                 # every lesson: counts, audited or not
    python3 scripts/figure_audit.py day16 day17     # those lessons' unaccounted figures, line by line
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "measured" / "figures"
CLAIMS = [ROOT / "measured" / "claims.yaml", *sorted((ROOT / "measured" / "claims").glob("*.yaml"))]

_NUM = r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:\s*[–-]\s*\d[\d,]*(?:\.\d+)?)?"
_UNIT = (r"(?:(?:TFLOP/s|GFLOP/s|FLOP/s|TB/s|GB/s|MB/s|TiB|GiB|MiB|KiB|TB|GB|MB|KB|ms|µs|μs|us|ns|cycles?|clocks?)"
         r"(?![A-Za-z])"  # "12 uses" is no figure
         r"|(?:×|x)(?!\s*(?:\d|[A-Za-z](?![A-Za-z_])|[(·/]))|%)")  # "16 × 64" and "4096x4096" are shapes, not ratios
FIGURE = re.compile(rf"{_NUM}\s*{_UNIT}")
BLOCK = re.compile(r"<!--\s*([\w.-]+):begin\s*-->.*?<!--\s*\1:end\s*-->", re.S)
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\]\([^)]*\)|<https?://[^>]*>")


@dataclass(frozen=True)
class Figure:
    lesson: str
    line: int
    text: str
    context: str


def _blank(text: str, pattern: re.Pattern) -> str:
    """The text with every match replaced by spaces (line breaks kept), so that positions and lines still hold."""
    return pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def _squeeze(text: str) -> str:
    return " ".join(text.split())


def accounted_texts(day: str) -> list[str]:
    """The claims' and the listed figures' texts for one lesson (days/DAY/README.md)."""
    lesson = f"days/{day}/README.md"
    texts = []
    for path in CLAIMS:
        for c in yaml.safe_load(path.read_text()) or []:
            if c["lesson"] == lesson:
                texts.append(c["text"])
    listed = FIGURES / f"{day}.yaml"
    if listed.exists():
        texts += [f["text"] for f in yaml.safe_load(listed.read_text()) or []]
    return texts


def listed_figures(day: str) -> list[dict] | None:
    listed = FIGURES / f"{day}.yaml"
    return (yaml.safe_load(listed.read_text()) or []) if listed.exists() else None


def figures(day: str, text: str | None = None) -> tuple[list[Figure], list[str]]:
    """(the figures of days/DAY/README.md (or of `text` in its place) that nothing accounts for, the accounted texts
    the lesson no longer has)."""
    lesson = f"days/{day}/README.md"
    raw = (ROOT / lesson).read_text() if text is None else text
    text = raw
    for pattern in (BLOCK, FENCE, CODE, LINK):
        text = _blank(text, pattern)
    # Accounted spans, found in the squeezed text (a claim may wrap across lines): map squeezed offsets back.
    squeezed_chars = []
    index = []  # squeezed position -> original position
    prev_space = False
    for i, ch in enumerate(text):
        if ch.isspace():
            if squeezed_chars and not prev_space:
                squeezed_chars.append(" ")
                index.append(i)
            prev_space = True
        else:
            squeezed_chars.append(ch)
            index.append(i)
            prev_space = False
    squeezed = "".join(squeezed_chars)
    covered = bytearray(len(text))
    missing = []
    whole = _squeeze(raw)  # a claim may bind a figure inside a block the scan skips (a fenced worked example)
    for t in accounted_texts(day):
        s = _squeeze(t)
        hits = [m.start() for m in re.finditer(re.escape(s), squeezed)]
        if not hits and s not in whole:
            missing.append(t)
        for h in hits:
            for j in range(index[h], index[h + len(s) - 1] + 1):
                covered[j] = 1
    out = []
    for m in FIGURE.finditer(text):
        if all(covered[m.start():m.end()]):
            continue
        line = text.count("\n", 0, m.start()) + 1
        out.append(Figure(lesson, line, m.group(0), raw.splitlines()[line - 1].strip()[:160]))
    return out, missing


def days() -> list[str]:
    return sorted(p.parent.name for p in (ROOT / "days").glob("day*/README.md"))


def main(argv: list[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("days", nargs="*", help="the days whose figures to list (default: every lesson, counts only)")
    argv = ap.parse_args(argv).days
    unknown = [d for d in argv if d not in days()]
    if unknown:
        ap.error(f"no lesson for {', '.join(unknown)} (days/DAY/README.md); the lessons: {' '.join(days())}")
    chosen = argv or days()
    total = 0
    for day in chosen:
        found, missing = figures(day)
        total += len(found)
        audited = listed_figures(day) is not None
        print(f"{day}: {len(found)} unaccounted figure(s){' (audited)' if audited else ''}"
              + (f", {len(missing)} listed text(s) no longer in the lesson" if missing else ""))
        if argv:
            for f in found:
                print(f"  {f.lesson}:{f.line}: {f.text!r}   | {f.context}")
            for t in missing:
                print(f"  no longer in the lesson: {t!r}")
    print(f"{total} in all")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
