
import pytest
from grader.check.build import arch_list, build_lock, extension_name, parse_diagnostics, variant_for_dir
from grader.check.plan import plan


def test_diagnostics_point_into_the_students_file(root):
    log = (f"{root}/days/day01/softmax.cu(42): error: identifier \"rowz\" is undefined\n"
           f"{root}/days/day01/softmax.cu(42): error: identifier \"rowz\" is undefined\n"
           f"{root}/days/day01/bindings.cpp:10:5: error: expected ';' before '}}' token\n"
           "ninja: build stopped: subcommand failed.\n")
    d = parse_diagnostics(log, root)
    assert [str(x) for x in d] == ["days/day01/softmax.cu:42: error: identifier \"rowz\" is undefined",
                                   "days/day01/bindings.cpp:10: error: expected ';' before '}' token"]


def test_stale_torch_lock_is_recovered(tmp_path):
    (tmp_path / "lock").write_text("")  # what a killed torch build leaves behind
    with build_lock(tmp_path) as recovered:
        assert recovered and not (tmp_path / "lock").exists()
    with build_lock(tmp_path) as recovered:
        assert not recovered


def test_names_and_variants(root, tmp_path):
    assert arch_list((9, 0)) == "9.0"
    assert extension_name("day03", "softmax", "dir1a2b") == "day03_softmax_dir1a2b"
    assert variant_for_dir(root / "days" / "day03", root) == "student"
    assert variant_for_dir(root / "solutions" / "day03", root) == "solution"
    other = variant_for_dir(tmp_path, root)
    assert other.startswith("dir") and other == variant_for_dir(tmp_path, root)


def test_plan_orders_cases_and_seeds_them_independently(course):
    ex = course.day("day03").exercises[0]
    cases = plan(ex)
    kinds = [c.kind for c in cases]
    assert kinds == sorted(kinds, key=lambda k: k != "correctness")  # correctness first, then timing
    n_corr = len(ex.dtypes) * (len(ex.correctness) + len(ex.probes) * len(ex.probe_shapes))
    assert kinds.count("correctness") == n_corr
    assert kinds.count("benchmark") == len(ex.dtypes) * len(ex.benchmark)
    seeds = [c.seed(1) for c in cases]
    assert len(set(seeds)) == len(seeds) and seeds == [c.seed(1) for c in plan(ex)]
    assert [c.seed(2) for c in cases] != seeds
    assert all(c.kind == "correctness" for c in plan(ex, ["fp16"], benchmark=False))
    assert {c.dtype for c in plan(ex, ["fp16"])} == {"fp16"}


# -- Python exercises (build: python) --------------------------------------------------------------------------
def test_python_exercise_module_loads_and_exports_its_op(tmp_path):
    from grader.check.build import load_python_module

    f = tmp_path / "op.py"
    f.write_text("import math\n\ndef softmax(x, out):\n    return math.pi\n")
    module, secs = load_python_module(name="t_py_ok", path=f, root=tmp_path)
    assert module.softmax(None, None) > 3 and secs >= 0


def test_python_exercise_syntax_error_is_a_build_error_at_file_and_line(tmp_path):
    from grader.check.build import BuildError, load_python_module

    f = tmp_path / "op.py"
    f.write_text("def softmax(x, out):\n    return (\n")
    with pytest.raises(BuildError) as e:
        load_python_module(name="t_py_syntax", path=f, root=tmp_path)
    (d,) = e.value.diagnostics
    assert d.file == "op.py" and d.kind == "error" and d.line >= 2


def test_python_exercise_error_at_import_names_the_student_line(tmp_path):
    from grader.check.build import BuildError, load_python_module

    f = tmp_path / "op.py"
    f.write_text("X = 1\nY = undefined_name + 1\n")
    with pytest.raises(BuildError) as e:
        load_python_module(name="t_py_name", path=f, root=tmp_path)
    (d,) = e.value.diagnostics
    assert (d.file, d.line) == ("op.py", 2) and "NameError" in d.message


def test_python_exercise_missing_package_is_the_environment_not_the_student(tmp_path):
    from grader.check.build import MissingPackage, load_python_module

    f = tmp_path / "op.py"
    f.write_text("import surely_not_installed_pkg.sub\n")
    with pytest.raises(MissingPackage, match="surely_not_installed_pkg"):
        load_python_module(name="t_py_missing", path=f, root=tmp_path)


def test_python_exercise_typo_in_a_submodule_is_the_students_error(tmp_path):
    from grader.check.build import BuildError, load_python_module

    f = tmp_path / "op.py"
    f.write_text("import os\nimport json.decoderx\n")  # json is installed: the submodule name is the mistake
    with pytest.raises(BuildError) as e:
        load_python_module(name="t_py_typo", path=f, root=tmp_path)
    (d,) = e.value.diagnostics
    assert (d.file, d.line) == ("op.py", 2) and "ModuleNotFoundError" in d.message


def test_python_sources_compile_check_reports_syntax_errors(tmp_path):
    from grader.check.compile_check import compile_sources

    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text("def softmax(x, out):\n    pass\n")
    bad.write_text("def softmax(x, out)\n    pass\n")
    r_good, r_bad = compile_sources([good, bad], [], [], tmp_path)
    assert r_good.ok and r_good.tool == "python"
    assert not r_bad.ok and r_bad.diagnostics == ["bad.py:1: error: expected ':'"]
    latin = tmp_path / "latin.py"
    latin.write_bytes(b"x = '\xe9'\n")  # not UTF-8: a clear error, not a crash
    (r_latin,) = compile_sources([latin], [], [], tmp_path)
    assert not r_latin.ok and r_latin.diagnostics[0].startswith("latin.py:")


def test_python_exercise_calling_sys_exit_at_import_is_a_build_error_not_a_dead_worker(tmp_path):
    from grader.check.build import BuildError, load_python_module

    f = tmp_path / "op.py"
    f.write_text("import sys\nsys.exit(3)\n")
    with pytest.raises(BuildError) as e:
        load_python_module(name="t_py_exit", path=f, root=tmp_path)
    (d,) = e.value.diagnostics
    assert (d.file, d.line) == ("op.py", 2) and "SystemExit" in d.message
