"""Day 18's timeline script (scripts/lessons/day18_timeline.py) without a GPU: its whole run on the CPU at a tiny size
(the same code path as on the GPU, less the op's build and the CUDA activity), the trace arithmetic on made-up GPU
events, the lesson's block written once and again, and bad --insert input."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT, load_script

SCRIPT = ROOT / "scripts" / "lessons" / "day18_timeline.py"


TL = load_script(SCRIPT)


def _run(*args, timeout=240):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    """One run of the script on the CPU, two recorded steps per variant (7 to 18 s on the shared 2-core machine)."""
    out = tmp_path_factory.mktemp("timeline")
    t0 = time.perf_counter()
    r = _run(out, "--device", "cpu", "--active", "2")
    print(f"day18_timeline.py --device cpu: {time.perf_counter() - t0:.1f} s")
    assert r.returncode == 0, r.stdout + r.stderr
    return out, json.loads((out / "day18-timeline.json").read_text())


def test_the_cpu_run_writes_every_field_the_lesson_reads(cpu_run):
    out, data = cpu_run
    assert data["errors"] == {}
    assert data["device"] == "cpu" and data["torch"] and data["gpu"]
    assert data["nsys"] == {"ran": False, "why": "not run on the CPU"}
    for v in TL.VARIANTS:
        d = data["variants"][v]
        assert d["steps_recorded"] == 2 and len(d["per_step"]) == 2
        assert d["wall_ms"] > 0 and d["step_ms_unprofiled"] > 0
        for k in ("gpu_sum_ms", "gpu_busy_ms", "gpu_idle_fraction", "kernels", "launch_calls"):
            assert k in d
        assert d["kernels"] == 0  # no GPU: nothing to count
        assert d["top_by_cpu"] and {"name", "calls", "self_cpu_ms", "self_device_ms"} <= set(d["top_by_cpu"][0])
        assert not any(r["name"].startswith("ProfilerStep") for r in d["top_by_cpu"])
        assert "CPU: main thread" in json.loads((out / "day18-timeline-lanes.json").read_text())[v]
        trace = json.loads((out / d["trace"]).read_text())  # the file a student opens in Perfetto
        assert TL.profiler_steps(trace["traceEvents"])
    assert "stand-in" in data["variants"]["op"]["attention"]  # a CPU run says it timed no course op


def test_the_picture_is_a_png(cpu_run):
    out, data = cpu_run
    assert data["picture"] == TL.PICTURE
    assert (out / TL.PICTURE).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_union_counts_overlapping_kernels_once():
    assert TL.union_us([]) == 0
    assert TL.union_us([(0, 10), (5, 15), (20, 25)]) == 20
    assert TL.union_us([(20, 25), (0, 10), (2, 3)]) == 15


def _gpu_step():
    """A made-up step of 100 µs: two launches on the host; kernels on two streams overlapping for 10 µs; a copy; a
    kernel of the next step, outside the window."""
    return [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "ts": 1000, "dur": 100, "tid": 1},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1001, "dur": 20, "tid": 1},
        {"ph": "X", "cat": "cpu_op", "name": "MmBackward0", "ts": 1030, "dur": 20, "tid": 2},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 1002, "dur": 3, "tid": 1},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 1031, "dur": 3, "tid": 2},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "ts": 1060, "dur": 40, "tid": 1},
        {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 1010, "dur": 20, "tid": 7},
        {"ph": "X", "cat": "kernel", "name": "gemm_bwd", "ts": 1020, "dur": 20, "tid": 8},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD", "ts": 1050, "dur": 5, "tid": 7},
        {"ph": "X", "cat": "kernel", "name": "next", "ts": 1200, "dur": 5, "tid": 7},
    ]


def test_a_steps_figures_come_from_its_window():
    events = _gpu_step()
    (step,) = TL.profiler_steps(events)
    s = TL.step_stats(events, step)
    assert s["wall_ms"] == pytest.approx(0.1)
    assert s["gpu_sum_ms"] == pytest.approx(0.045)  # 20 + 20 + 5 µs
    assert s["gpu_busy_ms"] == pytest.approx(0.035)  # [1010, 1040) and [1050, 1055)
    assert s["gpu_idle_fraction"] == pytest.approx(0.65)
    assert s["kernels"] == 2 and s["launch_calls"] == 2


def test_the_pictures_rows_are_threads_launches_and_streams():
    events = _gpu_step()
    rows = TL.lanes(events, TL.profiler_steps(events)[0])
    assert list(rows) == ["CPU: main thread", "CPU: autograd thread", "CPU: kernel launches", "GPU: stream 7",
                          "GPU: stream 8"]
    assert rows["GPU: stream 7"] == [(0.01, 0.02, "gemm"), (0.05, 0.005, "Memcpy DtoD")]


def _gpu_doc(cpu_data):
    """The CPU run's JSON dressed as a GPU run (figures made up), for the block's GPU form."""
    doc = json.loads(json.dumps(cpu_data))
    doc.update(device="cuda", gpu="NVIDIA TEST")
    for v, (busy, idle, k) in zip(TL.VARIANTS, ((1.5, 0.75, 120), (2.0, 0.6, 90))):
        doc["variants"][v].update(gpu_busy_ms=busy, gpu_idle_fraction=idle, kernels=k)
    return doc


def test_the_block_states_the_gpu_figures_and_the_picture(cpu_run):
    text = TL.table(_gpu_doc(cpu_run[1]))
    assert "NVIDIA TEST" in text and f"]({TL.PICTURE})" in text
    assert "| course op |" in text and "| 1.50 | 75% | 120 |" in text
    assert "host-bound" in text and "120 kernels per step to SDPA's 90" in text
    cpu_text = TL.table(cpu_run[1])
    assert "| — | — | — |" in cpu_text and "host-bound" not in cpu_text


def test_insert_writes_the_block_and_picture_once(cpu_run, tmp_path, monkeypatch):
    out, data = cpu_run
    sys.path.insert(0, str(ROOT / "scripts"))
    import update_readmes

    monkeypatch.setattr(update_readmes, "ROOT", tmp_path)  # it names the file it wrote relative to its ROOT
    lesson = tmp_path / "day18" / "README.md"
    lesson.parent.mkdir()
    lesson.write_text(f"# Day 18\n\n<!-- {TL.BLOCK}:begin -->\n{TL.PLACEHOLDER}\n<!-- {TL.BLOCK}:end -->\n\nAfter.\n")
    saved = tmp_path / "run"
    saved.mkdir()
    (saved / "t.json").write_text(json.dumps(_gpu_doc(data)))
    (saved / TL.PICTURE).write_bytes((out / TL.PICTURE).read_bytes())
    assert TL.insert(saved / "t.json", lesson) == 0
    first = lesson.read_text()
    assert TL.PLACEHOLDER not in first and TL.table(_gpu_doc(data)) in first and first.endswith("\n\nAfter.\n")
    assert (lesson.parent / TL.PICTURE).read_bytes()[:4] == b"\x89PNG"
    assert TL.insert(saved / "t.json", lesson) == 0
    assert lesson.read_text() == first
    (saved / TL.PICTURE).unlink()  # the picture already beside the lesson will do
    assert TL.insert(saved / "t.json", lesson) == 0
    (lesson.parent / TL.PICTURE).unlink()
    with pytest.raises(TL.UsageError, match="no day18-timeline.png"):
        TL.insert(saved / "t.json", lesson)


@pytest.mark.parametrize("content, said", [(None, "cannot read it"), ("{not json", "not JSON"),
                                           ('{"variants": {}}', "not a complete day18-timeline.json"),
                                           ("[1, 2]", "not a complete day18-timeline.json")])
def test_bad_insert_input_is_a_usage_error(tmp_path, content, said):
    path = tmp_path / "day18-timeline.json"
    if content is not None:
        path.write_text(content)
    before = (ROOT / "days" / "day18" / "README.md").read_text()
    r = _run("--insert", path, timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    assert said in r.stderr and "Traceback" not in r.stderr
    assert (ROOT / "days" / "day18" / "README.md").read_text() == before


def test_no_gpu_is_a_usage_error(tmp_path):
    r = _run(tmp_path / "out", timeout=60)  # --device cuda, the default, on this CPU-only machine
    if r.returncode != 2:
        pytest.skip("this machine has a GPU")
    assert "--device cpu" in r.stderr and "Traceback" not in r.stderr


def test_without_nsys_the_record_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no nsys on it
    assert TL.run_nsys(tmp_path, ROOT / "solutions" / "day18", device="cpu") == {
        "ran": False, "why": "nsys is not on PATH on this machine"}


FAKE_NSYS = """#!/bin/bash
# nsys stand-in: its version, or the command after `profile` and its options, then a line for the stats
[ "$1" = "--version" ] && { echo "NVIDIA Nsight Systems version fake"; exit 0; }
[ "$1" = "profile" ] || exit 9
shift; printf '%s\\n' "$@" >"$(dirname "$0")/args"
while [ $# -gt 0 ]; do case "$1" in -o) shift 2;; -*) shift;; *) break;; esac; done
"$@" && echo "fake stats: the child ran"
"""


def test_nsys_reruns_the_script_as_its_child_and_keeps_the_stats(tmp_path, monkeypatch):
    """The command line the GPU run gives nsys, with a stand-in nsys that runs the child (on the CPU here)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nsys").write_text(FAKE_NSYS)
    (bin_dir / "nsys").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{__import__('os').environ['PATH']}")
    r = TL.run_nsys(tmp_path, ROOT / "solutions" / "day18", device="cpu", timeout_s=200)
    stats = (tmp_path / "day18-nsys-stats.txt").read_text()
    assert r["ran"] and r["returncode"] == 0, stats
    assert r["version"] == "NVIDIA Nsight Systems version fake"
    assert "nsys child: 2 variants, 5 steps each" in stats and "fake stats: the child ran" in stats
    args = (bin_dir / "args").read_text().split("\n")
    assert "--stats=true" in args and "--nsys-child" in args and "--trace=cuda,nvtx,osrt" in args


def test_the_picture_draws_gpu_streams(tmp_path):
    """The GPU form of the picture (host threads, launches, two streams) from the made-up step."""
    events = _gpu_step()
    step = TL.profiler_steps(events)[0]
    d = {**TL.step_stats(events, step), "lanes": TL.lanes(events, step)}
    TL.picture({"gpu": "NVIDIA TEST", "variants": {"op": d, "sdpa_flash": d}}, tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
