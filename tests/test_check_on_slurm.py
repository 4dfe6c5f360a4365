"""`grader check dayNN --on slurm`: its settings (the course's slurm.yaml, then the student's file), what it sends
(job_sources.py), how it names the job's paths and reads Slurm's reasons; then, on a real single-node Slurm (the
session's, tests/slurm_cluster.py), the same verdict, JSON and exit code as a local check, and every way a job can
end without a result: held, cancelled from outside, requeued, past its time, and Ctrl-C, which cancels it and leaves
nothing running however the check was started. Each test looks only at its own job and processes."""
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from grader import cli
from grader.check import job_sources, on_slurm, slurm_settings
from grader.check.compile_check import MAX_SOURCE_BYTES
from grader.errors import GraderError
from tests.conftest import ROOT, needs_nvcc
from tests.processes import STARTED, lines_of, started, wait_for
from tests.slurm_cluster import SLURM_CMD_S, alarm, config_seconds, in_queue, slurm_env


@pytest.fixture
def cluster(slurm_cluster):
    """The session's single-node Slurm (tests/conftest.py)."""
    return slurm_cluster


@pytest.fixture(autouse=True)
def time_limit():
    yield from alarm()


# -- settings -----------------------------------------------------------------------------------------------------
@pytest.fixture
def course(tmp_path) -> Path:
    (tmp_path / "course").mkdir()
    path = tmp_path / "course" / "course.yaml"
    path.write_text("# stands for the course: the settings only need it to exist\n")
    return path


def test_the_students_file_replaces_the_courses_keys_one_by_one(course, tmp_path):
    (course.parent / "slurm.yaml").write_text("partition: gpu\ngpus_per_task: 1\ntimeout_min: 20\n"
                                              "setup: [module load cuda/13.0]\ncourse: ./course.yaml\n")
    mine = tmp_path / "mine.yaml"
    mine.write_text("partition: debug\naccount: cs101\nfolder: jobs\n")
    s = slurm_settings.load(course, str(mine))
    c = s.config
    assert (c.partition, c.account, c.gpus_per_task, c.timeout_min, c.setup) == \
           ("debug", "cs101", 1, 20, ["module load cuda/13.0"])
    assert s.files == [course.parent / "slurm.yaml", mine]
    assert s.course_file == course and s.folder == tmp_path / "jobs"  # relative to the file that says it
    assert s.describe() == ("partition debug, 1 GPU, 4 CPUs, 20 min, account cs101, setup: module load cuda/13.0")


def test_without_any_file_a_job_asks_for_the_defaults(course, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "nothing"))
    s = slurm_settings.load(course)
    assert s.files == [] and s.course_file == course and s.python == sys.executable
    assert s.describe() == "partition (the default), 1 GPU, 4 CPUs, 30 min"


def test_the_students_own_file_is_read_from_the_config_folder(course, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    (tmp_path / "cfg" / "grader").mkdir(parents=True)
    (tmp_path / "cfg" / "grader" / "slurm.yaml").write_text("qos: short\n")
    s = slurm_settings.load(course)
    assert s.config.qos == "short" and s.files == [tmp_path / "cfg" / "grader" / "slurm.yaml"]


@pytest.mark.parametrize("text, said", [
    ("partiton: gpu\n", "unknown key 'partiton' (did you mean 'partition'?)"),
    ("gpus_per_task: -1\n", "gpus_per_task: Input should be greater than or equal to 0"),
    ("setup: module load cuda\n", "setup: Input should be a valid list"),
    ("- partition\n", "should be a mapping of settings"),
    ("partition: [\n", "is not valid YAML"),
])
def test_a_bad_file_is_named_with_what_is_wrong(course, tmp_path, text, said):
    mine = tmp_path / "mine.yaml"
    mine.write_text(text)
    with pytest.raises(GraderError) as e:
        slurm_settings.load(course, str(mine))
    assert said in str(e.value) and str(mine) in str(e.value)
    (course.parent / "slurm.yaml").write_text(text)  # the course's own file: named as the course's
    with pytest.raises(GraderError, match="the course's Slurm settings") as e:
        slurm_settings.load(course)
    assert said in str(e.value)


def test_a_student_cannot_move_the_job_to_another_install(course, tmp_path):
    """Where the job's grader and course come from is the course's to say: the thresholds are the install's."""
    (course.parent / "slurm.yaml").write_text(f"course: {course}\npython: {sys.executable}\n")
    other = tmp_path / "my-course.yaml"
    other.write_text("")
    mine = tmp_path / "mine.yaml"
    for key, value in (("course", other), ("python", "/usr/bin/env")):
        mine.write_text(f"{key}: {value}\n")
        with pytest.raises(GraderError, match=f"`{key}` is set by the course"):
            slurm_settings.load(course, str(mine))
    mine.write_text(f"course: {course}\npartition: x\n")  # the same value is no change
    assert slurm_settings.load(course, str(mine)).config.partition == "x"


def test_an_install_that_is_not_there_is_said_before_submitting(course, tmp_path):
    mine = tmp_path / "mine.yaml"
    mine.write_text("course: /nonexistent/course.yaml\n")
    with pytest.raises(GraderError, match="names no file here"):
        slurm_settings.load(course, str(mine))
    mine.write_text(f"python: {tmp_path}\n")
    with pytest.raises(GraderError, match="is not an executable here"):
        slurm_settings.load(course, str(mine))


def test_the_course_ships_a_valid_slurm_yaml(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "none"))  # no student's file of this machine's
    s = slurm_settings.load(ROOT / "course.yaml")
    assert s.files[0] == ROOT / "slurm.yaml" and s.config.gpus_per_task == 1


# -- what is sent ---------------------------------------------------------------------------------------------------
def _exercise(**kw):
    return SimpleNamespace(sources=["k.cu", "bindings.cpp"], uses=[], **kw)


def test_only_the_sources_and_headers_a_build_reads_are_sent(tmp_path):
    days = tmp_path / "days"
    (days / "day05").mkdir(parents=True)
    (days / "day03").mkdir()
    for name in ("k.cu", "bindings.cpp", "util.cuh", "README.md", "notes.txt"):
        (days / "day05" / name).write_text(f"// {name}\n")
    (days / "day03" / "softmax.cu").write_text("// day 3\n")
    (days / "day03" / "helper.h").write_text("// day 3's header\n")
    (days / "day03" / "big.bin").write_bytes(b"\0" * 10)
    ex = SimpleNamespace(sources=["k.cu", "bindings.cpp"], uses=["day03/softmax.cu"])
    job = tmp_path / "job" / "days"
    folders = job_sources.send("day05", [ex], days / "day05", job, tmp_path)
    sent = sorted(str(p.relative_to(job)) for p in job.rglob("*") if p.is_file())
    assert sent == ["day03/helper.h", "day03/softmax.cu", "day05/bindings.cpp", "day05/k.cu", "day05/util.cuh"]
    assert folders == {job / "day05": days / "day05", job / "day03": days / "day03"}
    assert (job / "day05" / "k.cu").read_text() == "// k.cu\n"


def test_a_folder_named_otherwise_is_sent_as_the_day(tmp_path):
    (tmp_path / "mine").mkdir()
    for name in ("k.cu", "bindings.cpp"):
        (tmp_path / "mine" / name).write_text("//\n")
    job = tmp_path / "job"
    folders = job_sources.send("day05", [_exercise()], tmp_path / "mine", job, tmp_path)
    assert folders == {job / "day05": tmp_path / "mine"}
    assert (job / "day05" / "k.cu").is_file()


@pytest.mark.parametrize("make, said", [
    (lambda d: (d / "k.cu").symlink_to(d / "other.cu"), "k.cu is a symbolic link"),
    (lambda d: (d / "util.cuh").symlink_to("/etc/hostname"), "util.cuh is a symbolic link"),
    (lambda d: os.mkfifo(d / "k.cu"), "k.cu is not a regular file"),
    (lambda d: (d / "k.cu").write_bytes(b"x" * (MAX_SOURCE_BYTES + 1)), "k.cu is over 2 MiB"),
])
def test_links_special_and_oversized_files_are_refused_by_name(tmp_path, make, said):
    src = tmp_path / "day05"
    src.mkdir()
    for name in ("other.cu", "bindings.cpp"):
        (src / name).write_text("//\n")
    make(src)
    with pytest.raises(GraderError, match=re.escape(said)) as e:
        job_sources.send("day05", [_exercise()], src, tmp_path / "job", tmp_path)
    assert "nothing was sent" in str(e.value)
    assert not (tmp_path / "job").exists()  # refused before anything is written


def test_a_linked_day_folder_is_refused(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    for name in ("k.cu", "bindings.cpp"):
        (real / name).write_text("//\n")
    (tmp_path / "day05").symlink_to(real)
    with pytest.raises(GraderError, match="day05 is a symbolic link"):
        job_sources.send("day05", [_exercise()], tmp_path / "day05", tmp_path / "job", tmp_path)


# -- the job's paths, Slurm's reasons, the relayed output -----------------------------------------------------------
def test_the_jobs_paths_are_named_as_the_students_folders(tmp_path):
    root, install = tmp_path / "course", tmp_path / "install"
    job = install / ".grader" / "slurm" / "jobs" / "day01-x" / "days" / "day01"
    names = on_slurm.PathNames({job: root / "days" / "day01"}, root, install)
    rel = ".grader/slurm/jobs/day01-x/days/day01"
    assert names(f"{job}/softmax.cu:17: error: x") == "days/day01/softmax.cu:17: error: x"
    assert names(f"  {rel}/softmax.cu: compiles (nvcc)") == "  days/day01/softmax.cu: compiles (nvcc)"
    assert names(f"student ({job}) · seed 5") == f"student ({root / 'days' / 'day01'}) · seed 5"
    assert names(f"{job}1/x.cu") == f"{job}1/x.cu"  # another folder whose name starts the same
    assert names.doc({"a": [f"{job}/k.cu", 3, None]}) == {"a": ["days/day01/k.cu", 3, None]}


def _job_with_output(tmp_path, text):
    out = tmp_path / "out.log"
    out.write_text(text)
    return SimpleNamespace(paths=SimpleNamespace(stdout=out))


@pytest.mark.parametrize("text, state, said", [
    ("slurmstepd: error: *** JOB 12 ON n1 CANCELLED AT 2026-01-01T10:00:00 DUE TO TIME LIMIT ***\n", None,
     "ran past its time limit (timeout_min: 7)"),
    ("slurmstepd: error: *** JOB 12 ON n1 CANCELLED AT 2026-01-01T10:00:00 DUE TO PREEMPTION ***\n", None,
     "was preempted"),
    ("slurmstepd-n1: error: *** STEP 12.0 ON n1 CANCELLED AT 2026-01-01T10:00:00 ***\n", None, "was cancelled"),
    ("", "NODE_FAIL", "lost its node"),
    ("", "OUT_OF_MEMORY", "ran out of memory"),
    ("srun: error: execve(): /nope/python: No such file or directory\n", None,
     "left the queue without a result; its output ends: srun: error: execve(): /nope/python"),
    ("", None, "it wrote no output"),
])
def test_why_a_job_left_no_result_is_said_in_slurms_words(tmp_path, text, state, said):
    assert said in on_slurm.why_gone(_job_with_output(tmp_path, text), state, 7)


def test_the_checks_output_is_relayed_line_by_line(tmp_path):
    log, shown = tmp_path / "check.log", []
    relay = on_slurm.Relay(log, shown.append)
    relay.poll()  # not written yet
    log.write_text("$ python -m grader check day01\nseed 5\npart")
    relay.poll()
    assert shown == ["seed 5"]
    with open(log, "a") as f:
        f.write("ial line\nlast")
    relay.poll()
    relay.poll(final=True)
    assert shown == ["seed 5", "partial line", "last"]
    log.write_text("$ again\nfresh\n")  # written afresh: read from its start
    relay.poll()
    assert shown[-1] == "fresh"


# -- the command, without Slurm -------------------------------------------------------------------------------------
def test_without_slurms_commands_the_check_says_where_to_run_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))  # no sbatch here
    cfg = tmp_path / "mine.yaml"
    cfg.write_text("gpus_per_task: 0\n")
    assert cli.main(["--course", str(ROOT / "course.yaml"), "check", "day01", "--solution", "--on", "slurm",
                     "--slurm-config", str(cfg)]) == 2
    out = " ".join(capsys.readouterr().out.split())
    assert "not on PATH here: run it on a login node of the cluster" in out and "Traceback" not in out


def test_slurm_options_without_on_slurm_are_a_usage_error(tmp_path, capsys):
    assert cli.main(["--course", str(ROOT / "course.yaml"), "check", "day01", "--solution", "--slurm-config",
                     str(tmp_path / "x.yaml")]) == 2
    assert "add --on slurm" in capsys.readouterr().out


def test_a_bad_settings_file_is_said_before_anything_is_sent(tmp_path, capsys):
    cfg = tmp_path / "mine.yaml"
    cfg.write_text("gpu_per_task: 1\n")
    assert cli.main(["--course", str(ROOT / "course.yaml"), "check", "day01", "--solution", "--on", "slurm",
                     "--slurm-config", str(cfg)]) == 2
    out = " ".join(capsys.readouterr().out.split())
    assert "unknown key 'gpu_per_task' (did you mean 'gpus_per_task'?)" in out and "Traceback" not in out


def test_doctor_says_what_a_job_would_ask_for(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", os.pathsep.join([str(tmp_path), os.environ["PATH"]]))
    (tmp_path / "sinfo").write_text("#!/bin/sh\necho 'gpu*|up|4|gpu:h100:4'\necho 'cpu|up|8|(null)'\n")
    (tmp_path / "sinfo").chmod(0o755)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "none"))
    cli.main(["--course", str(ROOT / "course.yaml"), "doctor"])
    out = " ".join(capsys.readouterr().out.split())
    assert "slurm reachable; partitions: gpu (default): gpu:h100:4; cpu: no gres" in out, out
    assert "`grader check --on slurm` asks for partition (the default), 1 GPU, 4 CPUs, 30 min" in out
    assert str(ROOT / "slurm.yaml") in out and "offers no GPUs" not in out
    (tmp_path / "sinfo").write_text("#!/bin/sh\necho 'debug*|up|1|(null)'\n")
    cli.main(["--course", str(ROOT / "course.yaml"), "doctor"])
    assert "partition debug offers no GPUs" in " ".join(capsys.readouterr().out.split())


# -- on a real single-node Slurm ------------------------------------------------------------------------------------
COMPILE_ONLY = "gpus_per_task: 0\ncpus_per_task: 1\ntimeout_min: 5\npoll_s: 1\ngrace_s: 3\n"
FAKE = ("import sys; from grader.classroom import grade_task; grade_task.COMMAND = (sys.executable, '-m', "
        "'tests.fake_check'); from grader import cli; sys.exit(cli.main(sys.argv[1:]))")
RUN_S = 300  # one check through Slurm, start to verdict: 4-5 s with the fake check; 4 checks of day 1 took 22-54 s
# From the check's start to its job running the check on the node (the "fake check of" line): sbatch, Slurm's
# scheduling, the node's Python starting the task. It took 1.5-3.2 s here (the 2-core machine at a load of 6). A
# 20-fold margin.
JOB_RUNS_S = 20 * 3.2
# After Ctrl-C the grader sends scancel and waits up to on_slurm.CANCEL_WAIT_S to see the job leave the queue (it
# exited 1.3 s after SIGINT here); a margin of one more Slurm command.
CTRL_C_EXIT_S = on_slurm.CANCEL_WAIT_S + SLURM_CMD_S


def _env(cluster, tmp_path, **extra):
    return {**os.environ, "SLURM_CONF": str(cluster), "GRADER_STATE": str(tmp_path / "state"),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])), **extra}


def _config(tmp_path, text=COMPILE_ONLY):
    path = tmp_path / "slurm.yaml"
    path.write_text(text)
    return str(path)


def _comparable(doc):
    """A result without what differs between two runs of the same check: when it ran, where its worker log is, and
    the compilers' timings."""
    doc = json.loads(json.dumps(doc))
    doc.pop("when")
    for e in doc["exercises"]:
        e.pop("log")
        for r in e["compile"]:
            r["log"] = re.sub(r"(?m)^ptxas info\s*: Compile time = .*$", "", r["log"])
    return doc


def _left_running(folder: Path) -> list[str]:
    """Processes whose command line names folder (the job's srun, submitit and check)."""
    out = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and str(folder) in (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode():
                out.append(proc.name)
        except OSError:
            continue
    return out


@needs_nvcc
def test_a_compile_only_check_on_slurm_gives_the_local_verdict_json_and_exit_code(cluster, tmp_path):
    broken = tmp_path / "mine" / "day01"
    broken.parent.mkdir()
    subprocess.run(["cp", "-r", str(ROOT / "solutions" / "day01"), str(broken)], check=True)
    cu = broken / "softmax.cu"
    cu.write_text(cu.read_text().replace("{", "{ this is not C++;", 1))
    env = _env(cluster, tmp_path)
    for what, code in ((["--solution"], 2), (["--dir", str(broken)], 1)):
        docs, outs = [], []
        for where in ([], ["--on", "slurm", "--slurm-config", _config(tmp_path)]):
            out = tmp_path / f"{len(docs)}.json"
            r = subprocess.run([sys.executable, "-m", "grader", "check", "day01", *what, "--seed", "5", "--json",
                                str(out), *where], cwd=ROOT, env=env, capture_output=True, text=True, timeout=RUN_S)
            assert r.returncode == code and "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
            docs.append(json.loads(out.read_text()))
            outs.append(r.stdout)
        assert _comparable(docs[1]) == _comparable(docs[0])
        local, remote = outs
        # "queued as Slurm job N" is said only when a poll sees the job pending: one that starts before the first
        # poll (an idle cluster) is only submitted, then running
        assert "submitted Slurm job" in remote and re.search(r"running on \S+ \(no GPU asked for", remote), remote
        verdict = [ln for ln in local.splitlines() if ln.startswith(("COMPILED ONLY", "BUILD ERROR"))]
        assert verdict and all(ln in remote.splitlines() for ln in verdict), remote
        for line in local.splitlines():  # every line of the local check, its paths included, as it said it
            if "seed 5" in line or "softmax.cu" in line:
                assert line in remote.splitlines(), (line, remote)
    jobs = list((tmp_path / "state").glob("*/slurm/jobs/*"))
    assert jobs == []  # a job that left its result leaves no folder behind
    print(f"\n{remote}")


def _fake_check(cluster, tmp_path, config, mode="HANG", how="from a terminal"):
    """The check on Slurm, its grading on the node tests/fake_check.py (mode: what it does), started as a shell
    would start it (how: tests/processes.py)."""
    cmd = [sys.executable, "-c", FAKE, "check", "day01", "--solution", "--json", str(tmp_path / "r.json"),
           "--on", "slurm", "--slurm-config", _config(tmp_path, config)]
    return subprocess.Popen(cmd, cwd=ROOT, env=_env(cluster, tmp_path, FAKE_CHECK=mode), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True, preexec_fn=started(how))


@pytest.fixture
def fake_check(cluster, tmp_path):
    """start(config, mode, how): _fake_check on the session's cluster, with the process and its output lines
    (tests/processes.py). A check still running at the test's end is killed, and the Slurm job of every check it
    started is cancelled if still queued, so that a failed test leaves the shared cluster as it found it."""
    checks = []

    def start(config, mode="HANG", how="from a terminal"):
        proc = _fake_check(cluster, tmp_path, config, mode, how)
        checks.append((proc, lines_of(proc)))
        return checks[-1]

    yield start
    for proc, lines in checks:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        for job_id in re.findall(r"submitted Slurm job (\d+)", "".join(lines)):
            if in_queue(cluster, job_id):
                subprocess.run(["scancel", job_id], env=slurm_env(cluster), capture_output=True, timeout=SLURM_CMD_S)


def _job_id(lines, proc) -> str:
    """The Slurm job the check submitted, from its "submitted Slurm job N" line."""
    return re.search(r"Slurm job (\d+)", wait_for(lines, "submitted Slurm job", JOB_RUNS_S, proc))[1]


def _job_folder(tmp_path) -> Path:
    (job,) = (tmp_path / "state").glob("*/slurm/jobs/*")
    return job


def test_a_job_asks_for_a_gpu_and_says_which_it_got(fake_check, tmp_path):
    """The course's default, one GPU per job: scheduled on the node's gres/gpu (the cluster's stand-in GPU on a
    machine without one, so the check there finds none and says so)."""
    proc, lines = fake_check(COMPILE_ONLY.replace("gpus_per_task: 0", "gpus_per_task: 1"), mode="")
    assert proc.wait(timeout=RUN_S) == 2
    lines.reader.join(RUN_S)
    text = "".join(lines)
    assert "1 GPU, 1 CPU" in text and "Traceback" not in text, text
    gpus = [ln for ln in lines if ln.startswith("running on ")]
    assert gpus and (" with NVIDIA" in gpus[0] or "but no GPU is visible there" in gpus[0]), text
    assert [e["status"] for e in json.loads((tmp_path / "r.json").read_text())["exercises"]] == ["no_gpu"]


@pytest.mark.parametrize("how", STARTED)
def test_ctrl_c_cancels_the_job_and_leaves_nothing_running(cluster, fake_check, tmp_path, how):
    """Started from a terminal, or in the background of a script (SIGINT ignored from the start): SIGINT, as Ctrl-C
    or `kill -INT` sends it, cancels the job either way."""
    proc, lines = fake_check(COMPILE_ONLY, how=how)
    job_id = _job_id(lines, proc)
    wait_for(lines, "fake check of", JOB_RUNS_S, proc)  # the check runs on the node: its own line came back
    job = _job_folder(tmp_path)
    (pid, _), = (line.split() for line in (job / "days" / "day01" / "calls").read_text().splitlines())
    os.kill(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=CTRL_C_EXIT_S) == 130
    lines.reader.join(CTRL_C_EXIT_S)
    text = "".join(lines)
    assert f"cancelled Slurm job {job_id} (scancel): it has left the queue" in text and "Traceback" not in text, text
    assert not in_queue(cluster, job_id)
    # What the job ran ends with it: slurmstepd sends the step's processes SIGTERM, then SIGKILL KillWait seconds
    # later (the fake check ends at the SIGTERM, 0-1 s here).
    end = time.monotonic() + config_seconds(cluster, "KillWait") + SLURM_CMD_S
    while (Path(f"/proc/{pid}").exists() or _left_running(job)) and time.monotonic() < end:
        time.sleep(0.5)
    assert not Path(f"/proc/{pid}").exists() and _left_running(job) == []


def _env_error(tmp_path, proc, lines, code=2):
    assert proc.wait(timeout=RUN_S) == code
    lines.reader.join(RUN_S)
    text = "".join(lines)
    assert "Traceback" not in text, text
    doc = json.loads((tmp_path / "r.json").read_text())
    assert [e["status"] for e in doc["exercises"]] == ["env_error"], doc
    return text, doc["exercises"][0]["message"]


def test_a_job_that_cannot_start_gets_a_verdict_and_is_cancelled(cluster, fake_check, tmp_path):
    proc, lines = fake_check(COMPILE_ONLY + "sbatch: {hold: true}\n", mode="")
    job_id = _job_id(lines, proc)
    text, message = _env_error(tmp_path, proc, lines)
    assert "could not start: Slurm keeps it queued because it is held" in message, message
    assert "ENVIRONMENT ERROR" in text and not in_queue(cluster, job_id)


@pytest.mark.parametrize("how, said", [
    (["scancel"], "the job was cancelled (scancel, by you or an administrator)"),
    (["scontrol", "requeue"], "Slurm put the job back in the queue (preempted, or requeued by an administrator)"),
])
def test_a_job_ended_from_outside_gets_a_verdict_saying_how(cluster, fake_check, tmp_path, how, said):
    proc, lines = fake_check(COMPILE_ONLY)
    job_id = _job_id(lines, proc)
    wait_for(lines, "fake check of", JOB_RUNS_S, proc)
    subprocess.run([*how, job_id], env=slurm_env(cluster), check=True, timeout=SLURM_CMD_S)
    text, message = _env_error(tmp_path, proc, lines)
    assert said in message, message
    assert not in_queue(cluster, job_id)  # a requeued job is cancelled: it would run the check from scratch


def test_a_job_past_its_time_gets_a_verdict_not_a_hang(fake_check, tmp_path):
    """timeout_min: 1 is the least Slurm takes: the check on the node is stopped within the minute."""
    t0 = time.monotonic()
    proc, lines = fake_check(COMPILE_ONLY.replace("timeout_min: 5", "timeout_min: 1"))
    text, message = _env_error(tmp_path, proc, lines)
    # The node ends the check at 90% of the minute (it took 48-55 s in all here). The bound stays under the
    # grader's own fallback for a job past its time (timeout_min·60 + grace_s + 60 s after the job started), so a
    # verdict that came from that fallback instead fails.
    assert time.monotonic() - t0 < 2 * 60, text
    assert re.search(r"time limit \(timeout_min: 1\)", message) and "slurm.yaml" in message, message


def test_the_students_readme_explains_it_where_the_course_ships_its_settings():
    from grader.authoring import student_readme
    from grader.course import load_course

    course = load_course(ROOT / "course.yaml")
    with_slurm = student_readme.render(course, ["day01"], slurm=True)
    assert "grader check day01 --on slurm" in with_slurm and "`slurm.yaml`" in with_slurm
    assert "--on slurm" not in student_readme.render(course, ["day01"])
