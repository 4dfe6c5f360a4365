"""Serves the built site over HTTP (127.0.0.1 by default) and rebuilds it when a source file changes."""
from __future__ import annotations

import functools
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from collections.abc import Callable


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass

    def end_headers(self):
        # Pages change on every rebuild: never let the browser reuse a stale one.
        self.send_header("Cache-Control", "no-store")
        super().end_headers()


def make_server(site: Path, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """A server for `site` (not yet serving: call serve_forever, e.g. in a thread). Port 0 picks a free port."""
    handler = functools.partial(_Quiet, directory=str(site))
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


def sources(root: Path) -> list[Path]:
    """The files the site is made from (their changes trigger a rebuild)."""
    from grader.site.generate import ASSETS, THEME
    from grader.site.glossary import GLOSSARY

    files = [root / "course.yaml", root / "syllabus.md", root / "README.md", root / GLOSSARY]
    files += sorted((root / "tracks").glob("*.md")) + sorted((root / "days").glob("*/README.md"))
    files += sorted((root / "days").glob(f"*/{GLOSSARY}"))
    files += sorted(p for p in ASSETS.rglob("*") if p.is_file())
    files += sorted(p for p in THEME.rglob("*") if p.is_file())
    return files


def snapshot(root: Path) -> dict[Path, int]:
    out = {}
    for p in sources(root):
        try:
            out[p] = p.stat().st_mtime_ns
        except OSError:
            pass
    return out


def watch(root: Path, rebuild: Callable[[], None], stop: threading.Event, every_s: float = 1.0,
          watching: threading.Event | None = None) -> None:
    """Polls the sources; calls rebuild() after a change (new, changed or removed file). `watching` is set once
    the first snapshot is taken: changes from then on are seen."""
    last = snapshot(root)
    if watching is not None:
        watching.set()
    while not stop.wait(every_s):
        now = snapshot(root)
        if now != last:
            last = now
            rebuild()
