"""The student's course.yaml: the instructor's, less what would give a solution away.

The one such key is an exercise's `stub.plant`: its `find` is the correct code that the planted bug replaces, so
a student reading it would have the fix. Everything else (shapes, tolerances, hints, dates) is what the grader
needs to run, and stays. The key is cut out of the text, keeping the file's comments, anchors and layout; the
result must load to exactly the instructor's data without `plant`, else the data is written out plainly (no
comments) rather than a wrong course.yaml.
"""
from __future__ import annotations

import copy

import yaml

from grader import yaml_file
from grader.errors import GraderError

HEADER = "# The student's course.yaml, written by `grader release --to` (planted-bug edits removed).\n"


def _strip_plants(data):
    """The loaded data with `plant` removed from every mapping that is the value of a `stub` key."""
    if isinstance(data, dict):
        out = {}
        for k, v in data.items():
            v = _strip_plants(v)
            if k == "stub" and isinstance(v, dict):
                v = {kk: vv for kk, vv in v.items() if kk != "plant"}
            out[k] = v
        return out
    if isinstance(data, list):
        return [_strip_plants(v) for v in data]
    return data


def _plant_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) character spans of each `plant:` key with its value inside a `stub:` mapping, in the text."""
    root = yaml.compose(text)
    spans, seen, todo = set(), set(), [root]
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.value == "stub" and isinstance(v, yaml.MappingNode):
                    for kk, vv in v.value:
                        if isinstance(kk, yaml.ScalarNode) and kk.value == "plant":
                            spans.add((kk.start_mark.index, _end(vv), bool(v.flow_style)))
                todo += [k, v]
        elif isinstance(node, yaml.SequenceNode):
            todo += node.value
    return [_widen(text, a, b, flow) for a, b, flow in sorted(spans)]


def _end(node) -> int:
    """Where a node's text ends. A block collection's own end mark lies at the next token (the following key, even
    of an enclosing mapping), so take its last leaf's."""
    while isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and not node.flow_style and node.value:
        node = node.value[-1][1] if isinstance(node, yaml.MappingNode) else node.value[-1]
    return node.end_mark.index


def _widen(text: str, start: int, end: int, flow: bool) -> tuple[int, int]:
    """The span grown to what removing the key needs: in a flow mapping (`{plant: [...], fails_as: x}`) its comma;
    in a block mapping the whole lines it occupies (and comments on its last line)."""
    if flow:
        rest = text[end:]
        stripped = rest.lstrip(" \t")
        if stripped.startswith(","):
            return start, end + (len(rest) - len(stripped)) + 1 + (len(stripped[1:]) - len(stripped[1:].lstrip(" ")))
        before = text[:start].rstrip(" \t\n")
        if before.endswith(","):
            return len(before) - 1, end
        return start, end
    line_start = text.rfind("\n", 0, start) + 1
    if text[line_start:start].strip():  # something else before the key on its line: leave the line
        return start, end
    # the value ends at the start of the next key's line or mid-line after a flow value: take the rest of that line
    if end > 0 and text[end - 1] != "\n":
        nl = text.find("\n", end)
        end = len(text) if nl < 0 else nl + 1
    return line_start, end


def student_course_yaml(text: str, source: str = "course.yaml") -> str:
    """The instructor's course.yaml text without planted-bug edits."""
    try:
        data = yaml_file.safe_load(text)
    except yaml.YAMLError as e:
        raise GraderError(f"{source} is not valid YAML:\n  {e}") from None
    want = _strip_plants(copy.deepcopy(data))
    if want == data:
        return text
    out = text
    for a, b in reversed(_plant_spans(text)):
        out = out[:a] + out[b:]
    try:
        if yaml_file.safe_load(out) == want:
            return out
    except yaml.YAMLError:
        pass
    return HEADER + yaml.safe_dump(want, sort_keys=False, allow_unicode=True, width=120)
