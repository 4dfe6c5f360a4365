"""Bad input never breaks the grader (no GPU needed): sources of random bytes, with NUL bytes, not UTF-8, empty,
truncated or of 50 MB, through `grader check` (compile-only on this machine) and directly through compile_sources
and load_python_module; compiler output that is not UTF-8; option values checked before anything runs; and
`grader doctor` on a CPU-only torch. Every failure is a message that names the file, with the right exit code, and
never a traceback."""
import os
import random
import shutil
import time
from pathlib import Path

import pytest

from grader import cli
from grader.check.build import BuildError, _error_log, load_python_module, map_paths, parse_diagnostics
from grader.errors import GraderError
from grader.check.compile_check import MAX_SOURCE_BYTES, compile_sources, source_problem
from tests.conftest import ROOT, has_gpu, needs_nvcc, run_grader
from tests import processes

TIMEOUT = 120  # seconds for one test, and for one grader run in it: none of these should come near it
BIG = 50 * 2**20
SOFTMAX = (ROOT / "solutions" / "day01" / "softmax.cu").read_bytes()


def _random(n: int, seed: int = 0, nul: bool = True) -> bytes:
    data = random.Random(seed).randbytes(n)
    return data if nul else data.replace(b"\0", b"\1")


# kind -> (bytes of the source, the line its diagnostic must name, words of the message)
BAD = {
    "random bytes": (lambda: _random(5000), None, "NUL bytes"),
    "random bytes, no NUL": (lambda: _random(5000, nul=False), None, "not valid UTF-8"),
    "NUL byte": (lambda: SOFTMAX[:200] + b"\0" + SOFTMAX[200:], SOFTMAX[:200].count(b"\n") + 1, "NUL bytes"),
    "latin-1 comment": (lambda: b"// caf\xe9 au lait\n" + SOFTMAX, 1, "not valid UTF-8 (byte 0xe9 at column 7)"),
    "UTF-16": (lambda: SOFTMAX.decode().encode("utf-16"), 1, "NUL bytes"),
    "truncated mid-character": (lambda: b"// \xe2\x82", 1, "not valid UTF-8"),
    "empty": (lambda: b"", 1, "the file is empty"),
    "whitespace only": (lambda: b"\n  \t\n\n", 1, "the file is empty"),
    "50 MB comment": (lambda: b"//" + b"x" * BIG + b"\n", 1, "sources over 2 MiB are refused"),
    "50 MB of garbage": (lambda: _random(BIG, nul=False), 1, "sources over 2 MiB are refused"),
}


@pytest.fixture(autouse=True)
def time_limit():
    """A hang (a compiler chewing on 50 MB, say) fails the test instead of stalling the suite."""
    yield from processes.time_limit(TIMEOUT)


def clean(text: str) -> None:
    assert "Traceback" not in text and "internal error" not in text, text


def day_copy(tmp_path: Path, day: str) -> Path:
    d = tmp_path / day
    shutil.copytree(ROOT / "solutions" / day, d)
    return d


def check(*args) -> tuple[int, str, float]:
    t0 = time.monotonic()
    r = run_grader("check", *args, timeout=TIMEOUT)
    out = r.stdout + r.stderr
    clean(out)
    return r.returncode, out, time.monotonic() - t0


# -- through `grader check` ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", list(BAD))
def test_a_bad_kernel_file_is_a_build_error_naming_it(tmp_path, kind):
    data, line, words = BAD[kind]
    d = day_copy(tmp_path, "day01")
    (d / "softmax.cu").write_bytes(data())
    code, out, secs = check("day01", "--dir", str(d))
    assert code == 1 and "BUILD ERROR" in out, out
    where = f"softmax.cu:{line}: error" if line else "softmax.cu:"
    assert where in out and words in out, out
    assert secs < 30, f"refusing {kind} took {secs:.0f} s"  # refused before any compiler ran


def test_random_bindings_and_a_random_python_exercise_are_build_errors(tmp_path):
    d = day_copy(tmp_path, "day01")
    (d / "bindings.cpp").write_bytes(_random(3000, seed=1, nul=False))
    code, out, _ = check("day01", "--dir", str(d))
    assert code == 1 and "bindings.cpp:" in out and "not valid UTF-8" in out, out
    d13 = day_copy(tmp_path, "day13")
    (d13 / "softmax_numba.py").write_bytes(_random(3000, seed=2))
    code, out, _ = check("day13", "--exercise", "softmax_numba", "--dir", str(d13))
    assert code == 1 and "softmax_numba.py:" in out and "NUL bytes" in out, out


@pytest.mark.skipif(has_gpu(), reason="the compile-only path")
def test_a_truncated_python_exercise_points_at_the_line(tmp_path):
    d = day_copy(tmp_path, "day13")
    src = (d / "softmax_numba.py").read_bytes()
    cut = src.index(b"def ", len(src) // 2) + 12  # mid-way through a def's name: a syntax error
    (d / "softmax_numba.py").write_bytes(src[:cut])
    code, out, _ = check("day13", "--exercise", "softmax_numba", "--dir", str(d))
    assert code == 1 and "BUILD ERROR" in out and "softmax_numba.py:" in out, out


@needs_nvcc
def test_a_truncated_kernel_file_points_at_its_end(tmp_path):
    """nvcc's "At end of source: error" has no line of its own: the diagnostic names the file's last line. (The
    whole `grader check` path of a kernel's compile error is tests/test_cli.py's; this one stays fast.)"""
    src = tmp_path / "softmax.cu"
    cut = SOFTMAX.index(b"for (", len(SOFTMAX) // 2) + 3  # mid-token, mid-function
    src.write_bytes(SOFTMAX[:cut])
    (r,) = compile_sources([src], [ROOT / "common"], [], tmp_path)
    last = SOFTMAX[:cut].count(b"\n") + 1
    assert not r.ok and r.tool == "nvcc"
    assert f"softmax.cu:{last}: error: expected a \"}}\"" in r.diagnostics, r.diagnostics + [r.log]


# -- directly: compile_sources, load_python_module -------------------------------------------------------------------
@pytest.mark.parametrize("suffix", [".cu", ".cpp", ".py"])
@pytest.mark.parametrize("kind", list(BAD))
def test_compile_sources_refuses_bad_files_with_a_diagnostic(tmp_path, kind, suffix):
    data, line, words = BAD[kind]
    src = tmp_path / f"student{suffix}"
    src.write_bytes(data())
    t0 = time.monotonic()
    (r,) = compile_sources([src], [], [], tmp_path)
    assert time.monotonic() - t0 < 5
    assert not r.ok and r.file == src.name and r.tool == "-", r
    assert r.diagnostics and r.diagnostics[0].startswith(f"{src.name}:{line or ''}"), r.diagnostics
    assert words in r.diagnostics[0]


def test_the_size_limit_is_inclusive_and_needs_no_compiler(tmp_path):
    src = tmp_path / "k.cu"
    src.write_bytes(b"/" * 2 + b"x" * (MAX_SOURCE_BYTES - 3) + b"\n")
    assert source_problem(src, tmp_path) is None
    src.write_bytes(b"/" * 2 + b"x" * (MAX_SOURCE_BYTES - 2) + b"\n")
    assert "refused" in source_problem(src, tmp_path).diagnostics[0]


def test_missing_and_unreadable_sources_are_reported(tmp_path):
    (r,) = compile_sources([tmp_path / "gone.cu"], [], [], tmp_path)
    assert not r.ok and r.note == "file not found"
    (tmp_path / "adir.cu").mkdir()
    assert source_problem(tmp_path / "adir.cu", tmp_path).note == "not a regular file"
    if os.geteuid() != 0:  # root reads anything
        p = tmp_path / "locked.cu"
        p.write_text("int x;\n")
        p.chmod(0)
        assert "cannot be read" in source_problem(p, tmp_path).note


@pytest.mark.parametrize("kind", [k for k in BAD if not k.startswith(("empty", "whitespace", "50 MB comment"))])
def test_load_python_module_turns_bad_files_into_build_errors(tmp_path, kind):
    data, _, _ = BAD[kind]
    src = tmp_path / "student_op.py"
    src.write_bytes(data())
    with pytest.raises(BuildError) as e:
        load_python_module(name=f"bad_input_{abs(hash(kind))}", path=src, root=tmp_path)
    (d,) = e.value.diagnostics
    assert d.file == "student_op.py" and d.line >= 1 and d.kind == "error"


@pytest.mark.parametrize("data", [b"", b"\n\n", b"# " + b"x" * BIG + b"\n"], ids=["empty", "blank", "50 MB comment"])
def test_load_python_module_of_a_file_without_code_gives_a_module_without_the_op(tmp_path, data):
    """Not a crash: the worker then says the op is missing (not implemented); `grader check` refuses these files
    before (empty, or over the size limit)."""
    src = tmp_path / "student_op.py"
    src.write_bytes(data)
    module, _ = load_python_module(name=f"blank_{len(data)}", path=src, root=tmp_path)
    assert not hasattr(module, "softmax")
    assert source_problem(src, tmp_path) is not None


def test_truncated_python_is_a_syntax_error_at_its_line(tmp_path):
    src = tmp_path / "student_op.py"
    src.write_text("import math\n\ndef softmax(x, out):\n    return math.exp(x[0\n")
    with pytest.raises(BuildError) as e:
        load_python_module(name="truncated_op", path=src, root=tmp_path)
    assert e.value.diagnostics[0].file == "student_op.py" and e.value.diagnostics[0].line in (4, 5)


# -- compiler output that is not UTF-8 (the torch-extension build path) ---------------------------------------------
RAW_LOG = (b"/ws/day01-softmax-work/src/softmax.cu(12): error: identifier \"caf\xe9\" is undefined\n"
           b"/ws/day01-softmax-work/src/bindings.cpp:3:5: error: stray '\\377' in program \xff\xfe\n"
           b"ninja: build stopped: subcommand failed.\n")


def test_build_logs_with_invalid_bytes_are_parsed_with_replacement(tmp_path):
    student = tmp_path / "days" / "day01"
    student.mkdir(parents=True)
    folders = {Path("/ws/day01-softmax-work/src"): student}
    log = RAW_LOG.decode("utf-8", errors="replace")
    diags = parse_diagnostics(log, tmp_path, folders)
    assert [(d.file, d.line) for d in diags] == [("days/day01/softmax.cu", 12), ("days/day01/bindings.cpp", 3)]
    assert "caf\ufffd" in diags[0].message
    mapped = map_paths(log, folders)
    assert f"{student}/softmax.cu(12)" in mapped and "/ws/" not in mapped


def test_torch_strict_decode_failure_becomes_a_readable_log(tmp_path):
    """torch decodes the compiler's output as strict UTF-8: the build turns that UnicodeDecodeError back into the
    log, with replacement characters."""
    err = UnicodeDecodeError("utf-8", RAW_LOG, RAW_LOG.index(b"\xe9"), RAW_LOG.index(b"\xe9") + 1, "invalid")
    log = _error_log(err)
    assert "\ufffd" in log and "softmax.cu(12): error" in log
    assert len(parse_diagnostics(log, tmp_path)) == 2


# -- option values, checked before anything runs ------------------------------------------------------------------
@pytest.mark.parametrize("argv, words", [
    (["check", "day01", "--timeout", "-5"], "--timeout: must be a number of seconds above 0, not -5"),
    (["check", "day01", "--timeout", "0"], "above 0"),
    (["check", "day01", "--timeout", "nan"], "above 0"),
    (["check", "day01", "--timeout", "inf"], "above 0"),
    (["check", "day01", "--timeout", "soon"], "'soon' is not a number of seconds"),
    (["check", "day01", "--seed", "-1"], "--seed: a seed must be from 0 to 9223372036854775807, not -1"),
    (["check", "day01", "--seed", str(2**63)], "not 9223372036854775808"),
    (["check", "day01", "--seed", "1.5"], "'1.5' is not a whole number"),
    (["site", "serve", "--port", "-1"], "--port: a port must be from 0 to 65535, not -1"),
    (["site", "serve", "--port", "65536"], "not 65536"),
    (["site", "serve", "--port", "http"], "'http' is not a whole number"),
])
def test_bad_option_values_are_usage_errors(capsys, argv, words):
    with pytest.raises(SystemExit) as e:
        cli.parser().parse_args(argv)
    assert e.value.code == 2
    assert words in capsys.readouterr().err


@pytest.mark.parametrize("argv, attr, value", [
    (["check", "day01", "--timeout", "0.5"], "timeout", 0.5),
    (["check", "day01", "--seed", "0"], "seed", 0),
    (["check", "day01", "--seed", str(2**63 - 1)], "seed", 2**63 - 1),
    (["site", "serve", "--port", "0"], "port", 0),
    (["site", "serve", "--port", "65535"], "port", 65535),
])
def test_good_option_values_are_accepted(argv, attr, value):
    assert getattr(cli.parser().parse_args(argv), attr) == value


def test_a_bad_option_value_from_the_command_line_is_exit_2_without_a_traceback():
    r = run_grader("check", "day01", "--timeout", "-5", timeout=TIMEOUT)
    assert r.returncode == 2 and "must be a number of seconds above 0" in r.stderr
    clean(r.stdout + r.stderr)


@pytest.mark.parametrize("cmd", [["check", "day01", "--solution"], ["profile", "day01", "--solution"]])
def test_json_into_a_missing_folder_fails_before_running_anything(tmp_path, cmd):
    target = tmp_path / "missing" / "r.json"
    t0 = time.monotonic()
    r = run_grader(*cmd, "--json", str(target), timeout=TIMEOUT)
    assert time.monotonic() - t0 < 20  # parsing only: no build, no worker
    assert r.returncode == 2 and f"the folder {target.parent} does not exist" in r.stderr, r.stderr
    assert "seed" not in r.stdout and "compiles" not in r.stdout  # nothing ran
    clean(r.stdout + r.stderr)


@pytest.mark.parametrize("cmd", [["check", "day01"], ["profile", "day01"]])
def test_json_into_a_folder_or_an_unwritable_one_is_refused(tmp_path, capsys, cmd):
    with pytest.raises(SystemExit):
        cli.parser().parse_args([*cmd, "--json", str(tmp_path)])
    assert "is a folder: give a file name" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.parser().parse_args([*cmd, "--json", str(tmp_path / "a-file.json" / "r.json")])
    # tmp_path/a-file.json does not exist: its "folder" does not either
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "plain").write_text("x")
    with pytest.raises(SystemExit):
        cli.parser().parse_args([*cmd, "--json", str(tmp_path / "plain" / "r.json")])
    assert "is not a folder" in capsys.readouterr().err
    if os.geteuid() != 0:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(SystemExit):
            cli.parser().parse_args([*cmd, "--json", str(locked / "r.json")])
        assert "permission denied" in capsys.readouterr().err
    assert cli.parser().parse_args([*cmd, "--json", str(tmp_path / "r.json")]).json == str(tmp_path / "r.json")


def test_profile_json_without_a_path_still_means_stdout():
    assert cli.parser().parse_args(["profile", "day01", "--json"]).json == "-"


# -- doctor on a CPU-only torch ------------------------------------------------------------------------------------
def _cpu_torch() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.version.cuda is None


@pytest.mark.skipif(not _cpu_torch(), reason="needs a CPU-only build of torch")
def test_doctor_on_a_cpu_torch_offers_compile_only_mode():
    r = run_grader("doctor", timeout=TIMEOUT)
    clean(r.stdout + r.stderr)
    out = " ".join(r.stdout.split())  # rich may wrap a long line
    assert "CUDA_HOME" not in out  # setting it cannot help a CPU-only torch
    assert "CPU-only build" in out and "compile-only" in out
    assert "pip install torch --index-url https://download.pytorch.org/whl/cu130" in out
    assert "sm_80 and sm_90" in out and "correctness and speed need a GPU" in out
    has_nvcc = shutil.which("nvcc") is not None or Path("/usr/local/cuda/bin/nvcc").exists()
    assert r.returncode == (0 if has_nvcc else 2), out


@pytest.mark.skipif(not _cpu_torch(), reason="needs a CPU-only build of torch")
def test_doctor_on_a_cpu_torch_without_nvcc_is_a_problem(monkeypatch, capsys):
    import grader.doctor

    monkeypatch.setattr(grader.doctor, "nvcc_path", lambda: None)
    assert cli.main(["doctor"]) == 2
    out = " ".join(capsys.readouterr().out.split())
    assert "compile-only mode needs it" in out and "1 problem(s)" in out


def test_doctor_without_torch_says_which_build_to_install(monkeypatch, capsys):
    """`pip install -e .` installs no torch: doctor names the CPU wheel on a machine without a driver (compile-only
    mode) and the CUDA wheel on a GPU machine, and stays a problem (exit 2) until one is installed."""
    import sys

    import grader.doctor

    monkeypatch.setitem(sys.modules, "torch", None)  # an import of it now fails
    for driver, want, not_want in ((False, "whl/cpu", "whl/cu130"), (True, "whl/cu130", "whl/cpu")):
        monkeypatch.setattr(grader.doctor, "_has_driver", lambda d=driver: d)
        assert cli.main(["doctor"]) == 2
        out = " ".join(capsys.readouterr().out.split())
        assert want in out and not_want not in out and ("compile-only mode" in out) == (not driver), out


def test_a_case_name_that_matches_nothing_is_a_usage_error_that_shows_the_names():
    r = run_grader("check", "day01", "--solution", "--case", "9x9x9")
    assert r.returncode == 2 and "no case of day01.softmax is named so" in r.stdout + r.stderr, r.stdout + r.stderr
    assert "'fp32 " in r.stdout + r.stderr and "Traceback" not in r.stdout + r.stderr
    r = run_grader("check", "day01", "--solution", "--ranked", "--case", "fp32")
    assert r.returncode == 2 and "drop --case" in r.stdout + r.stderr


def test_a_state_folder_that_cannot_be_written_is_named_with_what_to_do(tmp_path, monkeypatch):
    """$GRADER_STATE naming a file, or a read-only .grader/, is the machine's problem with a way out, not an
    internal error of the grader."""
    afile = tmp_path / "afile"
    afile.write_text("")
    r = run_grader("check", "day01", "--solution", "--correctness-only", state=afile)
    out = " ".join((r.stdout + r.stderr).split())
    assert r.returncode == 2 and f"keeps its builds, logs and results in {afile}" in out, out
    assert "a file, not a folder" in out and "point $GRADER_STATE at a folder you can write" in out
    assert "internal error" not in out and "Traceback" not in out
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GRADER_STATE", raising=False)
    (tmp_path / ".grader").mkdir()
    denied = PermissionError(13, "Permission denied", str(tmp_path / ".grader" / "logs" / "day01.log"))
    words = cli._state_problem(denied)
    assert words and "make" in words and ".grader writable (or remove it)" in words and "permission denied" in words
    assert cli._state_problem(PermissionError(13, "Permission denied", "/etc/shadow")) is None


@needs_nvcc
@pytest.mark.skipif(has_gpu(), reason="the compile-only verdict: a machine without a GPU")
def test_compile_only_warns_when_no_source_defines_the_op(tmp_path):
    d = day_copy(tmp_path, "day01")
    bindings = d / "bindings.cpp"
    bindings.write_text(bindings.read_text().replace('m.def("softmax"', 'm.def("softmax_typo"'))
    code, out, _ = check("day01", "--dir", str(d))
    text = " ".join(out.split())
    assert code == 2 and "COMPILED ONLY" in text and "none of your sources defines the op `softmax`" in text, text


# course.yaml as a student's or an instructor's editor may leave it -> words of the message (exit code 2)
BAD_COURSE = {
    "not UTF-8": (b"days:\n  - id: day01\n    title: caf\xe9\n", "is not valid UTF-8 (byte 0xe9 at line 3, column 15)"),
    "a key twice": (b"days: []\ndays: []\n", "'days' is defined twice in one mapping"),
    "not YAML": (b"days: [\n", "is not valid YAML"),
    "a list": (b"- day01\n", "expected a mapping at the top level"),
}


@pytest.mark.parametrize("kind", BAD_COURSE)
def test_a_broken_course_file_is_named_with_what_is_wrong(tmp_path, kind):
    data, words = BAD_COURSE[kind]
    course = tmp_path / "course.yaml"
    course.write_bytes(data)
    r = run_grader("--course", str(course), "check", "day01", timeout=TIMEOUT)
    out = r.stdout + r.stderr
    clean(out)
    assert r.returncode == 2 and str(course) in out and words in out, out


def test_a_folder_given_as_the_course_file_is_named(tmp_path):
    r = run_grader("--course", str(tmp_path), "check", "day01", timeout=TIMEOUT)
    out = r.stdout + r.stderr
    clean(out)
    assert r.returncode == 2 and f"{tmp_path} is a folder, not a YAML file" in out, out


def test_a_key_merged_in_and_then_overridden_is_not_a_repeat(tmp_path):
    from grader.yaml_file import read_yaml
    p = tmp_path / "x.yaml"
    p.write_text("base: &b {threshold: 1, tol: 2}\nexercise:\n  <<: *b\n  threshold: 3\n")
    assert read_yaml(p, str(p))["exercise"] == {"threshold": 3, "tol": 2}
    p.write_text("exercise:\n  <<: {tol: 2}\n  threshold: 3\n  threshold: 4\n")
    with pytest.raises(GraderError, match="'threshold' is defined twice"):
        read_yaml(p, str(p))


# course.yaml that is not a file: said as what it is, wherever the path came from (found upwards, or --course)
@pytest.mark.parametrize("kind", ["folder", "dangling link"])
def test_a_course_file_that_is_no_file_is_said_to_be_what_it_is(tmp_path, kind):
    course = tmp_path / "course.yaml"
    if kind == "folder":
        course.mkdir()
        words = "is a folder, not a YAML file"
    else:
        course.symlink_to(tmp_path / "gone.yaml")
        words = f"is a link to {tmp_path / 'gone.yaml'}, and no file is there"
    (tmp_path / "work").mkdir()
    for args, cwd, named in ((["list"], tmp_path / "work", str(course)),
                             (["--course", str(course), "list"], ROOT, f"--course {course}")):
        r = run_grader(*args, cwd=cwd, timeout=TIMEOUT)
        out = " ".join((r.stdout + r.stderr).split())
        clean(out)
        assert r.returncode == 2 and f"{named} {words}" in out and "not found" not in out, out
        assert "--course PATH" in out, out  # what to do


def _doctor_course_only(monkeypatch):
    """`grader doctor` with only its course line (the machine's checks and Slurm's left out)."""
    import grader.check.slurm_settings
    import grader.doctor

    monkeypatch.setattr(grader.doctor, "checks", lambda: [])
    monkeypatch.setattr(grader.check.slurm_settings, "doctor", lambda course: [])


def test_doctor_with_an_unreadable_course_file_is_a_problem(tmp_path, monkeypatch, capsys):
    _doctor_course_only(monkeypatch)
    bad = tmp_path / "course.yaml"
    bad.write_text("days: [\n")
    assert cli.main(["--course", str(bad), "doctor"]) == 2
    out = " ".join(capsys.readouterr().out.split())
    assert f"✗ course {bad} is not valid YAML" in out and "1 problem(s)" in out, out
    bad.unlink()  # no course.yaml upwards from here: a warning, and doctor still answers
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert cli.main(["doctor"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "! course no course.yaml in this folder or any parent" in out, out
    assert cli.main(["--course", str(ROOT / "course.yaml"), "doctor"]) == 0
    assert "✓ course" in capsys.readouterr().out


def test_doctor_says_what_to_do_when_slurm_does_not_answer(monkeypatch, tmp_path):
    from grader.check import slurm_settings

    monkeypatch.setattr(slurm_settings.shutil, "which", lambda cmd: f"/usr/bin/{cmd}")
    monkeypatch.setattr(slurm_settings, "_partitions", lambda: (None, "sinfo: fatal: no configuration"))
    (line,) = slurm_settings.doctor(str(tmp_path / "none.yaml"))
    assert line.ok is None and "sinfo: fatal: no configuration" in line.detail
    assert "ask its admins" in line.detail and "`grader check` runs locally" in line.detail, line.detail
