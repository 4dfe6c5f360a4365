"""A "find the bug" exercise (course.yaml's `stub: plant:`) is taught in discovery order: the student runs the tool
first, and what the tool found on the stub (its report, with the bug's file and line) and the fix come after it, in
the lesson's found-it block (`<details class="found-it" markdown>`). Its hints name the tool to run and what to look
for, never the fix."""
import re

import pytest

from tests.conftest import ROOT

TRANSCRIPT = re.compile(r"<!-- transcript:([\w.-]+):begin -->(.*?)<!-- transcript:\1:end -->", re.S)
DETAILS = re.compile(r'<details class="found-it"[^>]*>.*?</details>', re.S)
TOOL_COMMAND = {"racecheck": "--tool racecheck", "memcheck": "--tool memcheck", "initcheck": "--tool initcheck",
                "synccheck": "--tool synccheck", "no_local_memory": "-Xptxas -v"}


def _planted(course):
    for day in course.days:
        for ex in day.exercises:
            stub = ex.stub
            if getattr(stub, "plant", None):
                yield day.id, ex


def _days(course):
    return sorted({d for d, _ in _planted(course)})


def findings(day: str, text: str) -> list[str]:
    """The transcripts of a lesson that show a tool's finding on the stub: a sanitizer's report or table pointing at a
    line of days/DAY/ (or of the grader's build of it; a debugger session there is not one), or ptxas giving a kernel
    of days/DAY/ a stack frame."""
    found = []
    for m in TRANSCRIPT.finditer(text):
        body = m.group(2)
        tool = re.search(r"^=========|first error in your code", body, re.M)
        at_line = re.search(rf"(?<![\w/])days/{day}/[\w.]+:\d+|/{day}-[\w-]+/src/[\w.]+:\d+", body)
        frame = re.search(rf"(?<![\w/])days/{day}/[\w.]+", body) and re.search(r"\b[1-9]\d* bytes stack frame", body)
        if (tool and at_line) or frame:
            found.append(m.group(1))
    return found


def out_of_order(day: str, text: str) -> list[str]:
    """The stub's findings that a student can read before a found-it block, i.e. outside every one."""
    hidden = [(m.start(), m.end()) for m in DETAILS.finditer(text)]
    return [m.group(1) for m in TRANSCRIPT.finditer(text) if m.group(1) in findings(day, text)
            and not any(a <= m.start() and m.end() <= b for a, b in hidden)]


def test_a_stubs_finding_in_a_lesson_sits_in_a_found_it_block(course):
    late = {day: out_of_order(day, (ROOT / "days" / day / "README.md").read_text()) for day in _days(course)}
    assert not any(late.values()), f"a tool's finding on the stub shown before its found-it block: {late}"


def test_the_rule_sees_a_finding_moved_out_of_its_block():
    """Known wrong: day 14's race report printed above the exercise, as it once was."""
    text = (ROOT / "days" / "day14" / "README.md").read_text()
    assert out_of_order("day14", text) == []
    report = re.search(r"<!-- transcript:report-race:begin -->.*?<!-- transcript:report-race:end -->", text, re.S)
    moved = text.replace(report.group(0), "").replace("**Run the tool.**", report.group(0) + "\n\n**Run the tool.**", 1)
    assert out_of_order("day14", moved) == ["report-race"]


def _planted_names():
    from grader.course import load_course

    return [f"{d}.{e.name}" for d, e in _planted(load_course(ROOT / "course.yaml"))]


@pytest.mark.parametrize("name", _planted_names())
def test_a_planted_bugs_hint_names_its_tool_and_not_the_fix(course, name):
    ex = next(e for d, e in _planted(course) if f"{d}.{e.name}" == name)
    tools = list(ex.sanitize or []) + [c for c in (ex.checks or []) if c in TOOL_COMMAND]
    assert tools, f"{name}: no tool to name"
    for category, hint in (ex.hints or {}).items():
        for tool in tools:
            assert TOOL_COMMAND[tool] in hint, f"{name}: the {category} hint does not say how to run {tool}: {hint}"
        for plant in ex.stub.plant:
            # the code the fix restores: what the planted bug removed, token by token
            gone = set(re.findall(r"[A-Za-z_]\w*\(|\w+\s*<\s*\w+", plant.find)) - set(
                re.findall(r"[A-Za-z_]\w*\(|\w+\s*<\s*\w+", plant.replace))
            shown = sorted(t for t in gone if t in hint)
            assert not shown, f"{name}: the {category} hint shows the fix ({shown}): {hint}"
