"""Which steps a GPU grades (grader/gpu_support.py): day 11's wgmma steps are the optional Hopper track, graded on
sm_90 only; `grader list` and `grader doctor` say so for the GPU at hand, and a mandatory step that a GPU cannot
run is a problem doctor names."""
from types import SimpleNamespace

import pytest

from grader import cli, gpu_support
from grader.course import load_course
from tests.conftest import ROOT

COURSE = load_course(ROOT / "course.yaml")
GPUS = {"A100": (8, 0), "L4": (8, 9), "T4": (7, 5), "B200": (10, 0), "H100": (9, 0)}


def test_day11_names_its_hopper_steps_on_each_gpu():
    day = COURSE.day("day11")
    hopper = "matmul_wgmma_async, matmul_wgmma, matmul_cute"
    assert gpu_support.list_note(day, None) == f"{hopper}: graded on sm_90 only"
    assert gpu_support.list_note(day, GPUS["H100"]) == f"{hopper}: graded on sm_90, as here"
    for name in ("A100", "L4", "T4", "B200"):
        cap = GPUS[name]
        assert gpu_support.list_note(day, cap) == f"{hopper}: graded on sm_90 only, not on this GPU (sm_{cap[0]}{cap[1]})"
    assert gpu_support.list_note(COURSE.day("day10"), GPUS["A100"]) == ""


@pytest.mark.parametrize("name", ["A100", "L4", "B200"])
def test_doctor_off_hopper_names_the_optional_steps_it_skips_as_a_warning(name):
    ok, detail = gpu_support.doctor_detail(COURSE, GPUS[name], f"NVIDIA {name}")
    assert ok is None, detail  # a warning: only optional steps are skipped, every mandatory point can be earned
    assert "day11.matmul_wgmma_async (optional; sm_90 only)" in detail and f"NVIDIA {name}" in detail


def test_doctor_on_hopper_grades_everything():
    ok, detail = gpu_support.doctor_detail(COURSE, GPUS["H100"], "NVIDIA H100 80GB HBM3")
    assert ok is True and "grades every step of the course" in detail


def test_a_mandatory_step_a_gpu_cannot_run_is_a_problem():
    ex = SimpleNamespace(name="needs_hopper", capability=["9.0"], optional=False, threshold=None,
                         threshold_on=lambda cap: (None, None))
    course = SimpleNamespace(days=[SimpleNamespace(id="day42", status="ready", exercises=[ex])], min_capability="8.0")
    ok, detail = gpu_support.doctor_detail(course, GPUS["A100"], "NVIDIA A100")
    assert ok is False and "day42.needs_hopper (sm_90 only)" in detail


def test_grader_list_says_it_for_this_gpu(monkeypatch, capsys):
    monkeypatch.setattr(gpu_support, "capability_here", lambda: (8, 6))
    assert cli.main(["--course", str(ROOT / "course.yaml"), "list"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if "day11" in line and "Tensor cores" in line)
    assert "ready (*)" in row, row  # the row stays narrow; the note is under the table
    note = " ".join(out[out.index("(*) day11:"):].split())
    assert note.startswith("(*) day11: matmul_wgmma_async, matmul_wgmma, matmul_cute: graded on sm_90 only, not on "
                           "this GPU (sm_86)"), note


def test_capability_without_nvidia_smi_is_unknown(monkeypatch):
    monkeypatch.setattr(gpu_support.shutil, "which", lambda name: None)
    assert gpu_support.capability_here() is None


def test_a_gpu_older_than_the_course_grades_nothing_and_doctor_and_check_say_so():
    """course.yaml's min_capability (Ampere): a T4 is refused with the reason and where to grade instead, at doctor
    (a problem) and in each exercise's verdict (skipped, exit 2), never run into kernels it cannot execute."""
    from grader.check.job import make_job
    from grader.check.worker import below_course_minimum

    assert COURSE.min_capability == "8.0"
    ok, detail = gpu_support.doctor_detail(COURSE, GPUS["T4"], "Tesla T4")
    assert ok is False and "compute capability 8.0 or newer" in detail and "Tesla T4) is 7.5" in detail
    assert "Grade on an A100" in detail
    why = below_course_minimum(GPUS["T4"], COURSE.min_capability, "Tesla T4")
    assert why and "nothing is graded here" in why
    assert below_course_minimum(GPUS["A100"], COURSE.min_capability, "NVIDIA A100") is None
    assert below_course_minimum((12, 0), COURSE.min_capability, "RTX 5090") is None
    day = COURSE.day("day01")
    job = make_job(course=COURSE, root=ROOT, day=day, ex=day.exercises[0], src_dir=ROOT / "solutions/day01", seed=1)
    assert job.min_capability == "8.0"  # the worker reads it before anything runs


def test_the_site_home_page_says_which_gpus_grade_the_course():
    from grader.site.home import home_page

    text = "\n".join(home_page(COURSE, lambda d: f"{d}.md", lambda d: f"{d}.html", "readme.md"))
    assert "compute capability 8.0 or newer" in text and "Hopper track" in text and "(readme.md)" in text


def test_a_day_whose_optional_steps_this_gpu_skips_passes_on_its_mandatory_ones():
    """On an A100, `grader check day11` skips the Hopper track: the exit code weighs 11a-11c alone (0 when they pass),
    as it does for an optional stub left as released; a mandatory step skipped still counts."""
    from grader.commands.shared import counted_statuses
    from grader.verdicts import exit_code

    day = COURSE.day("day11")
    out = [{"exercise": e.name, "status": "skipped" if e.optional else "pass"} for e in day.exercises]
    assert exit_code(counted_statuses(day, out)) == 0
    out[0]["status"] = "skipped"  # 11a, mandatory
    assert exit_code(counted_statuses(day, out)) != 0


def test_the_student_readme_marks_the_optional_steps_and_the_gpus_that_grade_them():
    from grader.authoring.student_readme import render

    text = render(COURSE, ["day11", "day17"])
    assert "matmul_wgmma (optional, sm_90 only)" in text and "matmul_wmma," in text
    assert "attention_dropout (optional)" in text
    assert "compute capability 8.0 or newer" in text and "extra credit" in text


def test_a_stub_names_how_many_more_places_its_placeholder_stands_at():
    from grader.check.verdict import ExerciseResult, note_placeholders
    from grader.verdicts import Status

    spots = [f"days/day16/attention_bwd_kv.cu:{n}" for n in (43, 66, 68, 69)]
    res = note_placeholders(ExerciseResult("day16", "attention_bwd_dkdv", "student", "x", 1,
                                           status=Status.NOT_IMPLEMENTED, message="not implemented yet"),
                            spots, "YOUR CODE HERE")
    assert res.message.endswith("attention_bwd_kv.cu:68 and 1 more)"), res.message


def test_doctor_without_a_gpu_names_the_steps_that_need_one_generation(monkeypatch, capsys):
    monkeypatch.setattr(gpu_support, "capability_here", lambda: None)
    cli.main(["--course", str(ROOT / "course.yaml"), "doctor"])
    out = " ".join(capsys.readouterr().out.split())
    assert "steps no GPU here; on a GPU of compute capability 8.0 or newer every step is graded, except " \
           "day11.matmul_wgmma_async, day11.matmul_wgmma, day11.matmul_cute" in out, out


def test_doctor_reads_the_course_once(monkeypatch, capsys):
    """Its course line and its steps line share one read of course.yaml (the course is the slowest thing doctor
    reads)."""
    import argparse

    import grader.course
    from grader.commands import checking

    reads = []
    real = grader.course.load_course
    monkeypatch.setattr(grader.course, "load_course", lambda p, *a, **k: reads.append(p) or real(p, *a, **k))
    checking.cmd_doctor(argparse.Namespace(course=str(ROOT / "course.yaml")))
    assert len(reads) == 1, reads
    assert "course" in capsys.readouterr().out


# -- another class GPU's rules on this one (GRADER_SIMULATE_GPU: the GPU suite's simulated classes on an H100) ----
def test_a_simulated_gpu_is_graded_and_skipped_as_that_gpu(monkeypatch):
    monkeypatch.setattr(gpu_support, "_capability_from_smi", lambda: (9, 0))
    monkeypatch.delenv(gpu_support.SIMULATE_ENV, raising=False)
    assert gpu_support.capability_here() == (9, 0)
    monkeypatch.setenv(gpu_support.SIMULATE_ENV, "8.6")
    assert gpu_support.capability_here() == (8, 6)
    assert gpu_support.not_graded(COURSE.day("day11"), gpu_support.capability_here())  # the Hopper track skipped
    monkeypatch.setattr(gpu_support, "_capability_from_smi", lambda: None)
    assert gpu_support.capability_here() is None  # no GPU: nothing to simulate on


def test_simulating_lowers_the_launchers_shared_memory_and_says_so(monkeypatch):
    monkeypatch.delenv(gpu_support.SMEM_ENV, raising=False)
    assert gpu_support.simulate((8, 6)) == "simulating sm_86 (99 KiB a block, no Hopper paths)"
    import os

    assert os.environ[gpu_support.SMEM_ENV] == "99"
    assert gpu_support.simulate((8, 0)) == "simulating sm_80 (163 KiB a block, no Hopper paths)"
    assert os.environ[gpu_support.SMEM_ENV] == "163"


@pytest.mark.parametrize("value", ["7.0", "sm_86", "86", "ampere"])
def test_a_simulated_gpu_the_course_does_not_know_is_a_clear_error(monkeypatch, capsys, value):
    monkeypatch.setattr(gpu_support, "_capability_from_smi", lambda: (9, 0))
    monkeypatch.setenv(gpu_support.SIMULATE_ENV, value)
    assert cli.main(["--course", str(ROOT / "course.yaml"), "list"]) == 2
    out = capsys.readouterr()
    err = " ".join((out.out + out.err).split())
    assert f"GRADER_SIMULATE_GPU='{value}' names no GPU the course knows: use one of 7.5, 8.0, 8.6" in err, err
    assert "Traceback" not in err


def test_doctor_names_the_simulated_gpu(monkeypatch, capsys):
    from grader.commands import checking

    monkeypatch.setattr(gpu_support, "_capability_from_smi", lambda: (9, 0))
    monkeypatch.setattr(checking, "doctor_gpu_names", lambda: ["NVIDIA H100 80GB HBM3"])
    monkeypatch.setenv(gpu_support.SIMULATE_ENV, "8.0")
    cli.main(["--course", str(ROOT / "course.yaml"), "doctor"])
    out = " ".join(capsys.readouterr().out.split())
    assert "this GPU (NVIDIA H100 80GB HBM3, simulating sm_80 (163 KiB a block, no Hopper paths), sm_80) grades " \
           "every step except day11.matmul_wgmma_async" in out, out


# -- steps of several processes (course.yaml `processes:`), one per GPU ----------------------------------------------
def test_doctor_names_the_steps_this_machines_gpus_are_too_few_for():
    one = " ".join(gpu_support.process_groups_detail(COURSE, 1).split())
    assert "this machine has 1 GPU(s): day19.ring_dist (2 GPUs) run one process per GPU, so they are skipped here " \
           "(exit 2)" in one, one
    assert "`grader check day19 --on cpu` checks one in CPU processes meanwhile" in one, one
    assert gpu_support.process_groups_detail(COURSE, 2) is None


def test_doctor_on_one_hopper_gpu_warns_about_the_ring_across_gpus(monkeypatch, capsys):
    from grader.commands import checking

    monkeypatch.setattr(gpu_support, "_capability_from_smi", lambda: (9, 0))
    monkeypatch.setattr(checking, "doctor_gpu_names", lambda: ["NVIDIA H100 80GB HBM3"])
    cli.main(["--course", str(ROOT / "course.yaml"), "doctor"])
    out = " ".join(capsys.readouterr().out.split())
    assert "grades every step of the course" in out and "day19.ring_dist (2 GPUs)" in out, out
    monkeypatch.setattr(checking, "doctor_gpu_names", lambda: ["NVIDIA H100 80GB HBM3"] * 2)
    cli.main(["--course", str(ROOT / "course.yaml"), "doctor"])
    assert "day19.ring_dist (2 GPUs)" not in " ".join(capsys.readouterr().out.split())


def test_a_class_bar_is_said_by_doctor_on_that_class_only():
    """course.yaml `class_thresholds:`: day 10's 10c has its own bar on the 99 KiB GPUs, with the reason; doctor
    says it there, and the A100 and H100 keep the default and hear nothing of it."""
    ex = next(e for e in COURSE.day("day10").exercises if e.name == "flash_attention")
    for name in ("L4",):
        bar, why = ex.threshold_on(f"{GPUS[name][0]}.{GPUS[name][1]}")
        assert bar < ex.threshold and why
        ok, detail = gpu_support.doctor_detail(COURSE, GPUS[name], f"NVIDIA {name}")
        assert f"day10.flash_attention needs {bar:g}x, not {ex.threshold:g}x ({why})" in detail
    for name in ("A100", "H100", "B200"):
        cap = GPUS[name]
        assert ex.threshold_on(f"{cap[0]}.{cap[1]}") == (ex.threshold, None)
        assert "its own speed bars" not in gpu_support.doctor_detail(COURSE, cap, f"NVIDIA {name}")[1]
