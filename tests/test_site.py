"""The course website without a browser: glossary, markdown conventions, the dependency graph, the generated
docs tree, a full build of the real course (offline, no warnings, every day present) and the CLI."""
from __future__ import annotations

import os
import re
import shutil
import textwrap
import threading
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from grader.errors import GraderError

from tests.conftest import ROOT, run_grader


def _site_packages_or_skip():
    try:
        import markdown  # noqa: F401
        import material  # noqa: F401
        import mkdocs  # noqa: F401
        import pymdownx  # noqa: F401
    except ImportError as e:
        msg = f"the site packages are missing ({e.name}): pip install -e \".[site]\""
        if os.environ.get("CI") == "true":
            pytest.fail(msg + " (CI must run the site tests)")
        pytest.skip(msg)


@pytest.fixture(scope="module", autouse=True)
def _needs_site_packages():
    _site_packages_or_skip()


@pytest.fixture(scope="module")
def built(tmp_path_factory, course):
    """The real course, built once for this module."""
    from grader.site.build import build

    out = tmp_path_factory.mktemp("site")
    return build(ROOT, course, out)


# -- glossary -------------------------------------------------------------------------------------------------
def _repo(tmp_path: Path, days: str, files: dict[str, str]) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "course.yaml").write_text(textwrap.dedent(days))
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return tmp_path


MINI = """\
title: "Mini course"
repository: "https://example.invalid/mini"
days:
  - {id: day01, title: First, track: alpha, status: planned, topics: [one thing]}
  - {id: day02, title: Second, track: alpha, status: planned, prerequisites: [day01]}
  - {id: day03, title: Third, track: beta, status: planned, prerequisites: [day01, day02]}
"""


def test_glossary_merges_day_files_and_knows_plurals(tmp_path):
    from grader.site.glossary import load_glossary, plural

    _repo(tmp_path, MINI, {
        "glossary.yaml": "warp: 32 threads.\nstreaming multiprocessor: {definition: A processor., aliases: [SM]}\n",
        "days/day02/glossary.yaml": "tile: A piece of a matrix.\n",
    })
    g = load_glossary(tmp_path, ["day01", "day02", "day03"])
    assert [t.term for t in g.sorted()] == ["streaming multiprocessor", "tile", "warp"]
    assert g.files == ["glossary.yaml", "days/day02/glossary.yaml"]
    tile = next(t for t in g.terms if t.term == "tile")
    assert tile.day == "day02" and tile.source == "days/day02/glossary.yaml"
    sm = next(t for t in g.terms if t.anchor == "streaming-multiprocessor")
    assert sm.forms() == ["streaming multiprocessor", "streaming multiprocessors", "SM", "SMs"]
    assert [plural(w) for w in ("block", "latency", "softmax", "bus", "key")] == [
        "blocks", "latencies", "softmaxes", "buses", "keys"]


@pytest.mark.parametrize("files, message", [
    ({"glossary.yaml": "warp: a\n", "days/day01/glossary.yaml": "Warp: b\n"},
     "days/day01/glossary.yaml: the term 'Warp' is already defined in glossary.yaml"),
    ({"glossary.yaml": "warp: {definition: a, aliases: [tile]}\ntile: b\n"},
     "the term 'tile' is already defined in glossary.yaml (as 'warp')"),
    ({"glossary.yaml": "warp: [a, b]\n"}, "'warp' must map to a definition"),
    ({"glossary.yaml": "warp: {definition: a, see: b}\n"}, "unknown key(s) ['see']"),
    ({"glossary.yaml": "warp: {aliases: [w]}\n"}, "'warp' has no definition"),
    ({"glossary.yaml": "- warp\n"}, "expected a mapping of term -> definition"),
    ({"glossary.yaml": "warp: [\n"}, "glossary.yaml is not valid YAML"),
    ({"glossary.yaml": "warp: a\nwarp: b\n"}, "'warp' is defined twice"),
    ({"glossary.yaml": "block: a\nblocks: b\n"}, "the term 'blocks' is already defined in glossary.yaml (as 'block')"),
])
def test_glossary_errors_name_the_file_and_term(tmp_path, files, message):
    from grader.site.glossary import load_glossary

    _repo(tmp_path, MINI, files)
    with pytest.raises(GraderError) as e:
        load_glossary(tmp_path, ["day01", "day02", "day03"])
    assert message in str(e.value)


# -- term links -----------------------------------------------------------------------------------------------
def _render(md_text: str, terms: list[dict]) -> str:
    import markdown

    from grader.site.term_links import TermLinksExtension

    return markdown.markdown(md_text, extensions=["fenced_code", "md_in_html",
                                                  TermLinksExtension(terms=terms, glossary_page="/g.md")])


TERMS = [
    {"term": "warp", "anchor": "warp", "definition": "32 threads.", "forms": ["warp", "warps"]},
    {"term": "streaming multiprocessor", "anchor": "sm", "definition": "A processor.",
     "forms": ["streaming multiprocessor", "SM", "SMs"]},
    {"term": "stream", "anchor": "stream", "definition": "A queue.", "forms": ["stream", "streams"]},
]


def test_terms_become_hover_links_in_prose_only():
    html = _render(textwrap.dedent("""\
        ## A warp

        Warps and a warp run on an SM; sm_80 and `warp` are not terms, nor is warp-level or a [warp](x.md).
        A streaming multiprocessor is not a stream.

        ```
        warp in code
        ```

        <div class="no-gloss" markdown>A warp here is left alone.</div>

        ## Next

        The warp again.
        """), TERMS)
    links = ET.fromstring(f"<root>{html}</root>").iter("a")
    found = [(a.text, a.get("data-term"), a.get("class")) for a in links if "gloss" in (a.get("class") or "")]
    assert found == [
        ("Warps", "warp", "gloss gloss-first"), ("warp", "warp", "gloss"), ("SM", "streaming multiprocessor",
                                                                           "gloss gloss-first"),
        ("streaming multiprocessor", "streaming multiprocessor", "gloss"), ("stream", "stream", "gloss gloss-first"),
        ("warp", "warp", "gloss gloss-first"),  # a new section underlines again
    ]
    assert 'href="/g.md#warp" title="32 threads."' in html
    assert "<h2>A warp</h2>" in html and "warp in code" in html and "sm_80" in html


@pytest.mark.parametrize("lang, code", [
    ("cuda", "__global__ void k(float* x) { x[threadIdx.x] = 0.f; }"),
    ("ptx", "ld.global.f32 %f1, [%rd1];"),
    ("python", "def f(x):\n    return x + 1"),
    ("bash", "grader check day01 --solution  # a comment"),
])
def test_code_languages_are_highlighted(lang, code):
    import markdown

    html = markdown.markdown(f"```{lang}\n{code}\n```", extensions=["pymdownx.superfences", "pymdownx.highlight"],
                             extension_configs={"pymdownx.highlight": {"pygments_lang_class": True}})
    assert f'class="language-{lang} highlight"' in html and html.count('<span class="') >= 3, html


# -- markdown conventions ------------------------------------------------------------------------------------
def test_github_alerts_and_comment_tabs_become_admonitions_and_tabs():
    from grader.site.transform import alerts, tabs

    src = textwrap.dedent("""\
        > [!WARNING]
        > Do not *race*.
        >
        > Really.

        <!-- tab: Pseudocode -->
        ```
        x = 1
        ```
        <!-- tab: CUDA -->
        ```cuda
        <!-- tab: not a marker inside code -->
        int x = 1;
        ```
        <!-- /tabs -->
        after
        """).splitlines()
    out = "\n".join(tabs(alerts(src)))
    assert out.startswith('!!! warning\n    Do not *race*.\n\n    Really.\n')
    assert '=== "Pseudocode"\n\n    ```\n    x = 1\n    ```' in out
    assert '=== "CUDA"\n\n    ```cuda\n    <!-- tab: not a marker inside code -->\n    int x = 1;' in out
    assert out.rstrip().endswith("after") and "/tabs" not in out


def test_github_lists_are_nested_and_started_as_github_does():
    from grader.site.transform import gfm_lists

    src = textwrap.dedent("""\
        What it does:
        1. builds
           across lines;
           - a nested item
             ```
             - code, not an item
             ```
        2. runs
        lazy continuation
        """).splitlines()
    assert gfm_lists(src) == [
        "What it does:", "", "1. builds", "    across lines;", "    - a nested item", "        ```",
        "        - code, not an item", "        ```", "2. runs", "lazy continuation"]


@pytest.mark.parametrize("text, message", [
    ("<!-- tab: A -->\nx\n", "a tab group is not closed"),
    ("x\n<!-- /tabs -->\n", "without a `<!-- tab: Label -->` before it"),
])
def test_broken_tab_groups_are_errors_with_a_line(text, message):
    from grader.site.transform import tabs

    with pytest.raises(GraderError, match=message) as e:
        tabs(text.splitlines(), "days/day09/README.md")
    assert str(e.value).startswith("days/day09/README.md:")


def test_heading_anchors_are_githubs(built):
    from grader.site.transform import github_slug

    assert github_slug("Concept 5: expf, __expf and --use_fast_math") == "concept-5-expf-__expf-and---use_fast_math"
    assert github_slug("Day 01 — Naive softmax: one thread per row") == "day-01--naive-softmax-one-thread-per-row"
    html = (built.site / "days" / "day03" / "index.html").read_text()
    assert 'id="concept-5-expf-__expf-and---use_fast_math"' in html


def test_links_resolve_against_the_source_file():
    from grader.site.transform import links

    seen = []

    def resolve(path):
        seen.append(path)
        return {"days/day01/README.md": "/days/day01.md", "measured/a.png": "/files/measured/a.png"}.get(path)

    lines = links([
        "See [day 1](../day01/README.md#goal), ![plot](../../measured/a.png) and [x](https://a.b/c).",
        "`[not](a link)` and [ref]: ../day01/README.md",
        "```", "[in code](../day01/README.md)", "```",
        "[kept](missing.md) [anchor](#here)",
    ], "days/day02/README.md", resolve)
    assert lines[0] == ("See [day 1](/days/day01.md#goal), ![plot](/files/measured/a.png) and "
                        "[x](https://a.b/c).")
    assert lines[1] == "`[not](a link)` and [ref]: ../day01/README.md"  # not at line start: not a definition
    assert lines[3] == "[in code](../day01/README.md)"
    assert lines[5] == "[kept](missing.md) [anchor](#here)"
    assert "days/day02/missing.md" in seen


# -- dependency graph ----------------------------------------------------------------------------------------
def test_graph_layers_and_svg(course):
    from grader.site.graph import layers_of, layout, render_svg

    layer = layers_of(course)
    for d in course.days:
        assert layer[d.id] == 1 + max((layer[p] for p in d.prerequisites), default=-1)
    lay = layout(course)
    for ids in lay.layers:  # nodes of a layer never overlap
        xs = sorted((lay.nodes[n].x - lay.nodes[n].width / 2, lay.nodes[n].x + lay.nodes[n].width / 2) for n in ids)
        assert all(a[1] <= b[0] for a, b in zip(xs, xs[1:]))
    svg = ET.fromstring(render_svg(course, lambda d: f"../days/{d}/"))
    ns = "{http://www.w3.org/2000/svg}"
    nodes = {a.get("data-day"): a for a in svg.iter(f"{ns}a")}
    assert list(nodes) == sorted(d.id for d in course.days) or set(nodes) == {d.id for d in course.days}
    for d in course.days:
        a = nodes[d.id]
        assert a.get("href") == f"../days/{d.id}/"
        assert f"dg-{d.status}" in a.get("class")
        assert ("dg-mandatory" in a.get("class")) == d.mandatory
    edges = [(p.get("data-from"), p.get("data-to")) for p in svg.iter(f"{ns}path") if p.get("data-from")]
    assert sorted(edges) == sorted((p, d.id) for d in course.days for p in d.prerequisites)


# -- the real course, built ----------------------------------------------------------------------------------
def test_every_day_has_a_page_and_planned_days_say_so(built, course):
    for d in course.days:
        page = built.site / "days" / d.id / "index.html"
        assert page.is_file(), d.id
        html = page.read_text()
        has_readme = (ROOT / "days" / d.id / "README.md").is_file()
        if d.status != "ready" or not has_readme:
            assert "planned" in html or "not written yet" in html
    for name in ("index.html", "syllabus/index.html", "glossary/index.html", "graph/index.html"):
        assert (built.site / name).is_file()


def test_build_has_no_warnings_and_needs_no_network(built, course):
    from grader.site.build import external_links, remote_resources

    assert built.warnings == []
    assert remote_resources(built.site) == []
    sources = "".join(p.read_text() for p in [ROOT / "README.md", ROOT / "syllabus.md", ROOT / "reading.yaml",
                                              *ROOT.glob("tracks/*.md"), *ROOT.glob("days/*/README.md")])
    for url, pages in external_links(built.site).items():
        assert url.startswith(course.repository) or url in sources, (url, sorted(pages)[:3])


def test_day01_uses_the_features(built, course):
    html = (built.site / "days" / "day01" / "index.html").read_text()
    for needle in ('class="cuda-grid"', 'data-grid="4,2,1"', 'class="tabbed-set', '>Pseudocode</label>',
                   '>CUDA</label>', 'class="gloss gloss-first"', 'class="footnote-ref"', '<details class="convention"',
                   '<details class="definition"', 'class="language-cuda highlight"',
                   f'{course.repository}/issues/new?title=', 'name="course-repository"',
                   'name="course-source" content="days/day01/README.md"'):
        assert needle in html, needle
    for js in ("grid.js", "steps.js", "feedback.js", "sidenotes.js", "tilewalk.js"):
        assert f"assets/course/{js}" in html


def test_glossary_page_lists_every_term_alphabetically(built, course):
    from grader.site.glossary import load_glossary

    html = (built.site / "glossary" / "index.html").read_text()
    g = load_glossary(ROOT, [d.id for d in course.days])
    pos = [html.index(f'<dt id="{t.anchor}">') for t in g.sorted()]
    assert pos == sorted(pos) and len(pos) == len(g.terms) >= 30
    # no hover links inside definitions (their class is exactly "gloss"; a day's note is "glossary-note")
    assert all('class="gloss"' not in part for part in html.split('<dl class="glossary')[1:])


def test_the_reading_list_page_lists_every_entry_and_each_day_names_its_items(built, course):
    import html as html_lib

    from grader.site.reading import load_reading

    items = load_reading(ROOT, [d.id for d in course.days])
    page = (built.site / "reading" / "index.html").read_text()
    located, rest = page.split('id="cited-not-located-yet"')  # the unconfirmed items come last, apart
    assert len(items) >= 6
    for it in items:
        where = located if it.url else rest
        assert html_lib.escape(it.title, quote=False) in where, it.title
        for d in it.days:
            assert f'href="../days/{d}/"' in where.split(html_lib.escape(it.title, quote=False), 1)[1], (it.title, d)
        if it.url:
            assert f'href="{html_lib.escape(it.url)}"' in located, it.url
            for d in it.days:  # the day's lesson names the item, at the same address
                assert it.url in (ROOT / "days" / d / "README.md").read_text(), (it.title, d)
        else:
            assert "Not located:" in rest and it.unconfirmed.split()[0] in rest
    assert 'href="../reading/"' in (built.site / "glossary" / "index.html").read_text()  # in the navigation
    assert 'href="../../reading/"' in (built.site / "days" / "day10" / "index.html").read_text()  # a lesson's link


@pytest.mark.parametrize("text, message", [
    ("- {title: T, author: A, kind: post, days: [day01], adds: x}\n",
     "reading.yaml: entry 1 ('T'): give either url (a confirmed address) or unconfirmed (why there is none)"),
    ("- {title: T, author: A, kind: post, days: [day09], adds: x, url: https://example.invalid/t}\n",
     "reading.yaml: entry 1 ('T'): day09 is not a day of course.yaml"),
    ("- {title: T, author: A, kind: blog, days: [day01], adds: x, url: https://example.invalid/t}\n",
     "reading.yaml: entry 1 ('T'): kind must be one of post, video, code, paper, not 'blog'"),
    ("- {title: T, author: A, kind: post, days: [day01], adds: x, url: example.invalid/t}\n",
     "reading.yaml: entry 1 ('T'): url must be an https:// address"),
    ("title: T\n", "reading.yaml: expected a list of entries at the top level"),
])
def test_a_bad_reading_list_is_an_error_naming_the_entry(tmp_path, text, message):
    repo = _repo(tmp_path / "repo", MINI, {"reading.yaml": text})
    r = run_grader("--course", str(repo / "course.yaml"), "site", "build", "--out", str(tmp_path / "o"), cwd=repo)
    assert r.returncode == 2 and f"error: {message}" in r.stdout, r.stdout + r.stderr
    assert "Traceback" not in r.stdout + r.stderr


def test_without_a_reading_list_there_is_no_page(tmp_path):
    from grader.course import load_course
    from grader.site.build import build

    repo = _repo(tmp_path / "repo", MINI, {})
    res = build(repo, load_course(repo / "course.yaml"), tmp_path / "out")
    assert not (res.site / "reading").exists() and "Reading list" not in (res.site / "index.html").read_text()


def test_links_between_pages_are_rewritten(built):
    syllabus = (built.site / "syllabus" / "index.html").read_text()
    assert 'href="../days/day01/"' in syllabus and 'README.md"' not in syllabus
    graph = (built.site / "graph" / "index.html").read_text()
    assert 'href="../days/day10/"' in graph


# -- new days, bad input, the CLI ----------------------------------------------------------------------------
def test_a_new_lesson_replaces_its_placeholder(tmp_path):
    from grader.course import load_course
    from grader.site.build import build

    repo = _repo(tmp_path / "repo", MINI, {"days/day01/README.md": "# Day 01 — First\n\nHello, world.\n"})
    out = tmp_path / "out"
    res = build(repo, load_course(repo / "course.yaml"), out)
    assert "Hello, world." in (res.site / "days/day01/index.html").read_text()
    assert "not written yet" in (res.site / "days/day02/index.html").read_text()
    (repo / "days/day02").mkdir()
    (repo / "days/day02/README.md").write_text("# Day 02 — Second\n\n<!-- tab: A -->\nalpha\n<!-- tab: B -->\nbeta"
                                               "\n<!-- /tabs -->\n")
    res = build(repo, load_course(repo / "course.yaml"), out)
    day2 = (res.site / "days/day02/index.html").read_text()
    assert "not written yet" not in day2 and "tabbed-set" in day2 and ">B</label>" in day2
    assert "still planned" in day2  # a draft of a planned day is marked as one


def test_the_leaderboard_page_appears_only_when_a_leaderboard_exists(tmp_path):
    from grader.classroom import leaderboard as lb
    from tests.test_leaderboard import NOW, exercise, put, result

    repo = _repo(tmp_path / "repo", MINI, {})
    # no leaderboard: the site builds as before, strictly, with no page for it
    r = run_grader("--course", str(repo / "course.yaml"), "site", "build", "--strict", "--out", str(tmp_path / "o"),
                   cwd=repo)
    assert r.returncode == 0, r.stdout + r.stderr
    assert not (tmp_path / "o/html/leaderboard").exists()
    put(tmp_path / "res", "alice", result(exercise("softmax", (2.0, 2.5))))
    put(tmp_path / "res", "bob", "{broken")
    from grader.paths import Paths

    lb.write(lb.build([tmp_path / "res"], now=NOW), Paths(repo).leaderboard())  # the default place
    r = run_grader("--course", str(repo / "course.yaml"), "site", "build", "--strict", "--out", str(tmp_path / "o"),
                   cwd=repo)
    assert r.returncode == 0, r.stdout + r.stderr
    page = (tmp_path / "o/html/leaderboard/index.html").read_text()
    assert 'href="leaderboard/"' in (tmp_path / "o/html/index.html").read_text()  # the home page points to it
    assert "alice" in page and "2.00x" in page and "malformed" in page
    assert 'href="../../leaderboard/"' in (tmp_path / "o/html/days/day01/index.html").read_text()  # in the nav
    img = re.search(r'<img[^>]+src="([^"]+\.png)"', page).group(1)
    assert (tmp_path / "o/html/leaderboard" / img).read_bytes()[:4] == b"\x89PNG"
    r = run_grader("--course", str(repo / "course.yaml"), "site", "build", "--leaderboard", str(tmp_path / "none"),
                   "--out", str(tmp_path / "o"), cwd=repo)
    assert r.returncode == 2 and "holds no leaderboard.md" in r.stdout


def test_site_build_cli_success_and_bad_glossary(tmp_path):
    repo = _repo(tmp_path / "repo", MINI, {"glossary.yaml": "warp: 32 threads\n"})
    r = run_grader("--course", str(repo / "course.yaml"), "site", "build", "--out", str(tmp_path / "o"), cwd=repo)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "built 6 pages and 1 glossary term into" in r.stdout  # home, 3 days, the glossary, the graph
    (repo / "glossary.yaml").write_text("warp: 32 threads\nWARP: again\n")
    r = run_grader("--course", str(repo / "course.yaml"), "site", "build", "--out", str(tmp_path / "o"), cwd=repo)
    assert r.returncode == 2
    assert "error: glossary.yaml: the term 'WARP' is already defined in glossary.yaml" in r.stdout
    assert "Traceback" not in r.stdout + r.stderr


def test_missing_site_packages_say_how_to_install(monkeypatch):
    import sys

    from grader.site.build import require

    monkeypatch.setitem(sys.modules, "material", None)  # an import of it now fails
    with pytest.raises(GraderError, match=r'needs material: pip install -e "\.\[site\]"'):
        require()


def test_serve_and_rebuild_on_change(tmp_path):
    from grader.course import load_course
    from grader.site.build import build
    from grader.site.serve import make_server, watch

    repo = _repo(tmp_path / "repo", MINI, {"days/day01/README.md": "# Day 01 — First\n\nversion one\n"})
    out = tmp_path / "out"
    build(repo, load_course(repo / "course.yaml"), out)
    server = make_server(out / "html")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    stop, rebuilt, watching = threading.Event(), threading.Event(), threading.Event()

    def rebuild():
        build(repo, load_course(repo / "course.yaml"), out)
        rebuilt.set()

    threading.Thread(target=watch, args=(repo, rebuild, stop, 0.1, watching), daemon=True).start()
    assert watching.wait(30)  # an edit before the first snapshot would go unseen
    url = f"http://127.0.0.1:{server.server_address[1]}/days/day01/"
    try:
        assert server.server_address[0] == "127.0.0.1"
        assert "version one" in urllib.request.urlopen(url, timeout=10).read().decode()
        (repo / "days/day01/README.md").write_text("# Day 01 — First\n\nversion two\n")
        assert rebuilt.wait(30)
        assert "version two" in urllib.request.urlopen(url, timeout=10).read().decode()
    finally:
        stop.set()
        server.shutdown()
        server.server_close()


def test_site_output_is_ignored_by_git():
    assert shutil.which("git")
    import subprocess

    r = subprocess.run(["git", "check-ignore", "-q", ".grader/site/html/index.html"], cwd=ROOT)
    assert r.returncode == 0
