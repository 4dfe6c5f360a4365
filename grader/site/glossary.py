"""The glossary: glossary.yaml at the top of the repository plus any days/dayNN/glossary.yaml, merged.

Each file maps a term to its definition, or to {definition: ..., aliases: [...]}. A term (or alias) may be
defined once across all files; a clash is an error naming both files.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from grader.errors import GraderError
from grader.yaml_file import read_yaml

GLOSSARY = "glossary.yaml"


@dataclass(frozen=True)
class Term:
    term: str
    definition: str
    aliases: tuple[str, ...] = ()
    source: str = GLOSSARY  # the file it comes from, relative to the repository root
    day: str | None = None  # the day whose glossary file defines it, if any

    @property
    def anchor(self) -> str:
        return slug(self.term)

    def forms(self) -> list[str]:
        """Every spelling that is matched in a page: the term, its aliases, and their plurals."""
        out: list[str] = []
        for f in (self.term, *self.aliases):
            for g in (f, plural(f)):
                if g not in out:
                    out.append(g)
        return out


@dataclass
class Glossary:
    terms: list[Term] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    def sorted(self) -> list[Term]:
        return sorted(self.terms, key=lambda t: t.term.casefold())


def slug(s: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", s.casefold()).strip("-") or "term"


def plural(word: str) -> str:
    """English plural of the last word: block -> blocks, latency -> latencies, softmax -> softmaxes."""
    if not word or not word[-1].isalpha():
        return word
    low = word.lower()
    if low.endswith(("s", "x", "z", "ch", "sh")):
        return word + ("ES" if word.isupper() else "es")
    if low.endswith("y") and len(low) > 1 and low[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def _entries(path: Path, rel: str) -> list[tuple[str, str, tuple[str, ...]]]:
    data = read_yaml(path, rel)
    if data is None:
        return []
    if not isinstance(data, dict):
        raise GraderError(f"{rel}: expected a mapping of term -> definition at the top level")
    out = []
    for term, value in data.items():
        if not isinstance(term, str) or not term.strip():
            raise GraderError(f"{rel}: a term must be a non-empty string, got {term!r}")
        aliases: list = []
        if isinstance(value, str):
            definition = value
        elif isinstance(value, dict):
            unknown = sorted(set(value) - {"definition", "aliases"})
            if unknown:
                raise GraderError(f"{rel}: {term!r} has unknown key(s) {unknown} (allowed: definition, aliases)")
            definition = value.get("definition")
            aliases = value.get("aliases") or []
            if not isinstance(aliases, list) or not all(isinstance(a, str) and a.strip() for a in aliases):
                raise GraderError(f"{rel}: {term!r}: aliases must be a list of non-empty strings")
        else:
            raise GraderError(f"{rel}: {term!r} must map to a definition (a string) or to "
                              f"{{definition: ..., aliases: [...]}}, got {type(value).__name__}")
        if not isinstance(definition, str) or not definition.strip():
            raise GraderError(f"{rel}: {term!r} has no definition")
        out.append((term.strip(), " ".join(definition.split()), tuple(a.strip() for a in aliases)))
    return out


def load_glossary(root: Path, day_ids: list[str]) -> Glossary:
    """The merged glossary. `day_ids` are the course's days, in order; their glossary files are optional."""
    sources: list[tuple[Path, str, str | None]] = [(root / GLOSSARY, GLOSSARY, None)]
    sources += [(root / "days" / d / GLOSSARY, f"days/{d}/{GLOSSARY}", d) for d in day_ids]
    g = Glossary()
    owner: dict[str, tuple[str, str]] = {}  # spelling (casefolded) -> (term, file)
    for path, rel, day in sources:
        if not path.is_file():
            continue
        g.files.append(rel)
        for term, definition, aliases in _entries(path, rel):
            t = Term(term, definition, aliases, rel, day)
            for spelling in t.forms():  # plurals too: a page matches them, so they must name one term
                key = spelling.casefold()
                if key in owner and owner[key][0] != term:
                    other_term, other_file = owner[key]
                    what = "the term" if spelling == term else f"the spelling {spelling!r} of"
                    raise GraderError(f"{rel}: {what} {term!r} is already defined in {other_file} (as "
                                      f"{other_term!r}): define each term once")
                owner[key] = (term, rel)
            g.terms.append(t)
    return g


def glossary_page(g: Glossary, day_url) -> str:
    """The glossary page (markdown with HTML), terms alphabetical under letter headings.

    day_url(day_id) gives the site link of a day's page, for terms a lesson added."""
    lines = ["---", "source: glossary.yaml", "---", "", "# Glossary", "",
             "Every term below is also explained on hover wherever it appears in a lesson. Definitions live in "
             "`glossary.yaml` at the top of the repository; a lesson adds its own in `days/dayNN/glossary.yaml`.",
             ""]
    letter = None
    open_dl = False
    for t in g.sorted():
        first = t.term[0].upper() if t.term[0].isalpha() else "#"
        if first != letter:
            if open_dl:
                lines += ["</dl>", ""]
            letter = first
            lines += [f"## {letter}", "", '<dl class="glossary no-gloss" markdown>', ""]
            open_dl = True
        extra = []
        if t.aliases:
            extra.append("also: " + ", ".join(t.aliases))
        if t.day:
            extra.append(f"from [{t.day}]({day_url(t.day)})")
        note = f' <span class="glossary-note">({"; ".join(extra)})</span>' if extra else ""
        lines += [f'<dt id="{t.anchor}">{_html(t.term)}</dt>', "", f"<dd markdown>{t.definition}{note}</dd>", ""]
    if open_dl:
        lines += ["</dl>", ""]
    return "\n".join(lines)


def _html(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
