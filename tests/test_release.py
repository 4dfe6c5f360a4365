import re
import textwrap
from pathlib import Path

import pytest
import yaml

from grader.authoring import release
from grader.authoring.release import Plant
from grader.course import Edit, load_course
from grader.errors import GraderError
from tests.conftest import ROOT, run_grader

SOLUTION = """\
__global__ void k(const float* x, float* y, int n) {
    // BEGIN SOLUTION
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
    // END SOLUTION
}
int launch() {
  return 0;
}
"""


def plants(*edits, where="day01.k"):
    return [Plant(f"{where} stub.plant[{i}]", Edit(file="k.cu", find=f, replace=r)) for i, (f, r) in enumerate(edits)]


# -- step 2: clear solutions ----------------------------------------------------------------------------------
def test_regions_become_one_indented_placeholder(tmp_path):
    stub = release.clear_solutions(SOLUTION, tmp_path / "k.cu")
    assert stub.splitlines()[1] == "    // YOUR CODE HERE"
    assert "threadIdx" not in stub and "BEGIN" not in stub and "int launch() {" in stub


def test_python_files_get_python_comments(tmp_path):
    stub = release.clear_solutions("def f():\n    # BEGIN SOLUTION\n    return 1\n    # END SOLUTION\n",
                                   tmp_path / "f.py")
    assert stub == "def f():\n    # YOUR CODE HERE\n"


@pytest.mark.parametrize("marker, placeholder", [
    ("// BEGIN SOLUTION: the row maximum, one warp per row", "// YOUR CODE HERE: the row maximum, one warp per row"),
    ("// BEGIN SOLUTION the launch", "// YOUR CODE HERE: the launch"),
    ("//BEGIN SOLUTION  ", "// YOUR CODE HERE"),
])
def test_the_begin_line_labels_its_hole(tmp_path, marker, placeholder):
    stub = release.clear_solutions(f"int f() {{\n  {marker}\n  return 1;\n  // END SOLUTION\n}}\n", tmp_path / "k.cu")
    assert stub == f"int f() {{\n  {placeholder}\n}}\n"


def test_only_whole_marker_lines_count(tmp_path):
    text = ('bool is_marker(const char* s) { return strstr(s, "BEGIN SOLUTION") != nullptr; }\n'
            'const char* m = "// END SOLUTION";\n'
            "// the BEGIN SOLUTION and END SOLUTION markers are explained in the README\n"
            "// BEGIN SOLUTIONS is not a marker either\n")
    assert release.clear_solutions(text, tmp_path / "k.cu") == text
    assert release.make_stub(text, tmp_path / "k.cu") == text


def test_line_endings_and_a_last_line_without_newline_survive(tmp_path):
    text = "a\r\n  // BEGIN SOLUTION\r\n  x\r\n  // END SOLUTION\r\nb"
    assert release.clear_solutions(text, tmp_path / "k.cu") == "a\r\n  // YOUR CODE HERE\r\nb"


@pytest.mark.parametrize("text, msg", [
    ("// BEGIN SOLUTION\nx\n", "k.cu:1: `BEGIN SOLUTION` is never closed"),
    ("x\n// END SOLUTION\n", "k.cu:2: `END SOLUTION` without a matching"),
    ("// BEGIN SOLUTION\n// BEGIN SOLUTION\n// END SOLUTION\n", "k.cu:2: `BEGIN SOLUTION` inside the region"),
    # a marker written in another syntax would be silently kept (the solution released): an error instead
    ("x\n/* BEGIN SOLUTION */\ny\n/* END SOLUTION */\n", "k.cu:2: this looks like a solution marker"),
    ("x\n  # BEGIN SOLUTION\n", "k.cu:2: this looks like a solution marker"),
])
def test_unbalanced_markers_are_reported_with_file_and_line(tmp_path, text, msg):
    with pytest.raises(GraderError, match=msg.replace("`", ".")):
        release.clear_solutions(text, tmp_path / "k.cu")


def test_a_c_marker_in_a_python_file_is_an_error(tmp_path):
    with pytest.raises(GraderError, match=r"f.py:1: this looks like a solution marker.*`# BEGIN SOLUTION`"):
        release.clear_solutions("// BEGIN SOLUTION\n", tmp_path / "f.py")


# -- step 3: strip instructor-only lines ----------------------------------------------------------------------
def test_instructor_only_lines_and_regions_are_dropped(tmp_path):
    text = textwrap.dedent("""\
        #ifndef SGEMM_BK  // INSTRUCTOR ONLY
        #define SGEMM_BK 16
        #endif  //INSTRUCTOR ONLY
        // BEGIN INSTRUCTOR ONLY: sweep knobs
        #ifdef SWEEP
        #define TILE SWEEP_TILE
        #endif
          // END INSTRUCTOR ONLY
        int k;  // not instructor only
        """)
    assert release.strip_instructor_only(text, tmp_path / "k.cu") == "#define SGEMM_BK 16\nint k;  // not instructor only\n"
    assert release.strip_instructor_only("x = 1  # INSTRUCTOR ONLY\ny = 2\n", tmp_path / "f.py") == "y = 2\n"


@pytest.mark.parametrize("text, msg", [
    ("// BEGIN INSTRUCTOR ONLY\nx\n", "k.cu:1: `BEGIN INSTRUCTOR ONLY` is never closed"),
    ("x\n// END INSTRUCTOR ONLY\n", "k.cu:2: `END INSTRUCTOR ONLY` without a matching"),
    ("// BEGIN INSTRUCTOR ONLY\n// BEGIN INSTRUCTOR ONLY\n// END INSTRUCTOR ONLY\n",
     "k.cu:2: `BEGIN INSTRUCTOR ONLY` inside the region opened at line 1"),
    ("int k;  // INSTRUCTOR ONLY: the sweep's knob\n", "k.cu:1: this looks like an instructor-only marker"),
    ("int k;  # INSTRUCTOR ONLY\n", "k.cu:1: this looks like an instructor-only marker"),
])
def test_unbalanced_instructor_only_markers(tmp_path, text, msg):
    with pytest.raises(GraderError, match=msg.replace("`", ".")):
        release.strip_instructor_only(text, tmp_path / "k.cu")


# -- step 1: plant bugs ----------------------------------------------------------------------------------------
def test_planted_edits_are_applied_in_order(tmp_path):
    out = release.plant_bugs(SOLUTION, tmp_path / "k.cu", plants(("i < n", "i <= n"), ("i <= n", "i <= n + 1")))
    assert "if (i <= n + 1) y[i] = x[i];" in out and out.count("\n") == SOLUTION.count("\n")


@pytest.mark.parametrize("find, found", [("i < m", "does not occur"), ("x[i]", "occurs 2 times"),
                                         ("aa", "occurs 2 times")])  # overlapping matches count
def test_a_find_must_occur_exactly_once(tmp_path, find, found):
    text = SOLUTION.replace("y[i] = x[i]", "y[i] = x[i] + x[i]") + "// aaa\n"
    with pytest.raises(GraderError, match=re.escape(f"k.cu: day01.k stub.plant[0] (find '{find}') {found} in the file")):
        release.plant_bugs(text, tmp_path / "k.cu", plants((find, "z")))


def test_a_find_that_an_earlier_edit_consumed_says_so(tmp_path):
    with pytest.raises(GraderError, match=r"stub.plant\[1\] \(find 'i < n'\) does not occur in the file after the "):
        release.plant_bugs(SOLUTION, tmp_path / "k.cu", plants(("i < n", "i <= n"), ("i < n", "i > n")))


def test_edits_may_span_join_and_delete_lines(tmp_path):
    text = "a\nb\nc\nd\n"
    assert release.plant_bugs(text, tmp_path / "k.cu", plants(("b\nc", "bc"))) == "a\nbc\nd\n"
    assert release.plant_bugs(text, tmp_path / "k.cu", plants(("b\n", ""))) == "a\nc\nd\n"
    assert release.plant_bugs(text, tmp_path / "k.cu", plants(("b\n", "b "))) == "a\nb c\nd\n"
    assert release.plant_bugs(text, tmp_path / "k.cu", plants(("c", "c1\nc2"))) == "a\nb\nc1\nc2\nd\n"


def test_errors_after_a_planted_edit_keep_the_solution_files_line_numbers(tmp_path):
    text = "a\nb\nc\n// END SOLUTION\n"
    with pytest.raises(GraderError, match="k.cu:4: `END SOLUTION` without"):
        release.make_stub(text, tmp_path / "k.cu", plants(("b\n", "b1\nb2\nb3\n")))


# -- the pipeline -------------------------------------------------------------------------------------------
def test_the_steps_compose_plant_then_clear_then_strip(tmp_path):
    text = SOLUTION.replace("int launch() {\n", "int launch() {\n  int t = 256;  // INSTRUCTOR ONLY\n").replace(
        "return 0;", "return n < 0;")
    stub = release.make_stub(text, tmp_path / "k.cu", plants(("n < 0", "n <= 0")))
    assert stub == ("__global__ void k(const float* x, float* y, int n) {\n    // YOUR CODE HERE\n}\n"
                    "int launch() {\n  return n <= 0;\n}\n")


def test_a_file_without_markers_or_edits_is_released_unchanged(tmp_path):
    text = "#include <cuda.h>\n// helpers\nint f() { return 1; }"
    assert release.make_stub(text, tmp_path / "k.cu") == text


@pytest.mark.parametrize("find, replace", [("i < n", "i <= n"), ("    if (i < n) y[i] = x[i];\n", "")])
def test_an_edit_the_clearing_removes_is_an_error(tmp_path, find, replace):
    with pytest.raises(GraderError, match=r"day01.k stub.plant\[0\] .* lies in a solution or instructor-only region"):
        release.make_stub(SOLUTION, tmp_path / "k.cu", plants((find, replace)))


@pytest.mark.parametrize("find", ["  return 0;\n", "__global__ void k(const float* x, float* y, int n) {\n",
                                  "}\nint launch() {\n", "  return 0;\n}\n"])
def test_deleting_lines_next_to_a_region_or_at_either_end_still_plants_the_bug(tmp_path, find):
    stub = release.make_stub(SOLUTION, tmp_path / "k.cu", plants((find, "")))
    assert stub == release.clear_solutions(SOLUTION.replace(find, ""), tmp_path / "k.cu")


def test_a_file_that_is_not_utf8_is_an_error_naming_it(tmp_path):
    (tmp_path / "k.cu").write_bytes(b"// ok\n// caf\xe9\n")
    with pytest.raises(GraderError, match=r"k.cu:2: not valid UTF-8 \(byte 0xe9"):
        release.read_source(tmp_path / "k.cu")


# -- a whole course, through release_plan ------------------------------------------------------------------
def _exercise(name, sources, **extra):
    return {"name": name, "task": "tasks.softmax", "op": "softmax", "signature": "softmax(x, out)", "sources": sources,
            "dtypes": ["fp32"], "correctness": [[1, 1]], "points": 1,
            "tolerances": {"fp32": {"atol": 0, "rtol": 1e-5, "rel_l2": 1e-5}}, **extra}


def _course(tmp_path, exercises, files):
    doc = {"title": "t", "repository": "https://example.org/t",
           "days": [{"id": "day01", "title": "one", "track": "softmax", "status": "ready", "exercises": exercises},
                    {"id": "day02", "title": "two", "track": "softmax", "status": "planned"}]}
    (tmp_path / "course.yaml").write_text(yaml.safe_dump(doc))
    (tmp_path / "solutions" / "day01").mkdir(parents=True)
    for name, text in files.items():
        p = tmp_path / "solutions" / "day01" / name
        p.write_bytes(text) if isinstance(text, bytes) else p.write_text(text)
    return load_course(tmp_path / "course.yaml")


KERNEL = """\
#ifndef TILE  // INSTRUCTOR ONLY
#define TILE 32
#endif  // INSTRUCTOR ONLY
__global__ void k(const float* x, float* y, int n) {
  int i = blockIdx.x * TILE + threadIdx.x;
  if (i < n) y[i] = x[i];
}
void launch(const float* x, float* y, int n) {
  // BEGIN SOLUTION: the launch, TILE threads per block
  k<<<(n + TILE - 1) / TILE, TILE>>>(x, y, n);
  // END SOLUTION
}
"""


def test_release_plan_runs_the_pipeline_over_a_course(tmp_path):
    bug = {"plant": [{"file": "k.cu", "find": "i < n", "replace": "i <= n"}], "fails_as": "mismatch"}
    shared = {"plant": [{"file": "k.cu", "find": "x[i];", "replace": "x[i + 1];"}], "fails_as": "nonfinite"}
    course = _course(tmp_path, [_exercise("fix", ["k.cu", "b.cpp"], stub=bug),
                                _exercise("also", ["k.cu"], stub=shared), _exercise("plain", ["k.cu"])],
                     {"k.cu": KERNEL, "b.cpp": "// bindings\n"})
    plan = release.release_plan(course, tmp_path)
    assert [(p.source.name, p.target) for p in plan] == [("k.cu", tmp_path / "days/day01/k.cu"),
                                                          ("b.cpp", tmp_path / "days/day01/b.cpp")]
    assert plan[0].text == ("#define TILE 32\n"
                            "__global__ void k(const float* x, float* y, int n) {\n"
                            "  int i = blockIdx.x * TILE + threadIdx.x;\n"
                            "  if (i <= n) y[i] = x[i + 1];\n"  # both exercises' edits to the shared file
                            "}\n"
                            "void launch(const float* x, float* y, int n) {\n"
                            "  // YOUR CODE HERE: the launch, TILE threads per block\n"
                            "}\n")
    assert plan[1].text == "// bindings\n"
    assert release.planted(course, "day01") == [("fix", "mismatch"), ("also", "nonfinite")]
    assert release.planted(course, "1") == release.planted(course, "day01")
    written, _ = release.write(plan, tmp_path / "backup")
    assert len(written) == 2 and release.stale(release.release_plan(course, tmp_path)) == []
    (tmp_path / "days/day01/b.cpp").write_bytes(b"\xff student's editor\n")
    assert release.stale(plan) == [tmp_path / "days/day01/b.cpp"]  # not UTF-8: out of date, not a traceback


def test_an_edit_listed_by_two_exercises_sharing_the_file_is_applied_once(tmp_path):
    bug = {"plant": [{"file": "k.cu", "find": "i < n", "replace": "i <= n"}], "fails_as": "mismatch"}
    course = _course(tmp_path, [_exercise("a", ["k.cu"], stub=bug), _exercise("b", ["k.cu"], stub=bug)],
                     {"k.cu": KERNEL})
    assert "if (i <= n)" in release.release_plan(course, tmp_path)[0].text


def test_release_plan_names_the_exercise_of_a_bad_edit(tmp_path):
    bug = {"plant": [{"file": "k.cu", "find": "y[i]", "replace": "y[i]"},
                     {"file": "k.cu", "find": "i < N", "replace": "i <= n"}], "fails_as": "mismatch"}
    course = _course(tmp_path, [_exercise("fix", ["k.cu"], stub=bug)], {"k.cu": KERNEL})
    with pytest.raises(GraderError, match=r"solutions/day01/k.cu: day01.fix stub.plant\[1\] \(find 'i < N'\) "
                                          "does not occur"):
        release.release_plan(course, tmp_path)


def test_release_plan_reports_a_file_that_is_not_utf8(tmp_path):
    course = _course(tmp_path, [_exercise("plain", ["k.cu"])], {"k.cu": b"// \x80\n"})
    with pytest.raises(GraderError, match=r"^solutions/day01/k.cu:1: not valid UTF-8"):
        release.release_plan(course, tmp_path)


def test_release_refuses_a_planned_day(tmp_path):
    course = _course(tmp_path, [_exercise("plain", ["k.cu"])], {"k.cu": KERNEL})
    with pytest.raises(GraderError, match="day02 is planned"):
        release.release_plan(course, tmp_path, ["day02"])


# -- the course itself ------------------------------------------------------------------------------------------
def test_every_solution_has_a_student_part_and_its_stub_differs(course, root):
    plan = release.release_plan(course, root)
    assert plan, "no ready day?"
    for day in (d for d in course.days if d.status == "ready"):
        # the kernels, or (a day that registers an op around earlier days' kernels) its C++ and Python sources
        kernels = [p for p in plan if p.target.parent.name == day.id and p.target.suffix == ".cu"] or \
            [p for p in plan if p.target.parent.name == day.id and p.target.suffix in (".cpp", ".py")]
        assert kernels and all(p.text != p.source.read_text(encoding="utf-8") for p in kernels), day.id
        if not release.planted(course, day.id):
            assert all(release.has_placeholder(p.text) for p in kernels), day.id


def test_days_folder_matches_release(root):
    # The generated stubs are committed; this is the check CI relies on.
    r = run_grader("release", "--check", cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr


def test_release_backs_up_what_it_replaces(course, root, tmp_path):
    plan = release.release_plan(course, root, ["day01"])
    moved = [release.Planned(p.source, tmp_path / "days" / "day01" / p.target.name, p.text) for p in plan]
    moved[0].target.parent.mkdir(parents=True)
    moved[0].target.write_text("student work in progress\n")
    written, saved = release.write(moved, tmp_path / "backup")
    assert set(written) == {p.target for p in moved}
    assert len(saved) == 1 and saved[0].read_text() == "student work in progress\n"
    assert release.write(moved, tmp_path / "backup2") == ([], [])  # idempotent


def test_syllabus_matches_course_yaml(root):
    r = run_grader("syllabus", "--check", cwd=root)
    assert r.returncode == 0, r.stdout


def test_no_stub_ships_a_tuning_knob_its_own_code_does_not_use():
    """A `#ifndef NAME / #define NAME ... / #endif` knob that only the solution's holes read is the instructor's (for
    the sweeps): the solution marks it instructor-only, so the stub does not list settings the student cannot see
    used anywhere."""
    knob = r"^#ifndef ({name})\n#define \1\b[^\n]*\n#endif\n"
    dead = {}
    for stub in sorted((ROOT / "days").glob("day*/*.cu*")):
        text = stub.read_text()
        names = re.findall(knob.format(name="[A-Z0-9_]+"), text, flags=re.M)
        rest = re.sub(knob.format(name="[A-Z0-9_]+"), "", text, flags=re.M)
        rest = re.sub(r"//[^\n]*", "", rest)  # a comment that names a knob does not use it
        unused = [n for n in names if not re.search(rf"\b{n}\b", rest)]
        if unused:
            dead[str(stub.relative_to(ROOT))] = unused
    assert not dead, f"knobs the stubs' code never reads (mark them INSTRUCTOR ONLY in solutions/): {dead}"


def unlabelled_holes(days: Path) -> list[str]:
    """file:line of every placeholder in the released source stubs under `days` that carries no label (issue 19:
    each hole states its contract beside it). Notebooks are nbgrader's and keep its bare placeholder."""
    found = []
    for stub in sorted(p for p in days.glob("day*/*") if p.suffix in release._COMMENT):
        prefix = re.escape(release.comment_prefix(stub))
        hole = re.compile(rf"^\s*{prefix}+\s*{release.PLACEHOLDER}\b(?P<label>.*)$")
        for n, line in enumerate(stub.read_text(encoding="utf-8").splitlines(), 1):
            m = hole.match(line)
            if m and not re.fullmatch(r":\s*\S.*", m["label"]):
                found.append(f"{stub.relative_to(days.parent)}:{n}")
    return found


def test_unlabelled_holes_are_found(tmp_path):
    (tmp_path / "days" / "day01").mkdir(parents=True)
    (tmp_path / "days" / "day01" / "k.cu").write_text("  // YOUR CODE HERE: the row max\n  // YOUR CODE HERE\n")
    (tmp_path / "days" / "day01" / "k.py").write_text("    # YOUR CODE HERE:\n    # YOUR CODE HERE: the launch\n")
    assert unlabelled_holes(tmp_path / "days") == ["days/day01/k.cu:2", "days/day01/k.py:1"]


def test_every_hole_in_the_stubs_is_labelled_with_its_contract():
    missing = unlabelled_holes(ROOT / "days")
    assert not missing, ("holes without a label (write `BEGIN SOLUTION: <contract>` on the marker in solutions/, "
                         f"then `grader release`): {', '.join(missing)}")


def test_the_syllabus_table_names_every_exercise_as_check_takes_it(course, root):
    """Day 13's three routes and day 14's five tools share one signature: the table's exercise column is what
    `--exercise` takes, one row each, with its points."""
    from grader.authoring.syllabus import render

    rows = [r.split(" | ") for r in render(course).splitlines() if r.startswith("| day") and "`" in r]
    named = [(r[0].lstrip("| "), r[1], r[-1].rstrip(" |")) for r in rows]
    def points(e) -> str:
        if not e.optional:
            return f"{e.points}"
        gpus = "; graded on " + " / ".join(f"sm_{c.replace('.', '')}" for c in e.capability) + " only"
        return f"{e.points} (optional{gpus if e.capability else ''})"

    assert named == [(d.id, e.name, points(e)) for d in course.days for e in d.exercises]


MAX_HOLE_LINES = 150  # lines of code one hole asks for; a longer one is split into labelled steps


def test_no_hole_asks_for_more_than_a_day_can_hold():
    """Every solution region (a hole of the stub) holds at most MAX_HOLE_LINES lines of code (blank and comment
    lines not counted): a larger piece of work is a ladder of labelled holes, each a step a student can finish."""
    import re

    long = []
    for p in sorted((ROOT / "solutions").rglob("*")):
        if p.suffix not in (".cu", ".cuh", ".cpp", ".h", ".py") or not p.is_file():
            continue
        lines, start, label = p.read_text().splitlines(), None, ""
        for n, line in enumerate(lines, 1):
            m = re.match(r"\s*(?://+|#+)\s*(BEGIN|END) SOLUTION\b:?\s*(.*)", line)
            if m and m[1] == "BEGIN":
                start, label = n, m[2]
            elif m and start is not None:
                comment = ("#",) if p.suffix == ".py" else ("//", "/*", "*")
                code = [x for x in lines[start:n - 1] if x.strip() and not x.strip().startswith(comment)]
                if len(code) > MAX_HOLE_LINES:
                    long.append(f"{p.relative_to(ROOT)}:{start} ({len(code)} lines): {label[:60]}")
                start = None
    assert not long, long
