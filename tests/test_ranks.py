"""An exercise that runs as a process group (course.yaml `processes: N`, grader/check/ranks.py), end to end on CPU
processes over gloo, with a task and a course of its own (nothing under grader/ knows it): the runner starts rank 0,
rank 0 starts the others, every rank judges the same gathered outputs, and only rank 0 reports."""
import textwrap

import pytest

from grader.check.job import make_job
from grader.check.runner import run_job
from grader.course import load_course
from grader.verdicts import Status, exit_code

# Each rank gets its half of the rows and writes their sums; the task's call gathers the halves to every rank.
TASK = '''
import torch
import torch.distributed as dist


def make_inputs(shape, dtype, generator, device):
    return {"x": torch.randn(shape, generator=generator, device=device, dtype=torch.float32).to(dtype)}


def make_outputs(inputs):
    x = inputs["x"]
    return {"y": torch.empty(x.shape[:-1], dtype=x.dtype, device=x.device)}


def reference(x):
    return {"y": x.double().sum(-1)}


def call(fn, case, exercise):
    def run():
        rank, world = dist.get_rank(), dist.get_world_size()
        x, y = case.inputs["x"], case.outputs["y"]
        rows = x.shape[0] // world
        mine = torch.empty(rows, dtype=y.dtype)
        fn(x[rank * rows:(rank + 1) * rows], mine, rank)
        parts = [torch.empty_like(mine) for _ in range(world)]
        dist.all_gather(parts, mine)
        y.copy_(torch.cat(parts))
        return {"y": y}
    return run
'''

COURSE = '''
title: Process group test
repository: https://example.invalid/course
days:
  - id: day01
    title: Row sums in two processes
    track: tools
    status: ready
    exercises:
      - name: rowsum
        task: grouptasks.rowsum
        op: rowsum
        signature: "rowsum(x, y, rank) -> None   # this rank's rows"
        build: python
        sources: [rowsum.py]
        processes: 2
        dtypes: [fp32]
        correctness: [[4, 8], [6, 3]]
        tolerances:
          fp32: {atol: 1.0e-5, rtol: 1.0e-5, rel_l2: 1.0e-5}
        points: 1
'''

OPS = {"correct": "y.copy_(x.sum(-1))",
       "wrong_on_rank_1": "y.copy_(x.sum(-1) + (1.0 if rank == 1 else 0.0))"}


def _check(tmp_path, op: str, device: str = "cpu"):
    (tmp_path / "course.yaml").write_text(COURSE)
    (tmp_path / "grouptasks").mkdir(exist_ok=True)
    (tmp_path / "grouptasks" / "__init__.py").write_text("")
    (tmp_path / "grouptasks" / "rowsum.py").write_text(TASK)
    src = tmp_path / "solutions" / "day01"
    src.mkdir(parents=True, exist_ok=True)
    (src / "rowsum.py").write_text(textwrap.dedent(f"""\
        def rowsum(x, y, rank):
            {OPS[op]}
        """))
    course = load_course(tmp_path / "course.yaml")
    day = course.day("day01")
    job = make_job(course=course, root=tmp_path, day=day, ex=day.exercises[0], src_dir=src, seed=3, device=device)
    return run_job(job, variant="solution")


def test_two_processes_pass_together(tmp_path):
    res = _check(tmp_path, "correct")
    assert res.status == Status.PASS, (res.message, res.cases)
    assert res.info["gpu"] == "2 CPU processes (gloo)" and len(res.cases) == 2


def test_a_wrong_half_from_one_rank_fails_the_case_once(tmp_path):
    res = _check(tmp_path, "wrong_on_rank_1")
    assert res.status == Status.FAIL and all(c["category"] == "mismatch" for c in res.cases), res.cases
    # rank 1's rows are the second half: the worst element is there
    assert all(c["worst_index"][0] >= c["numel"] // 2 for c in res.cases)


@pytest.mark.skipif("__import__('torch').cuda.device_count() >= 2")
def test_a_machine_with_too_few_gpus_skips_it_and_exits_2(tmp_path):
    res = _check(tmp_path, "correct", device="cuda")
    assert res.status == Status.SKIPPED and exit_code([res.status]) == 2
    assert res.message.startswith("day01.rowsum runs in 2 processes, one per GPU (NCCL), and this machine has")


def test_several_processes_are_refused_with_timing_or_compute_sanitizer(tmp_path):
    from grader.errors import GraderError

    bad = COURSE.replace("        points: 1", "        sanitize: [memcheck]\n        points: 1")
    (tmp_path / "course.yaml").write_text(bad)
    with pytest.raises(GraderError, match="timing across processes and compute-sanitizer runs are not supported"):
        load_course(tmp_path / "course.yaml")


def test_a_skipped_exercise_never_fails_a_day():
    assert exit_code([Status.PASS, Status.SKIPPED]) == 2
    assert exit_code([Status.FAIL, Status.SKIPPED]) == 1


def test_compute_sanitizer_is_refused_with_what_checks_instead(tmp_path, capsys):
    """`grader sanitize` runs one worker under the tool: a process group is not what it can watch."""
    import json

    from grader.check import worker

    _check(tmp_path, "correct")  # writes the course, the task and the source
    course = load_course(tmp_path / "course.yaml")
    day = course.day("day01")
    job = make_job(course=course, root=tmp_path, day=day, ex=day.exercises[0], src_dir=tmp_path / "solutions" / "day01",
                   seed=3, device="cpu")
    path = job.write(tmp_path / "job.json")
    assert worker.main([str(path), "--sanitized"]) == 2
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert events[-1]["ev"] == "env_error" and "compute-sanitizer watches one" in events[-1]["message"]
