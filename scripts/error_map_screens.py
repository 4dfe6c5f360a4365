#!/usr/bin/env python3
"""Screenshots of a failing verdict, from a result that scripts/error_maps.py recorded on a GPU (issue 66's
evidence): the terminal as `grader check` draws it (the same report.render, hint included), the line `grader watch`
prints for it (report.compact), and the error map's PNG. No GPU: the result JSON holds every case and its map.

    python3 scripts/error_map_screens.py MAPS_DIR --kernel day07-tile_edge_... --out measured/error-maps/

Writes <kernel>-terminal.svg/.png, <kernel>-watch.svg/.png and <kernel>-map.png (a copy of error_maps.py's) into
--out. The PNGs come from the SVGs through Chromium (--chromium; skipped, with a note, where there is none).
"""
from __future__ import annotations

import argparse
import io
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402

from grader.check import report  # noqa: E402
from grader.check.verdict import ExerciseResult, hint  # noqa: E402
from grader.course import load_course  # noqa: E402

CHROMIUM = "/usr/lib/chromium/chromium"
WIDTH = 110  # terminal columns


def load_result(path: Path) -> ExerciseResult:
    """The failing exercise of a recorded `grader check --json` result."""
    data = json.loads(path.read_text())
    rows = data.get("exercises", [data])
    failing = [r for r in rows if r.get("status") == "fail"] or rows
    fields = ExerciseResult.__dataclass_fields__
    return ExerciseResult(**{k: v for k, v in failing[0].items() if k in fields})


def svg(lines_or_render, title: str) -> str:
    console = Console(record=True, width=WIDTH, force_terminal=True, color_system="truecolor", file=io.StringIO())
    lines_or_render(console)
    return console.export_svg(title=title)


def png(svg_path: Path, png_path: Path, chromium: str) -> str | None:
    """svg_path drawn by Chromium into png_path at the SVG's own size; None, or why not."""
    if not Path(chromium).exists():
        return f"no Chromium at {chromium}: {png_path.name} not written"
    head = svg_path.read_text()[:400]
    m = re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', head)
    w, h = (int(float(m.group(1))) + 1, int(float(m.group(2))) + 1) if m else (1200, 800)
    with tempfile.TemporaryDirectory() as profile:
        r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
                            "--hide-scrollbars", f"--window-size={w},{h}", f"--screenshot={png_path}",
                            svg_path.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    return None if r.returncode == 0 and png_path.exists() else f"Chromium failed: {r.stderr[-400:]}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("maps", type=Path, help="scripts/error_maps.py's --out folder")
    ap.add_argument("--kernel", required=True, help="the known-wrong kernel, as <day>-<name> (its JSON in MAPS)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--chromium", default=CHROMIUM)
    a = ap.parse_args(argv)
    src = a.maps / f"{a.kernel}.json"
    if not src.is_file():
        print(f"error: no result {src}: run scripts/error_maps.py first (on a GPU)", file=sys.stderr)
        return 2
    res = load_result(src)
    course = load_course(ROOT / "course.yaml")
    ex = next(e for e in course.day(res.day).exercises if e.name == res.exercise)
    a.out.mkdir(parents=True, exist_ok=True)
    notes = []
    shots = {
        "terminal": (lambda c: report.render(c, res, ex, hint(res, ex, course.hints)),
                     f"grader check {res.day} --exercise {res.exercise}"),
        "watch": (lambda c: [c.print(line, markup=False, highlight=False) for line in report.compact(res, ex)],
                  f"grader watch {res.day}"),
    }
    for name, (draw, title) in shots.items():
        path = a.out / f"{a.kernel}-{name}.svg"
        path.write_text(svg(draw, title))
        note = png(path, path.with_suffix(".png"), a.chromium)
        if note:
            notes.append(note)
    picture = a.maps / f"{a.kernel}.png"
    if picture.is_file():
        shutil.copyfile(picture, a.out / f"{a.kernel}-map.png")
    else:
        notes.append(f"no map picture {picture}")
    for n in notes:
        print(n, file=sys.stderr)
    print(f"wrote {a.out}/{a.kernel}-{{terminal,watch}}.svg/.png" + ("" if not picture.is_file() else ", -map.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
