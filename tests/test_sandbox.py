"""The sandbox for submissions' code (grader/sandbox.py, grader/check/sandboxed.py): the bwrap command a policy
becomes, what a check's sandbox shows and refuses when a process runs in it, what `doctor` and the commands say
where it cannot work, and where it is on by default. The hostile submissions themselves are
tests/test_sandbox_hostile.py (the worker) and the end of this file (the compilers, through `grader grade`)."""
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from grader import cli, sandbox
from grader.commands import shared
from grader.check.sandboxed import CheckSandbox
from grader.classroom import grade_task
from tests.conftest import ROOT, needs_nvcc

works = pytest.mark.skipif(not sandbox.probe().ok, reason=f"no sandbox here: {sandbox.probe().detail}")


def pairs(args: list[str], flag: str) -> list[tuple[str, ...]]:
    """The operands of each `flag` in a bwrap command line (two for a bind, one for --tmpfs)."""
    n = {"--ro-bind": 2, "--bind": 2, "--dev-bind": 2, "--tmpfs": 1, "--symlink": 2, "--unsetenv": 1,
         "--setenv": 2}[flag]
    return [tuple(args[i + 1:i + 1 + n]) for i, a in enumerate(args) if a == flag]


def test_a_policy_becomes_a_bwrap_command_that_binds_only_what_it_names(tmp_path):
    course = tmp_path / "course"
    tasks, state, dev = course / "tasks", tmp_path / "state", tmp_path / "nvidia0"
    for d in (tasks, state):
        d.mkdir(parents=True)
    dev.write_text("")
    env = {"PATH": "/usr/bin", "GRADER_RANKED_SEED": "x" * 32, "GITHUB_TOKEN": "t", "CUDA_VISIBLE_DEVICES": "0"}
    args = sandbox.argv(sandbox.Policy(read=(tasks,), write=(state,), devices=(dev,), tmp_bytes=12345), env)
    assert args[0].endswith("bwrap") and args[-1] == "--"
    for flag in ("--unshare-all", "--die-with-parent", "--new-session"):
        assert flag in args
    assert args[args.index("--cap-drop") + 1] == "ALL"
    assert (str(tasks), str(tasks)) in pairs(args, "--ro-bind") and (str(state), str(state)) in pairs(args, "--bind")
    assert (str(dev), str(dev)) in pairs(args, "--dev-bind")
    assert [args[i - 2:i + 2] for i, a in enumerate(args) if a == "--tmpfs"] == [
        ["--size", "12345", "--tmpfs", "/dev/shm"], ["--size", "12345", "--tmpfs", "/tmp"]]
    assert args.index("/tmp") < args.index(str(state))  # the private /tmp first, then what is bound inside it
    bound = {p for _, p in pairs(args, "--ro-bind") + pairs(args, "--bind")}
    assert str(course) not in bound and str(Path.home()) not in bound and "/" not in bound
    unset = {u for (u,) in pairs(args, "--unsetenv")}
    assert {"GRADER_RANKED_SEED", "GRADER_RANKED_SEED_FILE", "GITHUB_TOKEN"} <= unset
    assert ("HOME", sandbox.HOME) in pairs(args, "--setenv") and ("TMPDIR", "/tmp") in pairs(args, "--setenv")
    assert "CUDA_VISIBLE_DEVICES" not in unset


def test_a_hidden_folder_under_a_bound_one_is_covered_before_anything_inside_it_is_bound(tmp_path):
    """A course kept inside a folder the sandbox reads (a Python installed beside it, say) stays out of sight:
    an empty folder over it, then only the pieces the policy names."""
    tasks = tmp_path / "course" / "tasks"
    tasks.mkdir(parents=True)
    (tmp_path / "course" / "solutions").mkdir()
    args = sandbox.argv(sandbox.Policy(read=(tmp_path, tasks), hide=(tmp_path / "course",)), {})
    cover = args.index(str(tmp_path / "course"))
    assert args[cover - 1] == "--tmpfs" and args.index(str(tmp_path)) < cover < args.index(str(tasks))


def test_a_python_path_naming_the_course_itself_does_not_bind_it(tmp_path, monkeypatch):
    """$PYTHONPATH set to the course (a developer's shell, `PYTHONPATH=. grader grade`): the sandbox binds the course
    code the policy names, never the course whole, which would show solutions/ and the hidden cases."""
    course, grader_dir = tmp_path / "course", tmp_path / "course" / "grader"
    grader_dir.mkdir(parents=True)
    (course / "solutions").mkdir()
    for named in (course, course / "solutions"):  # the course, or a folder of it
        monkeypatch.setenv("PYTHONPATH", str(named))
        args = sandbox.argv(sandbox.Policy(read=(grader_dir,), hide=(course,)), {})
        bound = {p for _, p in pairs(args, "--ro-bind") + pairs(args, "--bind")}
        assert str(named) not in bound and str(course) not in bound and str(grader_dir) in bound, named


@works
def test_inside_a_checks_sandbox_only_its_own_files_are_there(tmp_path):
    """A process started as a sandboxed worker of day 1: it reads its sources and the course's code, writes only
    its own state, and sees no solution, no other day, no home, no network and no process of the grader's."""
    from grader.course import load_course

    src = tmp_path / "subs" / "ada" / "day01"
    src.mkdir(parents=True)
    (src / "softmax.cu").write_text("// mine\n")
    ex = load_course(ROOT / "course.yaml").day("day01").exercises[0]
    box = CheckSandbox(ROOT, "dirtest" + uuid.uuid4().hex[:6])
    probe = f'''
import os, socket, sys
def can(f):
    try:
        f()
        return "yes"
    except OSError as e:
        return type(e).__name__
print(sorted(os.listdir({str(ROOT)!r})))
print(can(lambda: open({str(src / "softmax.cu")!r}).read()), can(lambda: open({str(src / "new")!r}, "w")))
print(can(lambda: open({str(box.state / "x")!r}, "w")), sorted(os.listdir({str(Path.home())!r})) if
      os.path.isdir({str(Path.home())!r}) else [])
print(can(lambda: socket.create_connection(("127.0.0.1", 22), timeout=2)),
      sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
print(os.environ.get("GRADER_RANKED_SEED"), os.environ["HOME"], os.getppid())
print(can(lambda: open("/dev/fill", "w")), can(lambda: open("/fill", "w")), can(lambda: open("/tmp/fill", "w")))
'''
    env = {**dict(__import__("os").environ), "GRADER_RANKED_SEED": "y" * 32}
    p = subprocess.run(box.worker(ex, src) + [sys.executable, "-c", probe], capture_output=True, text=True,
                       timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    listing, sources, state, net, last, writable = p.stdout.splitlines()
    assert listing == str(sorted(["common", "grader", "tasks"])), listing  # no solutions/, days/, course.yaml
    assert sources == "yes OSError"  # its sources read-only
    # of the home, at most the folders that lead to this Python where it is installed there (pyenv, a venv)
    home = Path.home()
    python = sorted({p.relative_to(home).parts[0] for p in [*sandbox.interpreter_paths(), *sandbox.pythonpath_paths()]
                     if home in p.parents})
    assert state == f"yes {python}", state
    assert net == "ConnectionRefusedError [1, 2]", net  # its own loopback; itself and the sandbox's init alone
    assert last == f"None {sandbox.HOME} 1"
    assert writable == "OSError OSError yes"  # of bwrap's own folders, only the bounded /tmp takes files


def test_where_bwrap_is_missing_the_message_says_what_to_install(monkeypatch):
    monkeypatch.setattr(sandbox, "bwrap_path", lambda: None)
    sandbox.probe.cache_clear()
    try:
        p = sandbox.probe()
        assert not p.ok and "apt-get install bubblewrap" in p.detail
    finally:
        sandbox.probe.cache_clear()


def test_a_kernel_without_user_namespaces_is_named_as_the_reason():
    why = sandbox._explain("bwrap: No permissions to creating new namespace, likely because the kernel does not "
                           "allow non-privileged user namespaces.")
    assert "unprivileged user create namespaces" in why and "unprivileged_userns_clone" in why


@pytest.fixture
def no_sandbox_here(monkeypatch):
    monkeypatch.setattr(sandbox, "probe", lambda: sandbox.Probe(False, "bubblewrap (bwrap) is not installed: "
                                                                       f"{sandbox.INSTALL}"))


def run(capsys, *args) -> tuple[int, str]:
    code = cli.main(["--course", str(ROOT / "course.yaml"), *map(str, args)])
    out = capsys.readouterr()
    text = out.out + out.err
    assert "Traceback" not in text and "internal error" not in text, text
    return code, " ".join(text.split())


@pytest.mark.parametrize("args", [["check", "day01", "--solution", "--sandbox"],
                                  ["check", "day01", "--solution", "--ranked"]], ids=["--sandbox", "--ranked"])
def test_a_check_that_needs_the_sandbox_says_why_it_cannot_have_it(capsys, monkeypatch, no_sandbox_here, args):
    """On with --sandbox, on by default with --ranked: where it cannot work, exit 2, what to install, and the way
    out that says what it gives up."""
    monkeypatch.setenv("GRADER_RANKED_SEED", "z" * 32)
    monkeypatch.delenv("GRADER_RANKED_SEED_FILE", raising=False)
    code, text = run(capsys, *args)
    assert code == 2 and "the sandbox for submissions' code does not work here" in text, text
    assert "apt-get install bubblewrap" in text and "--no-sandbox" in text and "runs as you" in text


@pytest.mark.parametrize("value", ["lots", "0", "-5"])
def test_a_tmp_size_that_is_not_a_number_of_mib_is_a_message(tmp_path, capsys, monkeypatch, value):
    monkeypatch.setenv(sandbox.TMP_ENV, value)
    monkeypatch.setattr(sandbox, "probe", lambda: sandbox.Probe(True, "test"))
    code, text = run(capsys, "check", "day01", "--solution", "--sandbox")
    assert code == 2 and f"${sandbox.TMP_ENV} is the size of a sandbox's /tmp in MiB" in text, text


def test_sandbox_and_no_sandbox_together_are_refused(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["check", "day01", "--sandbox", "--no-sandbox"])
    assert e.value.code == 2 and "not allowed with argument" in capsys.readouterr().err


def test_doctor_reports_the_sandbox(capsys, monkeypatch, no_sandbox_here):
    from grader.doctor import sandbox_check

    c = sandbox_check(gpu=False)
    assert c.name == "sandbox" and c.ok is None and "apt-get install bubblewrap" in c.detail
    assert "--no-sandbox" in c.detail


@works
def test_a_ranked_check_runs_its_workers_in_the_sandbox_by_default(tmp_path, monkeypatch, capsys):
    """`check --ranked` with the scripted worker (tests/fake_worker.py): each run's worker is the second process
    of a pid namespace of its own (the sandbox's init is the first), and no job file, which names the run's seed,
    is left in the sandbox's jobs folder."""
    import os
    import shutil

    from grader.paths import Paths
    from tests.test_cli import COURSE, SECRET

    (tmp_path / "course.yaml").write_text(COURSE)
    shutil.copytree(ROOT / "solutions" / "day01", tmp_path / "solutions" / "day01")
    monkeypatch.setattr(shared, "WORKER", "tests.fake_worker")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("FAKE_WORKER", "ok")
    monkeypatch.setenv("GRADER_RANKED_SEED", SECRET)
    monkeypatch.delenv("GRADER_RANKED_SEED_FILE", raising=False)
    out = tmp_path / "r.json"
    code = cli.main(["--course", str(tmp_path / "course.yaml"), "check", "day01", "--solution", "--ranked",
                     "--json", str(out)])
    assert code == 0, capsys.readouterr().out
    (ex,) = json.loads(out.read_text())["exercises"]
    assert ex["status"] == "pass" and ex["info"]["pid"] == 2
    box = CheckSandbox(tmp_path, Paths(tmp_path).variant(tmp_path / "solutions" / "day01"))
    assert list(box.jobs.iterdir()) == []


def _subs(tmp_path, **files) -> Path:
    root = tmp_path / "subs"
    for name, text in files.items():
        d = root / name / "day01"
        d.mkdir(parents=True)
        (d / "softmax.cu").write_text(text)
        (d / "bindings.cpp").write_text((ROOT / "days" / "day01" / "bindings.cpp").read_text())
    return root


def test_grade_sandboxes_each_grading_unless_told_not_to(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(grade_task, "COMMAND", (sys.executable, "-m", "tests.fake_check"))
    monkeypatch.setattr(sandbox, "probe", lambda: sandbox.Probe(True, "test"))
    subs, out = _subs(tmp_path, ada="// a submission\n"), tmp_path / "out"
    code, text = run(capsys, "grade", subs, "--days", "day01", "--out", out)
    assert code == 0, text
    assert (out / "ada" / "day01.log").read_text().splitlines()[0].endswith(" --sandbox")
    code, text = run(capsys, "grade", subs, "--days", "day01", "--out", out, "--regrade", "--no-sandbox")
    assert code == 0 and "--no-sandbox: the submission's code then runs as you" in text, text
    assert (out / "ada" / "day01.log").read_text().splitlines()[0].endswith(" --no-sandbox")


def test_grade_where_the_sandbox_cannot_work_grades_nothing(tmp_path, capsys, monkeypatch, no_sandbox_here):
    monkeypatch.setattr(grade_task, "COMMAND", (sys.executable, "-m", "tests.fake_check"))
    subs, out = _subs(tmp_path, ada="// a submission\n"), tmp_path / "out"
    code, text = run(capsys, "grade", subs, "--days", "day01", "--out", out)
    assert code == 2 and "does not work here" in text and "--no-sandbox" in text, text
    assert not (out / "ada").exists()


# -- hostile submissions at compile time: what nvcc reads is what the sandbox holds -------------------------------
@works
@needs_nvcc
def test_an_include_of_the_solution_or_the_secret_finds_nothing_in_the_sandbox(tmp_path, capsys, monkeypatch):
    """Without a GPU the grader compiles a submission's sources with nvcc and the host compiler: an `#include` of
    any file on the machine is the submission's way to read it then. `copycat` includes the instructor's solution
    as its own kernel; `peeker` includes the ranked secret, which the compiler's error then quotes. In the
    sandbox (the default of `grader grade`) both are build errors that say the file is not there, and the
    secret is nowhere in the results; without it, the solution compiles as the submission's and the secret is in
    its result (what the sandbox is for)."""
    secret = "leaked_" + uuid.uuid4().hex
    seed = tmp_path / "secret" / "seed"
    seed.parent.mkdir()
    seed.write_text(secret)
    monkeypatch.delenv("GRADER_RANKED_SEED", raising=False)
    monkeypatch.setenv("GRADER_RANKED_SEED_FILE", str(seed))
    stub = (ROOT / "days" / "day01" / "softmax.cu").read_text()
    subs = _subs(tmp_path, copycat=f'#include "{ROOT / "solutions" / "day01" / "softmax.cu"}"\n',
                 peeker=stub + f'\nstatic const int leak =\n#include "{seed}"\n;\n')
    out = tmp_path / "out"

    def graded(*extra):
        code, text = run(capsys, "grade", subs, "--days", "day01", "--out", out, "--ranked", "--regrade", *extra)
        assert secret not in text
        return {n: json.loads((out / n / "day01.json").read_text()) for n in ("copycat", "peeker")}

    boxed = graded()
    for name in ("copycat", "peeker"):
        ex = boxed[name]["exercises"][0]
        assert ex["status"] == "build_error", (name, ex["message"])
        said = " ".join(d for c in ex["compile"] for d in c["diagnostics"])
        assert "No such file or directory" in said or "cannot open source file" in said, said
    assert secret not in json.dumps(boxed)

    open_ = graded("--no-sandbox")
    copied = open_["copycat"]["exercises"][0]
    assert copied["status"] == "no_gpu"  # the instructor's kernel, compiled as the submission's
    assert "softmax_naive_kernel" in json.dumps(copied["compile"])
    assert secret in json.dumps(open_["peeker"])


def test_pythonpath_folders_are_readable_inside_even_under_tmp(tmp_path, monkeypatch):
    """Packages installed with `pip --target` under /tmp and put on $PYTHONPATH (as on a machine where the
    grader's dependencies were carried in) must be importable by the sandboxed worker: the private /tmp would
    otherwise hide them (seen on the H100: "No module named 'pydantic'")."""
    from grader import sandbox

    site_dir = tmp_path / "site"
    site_dir.mkdir()
    monkeypatch.setenv("PYTHONPATH", f"{site_dir}{os.pathsep}relative{os.pathsep}/")
    paths = sandbox.pythonpath_paths()
    assert site_dir in paths and Path("relative") not in paths and Path("/") not in paths
