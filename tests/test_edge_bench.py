"""scripts/edge_bench.py (issue 37's timing outside the grader): without a GPU it says what it needs and exits 2;
its table reads a saved run."""
import importlib.util
import subprocess
import sys

import pytest

from tests.conftest import ROOT, has_gpu

spec = importlib.util.spec_from_file_location("edge_bench", ROOT / "scripts" / "edge_bench.py")
edge = importlib.util.module_from_spec(spec)
spec.loader.exec_module(edge)


@pytest.mark.skipif(has_gpu(), reason="exercises the no-GPU path")
def test_without_a_gpu_it_says_so_and_exits_2(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "edge_bench.py"), str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "needs a CUDA GPU" in r.stderr and "Traceback" not in r.stderr


def test_the_table_gives_rates_and_ratios_of_a_saved_run():
    ours, lib = {"do_bench_ms": 2.0, "events_ms": 2.1}, {"do_bench_ms": 1.5, "events_ms": 1.5}
    row = edge._row("attention_bwd", "4x16x4096x128", "bf16", ours, {"flash": lib, "cudnn": None}, 4e12, "TFLOP/s", 0.02)
    assert row["ours_rate"] == pytest.approx(2000) and row["x_flash"] == pytest.approx(0.75) and "x_cudnn" not in row
    text = edge.table({"gpu": "G", "torch": "t", "date": "d", "rows": [row]})
    assert "| attention_bwd | 4x16x4096x128 | bf16 | 2.000 | 2000 TFLOP/s | 0.75 | - | 1.05 | 2.0e-02 |" in text
