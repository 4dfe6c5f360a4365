import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from grader.check.build import (BuildError, arch_list, build_exercise, build_folder, build_key, build_lock, build_unit, extension_name,
                                load_built, map_paths, parse_diagnostics, sync_sources, workspace)
from grader.check.plan import plan
from grader.paths import Paths
from tests.conftest import ROOT, run_grader


def test_diagnostics_point_into_the_students_file(root):
    log = (f"{root}/days/day01/softmax.cu(42): error: identifier \"rowz\" is undefined\n"
           f"{root}/days/day01/softmax.cu(42): error: identifier \"rowz\" is undefined\n"
           f"{root}/days/day01/bindings.cpp:10:5: error: expected ';' before '}}' token\n"
           "ninja: build stopped: subcommand failed.\n")
    d = parse_diagnostics(log, root)
    assert [str(x) for x in d] == ["days/day01/softmax.cu:42: error: identifier \"rowz\" is undefined",
                                   "days/day01/bindings.cpp:10: error: expected ';' before '}' token"]


def test_diagnostics_from_the_builds_copy_name_the_students_file(root):
    # The compiler sees the workspace's copy of the sources; the student must read their own file's name.
    copy, student = workspace(root, "day01", build_unit(_exercise())) / "src", root / "days" / "day01"
    log = (f"{copy}/softmax.cu(42): error: identifier \"rowz\" is undefined\n"
           f"{copy}/helpers.cuh:7:3: error: 'x' was not declared in this scope\n"
           f"{root}/common/float_convert.cuh(3): warning: a warning in a shared header\n")
    d = parse_diagnostics(log, root, folders={copy: student})
    assert [str(x) for x in d] == ["days/day01/softmax.cu:42: error: identifier \"rowz\" is undefined",
                                   "days/day01/helpers.cuh:7: error: 'x' was not declared in this scope",
                                   "common/float_convert.cuh:3: warning: a warning in a shared header"]
    assert str(copy) not in map_paths(log, {copy: student}) and f"{student}/softmax.cu(42)" in map_paths(log, {copy: student})


def test_stale_torch_lock_is_recovered(tmp_path):
    (tmp_path / "lock").write_text("")  # what a killed torch build leaves behind
    with build_lock(tmp_path) as recovered:
        assert recovered and not (tmp_path / "lock").exists()
    with build_lock(tmp_path) as recovered:
        assert not recovered


def test_names(root, tmp_path):
    assert arch_list((9, 0)) == "9.0"
    # one name for every version of an exercise's code: the build commands define it, and must not change
    assert extension_name("day03", "softmax") == "day03_softmax"
    assert extension_name("day11", "matmul-mma") == "day11_matmul_mma"
    # the unit is the recipe (sources, includes, flags), not the exercise, and reads as the first source's stem
    assert build_unit(_exercise(name="a")) == build_unit(_exercise(name="b"))
    assert build_unit(_exercise()).startswith("softmax-")
    assert build_unit(_exercise(extra_cuda_cflags=["-DSTEP=2"])) != build_unit(_exercise())
    assert build_unit(_exercise(sources=["softmax.cu", "bindings_steps.cpp"])) != build_unit(_exercise())
    paths = Paths(root)
    assert paths.variant(root / "days" / "day03") == "student"
    assert paths.variant(root / "solutions" / "day03") == "solution"
    other = paths.variant(tmp_path)
    assert other.startswith("dir") and other == paths.variant(tmp_path)


# -- builds keyed by content -----------------------------------------------------------------------------------
CAP = (9, 0)


def _exercise(**kw):
    return SimpleNamespace(**{"name": "softmax", "build": "torch_extension", "sources": ["softmax.cu", "bindings.cpp"],
                              "include_dirs": ["common"], "extra_cuda_cflags": [], **kw})


def _course(tmp_path) -> Path:
    """A course root with a shared header and a student's folder day01 (a kernel, bindings, a local header)."""
    root = tmp_path / "course"
    (root / "common").mkdir(parents=True)
    (root / "common" / "float_convert.cuh").write_text("// shared\n")
    d = root / "days" / "day01"
    d.mkdir(parents=True)
    (d / "softmax.cu").write_text('#include "helpers.cuh"\n__global__ void k() {}\n')
    (d / "bindings.cpp").write_text("#include <torch/extension.h>\n")
    (d / "helpers.cuh").write_text("// local\n")
    (d / "notes.txt").write_text("not part of the build\n")
    return root


def test_same_code_in_two_folders_shares_one_build_and_any_edit_makes_another(tmp_path):
    root, ex = _course(tmp_path), _exercise()
    a = root / "days" / "day01"
    b = tmp_path / "elsewhere" / "day01"
    shutil.copytree(a, b)
    fa = build_folder(ex, a, root, "day01", CAP)
    assert fa == build_folder(ex, b, root, "day01", CAP)
    assert fa.parent == Paths(root).builds() and fa.name.startswith("day01-softmax-")
    key = build_key(ex, a, root, CAP)
    (b / "notes.txt").write_text("edited\n")  # not a source, not a header: same build
    assert build_key(ex, b, root, CAP) == key

    def changed(edit) -> bool:
        edit()
        k = build_key(ex, b, root, CAP)
        shutil.rmtree(b)
        shutil.copytree(a, b)
        return k != key

    assert changed(lambda: (b / "softmax.cu").write_text("// an edit\n"))
    assert changed(lambda: (b / "helpers.cuh").write_text("// an edit\n"))  # a header beside the sources
    assert changed(lambda: (b / "extra.h").write_text("// a new one\n"))
    assert build_key(_exercise(extra_cuda_cflags=["-DX=1"]), a, root, CAP) != key
    assert build_key(ex, a, root, (8, 0)) != key
    assert build_key(_exercise(name="softmax2"), a, root, CAP) == key  # the key is the code; the folder adds the name
    (root / "common" / "float_convert.cuh").write_text("// edited\n")  # a shared header: every build that includes it
    assert build_key(ex, a, root, CAP) != key
    with pytest.raises(BuildError) as e:
        build_key(_exercise(sources=["softmax.cu", "missing.cpp"]), a, root, CAP)
    assert e.value.log == "days/day01/missing.cpp: file not found"


def test_sync_writes_only_the_files_whose_bytes_changed(tmp_path):
    dst = tmp_path / "src"
    assert sorted(sync_sources({"a.cu": b"A", "b.cpp": b"B", "h.cuh": b"H"}, dst)) == ["a.cu", "b.cpp", "h.cuh"]
    old = {p.name: p.stat().st_mtime_ns for p in dst.iterdir()}
    for p in dst.iterdir():  # an old mtime: a rewrite would show
        os.utime(p, ns=(old[p.name] - 10**9, old[p.name] - 10**9))
    old = {p.name: p.stat().st_mtime_ns for p in dst.iterdir()}
    assert sync_sources({"a.cu": b"A2", "b.cpp": b"B"}, dst) == ["a.cu"]
    assert sorted(p.name for p in dst.iterdir()) == ["a.cu", "b.cpp"]  # a header no longer there is gone
    assert (dst / "b.cpp").stat().st_mtime_ns == old["b.cpp"] and (dst / "a.cu").stat().st_mtime_ns > old["a.cu"]


class FakeTorchBuild:
    """cpp_extension.load as far as the grader sees it: writes <build_dir>/<name>.so, records each call; the
    module import is faked too (it would need a real library)."""

    def __init__(self, monkeypatch, fail_with=None):
        from torch.utils import cpp_extension

        import grader.check.build as build

        self.calls, self.imports, self.fail_with = [], [], fail_with
        monkeypatch.setattr(cpp_extension, "load", self.load)
        monkeypatch.setattr(build, "_import_library", lambda name, folder, torch_op=False: self.imports.append(folder) or
                            SimpleNamespace(name=name, folder=folder))

    def load(self, *, name, sources, build_directory, **kw):
        srcs = {Path(s).name: Path(s).read_bytes() for s in sources}
        self.calls.append(dict(name=name, sources=sources, build_directory=build_directory, **kw))
        if self.fail_with:
            raise self.fail_with
        (Path(build_directory) / f"{name}.so").write_bytes(repr(sorted(srcs.items())).encode())


def test_an_edited_copy_compiles_in_the_workspace_rewriting_only_the_edited_source(tmp_path, monkeypatch):
    fake = FakeTorchBuild(monkeypatch)
    root, ex = _course(tmp_path), _exercise()
    a = root / "days" / "day01"
    mod, _, recovered = build_exercise(ex, src_dir=a, root=root, day_id="day01", capability=CAP)
    work = workspace(root, "day01", build_unit(ex))
    (call,) = fake.calls
    name = extension_name("day01", build_unit(ex))
    assert call["name"] == name and call["build_directory"] == str(work)
    assert call["sources"] == [str(work / "src" / "softmax.cu"), str(work / "src" / "bindings.cpp")]
    assert call["extra_include_paths"] == [str(root / "common")] and not recovered
    assert sorted(p.name for p in (work / "src").iterdir()) == ["bindings.cpp", "helpers.cuh", "softmax.cu"]
    folder = build_folder(ex, a, root, "day01", CAP)
    assert mod.folder == folder and (folder / f"{name}.so").is_file()

    # the same code elsewhere: the keyed build, no compile
    b = tmp_path / "copy" / "day01"
    shutil.copytree(a, b)
    assert build_exercise(ex, src_dir=b, root=root, day_id="day01", capability=CAP)[0].folder == folder
    assert len(fake.calls) == 1

    # one edit: compiled in the same workspace, only the edited file rewritten (ninja recompiles only that one)
    before = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in (work / "src").iterdir()}
    (b / "softmax.cu").write_text((b / "softmax.cu").read_text() + "// an edit\n")
    mod_b = build_exercise(ex, src_dir=b, root=root, day_id="day01", capability=CAP)[0]
    assert len(fake.calls) == 2 and fake.calls[1]["sources"] == call["sources"]  # same commands for ninja
    after = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in (work / "src").iterdir()}
    assert after["bindings.cpp"] == before["bindings.cpp"] and after["helpers.cuh"] == before["helpers.cuh"]
    assert after["softmax.cu"][1] == (b / "softmax.cu").read_bytes()
    assert mod_b.folder == build_folder(ex, b, root, "day01", CAP) != folder
    assert b"an edit" in (mod_b.folder / f"{name}.so").read_bytes()  # each key keeps its own module
    assert b"an edit" not in (folder / f"{name}.so").read_bytes()

    # back to the first version: a hit, no compile
    assert build_exercise(ex, src_dir=a, root=root, day_id="day01", capability=CAP)[0].folder == folder
    assert len(fake.calls) == 2


def test_a_gencode_list_is_cut_to_the_image_this_gpu_runs():
    from grader.check.build import flags_for_gpu

    flags = ["-DX=1", "-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_80,code=compute_80",
             "-gencode=arch=compute_90a,code=sm_90a"]
    assert flags_for_gpu(flags, (9, 0)) == ["-DX=1", "-gencode=arch=compute_90a,code=sm_90a"]
    assert flags_for_gpu(flags, (8, 0)) == ["-DX=1", "-gencode=arch=compute_80,code=sm_80"]
    assert flags_for_gpu(flags, (8, 9)) == flags  # no exact image: compatible SASS or the PTX, all kept
    assert flags_for_gpu(["-DX=1"], (9, 0)) == ["-DX=1"]


def test_a_simulated_older_gpu_builds_the_ptx_the_gpu_at_hand_compiles(monkeypatch):
    """GRADER_SIMULATE_GPU=8.0 on an H100: sm_80 SASS would not run there, so the build is the list's compute_80 PTX
    (what an A100's build compiles from the same source, __CUDA_ARCH__ 800), or the simulated GPU's PTX."""
    from grader.check.build import flags_for_gpu

    flags = ["-DX=1", "-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_80,code=compute_80",
             "-gencode=arch=compute_90a,code=sm_90a"]
    monkeypatch.setenv("GRADER_SIMULATE_GPU", "8.0")
    assert flags_for_gpu(flags, (8, 0)) == ["-DX=1", "-gencode=arch=compute_80,code=compute_80"]
    assert arch_list((8, 0)) == "8.0+PTX"
    assert flags_for_gpu(["-DX=1", "-gencode=arch=compute_80,code=sm_80"], (8, 0)) == \
        ["-DX=1", "-gencode=arch=compute_80,code=sm_80"]  # no PTX listed: kept as it is
    monkeypatch.setenv("GRADER_SIMULATE_GPU", "9.0")  # Hopper on Hopper is the GPU itself
    assert flags_for_gpu(flags, (9, 0)) == ["-DX=1", "-gencode=arch=compute_90a,code=sm_90a"]
    assert arch_list((9, 0)) == "9.0"


def test_exercises_with_one_recipe_share_one_build(tmp_path, monkeypatch):
    """Two exercises of a day that compile the same files with the same flags (day 11's steps): the first check
    builds, the second imports that module; other flags are another build."""
    fake = FakeTorchBuild(monkeypatch)
    root = _course(tmp_path)
    a = root / "days" / "day01"
    first = build_exercise(_exercise(name="step_a"), src_dir=a, root=root, day_id="day01", capability=CAP)[0]
    second = build_exercise(_exercise(name="step_b"), src_dir=a, root=root, day_id="day01", capability=CAP)[0]
    assert len(fake.calls) == 1 and first.folder == second.folder
    build_exercise(_exercise(name="step_c", extra_cuda_cflags=["-DSTEP=3"]), src_dir=a, root=root, day_id="day01",
                   capability=CAP)
    assert len(fake.calls) == 2 and fake.calls[1]["build_directory"] != fake.calls[0]["build_directory"]


def test_a_build_while_another_holds_the_workspace_takes_the_next_free_one(tmp_path, monkeypatch):
    """Builds of one unit at once (a class graded in parallel) do not queue behind one lock: each takes a free
    workspace; a lone build always uses the first."""
    from grader.check.build import BUILD_SLOTS, _try_flock

    fake = FakeTorchBuild(monkeypatch)
    root, ex = _course(tmp_path), _exercise()
    a = root / "days" / "day01"
    first = workspace(root, "day01", build_unit(ex))
    fd = _try_flock(first, wait=False)  # another process's build in progress
    try:
        build_exercise(ex, src_dir=a, root=root, day_id="day01", capability=CAP)
    finally:
        os.close(fd)  # closing the last descriptor releases the flock
    assert fake.calls[0]["build_directory"] == str(workspace(root, "day01", build_unit(ex), 1)) and BUILD_SLOTS > 1
    (a / "softmax.cu").write_text((a / "softmax.cu").read_text() + "// edited\n")
    build_exercise(ex, src_dir=a, root=root, day_id="day01", capability=CAP)
    assert fake.calls[1]["build_directory"] == str(first)


def test_a_stale_torch_lock_in_the_workspace_is_recovered_by_the_next_build(tmp_path, monkeypatch):
    FakeTorchBuild(monkeypatch)
    root, ex = _course(tmp_path), _exercise()
    work = workspace(root, "day01", build_unit(ex))
    work.mkdir(parents=True)
    (work / "lock").write_text("")  # a killed build's
    _, _, recovered = build_exercise(ex, src_dir=root / "days" / "day01", root=root, day_id="day01", capability=CAP)
    assert recovered and not (work / "lock").exists()


def test_load_built_imports_the_keyed_build_without_ninja(tmp_path, monkeypatch):
    fake = FakeTorchBuild(monkeypatch)
    root, ex = _course(tmp_path), _exercise()
    a = root / "days" / "day01"
    build_exercise(ex, src_dir=a, root=root, day_id="day01", capability=CAP)
    fake.calls.clear()
    mod = load_built(ex, src_dir=a, root=root, day_id="day01", capability=CAP)
    assert mod.folder == build_folder(ex, a, root, "day01", CAP) and fake.calls == []
    (a / "softmax.cu").write_text("// not built yet\n")
    with pytest.raises(FileNotFoundError, match="build it first"):
        load_built(ex, src_dir=a, root=root, day_id="day01", capability=CAP)
    assert fake.calls == []


def test_a_failed_build_names_the_students_file_and_publishes_nothing(tmp_path, monkeypatch):
    root, ex = _course(tmp_path), _exercise()
    src = workspace(root, "day01", build_unit(ex)) / "src"
    FakeTorchBuild(monkeypatch, fail_with=RuntimeError(
        f"Error building extension 'day01_softmax': [1/3] nvcc ... -c {src}/softmax.cu -o softmax.cuda.o\n"
        f"FAILED: softmax.cuda.o\n{src}/softmax.cu(2): error: expected a \";\"\n"))
    a = root / "days" / "day01"
    with pytest.raises(BuildError) as e:
        build_exercise(ex, src_dir=a, root=root, day_id="day01", capability=CAP)
    assert [str(d) for d in e.value.diagnostics] == ['days/day01/softmax.cu:2: error: expected a ";"']
    assert str(src) not in e.value.log and f"{a}/softmax.cu(2)" in e.value.log
    assert not build_folder(ex, a, root, "day01", CAP).exists()


def test_compiler_output_that_is_not_utf8_is_still_a_readable_build_error(tmp_path, monkeypatch):
    root, ex = _course(tmp_path), _exercise()
    src = workspace(root, "day01", build_unit(ex)) / "src"
    out = f"{src}/softmax.cu(2): error: bad character \"".encode() + b"\xe9\"\n"
    # what torch raises when it decodes that output as UTF-8
    FakeTorchBuild(monkeypatch, fail_with=UnicodeDecodeError("utf-8", out, len(out) - 3, len(out) - 2, "invalid"))
    with pytest.raises(BuildError) as e:
        build_exercise(ex, src_dir=root / "days" / "day01", root=root, day_id="day01", capability=CAP)
    (d,) = e.value.diagnostics
    assert (d.file, d.line) == ("days/day01/softmax.cu", 2) and "\ufffd" in d.message


def _have_host_compiler() -> bool:
    return shutil.which("ninja") is not None and (shutil.which("c++") or shutil.which("g++")) is not None


@pytest.mark.skipif(not _have_host_compiler(), reason="needs ninja and a C++ compiler")
def test_real_build_of_an_edited_copy_recompiles_only_the_edited_file(tmp_path):
    """cpp_extension.load for real (C++ only: no GPU or CUDA torch needed): an edit to one source recompiles that
    source's object alone, and each version's module is its own, even in one process."""
    root = tmp_path / "course"
    (root / "common").mkdir(parents=True)
    (root / "common" / "twice.h").write_text("inline int twice(int x) { return 2 * x; }\n")
    a = root / "days" / "day01"
    a.mkdir(parents=True)
    (a / "op.cpp").write_text('#include "twice.h"\nint op(int x) { return twice(x) + 1; }\n')
    # pybind11 alone keeps this test quick; the exercises' bindings include torch/extension.h
    (a / "bindings.cpp").write_text("#include <pybind11/pybind11.h>\nint op(int);\n"
                                    "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(\"op\", &op); }\n")
    ex = _exercise(name="twice", sources=["op.cpp", "bindings.cpp"])
    mod, _, _ = build_exercise(ex, src_dir=a, root=root, day_id="day01", capability=CAP)
    assert mod.op(5) == 11
    work = workspace(root, "day01", build_unit(ex))
    objects = {p.name: p.stat().st_mtime_ns for p in work.glob("*.o")}
    assert sorted(objects) == ["bindings.o", "op.o"]

    b = tmp_path / "copy" / "day01"
    shutil.copytree(a, b)
    (b / "op.cpp").write_text((b / "op.cpp").read_text().replace("+ 1", "+ 100"))
    mod_b, _, _ = build_exercise(ex, src_dir=b, root=root, day_id="day01", capability=CAP)
    assert mod_b.op(5) == 110 and mod.op(5) == 11
    now = {p.name: p.stat().st_mtime_ns for p in work.glob("*.o")}
    assert now["bindings.o"] == objects["bindings.o"] and now["op.o"] > objects["op.o"]
    # the second build's link line is the first's: torch's libraries once (cpp_extension appends them to the list
    # of linker flags it is given, and must not append to one the grader keeps between builds)
    ldflags = next(line for line in (work / "build.ninja").read_text().splitlines() if line.startswith("ldflags"))
    assert ldflags.count("-ltorch_cpu") == 1, ldflags
    assert load_built(ex, src_dir=a, root=root, day_id="day01", capability=CAP).op(5) == 11


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


def test_plan_of_named_cases_keeps_their_inputs(course):
    """--case: only the cases whose name contains the text, numbered afresh, each with the seed it has in the whole
    plan (a failure seen in a full check reproduces alone)."""
    ex = course.day("day03").exercises[0]
    whole = {c.named: c.seed(7) for c in plan(ex, benchmark=False)}
    one = next(iter(whole))  # e.g. "fp32 1x1"
    some = plan(ex, benchmark=False, cases=[one.split(" ", 1)[1]])
    assert some and [c.index for c in some] == list(range(len(some)))
    assert {c.named.split(" ", 1)[1] for c in some} >= {one.split(" ", 1)[1]} and len(some) < len(whole)
    assert all(whole[c.named] == c.seed(7) for c in some)
    assert [c.named for c in plan(ex, benchmark=False, cases=[one])] == [one]
    assert plan(ex, benchmark=False, cases=["no such case"]) == []


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


def test_used_files_of_earlier_days_build_from_the_folder_beside_and_key_the_build(tmp_path, monkeypatch):
    """`uses: [day01/softmax.cu]` in day02: the student's own day01 kernel (and the header beside it) is compiled
    in a folder of its own in the workspace; .py sources are not compiled; an edit to the used file rebuilds; a
    missing day01 folder is an error naming the file."""
    fake = FakeTorchBuild(monkeypatch)
    imported = []
    monkeypatch.setattr("grader.check.build.load_python_module",
                        lambda *, name, path, root: imported.append(Path(path).name) or (None, 0.0))
    root = _course(tmp_path)
    d2 = root / "days" / "day02"
    d2.mkdir()
    (d2 / "op.cpp").write_text("// TORCH_LIBRARY\n")
    (d2 / "register.py").write_text("# register_fake\n")
    ex = _exercise(name="op", op="course::op", sources=["op.cpp", "register.py"], uses=["day01/softmax.cu"])
    build_exercise(ex, src_dir=d2, root=root, day_id="day02", capability=CAP)
    work = workspace(root, "day02", build_unit(ex))
    (call,) = fake.calls
    assert call["sources"] == [str(work / "src" / "op.cpp"), str(work / "src" / "day01" / "softmax.cu")]
    assert call["is_python_module"] is False  # a library of torch ops: loaded, not imported
    assert (work / "src" / "day01" / "helpers.cuh").is_file() and imported == ["register.py"]
    key = build_key(ex, d2, root, CAP)
    (root / "days" / "day01" / "softmax.cu").write_text("// edited day 1\n")
    assert build_key(ex, d2, root, CAP) != key
    elsewhere = tmp_path / "alone" / "day02"
    shutil.copytree(d2, elsewhere)
    with pytest.raises(BuildError) as e:
        build_key(ex, elsewhere, root, CAP)
    assert "day01/softmax.cu: file not found (this exercise also compiles your day01's softmax.cu" in e.value.log


def test_an_include_of_a_file_the_build_does_not_copy_is_a_build_error_on_any_machine(tmp_path):
    """`#include "matmul_steps.cu"` from 09c's matmul.cu compiled in place (the compile-only check once did) but
    not in the build's copy, which holds the sources and the headers beside them: the GPU said "does not compile"
    where the CPU had said it compiles. Now both refuse it first, at its line, saying what to do."""
    src = tmp_path / "day09"
    shutil.copytree(ROOT / "solutions" / "day09", src)
    f = src / "matmul.cu"
    f.write_text('#include "matmul_steps.cu"\n' + f.read_text())
    r = run_grader("check", "day09", "--dir", str(src), "--exercise", "matmul_pipelined", state=tmp_path / "state")
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "matmul.cu:1" in out and 'names a file that a build does not copy' in out and "matmul_steps.cuh" in out
    assert "Traceback" not in out
    (src / "matmul_steps.cuh").write_text((src / "matmul_steps.cu").read_text())  # a header is copied: no refusal
    f.write_text(f.read_text().replace('#include "matmul_steps.cu"\n', '#include "matmul_steps.cuh"\n', 1))
    from grader.check.compile_check import uncopied_includes
    from grader.course import load_course

    ex = next(e for e in load_course(ROOT / "course.yaml").day("day09").exercises if e.name == "matmul_pipelined")
    assert uncopied_includes(ex, src, tmp_path) == []


def test_gold_is_used_only_where_the_compiler_links_with_it(tmp_path, monkeypatch):
    """A GPU machine's GCC gave gold a libstdc++.so path it could not open: with gold chosen because ld.gold was on
    the PATH, every build there failed at its link. The choice is the compiler's answer to a probe link, kept in the
    grader's cache under the compiler's and gold's paths and dates (asked once a machine, not at a first edit)."""
    from grader.check.build import speed_ldflags

    gold = tmp_path / "ld.gold"
    gold.write_text("#!/bin/sh\n")
    gold.chmod(0o755)
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name: str(gold) if name == "ld.gold" else real_which(name))

    def compiler(name: str, links: bool):
        """A compiler whose link works, with gold only where `links`; it counts its runs in NAME.runs."""
        c = tmp_path / name
        body = "" if links else 'for a in "$@"; do [ "$a" = -fuse-ld=gold ] && exit 1; done\n'
        c.write_text(f'#!/bin/sh\necho run >>"{c}.runs"\n{body}exit 0\n')
        c.chmod(0o755)
        return c

    def runs(c) -> int:
        return len(Path(f"{c}.runs").read_text().splitlines()) if Path(f"{c}.runs").exists() else 0

    cache = tmp_path / "cache"
    refuses, links = compiler("refuses-gold", False), compiler("links", True)
    assert speed_ldflags(str(refuses), cache) == ()
    assert speed_ldflags(str(links), cache) == ("-fuse-ld=gold",)
    assert speed_ldflags(str(tmp_path / "no-such-compiler"), cache) == ()
    # a new process (the in-process answer forgotten) reads the kept answer: no probe
    speed_ldflags.cache_clear()
    assert speed_ldflags(str(refuses), cache) == () and speed_ldflags(str(links), cache) == ("-fuse-ld=gold",)
    assert runs(refuses) == runs(links) == 1
    # the compiler replaced (another date): asked again
    speed_ldflags.cache_clear()
    os.utime(refuses, ns=(0, 0))
    assert speed_ldflags(str(refuses), cache) == () and runs(refuses) == 2
    # no gold on the machine: not asked
    speed_ldflags.cache_clear()
    monkeypatch.setattr(shutil, "which", lambda name: None if name == "ld.gold" else real_which(name))
    assert speed_ldflags(str(links), cache) == () and runs(links) == 1
