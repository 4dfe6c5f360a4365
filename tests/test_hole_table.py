"""Every graded step asks for a day's step of code: at most STEP_LIMIT code lines in the solution regions it needs
(scripts/hole_table.py reads which from the code), unless course.yaml's `long_steps:` says why for that step. The
reader's rules are tested here on small made-up sources."""
import sys
from types import SimpleNamespace

import pytest

from tests.conftest import ROOT, load_script

ht = load_script(ROOT / "scripts" / "hole_table.py")


def test_no_step_asks_for_more_than_a_days_code_without_a_listed_reason():
    from grader.course import load_course

    course = load_course(ROOT / "course.yaml")
    over, stale = [], []
    for s in ht.steps(course):
        listed = course.day(s.day).long_steps
        if s.code > ht.STEP_LIMIT and s.name not in listed:
            over.append(f"{s.day} {s.name}: {s.code} code lines in {len(s.holes)} regions")
        elif s.code <= ht.STEP_LIMIT and s.name in listed:
            stale.append(f"{s.day} {s.name}: {s.code} code lines, listed in long_steps")
    assert not over, ("steps over the limit of a day's step (make a ladder of graded steps, or give the reason in "
                      f"course.yaml's long_steps): {over}")
    assert not stale, f"long_steps lists steps that fit a day now: remove them: {stale}"


def test_every_listed_long_step_names_a_step_of_its_day():
    from grader.course import load_course

    course = load_course(ROOT / "course.yaml")
    names = {(s.day, s.name) for s in ht.steps(course)}
    for day in course.days:
        for name, why in day.long_steps.items():
            assert (day.id, name) in names, f"{day.id} long_steps names {name!r}, which is no step of the day"
            assert why.strip(), f"{day.id} long_steps {name!r} gives no reason"


SOURCE = """\
namespace a {
constexpr int kN = 4;
template <typename T>
__global__ void kernel(T* x) {
  // BEGIN SOLUTION: a's kernel
  x[0] = kN;
  x[1] = 2;
  // END SOLUTION
}
}  // namespace a
namespace b {
template <typename T>
__global__ void kernel(T* x) {
#if FAST
  if (x) {
#else
  if (x != nullptr) {
#endif
    // BEGIN SOLUTION: b's kernel
    x[0] = 1;

    // a comment
    x[1] = 2;
    x[2] = 3;
    // END SOLUTION
  }
}
}  // namespace b
template <typename T>
void launch_a(T* x) {
  using namespace a;
  kernel<T><<<1, 1>>>(x);
}
template <typename T>
void launch_b(T* x) {
  b::kernel<T><<<1, 1>>>(x);
}
"""
BINDINGS = """\
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("op_a", [](at::Tensor x) { check(x); launch_a(x.data_ptr<float>()); });
  m.def("op_b", &launch_b<float>);
}
"""


def _steps(tmp_path, monkeypatch, files: dict[str, str], exercises):
    day_dir = tmp_path / "solutions" / "day07"
    day_dir.mkdir(parents=True)
    for name, text in files.items():
        (day_dir / name).write_text(text)
    monkeypatch.setattr(ht, "ROOT", tmp_path)
    day = SimpleNamespace(id="day07", exercises=exercises, long_steps={})
    return {s.name: s for s in ht.steps(SimpleNamespace(days=[day]))}


def _ex(name, sources, points=5.0):
    return SimpleNamespace(name=name, op=name, sources=sources, include_dirs=[], uses=[], points=points,
                           optional=False)


def test_each_step_counts_the_regions_its_op_reaches_through_namespaces_and_preprocessor_branches(tmp_path,
                                                                                                 monkeypatch):
    got = _steps(tmp_path, monkeypatch, {"k.cu": SOURCE, "bindings.cpp": BINDINGS},
                 [_ex("op_a", ["k.cu", "bindings.cpp"]), _ex("op_b", ["k.cu", "bindings.cpp"])])
    # op_a: `using namespace a` picks a::kernel (2 code lines); op_b: b::kernel, its #else branch's brace not
    # counted twice, 3 code lines (blank line and comment aside)
    assert [(h.label, h.code) for h in got["op_a"].holes] == [("a's kernel", 2)]
    assert [(h.label, h.code) for h in got["op_b"].holes] == [("b's kernel", 3)]


def test_a_region_two_steps_need_counts_once_under_the_first(tmp_path, monkeypatch):
    both = SOURCE.replace("void launch_b(T* x) {\n  b::kernel", "void launch_b(T* x) {\n  a::kernel<T><<<1, 1>>>(x);\n  b::kernel")
    got = _steps(tmp_path, monkeypatch, {"k.cu": both, "bindings.cpp": BINDINGS},
                 [_ex("op_a", ["k.cu", "bindings.cpp"]), _ex("op_b", ["k.cu", "bindings.cpp"])])
    assert got["op_a"].code == 2 and got["op_b"].code == 3


def test_labelled_regions_go_to_their_step_and_the_hopper_walk_is_a_row_of_its_own(tmp_path, monkeypatch):
    src = """\
void f() {
  // BEGIN SOLUTION: (step 7b) the second step's part
  int y = 1;
  // END SOLUTION
}
// BEGIN SOLUTION: optional, for Hopper: the wgmma walk
int w1 = 1;
int w2 = 2;
// END SOLUTION
// BEGIN SOLUTION: hopper_walk, continued: its epilogue
int w3 = 3;
// END SOLUTION
"""
    binds = 'PYBIND11_MODULE(x, m) {\n  m.def("s1", &f);\n  m.def("s2", &f);\n}\n'
    got = _steps(tmp_path, monkeypatch, {"k.cu": src, "bindings.cpp": binds},
                 [_ex("s1", ["k.cu", "bindings.cpp"]), _ex("s2", ["k.cu", "bindings.cpp"])])
    assert got["s1"].code == 0 and got["s2"].code == 1
    assert got["the Hopper walk"].code == 3 and got["the Hopper walk"].optional


def test_a_python_step_needs_every_region_of_its_own_files(tmp_path, monkeypatch):
    py = "def f():\n    # BEGIN SOLUTION: the loop\n    x = 1\n    # a comment\n    return x\n    # END SOLUTION\n"
    got = _steps(tmp_path, monkeypatch, {"route.py": py}, [_ex("route", ["route.py"])])
    assert got["route"].code == 2


@pytest.mark.parametrize("limit", [ht.STEP_LIMIT])
def test_the_table_script_prints_the_steps_over_a_bound(limit):
    import subprocess

    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "hole_table.py"), "--over", str(limit)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("| day | step |"), r.stderr
    rows = [ln for ln in r.stdout.splitlines()[2:] if ln.startswith("|")]
    assert all(int(ln.split("|")[5]) > limit for ln in rows), rows
