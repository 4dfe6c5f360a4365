"""Hostile submissions on the CPU (tests/hostile.py), each checked by the real runner and worker twice: in the
sandbox (contained, with a verdict that names what was refused) and without it (the harm done: proof that the
attack really runs, so that the sandboxed half can fail).

The worker imports the submission's op on the CPU here (a job for device "cpu", as tests/test_protocol.py runs
one): a Python op module's top level runs at its import, and a C extension's init at its import, after ninja and
the compiler built it in the sandbox too. The course is a small one in a temporary folder; its solution, another
student's result, a server on the loopback, /tmp and a ranked secret kept outside the course are the targets."""
import json
import os
import signal
import socket
import threading
import time
import uuid
from pathlib import Path

import pytest

from grader import sandbox
from grader.check.job import make_job
from grader.check.runner import run_job
from grader.check.sandboxed import CheckSandbox
from grader.course import load_course
from grader.verdicts import Status
from tests import hostile

pytestmark = pytest.mark.skipif(not sandbox.probe().ok, reason=f"no sandbox here: {sandbox.probe().detail}")

TMP_BYTES = 16 << 20  # the sandbox's /tmp in these tests
FILL_MIB = 64  # what fills_tmp writes
SOLUTION_TEXT = "the instructor's answer"

TASK = '''
import torch


def make_inputs(shape, dtype, generator, device):
    return {"x": torch.randn(shape, generator=generator, device=device, dtype=torch.float32).to(dtype)}


def make_outputs(inputs):
    return {"out": torch.empty_like(inputs["x"])}


def reference(x):
    return {"out": x.double() * 2}
'''

EXERCISE = '''
      - name: {name}
        task: hostiletasks.scale
        op: scale
        signature: "scale(x, out) -> None"
        {build}
        sources: [{source}]
        args: [x, out]
        dtypes: [fp32]
        correctness: [[3, 5]]
        tolerances:
          fp32: {{atol: 1.0e-6, rtol: 1.0e-6, rel_l2: 1.0e-6}}
        points: 1
'''

COURSE = '''
title: Hostile submissions
repository: https://example.invalid/course
days:
  - id: day01
    title: Scale, in Python
    track: tools
    status: ready
    exercises:''' + EXERCISE.format(name="scale", build="build: python", source="scale.py") + '''
  - id: day02
    title: Scale, as a C extension
    track: tools
    status: ready
    exercises:''' + EXERCISE.format(name="scale", build="", source="scale.cpp") + '''
  - id: day03
    title: Scale, in Python, with a short time to import
    track: tools
    status: ready
    exercises:''' + EXERCISE.format(name="scale", build="build: python\n        limits: {build_s: 4}",
                                  source="scale.py")


@pytest.fixture
def course(tmp_path):
    """The course, a solution, another student's result and a secret seed kept outside the course."""
    root = tmp_path / "course"
    (root / "hostiletasks").mkdir(parents=True)
    (root / "hostiletasks" / "__init__.py").write_text("")
    (root / "hostiletasks" / "scale.py").write_text(TASK)
    (root / "course.yaml").write_text(COURSE)
    (root / "solutions" / "day01").mkdir(parents=True)
    (root / "solutions" / "day01" / "scale.py").write_text(f"# {SOLUTION_TEXT}\n" + hostile.OP_PY)
    other = tmp_path / "results" / "bob" / "day01.json"
    other.parent.mkdir(parents=True)
    other.write_text(json.dumps({"day": "day01", "exercises": [{"status": "pass"}]}))
    seed = tmp_path / "secret" / "seed"
    seed.parent.mkdir()
    seed.write_text("s3cr3t-" + uuid.uuid4().hex)
    return root, other, seed


def check(root: Path, language: str, text: str, sandboxed: bool):
    """The submission's op (day01 in Python, day02 as a C extension, day03 in Python given 4 s to import) checked,
    correctness only, in the sandbox or not; returns its result and the worker's log."""
    c = load_course(root / "course.yaml")
    day, source = {"python": ("day01", "scale.py"), "c": ("day02", "scale.cpp"),
                   "hung": ("day03", "scale.py")}[language]
    d = c.day(day)
    src = root.parent / "submissions" / "mallory" / day
    src.mkdir(parents=True, exist_ok=True)
    (src / source).write_text(text)
    job = make_job(course=c, root=root, day=d, ex=d.exercises[0], src_dir=src, seed=1, device="cpu",
                   correctness_only=True)
    box = CheckSandbox(root, "mallory", tmp_bytes=TMP_BYTES) if sandboxed else None
    res = run_job(job, variant="mallory", correctness_only=True, sandbox=box)
    return res, Path(res.log).read_text()


def attack(course, name: str, language: str, sandboxed: bool, **targets):
    root, other, seed = course
    targets = {"solution": root / "solutions" / "day01" / "scale.py", "other_result": other, "seed_file": seed,
               "port": 9, "marker": "-", "tmp_file": "-", "mib": FILL_MIB, **targets}
    if language in ("python", "hung"):
        text = hostile.python_source(name, **{k: str(v) for k, v in targets.items()})
        if language == "hung":  # its import never ends: the grading is cut short, its worker killed
            text = text.replace(hostile.OP_PY, "\nimport time\ntime.sleep(600)\n" + hostile.OP_PY)
        return check(root, language, text, sandboxed)
    return check(root, language, hostile.c_module(name, **targets), sandboxed)


def refused(res, words: str) -> str:
    """The verdict of a contained attack that raised: a build error whose diagnostic (what the report shows, at
    the submission's file) names what was refused. Returns it."""
    assert res.status == Status.BUILD_ERROR, (res.status, res.message)
    said = " ".join(d for b in res.builds for d in b.get("diagnostics") or [b.get("log", "")])
    assert words in said, said
    return said


BOTH = [pytest.param(lang, box, id=f"{lang}-{'sandbox' if box else 'open'}")
        for lang in ("python", "c") for box in (True, False)]


@pytest.mark.parametrize("language, sandboxed", BOTH)
def test_printing_a_solution_at_import(course, language, sandboxed):
    res, log = attack(course, "prints_solution", language, sandboxed)
    if sandboxed:
        refused(res, "No such file or directory")
        assert SOLUTION_TEXT not in log and SOLUTION_TEXT not in json.dumps(res.as_dict())
    else:
        assert res.status == Status.PASS and SOLUTION_TEXT in log


@pytest.mark.parametrize("language, sandboxed", BOTH)
def test_writing_another_students_result(course, language, sandboxed):
    _, other, _ = course
    before = other.read_text()
    res, _ = attack(course, "writes_other_result", language, sandboxed)
    if sandboxed:
        refused(res, "No such file or directory")  # the results folder is not in the sandbox at all
        assert other.read_text() == before
    else:
        assert res.status == Status.PASS and other.read_text() != before


@pytest.mark.parametrize("language, sandboxed", BOTH)
def test_opening_a_socket(course, language, sandboxed):
    got: list[bytes] = []
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                got.append(conn.recv(100))

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    port = server.getsockname()[1]
    try:
        res, _ = attack(course, "opens_socket", language, sandboxed, port=port)
    finally:
        stop.set()
        t.join(5)
        server.close()
    if sandboxed:
        refused(res, "Connection refused")  # its own loopback, where nothing listens
        assert got == []
    else:
        assert res.status == Status.PASS and set(got) == {b"sent from a submission"}  # once per import of it


def settled(marker: str, sandboxed: bool, wait_s: float = 5.0) -> list[int]:
    """The daemons named marker once things have settled: in a sandbox, until none is left (its end takes a moment);
    without one, until one shows (the grandchild takes that name only at its exec, which on a loaded machine may
    come after the grading has returned)."""
    deadline = time.monotonic() + wait_s
    while bool(hostile.processes_named(marker)) == sandboxed and time.monotonic() < deadline:
        time.sleep(0.1)
    return hostile.processes_named(marker)


@pytest.mark.parametrize("language, sandboxed", BOTH)
def test_a_daemon_outliving_its_grading(course, language, sandboxed):
    marker = f"grader-hostile-{uuid.uuid4().hex[:12]}"
    try:
        res, _ = attack(course, "forks_daemon", language, sandboxed, marker=marker)
        assert res.status == Status.PASS, res.message  # nothing it did failed: what is left behind is what counts
        left = settled(marker, sandboxed)
        assert (left == []) if sandboxed else len(left) >= 1, left  # one per import of the module
    finally:
        for pid in hostile.processes_named(marker):  # what this test's submission started, if anything
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("sandboxed", [True, False], ids=["sandbox", "open"])
def test_a_daemon_outliving_a_grading_cut_short(course, sandboxed):
    """The daemon again, from an import that then hangs: the worker is killed at the time limit (its process
    group; in the sandbox, its bwrap, whose end is the end of every process inside)."""
    marker = f"grader-hostile-{uuid.uuid4().hex[:12]}"
    try:
        res, _ = attack(course, "forks_daemon", "hung", sandboxed, marker=marker)
        assert res.status == Status.ENV_ERROR and "stopped responding" in res.message, res.message
        left = settled(marker, sandboxed)
        assert (left == []) if sandboxed else len(left) == 1, left
    finally:
        for pid in hostile.processes_named(marker):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("language, sandboxed", BOTH)
def test_filling_tmp(course, language, sandboxed):
    tmp_file = Path(f"/tmp/grader-hostile-{uuid.uuid4().hex}")
    try:
        res, _ = attack(course, "fills_tmp", language, sandboxed, tmp_file=tmp_file)
        if sandboxed:
            refused(res, "No space left on device")
            assert not tmp_file.exists()  # it wrote into a /tmp of its own, bounded, gone with the sandbox
        else:
            assert res.status == Status.PASS and tmp_file.stat().st_size == FILL_MIB << 20
    finally:
        tmp_file.unlink(missing_ok=True)


@pytest.mark.parametrize("language, sandboxed", BOTH)
def test_reading_the_ranked_seed(course, language, sandboxed, monkeypatch):
    _, _, seed = course
    monkeypatch.setenv("GRADER_RANKED_SEED_FILE", str(seed))
    res, log = attack(course, "reads_seed", language, sandboxed)
    secret = seed.read_text()
    if sandboxed:
        refused(res, "No such file or directory")
        assert secret not in log
    else:
        # Even without the sandbox the worker is not given the secret's variables (the seed it needs is in its
        # job): the file, where it is known, is what an open grading gives away.
        assert res.status == Status.PASS and f"SEED None {secret}" in log
