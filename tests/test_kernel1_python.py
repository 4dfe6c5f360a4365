"""Day 10's Kernel 1 with no parallelism (days/day10/kernel1_python.py, a given file): the loops agree with the
grader's fp64 reference (tasks.attention), and the textbook formula without the max overflows exactly where the
type of its exponentials ends: above log(FLT_MAX) in fp32, above log(DBL_MAX) in Python's fp64."""
import importlib.util
import math
import struct
import sys

import pytest
import torch

from tasks import attention as task
from tests.conftest import ROOT

spec = importlib.util.spec_from_file_location("kernel1_python", ROOT / "days" / "day10" / "kernel1_python.py")
k1 = importlib.util.module_from_spec(spec)
spec.loader.exec_module(k1)

LOG_FLT_MAX = math.log(struct.unpack("<f", struct.pack("<I", 0x7F7FFFFF))[0])  # 88.72...
LOG_DBL_MAX = math.log(sys.float_info.max)  # 709.78...
# The loops and the reference both sum in fp64, in different orders: a few ulps of the largest term, times N.
FP64_ATOL = 1e-12


def _inputs(shape, seed, sharp):
    gen = torch.Generator().manual_seed(seed)
    inputs = task.make_inputs(shape, torch.float32, gen, "cpu")
    return task.probes["sharp"](inputs, gen) if sharp else inputs


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape,sharp", [((1, 2, 33, 8), False), ((2, 1, 17, 16), False), ((1, 2, 40, 8), True)])
def test_the_loops_agree_with_the_days_fp64_reference(shape, sharp, causal):
    x = _inputs(shape, 1, sharp)
    ref_o, ref_lse = task.reference(x["q"], x["k"], x["v"], causal)
    o, lse = k1.attention(x["q"], x["k"], x["v"], causal)
    assert o.shape == ref_o.shape and lse.shape == ref_lse.shape
    assert (o - ref_o).abs().max().item() < FP64_ATOL
    assert (lse - ref_lse).abs().max().item() < FP64_ATOL * max(1.0, ref_lse.abs().max().item())


@pytest.mark.parametrize("exp,limit", [(k1.exp_fp32, LOG_FLT_MAX), (k1.exp_fp64, LOG_DBL_MAX)])
def test_without_the_max_a_row_turns_nan_once_a_score_passes_the_log_of_the_largest_number(exp, limit):
    # d = 1, so the score of key j is q * k_j exactly (scale 1): one key scores `score`, the other 0.
    k, v = [[1.0], [0.0]], [[2.0], [-1.0]]
    for score in (math.floor(limit), math.ceil(limit)):
        q = [[float(score)]]
        right, _ = k1.attention_head(q, k, v, exp=exp)  # the max subtracted: always finite
        expected = (2.0 - math.exp(-score)) / (1.0 + math.exp(-score))
        assert right[0][0] == pytest.approx(expected, rel=1e-6)
        textbook, lse = k1.attention_head(q, k, v, subtract_max=False, exp=exp)
        if score < limit:
            assert textbook[0][0] == pytest.approx(expected, rel=1e-6)
        else:
            assert math.isnan(textbook[0][0]) and lse[0] == math.inf


def test_the_sharp_probe_breaks_exactly_the_fp32_rows_whose_max_passes_the_limit():
    x = _inputs((1, 2, 48, 16), 0, sharp=True)
    q, kk = x["q"].double(), x["k"].double()
    row_max = (q @ kk.transpose(-1, -2) / math.sqrt(q.shape[-1])).amax(dim=-1)
    over = row_max > LOG_FLT_MAX
    assert over.any() and not over.all()  # scores of standard deviation 30: some rows pass 88.72, most do not
    o, _ = k1.attention(x["q"], x["k"], x["v"], subtract_max=False, exp=k1.exp_fp32)
    assert torch.equal(o.isnan().any(dim=-1), over)
    assert torch.isfinite(o[~over]).all()
    # The same rows in fp64 (Python's float) stay finite: 709.78 is far away, so a CPU check in fp64 hides the bug.
    o64, _ = k1.attention(x["q"], x["k"], x["v"], subtract_max=False, exp=k1.exp_fp64)
    ref_o, _ = task.reference(x["q"], x["k"], x["v"])
    assert (o64 - ref_o).abs().max().item() < FP64_ATOL


def test_the_file_runs_as_the_lesson_says(tmp_path):
    import subprocess

    r = subprocess.run([sys.executable, str(ROOT / "days" / "day10" / "kernel1_python.py")], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)  # it takes about 2 s on one core
    assert r.returncode == 0, r.stdout + r.stderr
    assert "rows NaN" in r.stdout and "no max, exp in fp32" in r.stdout
