"""Day 19's ring across processes, on CPU processes over gloo (the same code runs one process per GPU over NCCL):

- the solution's ring (solutions/day19/ring_dist.py) against the fp64 reference for 1 to 3 ranks, both placements;
- the grader's transport (tasks/strict_p2p.py) in a ring of three, where each buffer bug shows as it happens;
- the graded exercise end to end (the runner starting rank 0, rank 0 starting the others): the solution passes, the
  stub is not implemented, every known-wrong ring of tests/known_wrong.yaml fails with its message, a rank that dies
  is a crash and a hang a timeout that leaves no process behind, and a machine with too few GPUs skips it (exit 2);
- the measurement script's smoke run.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

torch = pytest.importorskip("torch")

from tests.conftest import ROOT, run_grader  # noqa: E402

SOLUTION = ROOT / "solutions" / "day19" / "ring_dist.py"
KNOWN_WRONG = [b for b in yaml.safe_load((ROOT / "tests" / "known_wrong.yaml").read_text())
               if b.get("exercise") == "ring_dist"]


def _module(path: Path = SOLUTION, name: str = "ring_dist"):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _planted(text: str, bug: dict) -> str:
    for edit in bug.get("edits") or [bug]:
        assert text.count(edit["find"]) >= 1, f"{bug['name']}: the text to replace is no longer in the solution"
        text = text.replace(edit["find"], edit["replace"])
    return text


# -- the ring itself, over gloo -----------------------------------------------------------------------------------
def _worker(rank, world, init, runs, out_dir):
    """Each run (source, shape, causal, placement, strict) in turn, in one process group: spawning the processes
    (torch imported in each) is what costs time here."""
    import torch.distributed as dist

    from tasks.ring_dist import shard_rows
    from tasks.strict_p2p import StrictP2P

    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    try:
        for n, (source, shape, causal, placement, strict) in enumerate(runs):
            mod = _module(Path(source), f"ring_dist_{rank}_{n}")
            g = torch.Generator().manual_seed(7)
            q, k, v = (torch.randn(shape, generator=g) for _ in range(3))
            idx = torch.cat([torch.arange(s.start, s.stop) for s in shard_rows(rank, world, shape[2], placement)])
            ql, kl, vl = (t.index_select(2, idx) for t in (q, k, v))
            o, lse = torch.empty_like(ql), torch.empty(ql.shape[:3])
            comm = StrictP2P(dist) if strict else dist
            mod.ring_attention(ql, kl, vl, o, lse, causal, placement, comm)
            found = []
            if strict:
                comm.finish()
                found = [(x.rule, x.transfer) for x in comm.violations]
            torch.save({"o": o, "lse": lse, "idx": idx, "violations": found}, Path(out_dir) / f"{n}-{rank}.pt")
    finally:
        dist.destroy_process_group()


def _run(tmp_path, world, runs):
    """For each run (source, shape, causal, placement, strict): o and lse of every rank placed at their rows, the
    fp64 reference, and each rank's transport violations."""
    import torch.multiprocessing as mp

    from tasks import attention

    init = f"file://{tmp_path / 'rendezvous'}"
    runs = [(str(src), shape, causal, placement, strict) for src, shape, causal, placement, strict in runs]
    mp.spawn(_worker, args=(world, init, runs, str(tmp_path)), nprocs=world, join=True)
    out = []
    for n, (_, shape, causal, _, _) in enumerate(runs):
        parts = [torch.load(tmp_path / f"{n}-{r}.pt") for r in range(world)]
        o, lse = torch.empty(shape), torch.empty(shape[:3])
        for p in parts:
            o.index_copy_(2, p["idx"], p["o"])
            lse.index_copy_(2, p["idx"], p["lse"])
        g = torch.Generator().manual_seed(7)
        q, k, v = (torch.randn(shape, generator=g) for _ in range(3))
        ref_o, ref_lse = attention.reference(q, k, v, causal)
        out.append((o, lse, ref_o, ref_lse, [p["violations"] for p in parts]))
    return out


VARIANTS = [(False, "plain"), (True, "plain"), (True, "zigzag")]


@pytest.mark.parametrize("world", [1, 2, 3])
def test_the_solution_ring_over_gloo_matches_the_reference(world, tmp_path):
    """Both placements, causal and not, through torch.distributed itself and through the grader's transport (which
    records nothing for the solution)."""
    shape = (2, 3, 12 * world, 16)
    runs = [(SOLUTION, shape, causal, placement, strict) for causal, placement in VARIANTS for strict in (False, True)]
    for o, lse, ref_o, ref_lse, violations in _run(tmp_path, world, runs):
        assert torch.allclose(o.double(), ref_o, atol=1e-5, rtol=1e-4)
        assert torch.allclose(lse.double(), ref_lse, atol=1e-5, rtol=1e-5)
        assert violations == [[]] * world


def test_zigzag_gives_every_causal_rank_the_same_work():
    """The work each rank's `visible` parts add up to (a diagonal part counts half): equal with zigzag, 1 : 3 : 5 with
    the plain placement's three ranks."""
    sys.path.insert(0, str(ROOT / "scripts" / "lessons"))
    from day19_ring_measure import work_per_rank

    ring = _module()
    assert work_per_rank(ring, 3, True, "zigzag") == [1.5] * 3
    assert work_per_rank(ring, 3, True, "plain") == [0.5, 1.5, 2.5]
    assert work_per_rank(ring, 4, False, "zigzag") == [4.0] * 4


# In a ring of three, a buffer is received into again two steps after it was sent: each bug shows as it happens.
BUFFER_BUGS = {
    "wait only the receive": ("        for w in works:\n", "        for w in works[1:]:\n", "send_overwritten", 2),
    "wait only the send": ("        for w in works:\n", "        for w in works[:1]:\n", "received_before_wait", 2),
    "no wait": ("        for w in works:\n            w.wait()\n", "", "received_before_wait", 2),
    "one buffer": ("held, free = bufs[s % 2], bufs[(s + 1) % 2]", "held = free = bufs[0]", "send_overwritten", 1),
    "scale the held keys in place": ("        for w in works:\n", "        held[0].mul_(2.0)\n        for w in works:\n",
                                     "send_overwritten", 1),
}


def test_the_grader_transport_records_each_buffer_bug_in_a_ring_of_three(tmp_path):
    text = SOLUTION.read_text()
    runs = []
    for name, (find, replace, _, _) in BUFFER_BUGS.items():
        assert text.count(find) == 1, name
        bad = tmp_path / f"{name.replace(' ', '_')}.py"
        bad.write_text(text.replace(find, replace))
        runs.append((bad, (1, 2, 36, 16), True, "zigzag", True))
    for (name, (_, _, rule, transfer)), (*_, violations) in zip(BUFFER_BUGS.items(), _run(tmp_path, 3, runs)):
        first = [v[0] for v in violations if v]
        assert first and all(v == (rule, transfer) for v in first), (name, violations)


def test_a_wrong_schedule_is_caught(tmp_path):
    """The reference comparison can fail: a ring that attends to its own shard again at every step (the transfers
    made, their data ignored) is wrong for 2 ranks."""
    bad = tmp_path / "own_shard.py"
    bad.write_text(SOLUTION.read_text().replace("held, free = bufs[s % 2], bufs[(s + 1) % 2]",
                                                "held, free = bufs[0], bufs[1]"))
    ((o, _, ref_o, _, _),) = _run(tmp_path, 2, [(bad, (1, 2, 32, 16), False, "plain", False)])
    assert not torch.allclose(o.double(), ref_o, atol=1e-5, rtol=1e-4)


# -- the graded exercise, end to end ------------------------------------------------------------------------------
def _check(course, src: Path, cases: list[str] | None, variant: str, case_s: float | None = None):
    from grader.check.job import make_job
    from grader.check.runner import run_job

    day = course.day("day19")
    ex = next(e for e in day.exercises if e.name == "ring_dist")
    job = make_job(course=course, root=ROOT, day=day, ex=ex, src_dir=src, seed=7, device="cpu", cases=cases)
    return run_job(job, variant=variant, case_s=case_s)


def _copy_solution(tmp_path: Path, bug: dict | None = None) -> Path:
    src = tmp_path / "day19"
    shutil.copytree(ROOT / "solutions" / "day19", src)
    if bug:
        f = src / "ring_dist.py"
        f.write_text(_planted(f.read_text(), bug))
    return src


def _ranks_left(job_name: str) -> list[int]:
    """Processes whose command line names this job (rank 0 and the ranks it started)."""
    pids = []
    for d in Path("/proc").glob("[0-9]*"):
        try:
            if job_name in (d / "cmdline").read_bytes().decode(errors="replace"):
                pids.append(int(d.name))
        except OSError:
            pass
    return pids


def test_the_solution_passes_in_two_cpu_processes(course):
    res = _check(course, ROOT / "solutions" / "day19", ["1x2x40x64", "2x3x128x64", "sharp"], "dist-solution")
    assert res.status == "pass", res.message
    assert res.info["gpu"] == "2 CPU processes (gloo)"
    assert len(res.cases) == 18 and all(c["deterministic"] for c in res.cases)
    names = {ch["name"]: ch["message"] for ch in res.cases[0]["checks"]}
    assert names["transport"] == "every buffer waited before it was used again"
    assert names["real_transport"] == "also correct through torch.distributed (gloo)"


def test_the_stub_is_not_implemented(course):
    res = _check(course, ROOT / "days" / "day19", ["fp32 1x2x40x64"], "dist-stub")
    assert res.status == "not_implemented", res.message


@pytest.mark.parametrize("bug", KNOWN_WRONG, ids=[b["name"] for b in KNOWN_WRONG])
def test_each_known_wrong_ring_fails_with_its_message(bug, course, tmp_path):
    import re

    res = _check(course, _copy_solution(tmp_path, bug), bug.get("cases"), f"dist-{bug['name']}")
    assert res.status == "fail", res.message
    want = bug["category"] if isinstance(bug["category"], list) else [bug["category"]]
    hits = [c for c in res.cases if not c["ok"] and c["category"] in want]
    assert hits and all(re.search(bug["message"], c["message"]) for c in hits), [c["message"] for c in res.cases]


def test_the_known_wrong_rings_are_the_three_bugs_the_lesson_names():
    assert {b["name"] for b in KNOWN_WRONG} == {"ring_dist_wait_a_step_late", "ring_dist_receive_into_the_send_buffer",
                                                 "ring_dist_send_never_waited"}
    assert all(b.get("gpus") == 2 for b in KNOWN_WRONG)


def test_a_rank_that_raises_is_named_on_every_rank(course, tmp_path):
    # After the transfers: an exception before them leaves the other rank waiting for a shard (a timeout).
    bug = {"name": "raise", "file": "ring_dist.py", "find": "    # BEGIN SOLUTION: write o (acc",
           "replace": "    if rank == 1:\n        raise ValueError('rank one is unhappy')\n    # BEGIN SOLUTION: write o (acc"}
    res = _check(course, _copy_solution(tmp_path, bug), ["fp32 1x2x40x64 placement=plain"], "dist-raise")
    (case,) = res.cases
    assert case["category"] == "error" and case["message"] == "rank 1: ValueError: rank one is unhappy"


def test_a_rank_that_dies_is_a_crash_and_a_hang_a_timeout_with_no_process_left(course, tmp_path):
    dies = {"name": "dies", "file": "ring_dist.py", "find": "    succ, pred = (rank + 1) % world, (rank - 1) % world\n",
            "replace": "    succ, pred = (rank + 1) % world, (rank - 1) % world\n"
                       "    if rank == 1:\n        import os; os._exit(9)\n"}
    res = _check(course, _copy_solution(tmp_path / "a", dies), ["fp32 1x2x40x64 placement=plain"], "dist-dies")
    (case,) = res.cases
    assert case["category"] == "crash" and "rank 1's process died (exit code 9)" in case["message"], case
    assert not _ranks_left("day19-ring_dist-dist-dies.job.json")

    # Rank 1 never posts its transfer: rank 0 waits for a shard that never comes, until the case's time limit.
    hangs = {"name": "hangs", "file": "ring_dist.py", "find": "        if s + 1 < world:\n",
             "replace": "        if s + 1 < world and rank == 0:\n"}
    res = _check(course, _copy_solution(tmp_path / "b", hangs), ["fp32 1x2x40x64 placement=plain"], "dist-hangs",
                 case_s=4)
    (case,) = res.cases
    assert case["category"] == "timeout" and case["message"].startswith("timed out after 4 s"), case
    assert not _ranks_left("day19-ring_dist-dist-hangs.job.json")


def test_too_few_gpus_skips_the_exercise_with_what_it_needs():
    """On this machine (no GPU, or one): not checked, exit 2, and the verdict says what the exercise needs."""
    if torch.cuda.is_available() and torch.cuda.device_count() >= 2:
        pytest.skip("this machine has the GPUs the exercise needs")
    r = run_grader("check", "day19", "--solution", "--exercise", "ring_dist")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "SKIPPED" in r.stdout and "runs in 2 processes, one per GPU (NCCL)" in r.stdout, r.stdout
    assert "Traceback" not in r.stdout + r.stderr


def test_on_cpu_a_student_with_one_gpu_checks_the_ring_in_cpu_processes_and_it_is_not_kept(tmp_path):
    """`grader check day19 --on cpu`: ring_dist alone (the other two need a GPU, and it says so), in CPU processes
    over gloo, correctness only; the verdict says what it was, and `grader list` keeps no result from it."""
    r = run_grader("check", "day19", "--on", "cpu", "--solution", "--json", str(tmp_path / "r.json"), state=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "left out, they need a GPU: ring_attention, ring_attention_acqrel" in r.stdout, r.stdout
    (ex,) = json.loads((tmp_path / "r.json").read_text())["exercises"]
    assert ex["exercise"] == "ring_dist" and ex["status"] == "pass" and ex["info"]["gpu"] == "2 CPU processes (gloo)"
    assert "a check of the protocol: the graded check runs on 2 GPUs" in ex["message"], ex["message"]
    assert not list(tmp_path.rglob("results/day19*")), "a CPU check was kept as the day's result"


def test_on_cpu_the_stub_is_not_implemented_and_a_broken_ring_fails(tmp_path):
    src = _copy_solution(tmp_path, KNOWN_WRONG[0])
    for folder, status in ((None, "not_implemented"), (src, "fail")):
        out = tmp_path / f"{status}.json"
        r = run_grader("check", "day19", "--on", "cpu", *(["--dir", str(folder)] if folder else []), "--json",
                       str(out), state=tmp_path)
        assert r.returncode == 1 and "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
        assert json.loads(out.read_text())["exercises"][0]["status"] == status


@pytest.mark.parametrize("args, says", [
    (["day01"], "--on cpu checks only exercises that run in several processes (day01 has none)"),
    (["day19", "--exercise", "ring_attention"], "(day19's is ring_dist): the others need a GPU"),
    (["day19", "--ranked"], "--ranked is graded on GPUs"),
])
def test_on_cpu_refuses_what_it_cannot_check_with_a_next_step(args, says, tmp_path):
    r = run_grader("check", *args, "--on", "cpu", "--solution", state=tmp_path)
    assert r.returncode == 2 and says in r.stderr + r.stdout and "Traceback" not in r.stderr, r.stdout + r.stderr


def test_the_student_readme_names_on_cpu_once_a_day_of_process_groups_is_out(course):
    from grader.authoring import student_readme

    ids = [d.id for d in course.days]
    before = student_readme.render(course, ids[:ids.index("day19")])
    after = " ".join(student_readme.render(course, ids).split())
    assert "--on cpu" not in before
    assert "(day19.ring_dist), is skipped on a machine with fewer GPUs" in after
    assert "`grader check day19 --on cpu` runs it in 2 CPU processes instead" in after


# -- the measurement script -----------------------------------------------------------------------------------------
def test_the_measurement_script_runs_on_cpu_processes(tmp_path):
    """scripts/lessons/day19_ring_measure.py's smoke run (gloo): every row timed for both placements, the gathered
    ring output checked, and the lesson's block written from the saved run."""
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "lessons" / "day19_ring_measure.py"), str(tmp_path),
                        "--cpu", "--world", "2", "--tokens", "16", "32", "--heads", "2", "--dim", "8", "--reps", "1"],
                       capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((tmp_path / "day19-dist-cpux2.json").read_text())
    assert [(r["causal"], r["tokens"]) for r in doc["rows"]] == [(False, 16), (False, 32), (True, 16), (True, 32)]
    for row in doc["rows"]:
        assert row["single_ms"] > 0 and row["comm_ms"] > 0, row
        for placement in ("plain", "zigzag"):
            p = row[placement]
            assert p["max_abs_diff"] < 1e-5 and p["ring_ms"] > 0 and p["compute_ms"] > 0, p
            assert len(p["compute_ms_per_rank"]) == 2
    assert "| no | 16 |" in (tmp_path / "day19-dist-cpux2.md").read_text()


@pytest.mark.parametrize("flag", ["--profile", "--graph-ring"])
def test_the_measurement_scripts_gpu_only_options_are_refused_on_cpu_processes(flag, tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "lessons" / "day19_ring_measure.py"), str(tmp_path),
                        "--cpu", flag, *(["8192"] if flag == "--profile" else [])],
                       capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert r.returncode == 2 and "it needs GPU processes, not --cpu" in r.stderr, r.stderr


def test_the_verdict_script_runs_on_cpu_processes(tmp_path):
    """scripts/lessons/day19_dist_check.py (what the GPU run prints), over gloo: the verdicts it expects, and a wrong
    expectation is reported (exit 1)."""
    script = str(ROOT / "scripts" / "lessons" / "day19_dist_check.py")
    r = subprocess.run([sys.executable, script, str(tmp_path), "--cpu", "--only", "stub",
                        "ring_dist_receive_into_the_send_buffer"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = json.loads((tmp_path / "day19-dist-check.json").read_text())["checks"]
    assert [(x["check"], x["status"], x["as_expected"]) for x in rows] == [
        ("stub", "not_implemented", True), ("ring_dist_receive_into_the_send_buffer", "fail", True)]
    assert "2 of 2 verdicts as expected" in r.stdout
    r = subprocess.run([sys.executable, script, str(tmp_path), "--only", "nothing"], capture_output=True, text=True,
                       cwd=ROOT)
    assert r.returncode == 2 and "no check named nothing" in r.stderr
