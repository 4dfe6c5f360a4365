"""The reading list: reading.yaml at the top of the repository, rendered as the site's Reading list page.

Each entry is a mapping: title, author, kind (post, video, code, paper), days (the days it serves, each a day of
course.yaml), adds (one line on what it adds), year (optional), and either url (its confirmed address) or
unconfirmed (why there is none: an item the course cites but whose address could not be confirmed). The page lists
the located items by the first day they serve, and the unconfirmed ones apart, saying so. A repository without
reading.yaml has no Reading list page.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from grader.errors import GraderError
from grader.yaml_file import read_yaml

READING = "reading.yaml"
PAGE = "reading.md"
KINDS = ("post", "video", "code", "paper")
_REQUIRED = ("title", "author", "kind", "days", "adds")
_ALLOWED = {*_REQUIRED, "year", "url", "unconfirmed"}


@dataclass(frozen=True)
class Item:
    title: str
    author: str
    kind: str
    days: tuple[str, ...]
    adds: str
    year: int | None = None
    url: str | None = None
    unconfirmed: str | None = None


def load_reading(root: Path, day_ids: list[str]) -> list[Item] | None:
    """The reading list in order, or None without reading.yaml. Every way an entry can be wrong is a GraderError
    naming the file and the entry."""
    path = root / READING
    if not path.exists():
        return None
    data = read_yaml(path, READING)
    if data is None:
        return []
    if not isinstance(data, list):
        raise GraderError(f"{READING}: expected a list of entries at the top level")
    items = []
    for n, e in enumerate(data, 1):
        where = f"{READING}: entry {n}" + (f" ({e.get('title')!r})" if isinstance(e, dict) and e.get("title") else "")
        if not isinstance(e, dict):
            raise GraderError(f"{where}: expected a mapping with {', '.join(_REQUIRED)}")
        unknown = sorted(set(e) - _ALLOWED)
        if unknown:
            raise GraderError(f"{where}: unknown key(s) {unknown} (allowed: {', '.join(sorted(_ALLOWED))})")
        for key in _REQUIRED:
            if key != "days" and (not isinstance(e.get(key), str) or not e[key].strip()):
                raise GraderError(f"{where}: {key} must be a non-empty string")
        if e["kind"] not in KINDS:
            raise GraderError(f"{where}: kind must be one of {', '.join(KINDS)}, not {e['kind']!r}")
        days = e.get("days")
        if not isinstance(days, list) or not days or not all(isinstance(d, str) for d in days):
            raise GraderError(f"{where}: days must be a non-empty list of day ids (e.g. [day10])")
        strangers = [d for d in days if d not in day_ids]
        if strangers:
            raise GraderError(f"{where}: {', '.join(strangers)} is not a day of course.yaml")
        url, why = e.get("url"), e.get("unconfirmed")
        if (url is None) == (why is None):
            raise GraderError(f"{where}: give either url (a confirmed address) or unconfirmed (why there is none)")
        if url is not None and (not isinstance(url, str) or not url.startswith("https://")):
            raise GraderError(f"{where}: url must be an https:// address")
        if why is not None and (not isinstance(why, str) or not why.strip()):
            raise GraderError(f"{where}: unconfirmed must say why the address is not known")
        year = e.get("year")
        if year is not None and (not isinstance(year, int) or isinstance(year, bool)):
            raise GraderError(f"{where}: year must be a number such as 2023")
        items.append(Item(" ".join(e["title"].split()), e["author"].strip(), e["kind"], tuple(days),
                          " ".join(e["adds"].split()), year, url, " ".join(why.split()) if why else None))
    return items


def reading_page(items: list[Item], day_ids: list[str], day_url) -> list[str]:
    """The Reading list page's markdown lines. day_url(day_id) gives the site link of a day's page."""
    order = {d: i for i, d in enumerate(day_ids)}
    located = sorted((it for it in items if it.url), key=lambda it: min(order[d] for d in it.days))
    lines = ["---", f"source: {READING}", "---", "", "# Reading list", "",
             "What to read or watch beside the lessons, in the order of the first day each item serves. Each day's "
             "lesson names the items that serve it in its references. The list lives in `reading.yaml` at the top "
             "of the repository.", ""]

    def entry(it: Item) -> str:
        year = f" ({it.year})" if it.year else ""
        days = ("Day " if len(it.days) == 1 else "Days ") + ", ".join(f"[{d[3:]}]({day_url(d)})" for d in it.days)
        who = f"{it.author}, [*{it.title}*]({it.url})" if it.url else f"*{it.title}* ({it.author})"
        return f"- {who}{year}, {it.kind}. {days}. {it.adds}"

    # Titles and addresses are quoted as their authors wrote them: no glossary hover links inside (no-gloss).
    lines += ['<div class="reading-list no-gloss" markdown>', ""] + [entry(it) for it in located] + ["", "</div>", ""]
    missing = [it for it in items if not it.url]
    if missing:
        lines += ["## Cited, not located yet", "",
                  "The course's sources cite these too, but no address for them could be confirmed, so none is "
                  "given: each is listed by the description it is cited by.", ""]
        lines += ['<div class="reading-list no-gloss" markdown>', ""]
        lines += [entry(it) + f" *Not located:* {it.unconfirmed}" for it in missing] + ["", "</div>", ""]
    return lines
