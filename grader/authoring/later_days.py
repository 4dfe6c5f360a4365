"""Released pages that name a day not out yet: a track page links every lesson of its track, a lesson points ahead
to a later day's folder. In a student repository those lessons and folders arrive with their day, so a page released
before then says so instead of linking what is not there: a link to a later day's file becomes its words and the
day's date, and a path of it in prose gets the same note. Code blocks are left as they are (a command is the
student's to run once the day is out). The release applies this to every markdown page it writes."""
from __future__ import annotations

import posixpath
import re
from datetime import date

_LINK = re.compile(r"(?<!!)\[([^\]\n]*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_DAY_PATH = re.compile(r"^days/(day\d\d)(?:/|$)")
_BARE = re.compile(r"(`?)((?<![\w./@:-])(?:\.\./)*days/(day\d\d)\b(?:[\w./*-]*[\w/*-])?)(`?)")


def note(day: str, when: date | None) -> str:
    return f"{day} is not released yet" + (f": out on {when.isoformat()}" if when else "")


def _day_of(page: str, target: str) -> str | None:
    if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # a URL
        return None
    path = posixpath.normpath(posixpath.join(posixpath.dirname(page), target.split("#")[0]))
    m = _DAY_PATH.match(path)
    return m.group(1) if m else None


def rewrite(page: str, text: str, later: dict[str, date | None]) -> str:
    """text of the markdown page at page (relative to the repository) with its links to the days of `later` (day ->
    its release date) turned into words with the day's date, and each prose path of such a day noted."""
    if not later or "days/" not in text:
        return text
    out, fence = [], False
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith("```"):
            fence = not fence
        elif not fence:
            parts, at = [], 0
            for m in _LINK.finditer(line):  # prose between links gets its paths noted; each link is unlinked
                parts += [_BARE.sub(lambda b: _noted(page, b, later), line[at:m.start()]), _unlink(page, m, later)]
                at = m.end()
            line = "".join(parts) + _BARE.sub(lambda b: _noted(page, b, later), line[at:])
        out.append(line)
    return "".join(out)


def _unlink(page: str, m: re.Match, later: dict) -> str:
    day = _day_of(page, m.group(2))
    if day not in later:
        return m.group(0)
    return f"{m.group(1)} ({note(day, later[day])})"


def _noted(page: str, m: re.Match, later: dict) -> str:
    day = _day_of(page, m.group(2)) if m.group(2).startswith("..") else m.group(3)
    if day not in later or (m.group(1) and not m.group(4)):
        return m.group(0)
    return f"{m.group(0)} ({note(day, later[day])})"
