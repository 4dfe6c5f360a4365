#!/usr/bin/env python3
"""Screenshots of the course website, for looking at it without a browser: day 1's grid figure in 2D and in
3D, and the dependency graph page. Builds the site, serves it on 127.0.0.1, drives the system's Chromium with
Playwright (every request to another host is blocked and reported), and writes PNGs to measured/site/.

    python3 scripts/site_screenshots.py [--out measured/site] [--no-build] [--chromium /usr/lib/chromium/chromium]

Needs `pip install -e ".[site,site-test]"` and Debian's chromium (`apt-get install chromium`).
"""
from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.course import load_course  # noqa: E402
from grader.site.build import build  # noqa: E402
from grader.site.serve import make_server  # noqa: E402

CHROMIUM = "/usr/lib/chromium/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "measured" / "site"))
    ap.add_argument("--no-build", action="store_true", help="use the site already in .grader/site/html")
    ap.add_argument("--chromium", default=CHROMIUM)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    site_root = ROOT / ".grader" / "site"
    if not args.no_build:
        res = build(ROOT, load_course(ROOT / "course.yaml"), site_root)
        print(f"built {res.pages} pages in {res.seconds:.1f} s")
    server = make_server(site_root / "html")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    blocked: list[str] = []

    def guard(route):
        if urlparse(route.request.url).hostname in ("127.0.0.1", None):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium, args=ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 1000}, device_scale_factor=1)
        page.route("**/*", guard)
        page.goto(f"{base}/days/day01/")
        # The site's scripts have all run once the last one (sidenotes.js) has marked the page.
        page.wait_for_function("document.querySelector('.md-content__inner')?.dataset.sidenotes === '1'")
        page.add_style_tag(content=".md-top { display: none !important; }")  # the "back to top" pill
        fig = page.locator("figure.cg").first
        fig.wait_for()
        page.locator(".cg-slider").first.fill("77")  # a thread in the second block, second row
        fig.evaluate("el => window.scrollTo(0, el.getBoundingClientRect().top + window.scrollY - 150)")
        page.wait_for_timeout(300)
        page.screenshot(path=str(out / "day01-grid-2d.png"))
        page.locator(".cg-view-3d").first.click()
        page.locator(".cg-slider").first.fill("360")  # block (1,1,0), thread (0,1,1): the second warp, in the z = 1 layer
        page.wait_for_timeout(300)
        page.screenshot(path=str(out / "day01-grid-3d.png"))
        page.set_viewport_size({"width": 1280, "height": 900})
        page.goto(f"{base}/graph/")
        page.locator("svg.dep-graph").wait_for()
        page.screenshot(path=str(out / "dependency-graph.png"), full_page=True)
        browser.close()
    server.shutdown()
    for f in ("day01-grid-2d.png", "day01-grid-3d.png", "dependency-graph.png"):
        print(f"wrote {out / f}")
    if blocked:
        print("blocked requests to other hosts:\n  " + "\n  ".join(blocked), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
