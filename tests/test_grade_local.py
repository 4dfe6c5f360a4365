"""`grader grade` with the local executor, no GPU and no compiler: each grading is tests/fake_check.py, scripted by
the files of the submission (see there). Resuming skips graded pairs; a crash or a hang is retried once, then
recorded as an error result, and graded again by the next run; bad input is a message and exit code 2."""
import json
import os
import sys

import pytest

from grader import cli, sandbox

from grader.classroom import grade_task
from tests.conftest import ROOT

COURSE = str(ROOT / "course.yaml")


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setattr(grade_task, "COMMAND", (sys.executable, "-m", "tests.fake_check"))
    # The scripted check runs no submission's code: the sandbox a grading asks for (tests/test_sandbox.py) is not
    # what these tests are about, and need not work on the machine that runs them.
    monkeypatch.setattr(sandbox, "probe", lambda: sandbox.Probe(True, "not needed by the scripted check"))


def grade(capsys, *args) -> tuple[int, str]:
    code = cli.main(["--course", COURSE, "grade", *map(str, args)])
    out = capsys.readouterr()
    text = out.out + out.err
    assert "Traceback" not in text and "internal error" not in text, text
    return code, text


def submissions(tmp_path, **subs) -> tuple:
    """A submissions folder: name -> the marker files of its day01 (a student repository layout for names that
    start with "repo", a copy of days/ otherwise)."""
    root = tmp_path / "subs"
    for name, markers in subs.items():
        d = root / name / ("days" if name.startswith("repo") else "") / "day01"
        d.mkdir(parents=True)
        for source in ("softmax.cu", "bindings.cpp"):  # day01's sources (course.yaml): all a submission has
            (d / source).write_text("// a submission\n")
        for m in markers:
            (d / m).write_text("")
    return root, tmp_path / "out"


def calls(subs, name) -> int:
    d = subs / name / ("days" if name.startswith("repo") else "") / "day01"
    return len((d / "calls").read_text().splitlines()) if (d / "calls").exists() else 0


def result(out, name, day="day01") -> dict:
    return json.loads((out / name / f"{day}.json").read_text())


def test_a_second_run_skips_what_is_graded(tmp_path, capsys, fake):
    subs, out = submissions(tmp_path, ada=[], repo_bo=[])
    code, text = grade(capsys, subs, "--days", "day01,day02", "--out", out, "--workers", "2")
    assert code == 0, text
    assert "2 to grade, 0 already graded, 2 without the day's folder" in text
    for name in ("ada", "repo_bo"):
        doc = result(out, name)
        assert doc["variant"] == doc["submission"] == name and doc["exercises"][0]["variant"] == name
        assert doc["exercises"][0]["status"] == "no_gpu" and doc["grade"]["attempt"] == 1
        assert calls(subs, name) == 1
        missing = result(out, name, "day02")  # no folder for day02: recorded, never silently absent
        assert [e["status"] for e in missing["exercises"]] == ["not_implemented"] and missing["grade"]["missing"]
    assert "days/day02/ folder" in result(out, "repo_bo", "day02")["exercises"][0]["message"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["ada"]["day01"]["cell"] == "COMPILED" and summary["ada"]["day02"]["cell"] == "MISSING"

    code, text = grade(capsys, subs, "--days", "day01", "--out", out)
    assert code == 0 and "0 to grade, 2 already graded" in text, text
    assert calls(subs, "ada") == calls(subs, "repo_bo") == 1

    # A result cut short (a crash while writing it) is no result: that pair alone is graded again.
    (out / "ada" / "day01.json").write_text('{"day": "day01", "exercises": [')
    code, text = grade(capsys, subs, "--days", "1", "--out", out)
    assert code == 0 and "1 to grade, 1 already graded" in text, text
    assert calls(subs, "ada") == 2 and calls(subs, "repo_bo") == 1

    code, text = grade(capsys, subs, "--days", "1", "--out", out, "--regrade")
    assert code == 0 and "2 to grade" in text and calls(subs, "ada") == 3


def test_a_crash_or_a_hang_is_retried_once_then_recorded_as_an_error(tmp_path, capsys, fake):
    subs, out = submissions(tmp_path, crashy=["CRASH"], flaky=["FLAKY"], hung=["HANG"], fine=[])
    code, text = grade(capsys, subs, "--days", "day01", "--out", out, "--timeout", "2", "--workers", "4")
    assert code == 1, text
    assert "3 grading(s) failed: trying each once more" in text
    assert "2 grading(s) failed twice" in text and "(1 on the second attempt)" in text
    assert calls(subs, "crashy") == calls(subs, "hung") == calls(subs, "flaky") == 2 and calls(subs, "fine") == 1

    crashed = result(out, "crashy")
    assert crashed["grade"]["error"] and crashed["grade"]["attempts"] == 2
    assert [e["status"] for e in crashed["exercises"]] == ["env_error"]
    assert "killed by signal 11" in crashed["exercises"][0]["message"]
    assert "about to crash" in crashed["grade"]["error"]  # the end of its output, quoted
    assert "did not finish in 2 s" in result(out, "hung")["grade"]["error"]
    for line in (subs / "hung" / "day01" / "calls").read_text().splitlines():
        with pytest.raises(ProcessLookupError):  # the hung check was killed, not left behind
            os.kill(int(line.split()[0]), 0)
    assert result(out, "flaky")["grade"]["attempt"] == 2
    assert result(out, "fine")["exercises"][0]["status"] == "no_gpu"
    assert "ERROR" in text and "crashy" in text

    # The next run grades the error records again, and only them.
    (subs / "crashy" / "day01" / "CRASH").unlink()
    (subs / "hung" / "day01" / "HANG").unlink()
    code, text = grade(capsys, subs, "--days", "day01", "--out", out)
    assert code == 0 and "2 to grade, 2 already graded" in text, text
    assert result(out, "crashy")["exercises"][0]["status"] == result(out, "hung")["exercises"][0]["status"] == "no_gpu"
    assert calls(subs, "fine") == calls(subs, "flaky") - 1 == 1


SLURM = ["--days", "1", "--executor", "slurm", "--slurm-config"]


@pytest.mark.parametrize("make, args, words", [
    (None, ["--days", "day01"], "does not exist"),
    ("empty", ["--days", "day01"], "no submissions in"),
    ("file", ["--days", "day01"], "is not a folder"),
    ("ok", ["--days", "day99"], "no day 'day99'"),
    ("ok", ["--days", "nonsense"], "no day 'nonsense'"),
    ("ok", ["--days", ","], "name at least one day"),
    ("ok", ["--days", "1", "--executor", "slurm", "--workers", "2"], "--workers and --timeout are the local"),
    ("ok", ["--days", "1", "--slurm-config", "x.yaml"], "--slurm-config configures --executor slurm"),
    ("ok", [*SLURM, "nowhere.yaml"], "nowhere.yaml does not exist"),
    ("ok", [*SLURM, "CONFIG:timeout_min: soon"], "timeout_min: Input should be a valid integer"),
    ("ok", [*SLURM, "CONFIG:gpus: 1"], "gpus: Extra inputs are not permitted"),
    ("ok", [*SLURM, "CONFIG:[1, 2]"], "should be a mapping"),
    ("ok", ["--days", "1", "--ranked"], "--ranked needs a secret seed"),
])
def test_bad_input_is_a_message_and_exit_2(tmp_path, capsys, monkeypatch, fake, make, args, words):
    monkeypatch.delenv("GRADER_RANKED_SEED", raising=False)
    monkeypatch.delenv("GRADER_RANKED_SEED_FILE", raising=False)
    subs = tmp_path / "subs"
    if make == "empty":
        (subs / ".hidden").mkdir(parents=True)
    elif make == "file":
        subs.write_text("")
    elif make == "ok":
        (subs / "ada" / "day01").mkdir(parents=True)
    config = tmp_path / "slurm.yaml"
    for a in args:
        if a.startswith("CONFIG:"):
            config.write_text(a.removeprefix("CONFIG:") + "\n")
    args = [str(config) if a.startswith("CONFIG:") else a for a in args]
    code, text = grade(capsys, subs, *args, "--out", tmp_path / "out")
    assert code == 2 and "error:" in text and words in text, text
    assert not (tmp_path / "out" / "ada").exists()  # nothing graded


def test_results_cannot_go_inside_the_submissions(tmp_path, capsys, fake):
    subs, _ = submissions(tmp_path, ada=[])
    code, text = grade(capsys, subs, "--days", "1", "--out", subs / "results")
    assert code == 2 and "inside the submissions folder" in text, text


def test_links_out_of_a_submission_are_refused_and_nothing_outside_it_is_read(tmp_path, capsys, fake):
    """A submission is graded from its own regular files: a link to a system file, a link to the instructor's
    solution, or a day folder that is a link to solutions/ makes the pair a build error naming the link, and no
    text from outside the submission reaches the result."""
    subs, out = submissions(tmp_path, ada=[], repo_bo=[], cy=[], dee=[])
    (subs / "ada" / "day01" / "bindings.cpp").unlink()
    (subs / "ada" / "day01" / "bindings.cpp").symlink_to("/etc/passwd")
    (subs / "repo_bo" / "days" / "day01" / "softmax.cu").unlink()
    (subs / "repo_bo" / "days" / "day01" / "softmax.cu").symlink_to(ROOT / "solutions" / "day01" / "softmax.cu")
    import shutil

    shutil.rmtree(subs / "cy" / "day01")
    (subs / "cy" / "day01").symlink_to(ROOT / "solutions" / "day01", target_is_directory=True)
    os.mkfifo(subs / "dee" / "day01" / "pipe")
    code, text = grade(capsys, subs, "--days", "day01", "--out", out)
    assert "4 refused: a link or a special file" in " ".join(text.split()), text
    why = {"ada": "day01/bindings.cpp is a symbolic link", "repo_bo": "days/day01/softmax.cu is a symbolic link",
           "cy": "day01 is a symbolic link", "dee": "day01/pipe is not a regular file"}
    for name, words in why.items():
        doc = result(out, name)
        assert doc["exercises"][0]["status"] == "build_error" and words in doc["exercises"][0]["message"], doc
        raw = (out / name / "day01.json").read_text()
        assert "root:x:" not in raw and "BEGIN SOLUTION" not in raw and calls(subs, name) == 0
    assert "BUILD ERROR" in text


def test_a_check_stopped_by_the_jobs_time_limit_warning_says_so(tmp_path):
    """On a loaded Slurm node the job's warning signal (SIGUSR2, asked for a little before the limit) can reach the
    check before the grading's own 90% limit: the failure then names the time limit, not a bare signal number."""
    import signal

    kill_self = f"import os, signal; os.kill(os.getpid(), {int(signal.SIGUSR2)})"
    task = grade_task.Task(submission="alice", day="day01", src_dir=str(tmp_path), result=str(tmp_path / "r.json"),
                           log=str(tmp_path / "check.log"), course=str(ROOT / "course.yaml"), timeout_s=60,
                           command=(sys.executable, "-c", kill_self))
    with pytest.raises(grade_task.GradingFailed) as e:
        grade_task.grade(task)
    assert str(e.value).startswith("did not finish before the job's time-limit warning (SIGUSR2")


def test_a_day_folder_without_a_source_the_course_gives_is_a_build_error_not_a_retried_one(tmp_path, capsys, fake):
    """A source deleted from the day's folder is the submission's doing: recorded once as a build error naming the
    file, never run, never retried as a grading failure."""
    subs, out = submissions(tmp_path, ada=[], repo_bo=[], repo_cy=[])
    (subs / "ada" / "day01" / "bindings.cpp").unlink()
    (subs / "repo_bo" / "days" / "day01" / "softmax.cu").unlink()
    code, text = grade(capsys, subs, "--days", "day01", "--out", out)
    assert code == 0 and "1 to grade" in text and "2 lacking a file the course gives" in " ".join(text.split()), text
    for name, lacks, shown in (("ada", "day01/bindings.cpp", "day01/bindings.cpp"),
                               ("repo_bo", "day01/softmax.cu", "days/day01/softmax.cu")):
        doc = result(out, name)
        assert doc["exercises"][0]["status"] == "build_error" and doc["grade"]["lacks"] == [lacks], doc
        assert f"lacks {shown}, which the course gives" in doc["exercises"][0]["message"] and calls(subs, name) == 0
    assert result(out, "repo_cy")["exercises"][0]["status"] == "no_gpu" and calls(subs, "repo_cy") == 1
