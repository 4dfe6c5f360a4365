"""The dropout task's reference (tasks/attention_dropout.py): p = 0 is attention; the mask is the one tasks/philox.py
draws for the case's (seed, offset); the backward's formulas, which a fused kernel computes, equal fp64 autograd."""
import pytest
import torch

from tasks import attention
from tasks import attention_dropout as task
from tasks.philox import keep_mask


def _case(shape=(2, 3, 37, 16), causal=False, p=0.2, seed=5):
    g = torch.Generator().manual_seed(seed)
    return task.make_inputs(shape, torch.float32, g, "cpu", causal=causal, p=p)


@pytest.mark.parametrize("causal", [False, True])
def test_no_dropout_is_attention(causal):
    x = _case(causal=causal, p=0.0)
    o, lse = task.reference(x["q"], x["k"], x["v"], x["rng"], causal, p=0.0)
    o_ref, lse_ref = attention.reference(x["q"], x["k"], x["v"], causal)
    assert torch.allclose(o, o_ref, rtol=0, atol=1e-12) and torch.equal(lse, lse_ref)


def test_dropout_scales_the_kept_probabilities_and_leaves_lse():
    x = _case(p=0.3)
    o, lse = task.reference(x["q"], x["k"], x["v"], x["rng"], False, p=0.3)
    seed, offset = (int(v) for v in x["rng"])
    m = keep_mask(seed, offset, 2, 3, 37, 37, 0.3).double()
    s = x["q"].double() @ x["k"].double().transpose(-1, -2) / 4.0
    probs = torch.softmax(s, dim=-1)
    assert torch.allclose(o, (probs * m / 0.7) @ x["v"].double(), rtol=0, atol=1e-12)
    assert torch.allclose(lse, torch.logsumexp(s, dim=-1), rtol=0, atol=1e-12)
    assert 0.6 < m.mean().item() < 0.8


def test_the_seed_and_offset_are_drawn_per_case():
    a, b = _case(seed=1), _case(seed=2)
    assert not torch.equal(a["rng"], b["rng"]) and 0 <= int(a["rng"][1]) < 2**31
    o_a = task.reference(a["q"], a["k"], a["v"], a["rng"], False, 0.2)[0]
    other = a["rng"].clone()
    other[1] += 1
    assert not torch.allclose(o_a, task.reference(a["q"], a["k"], a["v"], other, False, 0.2)[0])


@pytest.mark.parametrize("causal", [False, True])
def test_the_backward_formulas_are_autograds(causal):
    x = _case(causal=causal, p=0.25)
    dout = torch.randn(x["q"].shape, generator=torch.Generator().manual_seed(9))
    auto = task.backward_reference(x["q"], x["k"], x["v"], x["rng"], dout, causal, 0.25)
    formula = task.backward_by_formula(x["q"], x["k"], x["v"], x["rng"], dout, causal, 0.25)
    for a, f in zip(auto, formula):
        assert torch.allclose(a, f, rtol=1e-10, atol=1e-12)


def test_the_backward_tasks_saved_forward_is_the_dropped_one_and_its_reference_autograds():
    from tasks import attention_dropout_bwd as bwd

    g = torch.Generator().manual_seed(3)
    x = bwd.make_inputs((1, 2, 29, 16), torch.float32, g, "cpu", causal=True, p=0.3)
    o, lse = task.reference(x["q"], x["k"], x["v"], x["rng"], True, 0.3)
    assert torch.equal(x["o"], o.float()) and torch.equal(x["lse"], lse.float())
    got = bwd.reference(**x, causal=True, p=0.3)
    want = task.backward_reference(x["q"], x["k"], x["v"], x["rng"], x["dout"], True, 0.3)
    assert all(torch.equal(a, b) for a, b in zip(got, want))
    assert set(bwd.make_outputs(x)) == {"dq", "dk", "dv"}


def test_the_exposed_mask_probe_shows_every_kept_bit_in_o():
    # N = d: key j's value row is 8·e_j, so o[i, j] = 8 / (1 − p) · P[i, j] · M[i, j]: nonzero exactly where kept.
    x = _case(shape=(1, 2, 64, 64), p=0.5)
    probed = task.probes["exposed_mask"](x, None)
    o, _ = task.reference(probed["q"], probed["k"], probed["v"], probed["rng"], False, 0.5)
    seed, offset = (int(v) for v in x["rng"])
    assert torch.equal(o != 0, keep_mask(seed, offset, 1, 2, 64, 64, 0.5))
