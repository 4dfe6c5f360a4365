"""--timings / GRADER_TIMINGS: a check's steps with timestamps on stderr, nothing on stdout."""
import re

from grader import cli, timings
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
