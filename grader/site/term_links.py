"""A Python-Markdown extension: glossary terms in a page become hover definitions.

Every occurrence of a term (or alias, or plural) in running text becomes
`<a class="gloss" href="/glossary.md#term" title="definition" data-term="term">text</a>`; MkDocs makes the
link relative and the theme shows the title as a tooltip. Code, links, headings, tab labels, summaries and
anything inside an element with class `no-gloss` are left alone. Only the first occurrence of a term in each
section (between two level-2 headings) carries the class `gloss-first`, which is the one drawn underlined; the
others still show the definition on hover.

Configured from mkdocs.yml with the path of a JSON file written by generate.py:
  - grader.site.term_links: {terms_file: /abs/terms.json, glossary_page: /glossary.md}
"""
from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as etree

from markdown import Extension
from markdown.treeprocessors import Treeprocessor

SKIP_TAGS = {"code", "pre", "a", "abbr", "script", "style", "h1", "h2", "h3", "h4", "h5", "h6", "kbd", "label",
             "summary", "svg", "dt", "button", "textarea"}
SKIP_CLASSES = {"no-gloss", "cuda-grid", "tile-walk", "highlight", "md-nav"}


def compile_terms(terms: list[dict]) -> tuple[re.Pattern | None, dict[str, dict], dict[str, dict]]:
    """One regex for all spellings, longest first. Lowercase spellings match in any case; spellings with a
    capital letter match only as written."""
    exact, folded = {}, {}
    for t in terms:
        for f in t["forms"]:
            if any(c.isupper() for c in f):
                exact.setdefault(f, t)
            else:
                folded.setdefault(f.casefold(), t)
    if not exact and not folded:
        return None, exact, folded
    ci = sorted(folded, key=len, reverse=True)
    cs = sorted(exact, key=len, reverse=True)
    alts = []
    if cs:
        alts.append("|".join(re.escape(f) for f in cs))
    if ci:
        alts.append("(?i:" + "|".join(re.escape(f) for f in ci) + ")")
    # Not inside a longer word or an identifier: no letter, digit, _ or - on either side.
    return re.compile(r"(?<![\w-])(?:" + "|".join(alts) + r")(?![\w-])"), exact, folded


class TermTreeprocessor(Treeprocessor):
    def __init__(self, md, pattern, exact, folded, glossary_page):
        super().__init__(md)
        self.pattern, self.exact, self.folded, self.page = pattern, exact, folded, glossary_page
        self.seen: set[str] = set()

    def run(self, root):
        if self.pattern is None:
            return None
        self.seen = set()
        self._walk(root)
        return None

    def _lookup(self, text: str) -> dict:
        return self.exact.get(text) or self.folded[text.casefold()]

    def _walk(self, el) -> None:
        if el.tag == "h2":
            self.seen = set()
        if el.tag in SKIP_TAGS or SKIP_CLASSES & set((el.get("class") or "").split()):
            return
        # el.text sits before the first child; each child's tail follows that child.
        if el.text:
            new = self._split(el.text)
            if new:
                el.text = new[0]
                for i, node in enumerate(new[1:]):
                    el.insert(i, node)
        for child in list(el):
            self._walk(child)
            if child.tail:
                new = self._split(child.tail)
                if new:
                    child.tail = new[0]
                    pos = list(el).index(child)
                    for i, node in enumerate(new[1:]):
                        el.insert(pos + 1 + i, node)

    def _split(self, text: str):
        """None if no term occurs; else [leading text, <a>, <a>, ...] with each <a>'s tail set."""
        matches = list(self.pattern.finditer(text))
        if not matches:
            return None
        lead, nodes = text[:matches[0].start()], []
        for i, m in enumerate(matches):
            t = self._lookup(m.group(0))
            a = etree.Element("a")
            cls = "gloss"
            if t["anchor"] not in self.seen:
                self.seen.add(t["anchor"])
                cls += " gloss-first"
            a.set("class", cls)
            a.set("href", f"{self.page}#{t['anchor']}")
            a.set("title", t["definition"])
            a.set("data-term", t["term"])
            a.text = m.group(0)
            end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
            a.tail = text[m.end():end]
            nodes.append(a)
        return [lead, *nodes]


_cache: dict[tuple[str, int], list] = {}


def _read_terms(path: str) -> list:
    """MkDocs makes a Markdown instance per page: read the file once per version of it."""
    key = (path, os.stat(path).st_mtime_ns)
    if key not in _cache:
        with open(path, encoding="utf-8") as f:
            _cache.clear()
            _cache[key] = json.load(f)
    return _cache[key]


class TermLinksExtension(Extension):
    def __init__(self, **kwargs):
        self.config = {
            "terms_file": ["", "JSON list of {term, anchor, definition, forms}"],
            "terms": [[], "the same list, given directly"],
            "glossary_page": ["/glossary.md", "link target of the glossary page"],
        }
        super().__init__(**kwargs)

    def extendMarkdown(self, md):
        terms = list(self.getConfig("terms"))
        path = self.getConfig("terms_file")
        if path:
            terms += _read_terms(path)
        pattern, exact, folded = compile_terms(terms)
        # After inline parsing (20), before prettify (10) and MkDocs' link rewriting (0).
        md.treeprocessors.register(TermTreeprocessor(md, pattern, exact, folded, self.getConfig("glossary_page")),
                                   "course_terms", 15)


def makeExtension(**kwargs):
    return TermLinksExtension(**kwargs)
