"""The course website in a real headless Chromium (Debian's, driven by Playwright).

The site is built once, served on 127.0.0.1 from a thread, and every request to any other host is blocked and
fails the test that made it. Locally these tests skip when Chromium or Playwright is missing; in CI (CI=true)
they fail instead, so they are never skipped silently.
"""
from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from tests.conftest import ROOT

CHROMIUM = os.environ.get("CHROMIUM", "/usr/lib/chromium/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
LOCAL = {"127.0.0.1"}


def _unavailable(why: str):
    if os.environ.get("CI") == "true":
        pytest.fail(f"{why}: CI must run the browser tests (.ci/run installs chromium and the site-test extra)")
    pytest.skip(why)


@pytest.fixture(scope="module")
def site_url(tmp_path_factory, course):
    try:
        import mkdocs  # noqa: F401
        import material  # noqa: F401
    except ImportError:
        _unavailable('the site packages are missing: pip install -e ".[site]"')
    from grader.site.build import build
    from grader.site.serve import make_server

    out = tmp_path_factory.mktemp("site")
    res = build(ROOT, course, out)
    server = make_server(res.site, "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def chromium():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable('playwright is missing: pip install -e ".[site-test]"')
    if not Path(CHROMIUM).is_file():
        _unavailable(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set CHROMIUM)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def _guarded_context(chromium, site_url):
    """A fresh context (its own storage) that blocks, and records, every request not to 127.0.0.1."""
    ctx = chromium.new_context(viewport={"width": 1600, "height": 1000}, base_url=site_url)
    ctx.grant_permissions(["clipboard-read", "clipboard-write"], origin=site_url)
    outside: list[str] = []

    def guard(route):
        if urlparse(route.request.url).hostname in LOCAL:
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    ctx.route("**/*", guard)
    return ctx, outside


@pytest.fixture
def page(chromium, site_url):
    """A page whose test fails if anything it loads asks for another host, or if its JavaScript throws."""
    ctx, outside = _guarded_context(chromium, site_url)
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    yield pg
    ctx.close()
    assert outside == [], f"requests left 127.0.0.1: {outside}"
    assert errors == [], f"JavaScript errors: {errors}"


def _goto(pg, path):
    """Opens a page and waits until the site's scripts have run (sidenotes.js, the last one, marks the page)."""
    resp = pg.goto(path)
    pg.wait_for_function("document.querySelector('.md-content__inner')?.dataset.sidenotes === '1'")
    return resp


def _tab(pg, label):
    return pg.locator(".tabbed-labels label", has_text=label).first


def _selected_tab(pg) -> str:
    return pg.evaluate("""() => {
        const set = document.querySelector('.tabbed-set');
        const i = Array.from(set.querySelectorAll(':scope > input')).findIndex(x => x.checked);
        return set.querySelectorAll('.tabbed-labels label')[i].textContent.trim();
    }""")


def test_tabs_switch_and_stay_switched_across_pages(page):
    _goto(page, "/days/day01/")
    assert _selected_tab(page) == "Pseudocode"
    cuda_code = page.locator(".tabbed-block", has_text="fmaxf").first
    assert not cuda_code.is_visible()
    _tab(page, "CUDA").click()
    assert cuda_code.is_visible() and _selected_tab(page) == "CUDA"
    _goto(page, "/days/day02/")  # another page, same labels: the reader's choice holds
    assert _selected_tab(page) == "CUDA"
    assert page.locator(".tabbed-block", has_text="__shfl_xor_sync").first.is_visible()
    _goto(page, "/days/day01/")
    assert _selected_tab(page) == "CUDA"
    _tab(page, "Pseudocode").click()
    page.reload()
    page.wait_for_function("document.querySelector('.md-content__inner')?.dataset.sidenotes === '1'")
    assert _selected_tab(page) == "Pseudocode"


def test_copy_button_copies_the_code(page):
    _goto(page, "/days/day01/")
    block = page.locator("#check-your-work ~ div.language-bash").first
    block.scroll_into_view_if_needed()
    block.hover()
    block.locator('button[data-md-type="copy"]').click()
    page.locator(".md-dialog--active", has_text="Copied").wait_for()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith("grader check day01 ") and "--solution" in copied
    assert copied.strip() == block.locator("code").inner_text().strip()


def test_code_is_highlighted_per_language(page):
    _goto(page, "/days/day01/")
    for lang in ("cuda", "python", "bash", "cpp"):
        spans = page.locator(f"div.language-{lang} code span[class]")
        assert spans.count() > 3, lang


def test_glossary_term_shows_its_definition_on_hover(page):
    _goto(page, "/days/day01/")
    term = page.locator('a.gloss[data-term="warp"]').first
    term.scroll_into_view_if_needed()
    term.hover()
    tip = page.locator(".md-tooltip2--active")
    tip.wait_for()
    assert "32 consecutive threads" in tip.inner_text()
    term.click()
    page.wait_for_url("**/glossary/#warp")
    assert page.locator("dt#warp").is_visible()


def test_page_has_a_table_of_contents(page):
    _goto(page, "/days/day01/")
    toc = page.locator(".md-sidebar--secondary nav.md-nav--secondary")
    assert toc.is_visible()
    toc.locator('a.md-nav__link[href="#the-kernel"]').click()
    page.wait_for_url("**/days/day01/#the-kernel")


def test_collapsible_box_opens(page):
    _goto(page, "/days/day01/")
    box = page.locator("details.convention").first
    assert box.get_attribute("open") is None
    assert not box.locator("li").first.is_visible()
    box.locator("summary").click()
    page.wait_for_function("document.querySelector('details.convention').open")
    assert box.locator("li", has_text="size_t").is_visible()


def test_dependency_graph_links_to_a_day(page, course):
    _goto(page, "/graph/")
    nodes = page.locator("svg.dep-graph a.dg-node")
    assert nodes.count() == 20
    planned = [d for d in course.days if d.status == "planned"]
    assert page.locator('a.dg-node.dg-planned').count() == len(planned)
    page.locator('a.dg-node[data-day="day05"]').click()
    page.wait_for_url("**/days/day05/")
    assert page.locator("h1").first.inner_text().startswith("Day 05")


def _figure(page):
    fig = page.locator("figure.cg").first
    fig.scroll_into_view_if_needed()
    return fig


def _drawn(page):
    return page.evaluate("""() => {
        const svg = document.querySelector('figure.cg svg');
        const cur = svg.querySelector('.cg-current');
        return {view: svg.dataset.view, rects: svg.querySelectorAll('rect.cg-cell').length,
                cubes: svg.querySelectorAll('g.cg-cube').length, current: cur && cur.dataset.b + '|' + cur.dataset.t,
                inBlock: svg.querySelectorAll('.cg-in-block').length, html: svg.innerHTML.length,
                readout: document.querySelector('figure.cg .cg-readout').textContent};
    }""")


def test_grid_figure_slider_and_3d_switch_change_the_drawing(page):
    _goto(page, "/days/day01/")
    fig = _figure(page)
    start = _drawn(page)
    assert start["view"] == "2d" and start["current"] == "0,0,0|0,0,0"
    assert start["rects"] == 4 * 2 * 8 * 4  # 2D shows one z-layer of 4x2 blocks of 8x4(x2) threads
    assert "threadIdx = (0, 0, 0)" in start["readout"]
    fig.locator(".cg-slider").fill("77")  # block 1, thread 13 of that block: (5, 1, 0)
    moved = _drawn(page)
    assert moved["current"] == "1,0,0|5,1,0"
    assert "blockIdx = (1, 0, 0)" in moved["readout"] and "threadIdx = (5, 1, 0)" in moved["readout"]
    assert "1 * 8 + 5 = 13" in moved["readout"]
    fig.locator(".cg-next").click()
    assert _drawn(page)["current"] == "1,0,0|6,1,0"
    fig.locator(".cg-view-3d").click()
    three = _drawn(page)
    assert three["view"] == "3d" and three["rects"] == 0 and three["cubes"] == 4 * 2 * 8 * 4 * 2
    assert three["current"] == "1,0,0|6,1,0" and fig.locator(".cg-view-3d").get_attribute("aria-pressed") == "true"
    fig.locator(".cg-slider").fill("360")  # a thread in the z = 1 layer
    assert _drawn(page)["current"] == "1,1,0|0,1,1"
    fig.locator(".cg-view-2d").click()
    back = _drawn(page)
    assert back["view"] == "2d" and back["rects"] == 256 and "threadIdx.z = 1" in page.locator("figure.cg svg").text_content()
    # Stepping by blocks highlights a whole block; the parameters redraw the grid.
    fig.locator(".cg-step-block").click()
    blocks = _drawn(page)
    assert blocks["current"] is None and blocks["inBlock"] == 32 and "block 6 of 8" in blocks["readout"]
    fig.locator(".cg-grid-y").fill("3")
    fig.locator(".cg-grid-y").dispatch_event("change")
    assert _drawn(page)["rects"] == 4 * 3 * 8 * 4


def test_tile_walk_figure_follows_the_block_and_its_steps(page):
    _goto(page, "/days/day16/")
    fig = page.locator("div.tile-walk").first
    fig.scroll_into_view_if_needed()
    cells = fig.locator("rect.tile-walk-cell")
    assert cells.count() == 8 * 8 + 4 * 8  # the S tiles, and K, V, Q, dO
    readout = fig.locator(".tile-walk-readout")
    assert "key tile 0" in readout.inner_text() and "step 1 of 8" in readout.inner_text()
    assert fig.locator("rect.skipped").count() == 28  # causal: the tiles above the diagonal
    sliders = fig.locator("input[type=range]")
    sliders.nth(0).fill("3")  # the block owning key tile 3 starts at query tile 3: 5 steps
    assert "step 1 of 5" in readout.inner_text() and "Q[3]" in readout.inner_text()
    sliders.nth(1).fill("2")
    assert "Q[5]" in readout.inner_text() and fig.locator("rect.done").count() == 2
    fig.locator("input[type=checkbox]").uncheck()  # not causal: every query tile, from the first
    assert "step 1 of 8" in readout.inner_text() and fig.locator("rect.skipped").count() == 0


def test_step_figure_steps(page):
    _goto(page, "/days/day02/")
    steps = page.locator("div.steps").first
    steps.scroll_into_view_if_needed()
    frames = steps.locator(".step")
    assert frames.count() == 4 and frames.nth(0).is_visible() and not frames.nth(1).is_visible()
    steps.locator(".steps-next").click()
    assert frames.nth(1).is_visible() and not frames.nth(0).is_visible()
    steps.locator(".steps-slider").fill("4")
    assert frames.nth(3).is_visible() and "step 4 of 4" in steps.locator(".steps-label").inner_text()


def test_footnotes_become_margin_notes_on_wide_screens(page):
    page.set_viewport_size({"width": 1920, "height": 1000})  # beside a content column that holds 100 columns
    _goto(page, "/days/day01/")
    note = page.locator("aside.sidenote").first
    assert note.is_visible() and "132 SMs" in note.inner_text()
    ref = page.locator("a.footnote-ref").first
    assert abs(note.bounding_box()["y"] - ref.bounding_box()["y"]) < 200  # beside the text that cites it
    page.set_viewport_size({"width": 1000, "height": 900})  # narrower: the notes are at the bottom again
    assert not note.is_visible()
    ref.scroll_into_view_if_needed()
    ref.hover()  # with a preview on hover
    tip = page.locator(".md-tooltip2--active")
    tip.wait_for()
    assert "132 SMs" in tip.inner_text()


def test_selecting_text_offers_a_prefilled_suggestion(page, course):
    _goto(page, "/days/day01/")
    selected = page.evaluate("""() => {
        const p = Array.from(document.querySelectorAll('.md-content p')).find(p => p.textContent.includes('does not change the result'));
        const r = document.createRange(); r.selectNodeContents(p);
        const s = getSelection(); s.removeAllRanges(); s.addRange(r);
        return s.toString().trim();
    }""")
    button = page.locator("a.suggest-change")
    button.wait_for(state="visible")
    url = urlparse(button.get_attribute("href"))
    assert f"{url.scheme}://{url.netloc}{url.path}" == f"{course.repository}/issues/new"
    q = parse_qs(url.query)
    assert selected and selected.splitlines()[0] in q["body"][0]
    assert "source: days/day01/README.md" in q["body"][0] and "Day 01" in q["title"][0]
    page.evaluate("getSelection().removeAllRanges()")
    button.wait_for(state="hidden")
    bottom = page.locator("a.page-feedback__link")
    assert bottom.get_attribute("href").startswith(f"{course.repository}/issues/new?title=")


def test_every_page_loads_without_leaving_127_0_0_1(page, site_url, course):
    pages = ["/", "/syllabus/", "/graph/", "/glossary/"] + [f"/days/{d.id}/" for d in course.days]
    for path in pages:
        resp = _goto(page, path)
        assert resp.status == 200, path
        page.wait_for_load_state("load")
    # The page fixture fails the test if any of these loads asked for another host.


def test_the_request_guard_catches_other_hosts(chromium, site_url):
    """The guard above is not vacuous: a request for another host is recorded and never sent."""
    ctx, outside = _guarded_context(chromium, site_url)
    try:
        pg = ctx.new_page()
        pg.goto("/days/day01/")
        failed = pg.evaluate("fetch('https://fonts.example.invalid/font.css').then(() => false, () => true)")
        assert failed and outside == ["https://fonts.example.invalid/font.css"]
    finally:
        ctx.close()


def test_home_page_is_for_students(page, course):
    _goto(page, "/")
    main = page.locator(".md-content")
    assert page.locator("h1").first.inner_text().rstrip("¶") == course.title
    text = main.inner_text()
    for needle in ("whl/cu130", "whl/cpu", "grader doctor", "compile-only mode", "Leaderboard"):
        assert needle in text, needle
    assert "For instructors" not in text  # the README, for whoever keeps the course, has a page of its own
    assert main.locator("svg.dep-graph a.dg-node").count() == len(course.days)
    main.locator('a.dg-node[data-day="day02"]').click()
    page.wait_for_url("**/days/day02/")
    _goto(page, "/repository/")
    assert "For instructors" in page.locator(".md-content").inner_text()


@pytest.mark.parametrize("width", [1400, 1600, 1920])
def test_a_line_of_100_columns_fits_the_content_on_wide_screens(page, width):
    page.set_viewport_size({"width": width, "height": 900})
    _goto(page, "/days/day01/")
    m = page.evaluate("""() => {
        const code = document.querySelector('.md-typeset pre > code');
        const line = document.createElement('span');
        line.textContent = 'x'.repeat(100);
        code.appendChild(line);
        const cs = getComputedStyle(code);
        const r = {inner: code.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight),
                   line: line.getBoundingClientRect().width};
        line.remove();
        return r;
    }""")
    assert m["line"] <= m["inner"], m


def test_glossary_terms_look_like_definitions_not_errors(page):
    _goto(page, "/days/day01/")
    st = page.evaluate("""() => {
        const a = document.querySelector('a.gloss.gloss-first');
        const cs = getComputedStyle(a);
        const probe = document.createElement('span');
        probe.style.color = 'var(--md-accent-fg-color)';
        a.parentNode.appendChild(probe);
        const accent = getComputedStyle(probe).color;
        probe.remove();
        return {style: cs.textDecorationStyle, line: cs.textDecorationLine, color: cs.textDecorationColor, accent,
                text: cs.color, body: getComputedStyle(a.parentNode).color, title: a.getAttribute('title') || a.dataset.mdTooltip || ''};
    }""")
    assert st["line"] == "underline" and st["style"] == "dotted"
    assert st["color"] == st["accent"] and st["text"] == st["body"]  # the accent's dots under ordinary text
    r, g, b = (float(x) for x in re.findall(r"[\d.]+", st["color"])[:3])
    assert b > r and not (r > 150 and g < 120), st  # not red


@pytest.mark.parametrize("width", [1000, 1400])
def test_identifiers_in_tables_are_not_broken(page, width):
    page.set_viewport_size({"width": width, "height": 900})
    _goto(page, "/days/day10/")
    code = page.locator("table code", has_text="attention_naive").first
    lines = code.evaluate("el => el.getClientRects().length")
    assert lines == 1
    assert code.evaluate("el => getComputedStyle(el).whiteSpace") == "nowrap"
    wrap = code.evaluate("el => getComputedStyle(el.closest('.md-typeset__scrollwrap') || el.closest('table')).overflowX")
    assert wrap == "auto"  # a table too wide for the column scrolls sideways
