"""Writes the site's sources into a build folder: docs/ (markdown made from the repository) and mkdocs.yml.

Pages (docs path <- repository source):
  index.md          <- course.yaml (the students' home page: grader/site/home.py)
  repository.md     <- README.md
  syllabus.md       <- syllabus.md
  graph.md          <- course.yaml (the dependency graph)
  glossary.md       <- glossary.yaml + days/*/glossary.yaml
  reading.md        <- reading.yaml (the reading list: grader/site/reading.py), when there is one
  tracks/NAME.md    <- tracks/NAME.md
  days/dayNN.md     <- days/dayNN/README.md, or course.yaml for a day without a lesson yet
  leaderboard/      <- the output of `grader leaderboard build` (leaderboard.md, plots/), when there is one
Every day in course.yaml gets a page, so a new day appears on the site as soon as it is listed; its README
replaces the placeholder as soon as it exists. A day's header line shows its release and due dates; in a student
repository (a .release.json beside course.yaml) a day the release does not hold yet says "not released yet (on
DATE)", on its page and in the navigation, and its lesson's links lead to that page.
"""
from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from grader.authoring import semester
from grader.course import Course, Day
from grader.site import glossary as gl
from grader.site import graph, home
from grader.site import reading as rd
from grader.site import transform

HERE = Path(__file__).resolve().parent
ASSETS = HERE / "assets"
THEME = HERE / "theme"
COPY_EXT = {".png", ".svg", ".jpg", ".jpeg", ".gif", ".webp"}
JS = ["feedback.js", "grid.js", "steps.js", "sidenotes.js", "tilewalk.js"]
BRANCH = "main"  # the branch that links to repository files point at
SLUGIFY = "!!python/name:grader.site.transform.github_slug"


@dataclass
class Generated:
    out: Path
    docs: Path
    config: Path
    site: Path
    pages: dict[str, str] = field(default_factory=dict)  # docs path -> repository source
    glossary: gl.Glossary | None = None


def day_page(day_id: str) -> str:
    return f"days/{day_id}.md"


def nav_title(day: Day, state: semester.DayState | None = None) -> str:
    later = f" ({state.status})" if state and state.status == semester.NOT_RELEASED else ""
    return f"{day.id[3:]} · {day.title}" + (" (planned)" if day.status != "ready" else later)


def page_map(root: Path, course: Course) -> dict[str, str]:
    """repository source -> docs path, for every page made from a markdown file of the repository."""
    m = {}
    if (root / "README.md").is_file():
        m["README.md"] = "repository.md"
    if (root / "syllabus.md").is_file():
        m["syllabus.md"] = "syllabus.md"
    for p in sorted((root / "tracks").glob("*.md")):
        m[f"tracks/{p.name}"] = f"tracks/{p.name}"
    for d in course.days:
        if (root / "days" / d.id / "README.md").is_file():
            m[f"days/{d.id}/README.md"] = day_page(d.id)
    return m


def _front_matter(meta: dict) -> list[str]:
    return ["---", *yaml.safe_dump(meta, sort_keys=False, allow_unicode=True).strip().splitlines(), "---", ""]


def _day_header(day: Day, state: semester.DayState) -> list[str]:
    """The line under a day's title: track, status, its dates, prerequisites, what is graded."""
    after = ", ".join(f"[{p}](/{day_page(p)})" for p in day.prerequisites) or "nothing: start here"
    status = state.label if state.status in (semester.PLANNED, semester.NOT_RELEASED) else "ready"
    dates = [f"out {day.release.isoformat()}" if day.release and state.released else None,
             f"due {day.due.isoformat()}" if day.due and day.status == "ready" else None]
    bits = [f"**{day.track}** track", "mandatory" if day.mandatory else None, status, *dates, f"after {after}"]
    if day.status == "ready":
        pts = sum(e.points for e in day.exercises)
        bits.append(f"graded by `grader check {day.id}` ({pts} points)")
    return ['<p class="day-meta no-gloss" markdown>' + " · ".join(b for b in bits if b) + "</p>"]


def _planned_day(day: Day, state: semester.DayState) -> list[str]:
    lines = [f"# Day {day.id[3:]} — {day.title}", ""] + _day_header(day, state) + [""]
    if state.status == semester.NOT_RELEASED:  # a student repository, before the release that brings the day
        lines += ['!!! info "Not released yet"', f"    This day is {state.label}: its lesson and its stub come with "
                  "that release.", ""]
    else:
        where = "is planned: its" if day.status != "ready" else "is in the course, but its"
        lines += ['!!! info "Not written yet"', f"    This day {where} lesson is not written yet. It will appear "
                  f"here as soon as `days/{day.id}/README.md` exists.", ""]
    if day.topics:
        lines += ["## Topics", ""] + [f"- {t}" for t in day.topics] + [""]
    return lines


def generate(root: Path, course: Course, out: Path, leaderboard: Path | None = None) -> Generated:
    """Writes out/docs and out/mkdocs.yml (docs/ is emptied first); the HTML goes to out/html when built.
    leaderboard: a folder `grader leaderboard build` wrote; its page is added if it holds one."""
    g = Generated(out=out, docs=out / "docs", config=out / "mkdocs.yml", site=out / "html")
    if g.docs.exists():
        shutil.rmtree(g.docs)
    g.docs.mkdir(parents=True)
    repo = course.repository.rstrip("/")
    pages = page_map(root, course)
    lessons = {f"days/{d.id}/README.md": d for d in course.days}  # a day's lesson file -> the day
    # Not today's: the site says what the release holds (a student repository's) or the dates (the course's).
    states = {s.day.id: s for s in semester.states(course, None, semester.manifest_of(root))}

    def resolve(path: str) -> str | None:
        if path in pages:
            return "/" + pages[path]
        if path == rd.READING and (root / rd.READING).is_file():  # a lesson's link to the list: its page
            return "/" + rd.PAGE
        if path in lessons:  # a day whose lesson is not written yet still has its page
            return "/" + day_page(lessons[path].id)
        f = root / path
        if f.is_file() and f.suffix.lower() in COPY_EXT:
            dest = g.docs / "files" / path
            if not dest.exists():
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, dest)
            return f"/files/{path}"
        if f.exists():
            return f"{repo}/{'tree' if f.is_dir() else 'blob'}/{BRANCH}/{path}"
        return None

    def write(docs_path: str, lines: list[str], source: str) -> None:
        p = g.docs / docs_path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
        g.pages[docs_path] = source

    for source, docs_path in pages.items():
        text = (root / source).read_text(encoding="utf-8")
        lines = transform.convert(text, source, resolve)
        meta = {"source": source}
        day = lessons.get(source)
        if day:
            if day.status != "ready":  # inserted first, so it ends up under the day's header line
                lines = transform.insert_after_title(lines, [
                    '!!! info "Planned"', "    This day is still planned in course.yaml: the lesson below is a "
                    "draft and there is nothing to grade yet."])
            lines = transform.insert_after_title(lines, _day_header(day, states[day.id]))
            meta["day"] = day.id
        write(docs_path, _front_matter(meta) + lines, source)
    for d in course.days:
        if day_page(d.id) not in g.pages:
            write(day_page(d.id), _front_matter({"source": "course.yaml", "day": d.id}) + _planned_day(d, states[d.id]),
                  "course.yaml")

    # The home page, for students.
    has_board = leaderboard is not None and (Path(leaderboard) / "leaderboard.md").is_file()
    write("index.md", _front_matter({"source": "course.yaml", "hide": ["toc"]}) + home.home_page(
        course, lambda d: "/" + day_page(d), lambda d: f"days/{d}/",
        "/repository.md" if "repository.md" in g.pages else None,
        "/" + LEADERBOARD_PAGE if has_board else None), "course.yaml")

    # The glossary: its page, and the terms file the term_links extension reads.
    g.glossary = gl.load_glossary(root, [d.id for d in course.days])
    write("glossary.md", gl.glossary_page(g.glossary, lambda d: "/" + day_page(d)).splitlines(), "glossary.yaml")
    terms = [{"term": t.term, "anchor": t.anchor, "definition": plain(t.definition), "forms": t.forms()}
             for t in g.glossary.terms]
    (out / "terms.json").write_text(json.dumps(terms, indent=1, ensure_ascii=False), encoding="utf-8")

    # The reading list's page, when the repository has one.
    items = rd.load_reading(root, [d.id for d in course.days])
    if items is not None:
        write(rd.PAGE, rd.reading_page(items, [d.id for d in course.days], lambda d: "/" + day_page(d)), rd.READING)

    # The dependency graph page; the SVG is raw HTML, so its links are written relative to /graph/.
    svg = graph.render_svg(course, lambda d: f"../days/{d}/")
    write("graph.md", _front_matter({"source": "course.yaml", "hide": ["toc"]}) + [
        "# Dependency graph", "",
        "Each day builds on the days it points from (the `prerequisites` in `course.yaml`). Click a day to open "
        "it; dashed days are planned.", "", graph.legend_html(course), "",
        f'<div class="dep-graph-wrap">{svg}</div>', ""], "course.yaml")

    if leaderboard is not None and (Path(leaderboard) / "leaderboard.md").is_file():
        add_leaderboard(Path(leaderboard), g, write)

    # Our own scripts and styles.
    dest = g.docs / "assets" / "course"
    dest.mkdir(parents=True, exist_ok=True)
    for f in ASSETS.iterdir():
        if f.is_file():
            shutil.copyfile(f, dest / f.name)

    text = yaml.safe_dump(mkdocs_config(root, course, g, terms_file=out / "terms.json", states=states), sort_keys=False,
                          allow_unicode=True)
    # A Python function as a value: MkDocs' YAML loader takes the !!python/name tag, safe_dump cannot write it.
    g.config.write_text(text.replace(repr(SLUGIFY), SLUGIFY), encoding="utf-8")
    return g


LEADERBOARD_PAGE = "leaderboard/index.md"


def add_leaderboard(src: Path, g: Generated, write) -> None:
    """The leaderboard's page and its plots (a build's own files, copied as they are)."""
    lines = src.joinpath("leaderboard.md").read_text(encoding="utf-8").splitlines()
    write(LEADERBOARD_PAGE, _front_matter({"source": "leaderboard", "hide": ["toc"]}) + lines, "leaderboard")
    plots = g.docs / "leaderboard" / "plots"
    plots.mkdir(parents=True, exist_ok=True)
    for f in sorted(src.joinpath("plots").glob("*.png")):
        shutil.copyfile(f, plots / f.name)


def plain(md: str) -> str:
    """A definition as tooltip text: no backticks, emphasis or link syntax."""
    s = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", md)
    s = re.sub(r"`([^`]*)`", r"\1", s)
    return re.sub(r"(\*\*|\*)(\S.*?\S|\S)\1", r"\2", s)


def mkdocs_config(root: Path, course: Course, g: Generated, terms_file: Path,
                  states: dict[str, semester.DayState] | None = None) -> dict:
    nav = [{"Home": "index.md"}]
    nav += [{"Syllabus": "syllabus.md"}] if "syllabus.md" in g.pages else []
    nav += [{"Dependency graph": "graph.md"}, {"Glossary": "glossary.md"}]
    nav += [{"Reading list": rd.PAGE}] if rd.PAGE in g.pages else []
    tracks = [p for p in g.pages if p.startswith("tracks/")]
    if tracks:
        nav.append({"Tracks": [{Path(p).stem.capitalize(): p} for p in sorted(tracks)]})
    nav.append({"Days": [{nav_title(d, (states or {}).get(d.id)): day_page(d.id)} for d in course.days]})
    if LEADERBOARD_PAGE in g.pages:
        nav.append({"Leaderboard": LEADERBOARD_PAGE})
    nav += [{"The repository": "repository.md"}] if "repository.md" in g.pages else []
    return {
        "site_name": course.title,
        "site_description": f"{course.title}: lessons, exercises and an autograder.",
        "docs_dir": "docs",
        "site_dir": "html",
        "use_directory_urls": True,
        "strict": False,
        "theme": {
            "name": "material",
            "custom_dir": str(THEME),
            "font": False,  # no web fonts: the site must work offline
            "icon": {"logo": "material/chip"},
            "palette": [
                {"media": "(prefers-color-scheme: light)", "scheme": "default", "primary": "teal",
                 "accent": "indigo", "toggle": {"icon": "material/weather-night", "name": "Dark mode"}},
                {"media": "(prefers-color-scheme: dark)", "scheme": "slate", "primary": "teal",
                 "accent": "light blue", "toggle": {"icon": "material/weather-sunny", "name": "Light mode"}},
            ],
            "features": ["content.code.copy", "content.code.annotate", "content.tabs.link", "content.tooltips",
                         "content.footnote.tooltips", "navigation.footer", "navigation.top", "navigation.indexes",
                         "toc.follow", "search.highlight"],
        },
        "markdown_extensions": [
            {"toc": {"permalink": True, "slugify": SLUGIFY}},
            "admonition", "attr_list", "md_in_html", "def_list", "tables", "footnotes",
            "pymdownx.details",
            {"pymdownx.superfences": {}},
            {"pymdownx.highlight": {"pygments_lang_class": True, "anchor_linenums": True}},
            "pymdownx.inlinehilite",
            {"pymdownx.tabbed": {"alternate_style": True}},
            {"grader.site.term_links": {"terms_file": str(terms_file), "glossary_page": "/glossary.md"}},
        ],
        "plugins": ["search"],
        "extra_css": ["assets/course/course.css"],
        "extra_javascript": [f"assets/course/{j}" for j in JS],
        "extra": {"generator": False, "course": {"repository": course.repository.rstrip("/"), "branch": BRANCH}},
        "validation": {"absolute_links": "relative_to_docs", "unrecognized_links": "warn", "anchors": "warn",
                       "omitted_files": "warn"},
        "nav": nav,
    }
