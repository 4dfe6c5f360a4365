"""Which of a stub's placeholders a step's code reaches (grader/holes.py, grader/check/day_check.placeholders_by_step):
a not-implemented or compile-only verdict lists those and counts the rest, so a student on step 20a of a file that
four steps share is not sent to 20c's holes. The released stubs themselves are the cases."""
from grader.check.day_check import placeholders_by_step
from grader.check.verdict import ExerciseResult, note_placeholders
from grader.course import load_course
from grader.verdicts import Status
from tests.conftest import ROOT

COURSE = load_course(ROOT / "course.yaml")


def _split(day_id, name):
    day = COURSE.day(day_id)
    ex = next(e for e in day.exercises if e.name == name)
    return placeholders_by_step(ROOT / "days" / day_id, day, ex, ROOT)


def _lines(spots):
    return {int(s.rsplit(":", 1)[1]) for s in spots}


def _tagged(day_id, file, tag):
    text = (ROOT / "days" / day_id / file).read_text().splitlines()
    return {n for n, line in enumerate(text, 1) if "YOUR CODE HERE" in line and f"(step {tag})" in line}


def test_a_step_of_a_shared_kernel_gets_its_own_labelled_places_and_not_the_hopper_walk():
    mine, others = _split("day20", "attention_bwd_tc_dv")
    assert _lines(mine) == _tagged("day20", "attention_bwd_tc.cu", "20a")
    text = (ROOT / "days" / "day20" / "attention_bwd_tc.cu").read_text().splitlines()
    walk = {n for n, line in enumerate(text, 1) if "YOUR CODE HERE" in line and ("optional, for Hopper" in line
                                                                               or "hopper_bwd, continued" in line)}
    assert walk and walk <= _lines(others)  # the optional Hopper walk's holes: no graded step's
    mine_c, _ = _split("day20", "attention_bwd_tc")
    assert _lines(mine_c) == _tagged("day20", "attention_bwd_tc.cu", "20c")


def test_places_reached_only_through_a_placeholder_are_counted_not_dropped():
    mine, others = _split("day03", "softmax")
    # the kernel's body and the launch are reached; online_merge is used only from that body, itself still a hole
    assert _lines(mine) == {43, 49} and _lines(others) == {30, 36}


def test_the_next_steps_kernel_is_counted_apart_not_listed_first():
    mine_a, others_a = _split("day09", "matmul_vec")
    mine_b, others_b = _split("day09", "matmul_warptile")
    assert others_a and others_b and set(mine_a) != set(mine_b)
    assert set(mine_a) | set(others_a) == set(mine_b) | set(others_b)  # nothing left out


def test_the_verdict_names_this_steps_places_and_counts_the_others():
    res = note_placeholders(ExerciseResult("day20", "attention_bwd_tc_dv", "student", "x", 1,
                                           status=Status.NOT_IMPLEMENTED, message="not implemented yet"),
                            ["days/day20/a.cu:1", "days/day20/a.cu:2"], "YOUR CODE HERE", others=5)
    assert res.message.endswith("a.cu:1, days/day20/a.cu:2; 5 more that this step's code does not reach (yet))")


def test_a_source_the_reading_cannot_follow_keeps_every_place_and_the_verdict(tmp_path):
    # unbalanced braces and a macro continued past the end of the file: the order of a message, never a crash
    day = COURSE.day("day03")
    (tmp_path / "softmax.cu").write_text("#define X \\\n}}} namespace { // YOUR CODE HERE: a\n// YOUR CODE HERE: b\n#define Y \\")
    (tmp_path / "bindings.cpp").write_text('m.def("softmax", &f(((')
    mine, others = placeholders_by_step(tmp_path, day, day.exercises[0], ROOT)
    assert len(mine) + len(others) == 2 and mine
