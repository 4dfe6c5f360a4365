"""Lesson markdown as written for GitHub, turned into markdown for the site.

Lessons stay readable on GitHub; the site upgrades a few conventions:

- GitHub alerts (`> [!NOTE]`, `> [!TIP]`, `> [!IMPORTANT]`, `> [!WARNING]`, `> [!CAUTION]`) become admonitions;
- tab groups written with HTML comments, invisible on GitHub,

      <!-- tab: Pseudocode -->
      ...any markdown...
      <!-- tab: CUDA -->
      ...any markdown...
      <!-- /tabs -->

  become content tabs (pymdownx.tabbed); tabs with the same label are linked across the site;
- relative links are resolved against the source file: to another page of the site, to a copied image, or
  else to the file on the course's repository.

Fenced code is never touched.
"""
from __future__ import annotations

import posixpath
import re
from collections.abc import Callable

FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})")
ALERT = re.compile(r"^\s{0,3}>\s*\[!(NOTE|TIP|IMPORTANT|WARNING|CAUTION)\]\s*$", re.I)
ALERT_KIND = {"NOTE": ("note", None), "TIP": ("tip", None), "IMPORTANT": ("info", "Important"),
              "WARNING": ("warning", None), "CAUTION": ("danger", "Caution")}
TAB = re.compile(r"^\s*<!--\s*tab:\s*(.+?)\s*-->\s*$")
TABS_END = re.compile(r"^\s*<!--\s*/tabs\s*-->\s*$")
INLINE_LINK = re.compile(r"(\]\(\s*)(<[^>]*>|[^)\s]+)((?:\s+\"[^\"]*\")?\s*\))")
REF_DEF = re.compile(r"^(\s{0,3}\[[^\]]+\]:\s*)(<[^>]*>|\S+)(.*)$")
CODE_SPAN = re.compile(r"(`+)(?:.*?[^`])?\1(?!`)")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _closes(fence: str, m, line: str) -> bool:
    """Whether `line` (m: its FENCE match, or None) closes a block opened by `fence`: the same character, at least
    as many, and nothing after them."""
    return bool(m) and m.group(2)[0] == fence[0] and len(m.group(2)) >= len(fence) and \
        not line.strip()[len(m.group(2)):].strip()


def github_slug(value: str, separator: str = "-") -> str:
    """Heading anchors as GitHub makes them (lowercase; drop all but letters, digits, `_`, `-` and spaces;
    spaces become `-`, runs are kept), so `README.md#some-heading` links work on GitHub and on the site alike."""
    value = re.sub(r"[^\w\- ]", "", value.strip().lower())
    return value.replace(" ", separator)


def code_mask(lines: list[str]) -> list[bool]:
    """True for the lines that belong to a fenced code block (fences included)."""
    mask, fence = [], None
    for line in lines:
        m = FENCE.match(line)
        if fence is None:
            if m:
                fence = m.group(2)
                mask.append(True)
                continue
            mask.append(False)
        else:
            mask.append(True)
            if _closes(fence, m, line):
                fence = None
    return mask


def alerts(lines: list[str]) -> list[str]:
    """GitHub alerts -> admonitions. The alert is the `>` block that starts with the marker line."""
    out, mask, i = [], code_mask(lines), 0
    while i < len(lines):
        m = None if mask[i] else ALERT.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        kind, title = ALERT_KIND[m.group(1).upper()]
        out.append(f'!!! {kind}' + (f' "{title}"' if title else ""))
        i += 1
        while i < len(lines) and re.match(r"^\s{0,3}>", lines[i]):
            body = re.sub(r"^\s{0,3}> ?", "", lines[i])
            out.append(("    " + body) if body.strip() else "")
            i += 1
        out.append("")
    return out


def tabs(lines: list[str], where: str = "") -> list[str]:
    """`<!-- tab: Label -->` ... `<!-- /tabs -->` groups -> pymdownx.tabbed."""
    from grader.errors import GraderError

    out, mask, i = [], code_mask(lines), 0
    while i < len(lines):
        m = None if mask[i] else TAB.match(lines[i])
        if not m:
            if not mask[i] and TABS_END.match(lines[i]):
                raise GraderError(f"{where}:{i + 1}: `<!-- /tabs -->` without a `<!-- tab: Label -->` before it")
            out.append(lines[i])
            i += 1
            continue
        start = i
        while True:
            label = m.group(1).replace('"', "'")
            out += ["", f'=== "{label}"', ""]
            i += 1
            while i < len(lines) and (mask[i] or not (TAB.match(lines[i]) or TABS_END.match(lines[i]))):
                out.append(("    " + lines[i]) if lines[i].strip() else "")
                i += 1
            if i >= len(lines):
                raise GraderError(f"{where}:{start + 1}: a tab group is not closed with `<!-- /tabs -->`")
            m = TAB.match(lines[i])
            if not m:  # the end marker
                i += 1
                out.append("")
                break
    return out


LIST_ITEM = re.compile(r"^( *)([-*+]|\d{1,9}[.)])( +)(?=\S)")
BLOCK_START = re.compile(r"^\s{0,3}(#|>|\||<|```|~~~|!!!|\?\?\?|===)")


def gfm_lists(lines: list[str]) -> list[str]:
    """Lists as GitHub reads them -> as Python-Markdown reads them.

    GitHub nests a list item under its parent's text column (2 spaces under `- `, 3 under `1. `) and lets a list
    start right after a paragraph line; Python-Markdown wants 4 spaces per level and a blank line first. Lines
    inside list items (continuations, fenced code) move with their item."""
    out: list[str] = []
    levels: list[tuple[int, int]] = []  # open items: (source text column, output text column)
    fence, fence_shift, prev_blank, prev_text = None, 0, True, False
    for line in lines:
        expanded = line.expandtabs(4)
        n = len(expanded) - len(expanded.lstrip(" "))
        if fence is not None:  # inside a fenced block: shift it with its item, parse nothing
            out.append(" " * max(0, n + fence_shift) + expanded.lstrip(" ") if expanded.strip() else "")
            m = FENCE.match(expanded)
            if _closes(fence, m, expanded):
                fence = None
            continue
        if not expanded.strip():
            out.append("")
            prev_blank = True
            continue
        item = LIST_ITEM.match(expanded)
        while levels and n < levels[-1][0] and not (item is None and not prev_blank):
            levels.pop()  # dedented below the item's text after a blank line (or a new, shallower item)
        if item:
            marker, gap = item.group(2), item.group(3)
            col = levels[-1][1] if levels and n >= levels[-1][0] else 0
            if not levels and prev_text and not prev_blank and (marker[0] not in "0123456789" or
                                                                  marker[:-1] == "1"):
                out.append("")  # GitHub lets a list interrupt a paragraph; Python-Markdown needs a blank line
            rest = expanded[item.end():]
            out.append(" " * col + marker + " " + rest)
            src_text = n + len(marker) + len(gap)
            levels.append((src_text if len(gap) <= 4 else n + len(marker) + 1, col + 4))
        elif levels and n >= levels[-1][0]:
            src, dst = levels[-1]
            out.append(" " * (dst + n - src) + expanded.lstrip(" "))
        else:
            out.append(line)
        m = FENCE.match(expanded)
        if m:
            fence = m.group(2)
            fence_shift = len(out[-1]) - len(out[-1].lstrip(" ")) - n
        prev_blank = False
        prev_text = not item and not BLOCK_START.match(expanded) and not levels
    return out


def _outside_code_spans(line: str, fn: Callable[[str], str]) -> str:
    parts, pos = [], 0
    for m in CODE_SPAN.finditer(line):
        parts.append(fn(line[pos:m.start()]))
        parts.append(m.group(0))
        pos = m.end()
    parts.append(fn(line[pos:]))
    return "".join(parts)


def links(lines: list[str], source: str, resolve: Callable[[str], str | None]) -> list[str]:
    """Rewrites relative link targets. `source` is the file's path in the repository (posix);
    resolve(repo_path) returns the new target (without fragment) or None to leave the link as written."""
    base = posixpath.dirname(source)

    def target(t: str) -> str:
        bracket = t.startswith("<") and t.endswith(">")
        raw = t[1:-1] if bracket else t
        if not raw or raw.startswith(("#", "/")) or SCHEME.match(raw):
            return t
        path, _, frag = raw.partition("#")
        full = posixpath.normpath(posixpath.join(base, path)) if path else source
        if full.startswith("../") or full == "..":
            return t
        new = resolve(full)
        if new is None:
            return t
        new += f"#{frag}" if frag else ""
        return f"<{new}>" if bracket else new

    def inline(segment: str) -> str:
        return INLINE_LINK.sub(lambda m: m.group(1) + target(m.group(2)) + m.group(3), segment)

    out, mask = [], code_mask(lines)
    for line, code in zip(lines, mask):
        if code:
            out.append(line)
            continue
        m = REF_DEF.match(line)
        if m:
            out.append(m.group(1) + target(m.group(2)) + m.group(3))
        else:
            out.append(_outside_code_spans(line, inline))
    return out


def insert_after_title(lines: list[str], block: list[str]) -> list[str]:
    """Puts `block` right after the first level-1 heading (or at the top if there is none)."""
    mask = code_mask(lines)
    for i, (line, code) in enumerate(zip(lines, mask)):
        if not code and re.match(r"^#\s", line):
            return lines[:i + 1] + [""] + block + [""] + lines[i + 1:]
    return block + [""] + lines


def convert(text: str, source: str, resolve: Callable[[str], str | None]) -> list[str]:
    lines = text.splitlines()
    return links(tabs(alerts(gfm_lists(lines)), source), source, resolve)
