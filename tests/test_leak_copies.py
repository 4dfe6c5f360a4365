"""No answer to a day that is not published, wherever it stands: given code that copies a hole (renamed, rewrapped,
recommented) holds its day back, or keeps its shared file out, until the hole's day is published
(grader/authoring/copies.py measures, grader/authoring/student_repo.py applies the rule)."""
import json
import subprocess
from datetime import date

import pytest
import yaml

from grader import cli
from grader.authoring import copies, release, student_repo
from grader.course import load_course
from tests import release_course as rc
from tests.conftest import ROOT

FAR = date(9999, 1, 1)  # every ready day's release date has come


# -- the measure, on the course's own files -------------------------------------------------------------------------
def holes(*solution_files):
    out = []
    for rel in solution_files:
        out += copies.holes_of(rel, (ROOT / rel).read_text(), rel.split("/")[1])
    return out


def hole(solution_file, label_part):
    found = [h for h in holes(solution_file) if label_part in h.label]
    assert len(found) == 1, [h.label for h in holes(solution_file)]
    return found[0]


def given(rel):
    """A released file's text: a day's stub as the release generates it, any other file as it stands."""
    parts = rel.split("/")
    if parts[0] == "days":
        course = load_course(ROOT / "course.yaml")
        for p in release.release_plan(course, ROOT, [parts[1]]):
            if p.target.relative_to(ROOT).as_posix() == rel:
                return p.text
    return (ROOT / rel).read_text()


def measure(rel, h):
    found = [m for m in copies.Index([h]).matches(rel, given(rel))]
    return found[0] if found else copies.Match(rel, h, 0, 0)


@pytest.mark.parametrize("file, solution, label, least", [
    # day 19's attend_tile is day 10's FlashAttention-2 loop, one loop variable renamed
    ("days/day19/ring_attention.cu", "solutions/day10/attention.cu", "FlashAttention-2 over the key tiles", 0.6),
    # day 03's merges, complete in days 04 and 05
    ("days/day04/softmax.cu", "solutions/day03/softmax.cu", "merge with (m_other, s_other)", 1.0),
    ("days/day04/softmax.cu", "solutions/day03/softmax.cu", "merge of the 32 lanes' states", 1.0),
    ("days/day05/softmax.cu", "solutions/day03/softmax.cu", "merge with (m_other, s_other)", 1.0),
    ("days/day05/softmax.cu", "solutions/day03/softmax.cu", "merge of the 32 lanes' states", 1.0),
    # day 04's block_reduce_online in day 05, its second half reworded (pm, ps)
    ("days/day05/softmax.cu", "solutions/day04/softmax.cu", "the block's merged state", 0.6),
    # day 14's kernels: the warp-per-row set-up of day 03, day 02's warp reductions whole
    ("days/day14/oob.cu", "solutions/day03/softmax.cu", "row = blockIdx.x · 8 + warp", 0.5),
    ("days/day14/softmax_rows.cuh", "solutions/day02/softmax.cu", "v = max over the 32 lanes", 1.0),
    ("days/day14/softmax_rows.cuh", "solutions/day02/softmax.cu", "v = sum over the 32 lanes", 1.0),
    # the shared swizzle is day 12's hole, whole
    ("common/swizzle.cuh", "solutions/day12/attention.cu", "swz<D>(row, chunk)", 1.0),
])
def test_each_copy_in_the_course_answers_its_hole(file, solution, label, least):
    m = measure(file, hole(solution, label))
    assert m.answers and m.covered / m.total >= least, str(m)


@pytest.mark.parametrize("file, solution, label", [
    # the bindings boilerplate every op shares (rows, cols, the stream) is not day 01's answer
    ("days/day02/bindings.cpp", "solutions/day01/bindings.cpp", "check x, out"),
    ("common/softmax_binding.h", "solutions/day01/bindings.cpp", "check x, out"),
    # the same warp-per-row set-up without the first pass
    ("days/day14/spill.cu", "solutions/day02/softmax.cu", "lane owns columns lane"),
    # loops that tile the same way
    ("days/day20/attention_bwd_tc.cu", "solutions/day12/attention.cu", "load_rows<T, D, kRows, kVec>"),
    # kernels that walk the same tiles
    ("days/day20/attention_bwd_tc.cu", "solutions/day12/attention.cu", "+ 15, in registers"),
])
def test_what_shares_boilerplate_or_a_set_up_does_not_answer(file, solution, label):
    m = measure(file, hole(solution, label))
    assert 0 < m.covered and not m.answers, str(m)


@pytest.mark.parametrize("file", [
    "days/day07/matmul.cu",  # another day's scaffolding and launcher
    "days/day10/bindings.cpp",  # a bindings file
    "grader/profile/ceilings/ffma_peak.cu",  # a kernel and its launcher
    "common/ptx.cuh",
    "tasks/softmax.py",
])
def test_an_honest_file_answers_no_hole_of_another_day(file):
    every = [h for p in sorted((ROOT / "solutions").rglob("*")) if p.is_file()
             and (release.has_markers_syntax(p) or p.suffix == ".ipynb")
             for h in holes(p.relative_to(ROOT).as_posix()) if h.day != file.split("/")[1]]
    assert len(every) > 100
    assert copies.Index(every).answered(file, given(file)) == []


def test_renaming_rewrapping_and_comments_hide_nothing():
    h = hole("solutions/day03/softmax.cu", "merge of the 32 lanes' states")
    copy = """
    // a butterfly, written our own way
    for (int d = kWarpSize / 2;
         d > 0; d /= 2)
    {
        const float mo = __shfl_xor_sync(0xffffffffu, mm, d);  /* the other lane's max */
        const float so = __shfl_xor_sync(0xffffffffu,
                                         ss, d);
        online_merge(mm, ss, mo, so);
    }
    """
    assert copies.Index([h]).answered("notes.cu", copy)
    changed = copy.replace("__shfl_xor_sync", "__shfl_down_sync")  # another algorithm: no longer this answer
    assert not copies.Index([h]).answered("notes.cu", changed)


def test_a_markdown_lesson_is_measured_by_its_code_blocks():
    h = hole("solutions/day03/softmax.cu", "merge with (m_other, s_other)")
    body = "\n".join(line for line in (ROOT / "solutions/day03/softmax.cu").read_text().splitlines()[30:36])
    lesson = f"# A lesson\n\nThe merge: hi = max(m, m_other); s is rescaled.\n\n```cuda\n{body}\n```\n"
    assert copies.Index([h]).answered("days/day09/README.md", lesson)
    assert not copies.Index([h]).answered("days/day09/README.md", lesson.replace("```cuda", "").replace("```", ""))


# -- the release of the course ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """The course as committed (HEAD), cloned: what a release from a clean checkout gives."""
    pytest.importorskip("nbgrader")  # day 8's notebook is released by nbgrader
    where = tmp_path_factory.mktemp("course") / "course"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(where)], check=True, capture_output=True)
    return where


@pytest.fixture(scope="module")
def first_release(clone):
    return student_repo.build(clone, clone / "course.yaml", load_course(clone / "course.yaml"), FAR)


def holds_of(tree, day):
    return [h for h in tree.held if h.day == day]


@pytest.mark.parametrize("day, file, waits_for, hole_part", [
    ("day19", "days/day19/ring_attention.cu", "day10", "FlashAttention-2"),
    ("day04", "days/day04/softmax.cu", "day03", "merge"),
    ("day05", "days/day05/softmax.cu", "day03", "merge"),
    ("day05", "days/day05/softmax.cu", "day04", "block's merged state"),
    ("day14", "days/day14/oob.cu", "day03", "row = blockIdx.x"),
    ("day14", "days/day14/softmax_rows.cuh", "day02", "over the 32 lanes' v"),
    ("day20", "common/swizzle.cuh", "day12", "swz<D>"),  # found by the measure, not by `answers:`
])
def test_the_release_holds_back_each_day_whose_code_answers_an_earlier_hole(first_release, day, file, waits_for,
                                                                             hole_part):
    found = [h for h in holds_of(first_release, day) if h.file == file and h.waits_for == waits_for]
    assert found and hole_part in found[0].hole, [str(h) for h in holds_of(first_release, day)]
    assert day not in first_release.days
    assert not any(p.startswith(f"days/{day}/") for p in first_release.files)
    text = str(found[0])
    assert text.startswith(f"{day} held back: ") and text.endswith(f"it goes out once {waits_for} is published")
    assert file in text and f"of {found[0].total} code lines" in text


def test_a_shared_file_of_answers_holds_back_every_day_that_includes_it(first_release):
    """common/hopper.cuh and its async_copy.cuh: course.yaml's `answers:` says they hold day 11's answers (the
    measure finds no copy of a day 11 hole in them), so days 12, 18 and 20 wait for day 11; day 20 also waits
    for day 12 (swizzle.cuh, measured); each named with the includes that reach the file."""
    assert "common/swizzle.cuh" not in first_release.files and "common/hopper.cuh" not in first_release.files
    for day in ("day12", "day18", "day20"):
        hold = [h for h in holds_of(first_release, day) if h.file == "common/async_copy.cuh"]
        assert hold and hold[0].via == ("common/hopper.cuh", "common/async_copy.cuh") and hold[0].waits_for == "day11"
        assert "it includes common/hopper.cuh → common/async_copy.cuh, which holds day11's answers" in str(hold[0])
    assert {h.waits_for for h in holds_of(first_release, "day20")} == {"day11", "day12"}


def test_the_release_holds_the_whole_grader_whatever_its_code_resembles(clone, first_release):
    """The tool is never measured against the holes: a module whose lines have the shape of a tiny hole (day 19's
    two `copy_` lines) was held out once, and every student's `grader check` then failed to import it."""
    import subprocess

    tool = subprocess.run(["git", "-C", str(clone), "ls-files", "grader/"], capture_output=True, text=True,
                          check=True).stdout.split()
    assert tool and [p for p in tool if p.endswith(".py") and p not in first_release.files] == []
    holes = copies.holes_of("solutions/day19/ring_dist.py", "    # BEGIN SOLUTION: write o and lse\n"
                            "    o.copy_(acc)\n    lse.copy_(lse_run)\n    # END SOLUTION\n", "day19")
    course = load_course(clone / "course.yaml")
    lookalike = "def f(out, acc, lse, run):\n    out.copy_(acc)\n    lse.copy_(run)\n"
    _, shared, _ = student_repo.answers_in({"grader/x.py": lookalike, "common/x.py": lookalike}, holes, course)
    assert "common/x.py" in shared and "grader/x.py" not in shared  # the measure itself still sees the copy


def test_publishing_what_a_day_waits_for_releases_it(clone, first_release):
    course = load_course(clone / "course.yaml")
    waited = {h.waits_for for h in first_release.held}
    assert waited == {"day01", "day02", "day03", "day04", "day10", "day11", "day12"}
    later = student_repo.build(clone, clone / "course.yaml", course, FAR, published=waited)
    assert later.held == []
    assert later.days == [d.id for d in course.days if d.status == "ready"]
    assert "common/swizzle.cuh" in later.files and "days/day19/ring_attention.cu" in later.files
    # publishing only some: day 19 waits for day 10 alone, day 20 still for day 11 and day 12
    some = student_repo.build(clone, clone / "course.yaml", course, FAR, published={"day10", "day11"})
    assert "day19" in some.days and "day20" not in some.days
    assert {h.waits_for for h in holds_of(some, "day20")} == {"day12"}


def test_a_student_repository_of_the_release_holds_no_unpublished_answer(clone, first_release, tmp_path):
    course = load_course(clone / "course.yaml")
    student_repo.write(first_release, tmp_path / "s", clone, course, {"hidden.yaml"})
    assert student_repo.unpublished_answers(tmp_path / "s", clone / "course.yaml", course) == []
    # a held file put there by hand is found
    (tmp_path / "s/days/day04").mkdir(parents=True, exist_ok=True)
    tree = student_repo.build(clone, clone / "course.yaml", course, FAR, published={"day03"})
    (tmp_path / "s/days/day04/softmax.cu").write_bytes(tree.files["days/day04/softmax.cu"].data)
    manifest = json.loads((tmp_path / "s/.release.json").read_text())
    manifest["files"]["days/day04/softmax.cu"] = "0"
    (tmp_path / "s/.release.json").write_text(json.dumps(manifest))
    found = student_repo.unpublished_answers(tmp_path / "s", clone / "course.yaml", course)
    assert found and all("days/day04/softmax.cu gives day03's hole" in f for f in found)


# -- a small course -------------------------------------------------------------------------------------------------
REDUCE = """\
#pragma once
__device__ float warp_total(float v, const float* w, int n) {
  // BEGIN SOLUTION: the warp's weighted total
  float acc = 0.0f;
  for (int j = 0; j < n; ++j) {
    acc += w[j] * v;
  }
  acc = acc * 0.5f + 1.25f;
  for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, offset);
  const float scaled = acc / static_cast<float>(n + 3);
  return scaled - 0.75f;
  // END SOLUTION
}
"""
# day 01's hole, renamed, rewrapped, with braces and comments of its own: no line of it is a line of the hole
COPY = """\
float total = 0.0f;  // start from zero
for (int k = 0; k < count; ++k) total += weights[k] * value;
total = total * 0.5f
        + 1.25f;
for (int o = 16; o > 0; o /= 2) {
  total += __shfl_xor_sync(0xffffffffu, total, o);  // the butterfly
}
const float s = total / static_cast<float>(count + 3);
return s - 0.75f;
"""


@pytest.fixture
def course_file(tmp_path, monkeypatch):
    monkeypatch.delenv("GRADER_HIDDEN", raising=False)
    path = rc.make(tmp_path / "instructor")
    rc.write(path.parent, "solutions/day01/reduce.cuh", REDUCE)  # released beside day 01's sources, as a stub
    rc.git(path.parent, "add", "-A")
    rc.git(path.parent, "commit", "-qm", "day 01's reduction")
    return path


def release_to(course_file, dest):
    return cli.main(["--course", str(course_file), "release", "--to", str(dest)])


def publish(course_file, day, dest):
    return cli.main(["--course", str(course_file), "publish", day, "--to", str(dest)])


def tree_of(dest):
    return {p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file() and ".git" not in p.parts}


def commit(root, rel, text):
    rc.write(root, rel, text)
    rc.git(root, "add", "-A")
    rc.git(root, "commit", "-qm", rel)


def test_a_lesson_with_a_renamed_copy_of_an_earlier_hole_waits_for_that_day(course_file, tmp_path, capsys):
    root = course_file.parent
    commit(root, "days/day02/README.md", f"# Lesson day02\n\nAs on day 01:\n\n```cuda\n{COPY}```\n")
    dest = tmp_path / "student"
    assert release_to(course_file, dest) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert ("day02 held back: days/day02/README.md gives day01's hole 'the warp's weighted total' (6 of 6 code lines); "
            "it goes out once day01 is published (`grader publish day01 --to") in out
    assert not any(p.startswith("days/day02/") for p in tree_of(dest))
    assert "days held back (1)" in out  # its lesson (its stubs are generated, not tracked)
    assert publish(course_file, "day01", dest) == 0
    capsys.readouterr()
    assert release_to(course_file, dest) == 0
    assert "held back" not in capsys.readouterr().out
    assert "days/day02/README.md" in tree_of(dest)


def test_a_shared_header_that_includes_a_copy_holds_back_the_days_that_include_it(course_file, tmp_path, capsys):
    """common/outer.cuh includes common/inner.cuh, which copies day 01's hole: inner.cuh stays out, outer.cuh
    (no answer in it) goes out, and day 05, whose kernel includes outer.cuh, waits for day 01, named with the
    includes that reach the copy."""
    root = course_file.parent
    rc.write(root, "common/inner.cuh", "#pragma once\n__device__ float total_of(float value, const float* weights,"
             f" int count) {{\n{COPY}}}\n")
    rc.write(root, "common/outer.cuh", '#pragma once\n#include "inner.cuh"\n')
    sol = root / "solutions/day05/k.cu"
    sol.write_text('#include "outer.cuh"\n' + sol.read_text())
    rc.git(root, "add", "-A")
    rc.git(root, "commit", "-qm", "shared")
    dest = tmp_path / "student"
    assert release_to(course_file, dest) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert ("day05 held back: it includes common/outer.cuh → common/inner.cuh, which gives day01's hole 'the warp's "
            "weighted total' (6 of 6 code lines); it goes out once day01 is published") in out
    files = tree_of(dest)
    assert "common/inner.cuh" not in files and "common/outer.cuh" in files
    assert not any(p.startswith("days/day05/") for p in files) and "days/day01/k.cu" in files
    assert json.loads((dest / ".release.json").read_text())["days"] == ["day01", "day02"]
    assert publish(course_file, "day01", dest) == 0
    assert release_to(course_file, dest) == 0
    assert {"common/inner.cuh", "days/day05/k.cu"} <= tree_of(dest)


def test_a_copy_of_a_later_days_hole_holds_nothing_back(course_file, tmp_path, capsys):
    """Day 01 is released before day 03: a later hole that restates what an earlier day gives (day 10 asks for
    days 03 and 04's merges again) cannot make the earlier day wait for it."""
    root = course_file.parent
    rc.git(root, "mv", "solutions/day01/reduce.cuh", "solutions/day03/reduce.cuh")
    commit(root, "days/day01/README.md", f"# Lesson day01\n\n```cuda\n{COPY}```\n")
    assert release_to(course_file, tmp_path / "student") == 0
    assert "held back" not in capsys.readouterr().out


def test_a_day_whose_own_given_code_answers_its_hole_is_refused(course_file, tmp_path, capsys):
    root = course_file.parent
    commit(root, "days/day01/README.md", f"# Lesson day01\n\n```cuda\n{COPY}```\n")
    assert release_to(course_file, tmp_path / "student") == 2
    out = " ".join(capsys.readouterr().out.split())
    assert "would hold instructor-only text, so nothing was written" in out
    assert ("days/day01/README.md:4: gives day01's own hole 'the warp's weighted total' (6 of 6 code lines): no "
            "release can wait until it is published") in out
    assert not (tmp_path / "student").exists()


def test_allow_leak_is_the_way_past_for_lines(course_file, tmp_path, capsys):
    """The lines course.yaml's `allow_leak:` lets any file show are no part of a hole for the measure: with all
    but its last line allowed, the lesson's copy gives nothing that is still secret."""
    root = course_file.parent
    commit(root, "days/day02/README.md", f"# Lesson day02\n\n```cuda\n{COPY}```\n")
    doc = rc.course_doc()
    doc["allow_leak"] = [{"text": t, "reason": "the lesson's worked example, on purpose"} for t in (
        "float acc = 0.0f;", "acc += w[j] * v;", "acc = acc * 0.5f + 1.25f;",
        "for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, offset);",
        "const float scaled = acc / static_cast<float>(n + 3);")]
    rc.write(root, "course.yaml", yaml.safe_dump(doc, sort_keys=False))
    dest = tmp_path / "student"
    assert release_to(course_file, dest) == 0
    assert "day02 held back" not in capsys.readouterr().out and "days/day02/README.md" in tree_of(dest)


def test_the_measure_of_a_hole_too_short_to_say_anything_is_never_an_answer():
    one = copies.holes_of("solutions/day01/a.cu", "// BEGIN SOLUTION: one line\nreturn x * 2 + y;\n// END SOLUTION\n",
                          "day01")
    assert len(one) == 1 and not copies.Index(one).answered("b.cu", "return x * 2 + y;\n")


def test_the_first_release_says_which_later_days_wait_for_which(clone):
    """From the first release on, the release note names each later day with the days it will wait for (issue 63:
    day 20 waits for days 11 and 12), and the course's own calendar publishes each of them in time."""
    course = load_course(clone / "course.yaml")
    first = min(d.release for d in course.days if d.release)
    waits, unknown = student_repo.forecast(clone, clone / "course.yaml", course, first)
    assert unknown == ""
    assert waits["day20"] == ["day11", "day12"] and waits["day19"] == ["day10"] and waits["day04"] == ["day03"]
    assert "day02" not in waits
    assert student_repo.late_waits(course, waits) == []


def test_a_calendar_that_releases_a_day_before_what_it_waits_for_can_be_published_is_warned():
    from types import SimpleNamespace as NS

    days = {"day03": NS(release=date(2027, 1, 18), due=date(2027, 1, 25)),
            "day04": NS(release=date(2027, 1, 21), due=date(2027, 1, 24)),
            "day05": NS(release=date(2027, 1, 26), due=None)}
    course = NS(day=days.__getitem__)
    (line,) = student_repo.late_waits(course, {"day04": ["day03"], "day05": ["day03"]})
    assert line.startswith("day04 is released on 2027-01-21 but waits for day03's solution, and day03 is due on "
                           "2027-01-25")
    days["day03"].due = None
    assert len(student_repo.late_waits(course, {"day04": ["day03"]})) == 1  # no due date: never published in time
