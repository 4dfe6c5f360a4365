"""Builds the site: generate the docs tree, run MkDocs with the Material theme, check the result is offline."""
from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from grader.course import Course
from grader.errors import GraderError

INSTALL = 'pip install -e ".[site]"'
# Anything that makes the browser fetch: src/href of resources, CSS url() and @import. Plain <a href> links to
# other sites are allowed (they are only followed when clicked).
RESOURCE_ATTR = re.compile(r"<(?:img|script|iframe|audio|video|source|embed|link)\b[^>]*?\s(?:src|href|srcset)="
                           r"[\"'](?:https?:)?//", re.I)
CSS_REMOTE = re.compile(r"""(?:url\(\s*["']?|@import\s+["']?)(?:https?:)?//""", re.I)
EXTERNAL_HREF = re.compile(r"""\shref=["']((?:https?:)?//[^"']+)["']""", re.I)


@dataclass
class BuildResult:
    site: Path
    pages: int
    seconds: float
    warnings: list[str] = field(default_factory=list)
    terms: int = 0


def require() -> None:
    """The site's packages, or a message saying how to get them."""
    missing = []
    for mod in ("mkdocs", "material", "pymdownx"):
        try:
            __import__(mod)
        except ImportError:
            missing.append(mod)
    if missing:
        raise GraderError(f"the course website needs {', '.join(missing)}: {INSTALL}")


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage().strip())


def build(root: Path, course: Course, out: Path, strict: bool = False, leaderboard: Path | None = None) -> BuildResult:
    """Generates out/docs and out/mkdocs.yml, then builds the HTML into out/html (with the leaderboard's page if
    `leaderboard` names a folder `grader leaderboard build` wrote)."""
    require()
    from mkdocs.commands.build import build as mkdocs_build
    from mkdocs.config import load_config
    from mkdocs.exceptions import MkDocsException

    from grader.site.generate import generate

    t0 = time.perf_counter()
    g = generate(root, course, out, leaderboard)
    log = logging.getLogger("mkdocs")
    handler = _Collect()
    log.addHandler(handler)
    # MkDocs prints its INFO lines through its own CLI handler only; here we keep just the warnings.
    old_level, old_propagate = log.level, log.propagate
    log.setLevel(logging.WARNING)
    log.propagate = False
    try:
        cfg = load_config(str(g.config))
        mkdocs_build(cfg)
    except MkDocsException as e:
        raise GraderError(f"the site did not build: {e}") from None
    finally:
        log.removeHandler(handler)
        log.setLevel(old_level)
        log.propagate = old_propagate
    warnings = [w for w in handler.messages if w]
    remote = remote_resources(g.site)
    if remote:
        raise GraderError("the built site would load files from other hosts (it must work offline):\n  " +
                          "\n  ".join(remote[:10]))
    if strict and warnings:
        raise GraderError("the site built with warnings (--strict):\n  " + "\n  ".join(warnings))
    return BuildResult(g.site, len(g.pages), time.perf_counter() - t0, warnings,
                       len(g.glossary.terms) if g.glossary else 0)


def remote_resources(site: Path) -> list[str]:
    """'file: snippet' for each reference in the built site that would make a browser fetch from another host."""
    found = []
    for p in sorted(site.rglob("*")):
        if p.suffix not in (".html", ".css") or not p.is_file():
            continue
        text = p.read_text(encoding="utf-8", errors="replace")
        pat = RESOURCE_ATTR if p.suffix == ".html" else CSS_REMOTE
        for m in pat.finditer(text):
            found.append(f"{p.relative_to(site)}: {text[m.start():m.end() + 60].splitlines()[0]}")
        if p.suffix == ".html":
            for m in re.finditer(r"<style\b[^>]*>(.*?)</style>", text, re.S | re.I):
                for n in CSS_REMOTE.finditer(m.group(1)):
                    found.append(f"{p.relative_to(site)}: inline style {m.group(1)[n.start():n.end() + 60]}")
    return found


def external_links(site: Path) -> dict[str, set[str]]:
    """External <a href> targets in the built HTML: url -> pages that have it."""
    out: dict[str, set[str]] = {}
    for p in sorted(site.rglob("*.html")):
        for m in EXTERNAL_HREF.finditer(p.read_text(encoding="utf-8", errors="replace")):
            out.setdefault(m.group(1), set()).add(str(p.relative_to(site)))
    return out
