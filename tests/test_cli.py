"""The CLI as a student meets it on a machine without a GPU: clear messages, exit codes, no tracebacks; and ranked
runs (`grader check --ranked`) with the scripted fake worker."""
import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from grader import cli, results
from grader.commands import shared
from grader.check import ranked as ranked_runs
from grader.paths import Paths
from tests.conftest import ROOT, has_gpu, needs_nvcc, run_grader


def assert_clean(r):
    assert "Traceback" not in r.stdout + r.stderr


@pytest.mark.parametrize("args, code, text", [
    (["check", "day42"], 2, "no day 'day42'"),
    (["check", "day01", "--dir", "/nonexistent/folder"], 2, "does not exist"),
    (["check", "day01", "--dir", "course.yaml"], 2, "course.yaml is a file, not a folder"),
    (["check", "day01", "--solution", "--dir", "."], 2, "either --solution or --dir"),
    (["check", "day03", "--exercise", "nope"], 2, "has no exercise 'nope'"),
    (["check", "day03", "--dtype", "fp8"], 2, "unknown dtype"),
])
def test_usage_errors(args, code, text):
    r = run_grader(*args)
    assert r.returncode == code and text in r.stdout, r.stdout + r.stderr
    assert_clean(r)


def test_a_planned_day_is_not_checked(planned_course):
    r = run_grader("--course", str(planned_course), "check", "day21")
    assert r.returncode == 2 and "planned, not ready yet" in r.stdout, r.stdout + r.stderr
    assert_clean(r)


def test_bad_arguments_exit_2():
    r = run_grader("frobnicate")
    assert r.returncode == 2


def test_malformed_course_file(tmp_path):
    (tmp_path / "course.yaml").write_text("title: x\nrepository: y\ndays:\n  - id: day1\n")
    r = run_grader("list", cwd=tmp_path)
    assert r.returncode == 2 and "does not match the course schema" in r.stdout
    assert "days[0] (day1).id: day id must look like day01" in r.stdout
    assert_clean(r)


def test_outside_a_course(tmp_path):
    r = run_grader("list", cwd=tmp_path)
    assert r.returncode == 2 and "course.yaml not found" in r.stdout


def test_a_day_whose_only_exercise_lacks_a_file_fails_it_as_a_build_error_naming_the_file(tmp_path):
    """README: a missing source fails its exercise, as a build error (exit 1), even when it is the day's only one;
    the way back names the file itself."""
    (tmp_path / "softmax.cu").write_text("// nothing\n")
    out = tmp_path / "r.json"
    r = run_grader("check", "day01", "--dir", str(tmp_path), "--json", str(out))
    assert_clean(r)
    text = " ".join(r.stdout.split())
    assert r.returncode == 1 and "lacks bindings.cpp" in text, text
    assert f"`git checkout -- {tmp_path / 'bindings.cpp'}`" in text and "grader release day01" in text, text
    assert "FILE" not in text
    (ex,) = json.loads(out.read_text())["exercises"]
    assert ex["status"] == "build_error" and "bindings.cpp is missing" in ex["message"]


def test_a_folder_without_any_of_the_days_sources_is_a_usage_error(tmp_path):
    (tmp_path / "notes.txt").write_text("not a day\n")
    r = run_grader("check", "day01", "--dir", str(tmp_path))
    assert r.returncode == 2 and "holds none of day01's sources (softmax.cu, bindings.cpp)" in r.stdout, r.stdout
    assert_clean(r)


@needs_nvcc
@pytest.mark.skipif(has_gpu(), reason="exercises the no-GPU path (on a GPU every route would be run)")
def test_a_route_whose_file_is_missing_fails_alone_and_the_others_are_checked(tmp_path):
    day = tmp_path / "day13"
    shutil.copytree(ROOT / "days" / "day13", day)
    (day / "softmax_mojo.mojo").unlink()
    out = tmp_path / "r.json"
    r = run_grader("check", "day13", "--dir", str(day), "--json", str(out))
    assert_clean(r)
    status = {e["exercise"]: e for e in json.loads(out.read_text())["exercises"]}
    assert r.returncode == 1 and "day13.softmax_mojo: " in r.stdout and "lacks softmax_mojo.mojo" in r.stdout
    assert status["softmax_mojo"]["status"] == "build_error"
    assert "softmax_mojo.mojo is missing" in status["softmax_mojo"]["message"]
    assert "compiler error" not in r.stdout  # no hint about compiler output for a file that is not there
    assert {n for n, e in status.items() if e["status"] == "no_gpu"} == {"softmax_cupy", "softmax_numba",
                                                                         "softmax_triton", "softmax_cute"}
    # the exercise named alone fails the same way, with how to restore its file
    r = run_grader("check", "day13", "--dir", str(day), "--exercise", "softmax_mojo")
    text = " ".join(r.stdout.split())
    assert r.returncode == 1 and "softmax_mojo.mojo is missing" in text, text
    assert f"git checkout -- {day / 'softmax_mojo.mojo'}" in text and "other exercises" not in text, text


def test_list_shows_every_day():
    r = run_grader("list")
    assert r.returncode == 0 and "day20" in r.stdout and "mandatory" in r.stdout


@needs_nvcc
@pytest.mark.skipif(has_gpu(), reason="exercises the no-GPU path")
def test_check_without_gpu_compiles_and_says_so(tmp_path):
    out = tmp_path / "r.json"
    r = run_grader("check", "day02", "--solution", "--json", str(out))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "COMPILED ONLY" in r.stdout and "correctness and speed" in r.stdout and "registers" in r.stdout
    data = json.loads(out.read_text())
    ex = data["exercises"][0]
    assert ex["status"] == "no_gpu"
    kernels = [k for c in ex["compile"] for k in c["kernels"]]
    assert {k["arch"] for k in kernels} == {"sm_80", "sm_90"}
    assert "still stands at" not in r.stdout  # a finished solution: nothing left to write
    assert_clean(r)


@needs_nvcc
@pytest.mark.skipif(has_gpu(), reason="exercises the no-GPU path")
def test_a_stub_left_as_released_says_so_without_a_gpu_too():
    """A stub compiles as finished code does, so compile-only alone would look the same for both: the verdict says
    where the stub's placeholder still stands (a GPU says NOT IMPLEMENTED there)."""
    r = run_grader("check", "day01")
    assert r.returncode == 2, r.stdout + r.stderr
    text = " ".join(r.stdout.split())
    assert "COMPILED ONLY" in text and "YOUR CODE HERE still stands at days/day01/softmax.cu:" in text, text
    assert "delete the marker line once its part is written" in text, text


@needs_nvcc
@pytest.mark.skipif(has_gpu(), reason="exercises the no-GPU path")
def test_compile_error_without_gpu_points_at_the_line(tmp_path, root):
    for f in ("softmax.cu", "bindings.cpp"):
        (tmp_path / f).write_text((root / "solutions" / "day01" / f).read_text())
    src = (tmp_path / "softmax.cu").read_text().splitlines()
    at = len(src) // 2
    src.insert(at, "this is not C++;")
    (tmp_path / "softmax.cu").write_text("\n".join(src) + "\n")
    r = run_grader("check", "day01", "--dir", str(tmp_path))
    assert r.returncode == 1 and "BUILD ERROR" in r.stdout
    assert f"softmax.cu:{at + 1}: error" in r.stdout, r.stdout
    assert "not run" not in r.stdout
    assert_clean(r)


def test_doctor_reports_and_exits_cleanly():
    r = run_grader("doctor")
    assert r.returncode in (0, 2) and "nvcc" in r.stdout and "torch" in r.stdout
    assert_clean(r)


# -- ranked runs (grader check --ranked) -------------------------------------------------------------------------
SECRET = "leaderboard-secret-0123456789abcdef"
RANKED_ENV = ("GRADER_RANKED_SEED", "GRADER_RANKED_SEED_FILE")
# One untimed exercise (the fake worker reports no timings): a course of its own, checked with the scripted worker.
COURSE = """\
title: ranked
repository: r
days:
  - id: day01
    title: Naive softmax
    track: softmax
    status: ready
    exercises:
      - name: softmax
        task: tasks.softmax
        op: softmax
        signature: "softmax(x, out)"
        args: [x, out]
        sources: [softmax.cu, bindings.cpp]
        dtypes: [fp32]
        correctness: [[1, 1], [3, 5], [7, 9]]
        tolerances:
          fp32: {atol: 1.0e-8, rtol: 1.0e-5, rel_l2: 1.0e-5}
        points: 10
"""


@pytest.fixture
def no_secret(monkeypatch):
    for name in RANKED_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def fake_course(tmp_path, monkeypatch, no_secret):
    """A course in tmp_path whose checks run tests/fake_worker.py (no GPU)."""
    (tmp_path / "course.yaml").write_text(COURSE)
    shutil.copytree(ROOT / "solutions" / "day01", tmp_path / "solutions" / "day01")
    monkeypatch.setattr(shared, "WORKER", "tests.fake_worker")
    # the fake worker is found from the course's root; what the environment had on the path (e.g. wheels) is kept
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("FAKE_WORKER", "ok")
    return tmp_path


def grade(course_dir, *args):
    return cli.main(["--course", str(course_dir / "course.yaml"), "check", "day01", "--solution", *args])


@pytest.mark.parametrize("args, env, text", [
    (["--seed", "3"], {"GRADER_RANKED_SEED": SECRET}, "--ranked takes its inputs from the secret seed: drop --seed"),
    (["--correctness-only"], {"GRADER_RANKED_SEED": SECRET}, "drop --correctness-only"),
    ([], {}, "--ranked needs a secret seed: set GRADER_RANKED_SEED, or GRADER_RANKED_SEED_FILE"),
    ([], {"GRADER_RANKED_SEED": SECRET, "GRADER_RANKED_SEED_FILE": "/x"}, "set only one"),
    ([], {"GRADER_RANKED_SEED": "short"}, "shorter than 16 characters"),
    ([], {"GRADER_RANKED_SEED_FILE": "/nonexistent/secret"}, "/nonexistent/secret, which does not exist"),
    ([], {"GRADER_RANKED_SEED_FILE": str(ROOT / "README.md")}, "is inside the course repository"),
    # another class's rules and bars (day 10's 10c is easier on an sm_86): never a ranked run
    ([], {"GRADER_RANKED_SEED": SECRET, "GRADER_SIMULATE_GPU": "8.6"}, "--ranked runs as the GPU it is on: unset "
                                                                      "GRADER_SIMULATE_GPU"),
])
def test_ranked_option_errors(monkeypatch, no_secret, args, env, text):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    r = run_grader("check", "day01", "--solution", "--ranked", *args)
    assert r.returncode == 2 and text in r.stdout, r.stdout + r.stderr
    assert "seed hash" not in r.stdout and "compiles" not in r.stdout  # refused before anything ran
    assert_clean(r)


def test_a_secret_file_reached_through_a_link_into_the_repository_is_refused(tmp_path):
    link = tmp_path / "secret"
    link.symlink_to(ROOT / "course.yaml")
    with pytest.raises(cli.GraderError, match="inside the course repository"):
        ranked_runs.ranked_secret(ROOT, {"GRADER_RANKED_SEED_FILE": str(link)})


def test_the_secret_comes_from_the_environment_or_a_file_outside(tmp_path):
    f = tmp_path / "secret"
    f.write_text(SECRET + "\n")
    assert ranked_runs.ranked_secret(ROOT, {"GRADER_RANKED_SEED_FILE": str(f)}) == SECRET.encode()
    assert ranked_runs.ranked_secret(ROOT, {"GRADER_RANKED_SEED": f"  {SECRET} "}) == SECRET.encode()


def test_ranked_seeds_are_derived_independent_and_hide_the_secret():
    r = ranked_runs.ranked_seeds(SECRET.encode())
    assert r == ranked_runs.ranked_seeds(SECRET.encode())  # the same secret, the same inputs
    assert len(r.seeds) == 2 and r.seeds[0] != r.seeds[1] and all(0 <= s < 2**31 for s in r.seeds)
    expect = [int.from_bytes(hashlib.sha256(f"{SECRET}:{k}".encode()).digest()[:8], "big") & (2**31 - 1)
              for k in (1, 2)]
    assert list(r.seeds) == expect
    assert r.seed_sha256 == hashlib.sha256(SECRET.encode()).hexdigest() and r.short == r.seed_sha256[:8] + "…"
    assert ranked_runs.ranked_seeds(SECRET.encode() + b"!").seeds != r.seeds
    assert SECRET not in repr(r) and not any(str(s) in repr(r) for s in r.seeds)


def test_a_ranked_check_runs_twice_and_is_recorded_as_ranked(fake_course, monkeypatch, capsys):
    monkeypatch.setenv("GRADER_RANKED_SEED", SECRET)
    out_json = fake_course / "r.json"
    assert grade(fake_course, "--ranked", "--no-sandbox", "--json", str(out_json)) == 0
    printed = capsys.readouterr().out
    ranked = ranked_runs.ranked_seeds(SECRET.encode())
    doc_text = out_json.read_text()
    stored = (Paths(fake_course).results() / "day01.json").read_text()
    for text in (printed, doc_text, stored):
        assert SECRET not in text and not any(str(s) in text for s in ranked.seeds)
    assert f"ranked run (seed hash {ranked.seed_sha256[:8]}…)" in printed and "PASS" in printed
    assert "seed " not in printed.replace("seed hash", "")  # no "seed N" line
    doc = json.loads(doc_text)
    assert doc["ranked"] is True and doc["seed_sha256"] == ranked.seed_sha256 and "seed" not in doc
    (ex,) = doc["exercises"]
    assert ex["ranked"] is True and ex["seed_sha256"] == ranked.seed_sha256 and ex["seed"] is None
    assert ex["status"] == "pass" and "seed" not in ex["info"]
    assert sorted({c["run"] for c in ex["cases"]}) == [1, 2] and len(ex["cases"]) == 6  # both runs' cases
    assert not list(Paths(fake_course).logs().glob("*.job.json"))  # the job file names the seed
    kept = results.ranked_results(fake_course, "day01")
    assert list(kept) == ["solution"] and kept["solution"]["seed_sha256"] == ranked.seed_sha256


def test_a_ranked_check_stops_at_the_first_failed_run(fake_course, monkeypatch, capsys):
    monkeypatch.setenv("GRADER_RANKED_SEED", SECRET)
    monkeypatch.setenv("FAKE_WORKER", "ok,blank")
    assert grade(fake_course, "--ranked", "--no-sandbox") == 1
    assert "FAIL" in capsys.readouterr().out
    entry = results.ranked_results(fake_course, "day01")["solution"]
    (ex,) = entry["exercises"]
    assert ex["status"] == "fail" and {c["run"] for c in ex["cases"]} == {1}


def test_an_ordinary_check_is_not_ranked_and_does_not_replace_the_ranked_result(fake_course, monkeypatch, capsys):
    assert grade(fake_course, "--seed", "5") == 0
    assert "seed 5" in capsys.readouterr().out
    assert results.ranked_results(fake_course, "day01") == {}
    assert results.last(fake_course, "day01", "solution")["ranked"] is False
    monkeypatch.setenv("GRADER_RANKED_SEED", SECRET)
    assert grade(fake_course, "--ranked", "--no-sandbox") == 0
    monkeypatch.delenv("GRADER_RANKED_SEED")
    assert grade(fake_course) == 0
    last = results.last(fake_course, "day01", "solution")
    assert last["ranked"] is False and last["exercises"][0]["seed"] is not None
    kept = results.ranked_results(fake_course, "day01")["solution"]
    assert kept["ranked"] is True and kept["exercises"][0]["seed"] is None


def test_ranked_results_accepts_only_marked_entries(tmp_path):
    ex = [{"exercise": "softmax", "status": "pass"}]
    results.save(tmp_path, "day05", "student", ex)
    assert results.ranked_results(tmp_path, "day05") == {}
    with pytest.raises(ValueError):
        results.save(tmp_path, "day05", "student", ex, ranked=True)
    results.save(tmp_path, "day05", "student", ex, ranked=True, seed_sha256="ab" * 32)
    got = results.ranked_results(tmp_path, "day05")["student"]
    assert got["ranked"] is True and got["exercises"][0] == {**ex[0], "ranked": True, "seed_sha256": "ab" * 32}
    # a hand-edited file: an entry whose exercises are not all marked does not count
    path = results.results_path(tmp_path, "day05")
    data = json.loads(path.read_text())
    data["ranked"]["student"]["exercises"][0]["ranked"] = False
    data["ranked"]["solution"] = {"ranked": "yes", "seed_sha256": "x", "exercises": ex}
    path.write_text(json.dumps(data))
    assert results.ranked_results(tmp_path, "day05") == {}
    path.write_text("not json")
    assert results.ranked_results(tmp_path, "day05") == {} and results.last(tmp_path, "day05") is None


def _run(status, speedup=None, n=2, message="m"):
    from grader.check.verdict import ExerciseResult

    cases = [dict(index=i, kind="correctness", dtype="fp32", label=f"{i}x1", ok=status == "pass", category=status,
                  message="") for i in range(n)]
    return ExerciseResult("day02", "softmax", "student", "days/day02", 123456, status=status, speedup=speedup,
                          message=message, cases=cases, info={"gpu": "G", "seed": 123456},
                          builds=[{"target": "exercise", "ok": True, "seconds": 1.0}])


def test_combined_runs_pass_only_together_with_the_lower_speedup():
    both = ranked_runs.combine_runs([_run("pass", 9.5, message="fast"), _run("pass", 8.7, message="slower")])
    assert both.status == "pass" and both.speedup == 8.7 and both.message.startswith("slower")
    assert both.seed is None and "seed" not in both.info and len(both.builds) == 1
    assert [c["run"] for c in both.cases] == [1, 1, 2, 2]
    second = ranked_runs.combine_runs([_run("pass", 9.5), _run("fail", 9.1, message="1 case(s) failed")])
    assert second.status == "fail" and second.message == "run 2 of 2 (other inputs) failed: 1 case(s) failed"
    assert second.speedup == 9.1
    first = ranked_runs.combine_runs([_run("fail", message="wrong")])
    assert first.status == "fail" and first.message == "wrong" and {c["run"] for c in first.cases} == {1}


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in folder.rglob("*") if p.is_file()} if folder.is_dir() else {}


@needs_nvcc
def test_the_suite_keeps_its_state_out_of_the_checkout():
    """conftest.py points $GRADER_STATE at a temporary folder: a check run by the tests leaves the checkout's own
    .grader/ (a student's builds and results) exactly as it was, and writes its state there instead."""
    from tests.conftest import STATE

    assert os.environ["GRADER_STATE"] == str(STATE)
    mine = Paths(ROOT).state
    assert mine.is_relative_to(STATE) and not mine.is_relative_to(ROOT)
    before = _snapshot(ROOT / ".grader")
    r = run_grader("check", "day01", "--solution", "--correctness-only", "--dtype", "fp32")
    assert r.returncode in (0, 2), r.stdout + r.stderr  # 2: compiled only, on a machine without a GPU
    assert _snapshot(ROOT / ".grader") == before
    assert (mine / "results" / "day01.json").is_file() and list((mine / "logs").glob("day01-*"))


def test_an_optional_steps_untouched_stub_does_not_fail_the_days_exit_code(course):
    """An optional step (course.yaml `optional: true`), left as released, is reported (not implemented) but the day's
    check still exits 0; begun and failing, it fails the day like any exercise; a required one missing still fails."""
    from grader.verdicts import EXIT_FAIL, EXIT_PASS, Status, exit_code

    day = next(d for d in course.days if any(e.optional for e in d.exercises) and
               any(not e.optional for e in d.exercises))
    optional = [e.name for e in day.exercises if e.optional]
    required = [e.name for e in day.exercises if not e.optional]
    untouched = [{"exercise": n, "status": Status.PASS} for n in required]
    untouched += [{"exercise": n, "status": Status.NOT_IMPLEMENTED} for n in optional]
    assert exit_code(shared.counted_statuses(day, untouched)) == EXIT_PASS
    begun = untouched[:-1] + [{"exercise": optional[-1], "status": Status.FAIL}]
    assert exit_code(shared.counted_statuses(day, begun)) == EXIT_FAIL
    required_missing = [{"exercise": required[0], "status": Status.NOT_IMPLEMENTED}] + untouched[1:]
    assert exit_code(shared.counted_statuses(day, required_missing)) == EXIT_FAIL


@needs_nvcc
@pytest.mark.skipif(has_gpu(), reason="exercises the no-GPU path (compile reports)")
def test_a_file_two_exercises_share_has_its_compile_report_printed_once(tmp_path):
    """A check prints each shared file's compile report once (day 20's four exercises share one .cu): the second
    exercise names the first's report in a line."""
    one = COURSE[COURSE.index("      - name: softmax"):] + "        include_dirs: [common]\n"
    (tmp_path / "course.yaml").write_text(COURSE[:COURSE.index("      - name: softmax")] + one
                                          + one.replace("name: softmax", "name: softmax_again", 1))
    shutil.copytree(ROOT / "solutions" / "day01", tmp_path / "solutions" / "day01")
    shutil.copytree(ROOT / "common", tmp_path / "common")
    r = run_grader("--course", str(tmp_path / "course.yaml"), "check", "day01", "--solution", cwd=tmp_path)
    assert_clean(r)
    assert r.returncode == 2 and r.stdout.count("COMPILED ONLY") == 2, r.stdout + r.stderr
    assert r.stdout.count("spill st/ld B") == 1, r.stdout  # one ptxas table
    for f in ("softmax.cu: compiles (nvcc)", "bindings.cpp: compiles (c++)"):
        assert r.stdout.count(f"solutions/day01/{f}, as reported above for softmax") == 1, r.stdout


def test_without_the_cuda_toolkit_a_check_is_an_environment_error_saying_what_to_install(tmp_path):
    """No nvcc (nor a CUDA_HOME that has one) is the machine's problem: ENVIRONMENT ERROR, exit 2, with what to
    install, as `grader doctor` says; never the student's build error."""
    path = os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep) if d and not Path(d, "nvcc").exists())
    out = tmp_path / "r.json"
    r = run_grader("check", "day01", "--solution", "--json", str(out),
                   env={"PATH": path, "CUDA_HOME": str(tmp_path), "CUDA_PATH": ""})
    assert_clean(r)
    text = " ".join(r.stdout.split())
    assert r.returncode == 2 and "ENVIRONMENT ERROR" in text and "BUILD ERROR" not in text, text
    assert f"nvcc, the CUDA toolkit's compiler, is neither on PATH nor in {tmp_path / 'bin'}" in text, text
    assert "install the CUDA toolkit" in text and "--seed" not in text.split("ENVIRONMENT ERROR")[1], text
    (ex,) = json.loads(out.read_text())["exercises"]
    assert ex["status"] == "env_error"
    if not has_gpu():  # a Python route's .cu: nvcc compiles it only in the compile-only check
        r = run_grader("check", "day13", "--solution", "--exercise", "softmax_cupy", "--json", str(out),
                       env={"PATH": path, "CUDA_HOME": str(tmp_path), "CUDA_PATH": ""})
        assert r.returncode == 2 and json.loads(out.read_text())["exercises"][0]["status"] == "env_error", r.stdout


def test_the_grader_takes_back_a_sigint_its_shell_ignored():
    """A shell without job control starts `grader … &` with SIGINT ignored (tests/processes.py): main() takes it back
    as Python's default (KeyboardInterrupt) before anything else, whatever the command; tests/test_watch.py and
    tests/test_check_on_slurm.py interrupt such a grader."""
    import signal

    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with pytest.raises(SystemExit):  # a usage error: parsing comes after
            cli.main(["no-such-command"])
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, old)
