"""The days' dependency graph, from course.yaml prerequisites, as an inline SVG whose nodes link to the days.

A small layered layout: a day's layer is one more than its deepest prerequisite; an edge that skips layers
goes through invisible waypoints; the order inside each layer is improved by barycenter sweeps, and x
positions are pulled towards the neighbours' so chains come out straight.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from collections.abc import Callable

from grader.course import Course

NODE_W, NODE_H = 196, 50
H_GAP, V_GAP = 28, 34
WAYPOINT_W = 12
MARGIN = 12
LINE_CHARS = 27  # title characters per line inside a node


@dataclass
class Node:
    id: str
    layer: int
    width: float
    day: object | None = None  # a course Day, or None for a waypoint
    x: float = 0.0  # centre
    up: list[str] = field(default_factory=list)  # neighbours in the layer above
    down: list[str] = field(default_factory=list)


@dataclass
class Layout:
    nodes: dict[str, Node]
    layers: list[list[str]]
    edges: list[list[str]]  # each: prerequisite, waypoints..., day
    width: float
    height: float

    def y(self, layer: int) -> float:
        return MARGIN + layer * (NODE_H + V_GAP)


def layers_of(course: Course) -> dict[str, int]:
    """Layer of each day: 0 without prerequisites, else one below its deepest prerequisite."""
    layer: dict[str, int] = {}
    for d in course.days:  # course.yaml lists prerequisites before the days that need them (schema-checked)
        layer[d.id] = 1 + max((layer[p] for p in d.prerequisites), default=-1)
    return layer


def layout(course: Course) -> Layout:
    layer = layers_of(course)
    nodes = {d.id: Node(d.id, layer[d.id], NODE_W, d) for d in course.days}
    edges = []
    for d in course.days:
        for p in d.prerequisites:
            chain = [p]
            for k in range(layer[p] + 1, layer[d.id]):
                wid = f"{p}>{d.id}@{k}"
                nodes[wid] = Node(wid, k, WAYPOINT_W)
                chain.append(wid)
            chain.append(d.id)
            for a, b in zip(chain, chain[1:]):
                nodes[a].down.append(b)
                nodes[b].up.append(a)
            edges.append(chain)
    depth = max(layer.values()) + 1
    layers: list[list[str]] = [[] for _ in range(depth)]
    for n in nodes.values():  # days in course order, waypoints after them
        layers[n.layer].append(n.id)
    _order(layers, nodes)
    width = _place(layers, nodes)
    return Layout(nodes, layers, edges, width, 2 * MARGIN + depth * NODE_H + (depth - 1) * V_GAP)


def _crossings(layers, nodes) -> int:
    total = 0
    for upper, lower in zip(layers, layers[1:]):
        pos = {n: i for i, n in enumerate(lower)}
        pairs = [(i, pos[m]) for i, n in enumerate(upper) for m in nodes[n].down]
        total += sum(1 for a in range(len(pairs)) for b in range(a + 1, len(pairs))
                     if (pairs[a][0] - pairs[b][0]) * (pairs[a][1] - pairs[b][1]) < 0)
    return total


def _order(layers, nodes) -> None:
    """Barycenter sweeps, down then up; keeps the order with the fewest crossings."""
    best, best_c = [list(layer) for layer in layers], _crossings(layers, nodes)
    for sweep in range(8):
        rng = range(1, len(layers)) if sweep % 2 == 0 else range(len(layers) - 2, -1, -1)
        for k in rng:
            ref = layers[k - 1] if sweep % 2 == 0 else layers[k + 1]
            pos = {n: i for i, n in enumerate(ref)}
            here = {n: i for i, n in enumerate(layers[k])}

            def bary(n, pos=pos, here=here, down=sweep % 2 == 0):
                nb = nodes[n].up if down else nodes[n].down
                return sum(pos[m] for m in nb) / len(nb) if nb else here[n]
            layers[k].sort(key=bary)  # stable: ties keep their order
        c = _crossings(layers, nodes)
        if c < best_c:
            best, best_c = [list(layer) for layer in layers], c
    layers[:] = best


def _place(layers, nodes) -> float:
    """x centres: start packed, then pull each node towards its neighbours' mean, keeping order and gaps."""
    for layer in layers:
        x = 0.0
        for n in layer:
            nodes[n].x = x + nodes[n].width / 2
            x += nodes[n].width + H_GAP
    def pull(layer, side):
        want = []
        for n in layer:
            nb = getattr(nodes[n], side) if side else nodes[n].up + nodes[n].down
            want.append(sum(nodes[m].x for m in nb) / len(nb) if nb else nodes[n].x)
        _fit(layer, nodes, want)

    # Alternate sweeps: down (each node under its prerequisites), up (each node over what needs it), and
    # finish with down sweeps so chains of single prerequisites come out straight.
    for _ in range(10):
        for layer in layers[1:]:
            pull(layer, "up")
        for layer in reversed(layers[:-1]):
            pull(layer, "down")
    for _ in range(2):
        for layer in layers[1:]:
            pull(layer, "up")
    lo = min(nodes[n].x - nodes[n].width / 2 for layer in layers for n in layer)
    for n in nodes.values():
        n.x += MARGIN - lo
    return max(nodes[n].x + nodes[n].width / 2 for layer in layers for n in layer) + MARGIN


def _fit(layer, nodes, want) -> None:
    """Positions as close as possible to `want`, in order, with a gap between neighbours (left-to-right
    push, then right-to-left push, averaged)."""
    def gap(a, b):
        return (nodes[a].width + nodes[b].width) / 2 + H_GAP

    fwd = list(want)
    for i in range(1, len(layer)):
        fwd[i] = max(fwd[i], fwd[i - 1] + gap(layer[i - 1], layer[i]))
    bwd = list(want)
    for i in range(len(layer) - 2, -1, -1):
        bwd[i] = min(bwd[i], bwd[i + 1] - gap(layer[i], layer[i + 1]))
    xs = [(a + b) / 2 for a, b in zip(fwd, bwd)]
    for i in range(1, len(layer)):  # the average can still be too tight: one last push
        xs[i] = max(xs[i], xs[i - 1] + gap(layer[i - 1], layer[i]))
    for n, x in zip(layer, xs):
        nodes[n].x = x


def _wrap(text: str, width: int) -> list[str]:
    lines, cur = [], ""
    for word in text.split():
        if cur and len(cur) + 1 + len(word) > width:
            lines.append(cur)
            cur = word
        else:
            cur = f"{cur} {word}".strip()
    lines.append(cur)
    if len(lines) > 2:
        lines = [lines[0], " ".join(lines[1:])]
    if len(lines[-1]) > width:
        lines[-1] = lines[-1][:width - 1] + "…"
    return lines


def tracks(course: Course) -> list[str]:
    out: list[str] = []
    for d in course.days:
        if d.track not in out:
            out.append(d.track)
    return out


def render_svg(course: Course, href: Callable[[str], str]) -> str:
    """The graph as one line-free SVG element (safe to drop into markdown as a raw HTML block).

    href(day_id) is the link of that day's page, relative to the page the SVG is placed on."""
    lay = layout(course)
    track_ix = {t: i for i, t in enumerate(tracks(course))}
    out = [f'<svg class="dep-graph" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {lay.width:.0f} '
           f'{lay.height:.0f}" width="{lay.width:.0f}" height="{lay.height:.0f}" role="img" '
           f'aria-label="Which days each day builds on">',
           '<defs><marker id="dg-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
           'orient="auto-start-reverse"><path d="M0,1 L9,5 L0,9 z" class="dg-arrowhead"/></marker></defs>',
           '<g class="dg-edges">']
    for chain in lay.edges:
        pts = []
        for i, nid in enumerate(chain):
            n = lay.nodes[nid]
            top = lay.y(n.layer)
            if i == 0:
                pts.append((n.x, top + NODE_H))
            elif i == len(chain) - 1:
                pts.append((n.x, top - 2))
            else:
                pts += [(n.x, top), (n.x, top + NODE_H)]
        d = f"M{pts[0][0]:.1f},{pts[0][1]:.1f}"
        for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
            if abs(x0 - x1) < 0.5:
                d += f" L{x1:.1f},{y1:.1f}"
            else:
                ym = (y0 + y1) / 2
                d += f" C{x0:.1f},{ym:.1f} {x1:.1f},{ym:.1f} {x1:.1f},{y1:.1f}"
        target = lay.nodes[chain[-1]].day
        cls = "dg-edge" + (" dg-planned" if target.status != "ready" else "")
        out.append(f'<path class="{cls}" data-from="{chain[0]}" data-to="{chain[-1]}" d="{d}" '
                   f'marker-end="url(#dg-arrow)"/>')
    out.append("</g>")
    out.append('<g class="dg-nodes">')
    for layer in lay.layers:
        for nid in layer:
            n = lay.nodes[nid]
            if n.day is None:
                continue
            day = n.day
            x0, y0 = n.x - NODE_W / 2, lay.y(n.layer)
            cls = f"dg-node dg-track-{track_ix[day.track] % 8} dg-{day.status}" + (" dg-mandatory" if day.mandatory
                                                                                   else "")
            status = day.status + (", mandatory" if day.mandatory else "")
            label = escape(f"{day.id}: {day.title} ({day.track} track, {status})")
            head = day.id + (" · mandatory" if day.mandatory else "") + (" · planned" if day.status != "ready"
                                                                          else "")
            lines = _wrap(day.title, LINE_CHARS)
            out.append(f'<a class="{cls}" data-day="{day.id}" href="{escape(href(day.id))}" aria-label="{label}">'
                       f'<title>{label}</title>'
                       f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{NODE_W}" height="{NODE_H}" rx="7"/>'
                       f'<text x="{x0 + 10:.1f}" y="{y0 + 15:.1f}" class="dg-id">{escape(head)}</text>')
            for i, line in enumerate(lines):
                out.append(f'<text x="{x0 + 10:.1f}" y="{y0 + 30 + 13 * i:.1f}" class="dg-title">{escape(line)}'
                           f'</text>')
            out.append("</a>")
    out.append("</g></svg>")
    return "".join(out)


def legend_html(course: Course) -> str:
    items = [f'<span class="dg-key dg-track-{i % 8}"><i></i>{escape(t)}</span>' for i, t in enumerate(tracks(course))]
    items.append('<span class="dg-key dg-planned-key"><i></i>planned</span>')
    return '<p class="dg-legend">' + " ".join(items) + "</p>"
