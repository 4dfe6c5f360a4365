"""--timings / GRADER_TIMINGS: a check's steps with timestamps on stderr, nothing on stdout."""
import re

from grader import cli, timings
from grader.paths import Paths
from tests.test_cli import fake_course, grade, no_secret  # noqa: F401 -- fixtures


def test_timings_mark_each_step_on_stderr(fake_course, monkeypatch, capsys):  # noqa: F811
    monkeypatch.setenv(timings.ENV, "")  # restored after the test: --timings sets it for the worker
    assert grade(fake_course, "--timings") == 0
    out, err = capsys.readouterr()
    assert "[timings]" not in out
    steps = [m.group(2) for m in re.finditer(r"^\[timings\]\s+(\d+\.\d+) s  (.*)$", err, re.M)]
    for want in ("course loaded", "softmax: job planned (3 cases)", "worker info", "worker case_start 0",
                 "worker done", "softmax: verdict printed", "results written"):
        assert any(s.startswith(want) for s in steps), (want, err)
    stamps = [float(m) for m in re.findall(r"^\[timings\]\s+(\d+\.\d+) s", err, re.M)]
    assert stamps == sorted(stamps)


def test_no_timings_unless_asked(fake_course, monkeypatch, capsys):  # noqa: F811
    monkeypatch.delenv(timings.ENV, raising=False)
    assert cli.main(["--course", str(fake_course / "course.yaml"), "check", "day01", "--solution"]) == 0
    assert "[timings]" not in capsys.readouterr().err


def test_the_first_worker_starts_before_the_job_is_planned(fake_course, monkeypatch, capsys, tmp_path):  # noqa: F811
    """Importing torch in the worker overlaps the parent's planning; every later run still gets a fresh process."""
    monkeypatch.setenv(timings.ENV, "")
    starts = tmp_path / "starts.txt"
    monkeypatch.setenv("FAKE_WORKER_STARTS", str(starts))
    monkeypatch.setenv("GRADER_RANKED_SEED", "leaderboard-secret-0123456789abcdef")
    # two runs, on independent inputs; outside the sandbox, where the scripted worker can note its starts
    assert grade(fake_course, "--timings", "--ranked", "--no-sandbox") == 0
    steps = [m.group(1) for m in re.finditer(r"^\[timings\]\s+\d+\.\d+ s  (.*)$", capsys.readouterr().err, re.M)]
    assert steps.index("worker started early") < next(i for i, s in enumerate(steps) if "job planned" in s)
    procs = [line.split() for line in starts.read_text().splitlines()]
    assert [how for _, how in procs] == ["serve", "job"] and procs[0][0] != procs[1][0], procs
    assert (Paths(fake_course).logs() / "day01-softmax-solution.log").is_file()  # the exercise's log, as before


def test_a_day_of_two_exercises_runs_each_in_a_process_of_its_own(fake_course, monkeypatch, capsys, tmp_path):  # noqa: F811
    text = (fake_course / "course.yaml").read_text()
    first = text[text.index("      - name: softmax"):]
    (fake_course / "course.yaml").write_text(text + first.replace("name: softmax", "name: softmax_again"))
    starts = tmp_path / "starts.txt"
    monkeypatch.setenv("FAKE_WORKER_STARTS", str(starts))
    assert grade(fake_course) == 0
    out = capsys.readouterr().out
    assert "softmax_again" in out and "internal error" not in out
    procs = [line.split() for line in starts.read_text().splitlines()]
    assert [how for _, how in procs] == ["serve", "job"] and procs[0][0] != procs[1][0], procs
