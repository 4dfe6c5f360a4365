import pytest
import torch

from grader.check.compare import compare, poison, poisoned_mask, same_bits

TOL = {  # course.yaml's softmax tolerances
    torch.float32: dict(atol=1e-8, rtol=1e-5, rel_l2=1e-5),
    torch.float16: dict(atol=1e-7, rtol=1.5e-3, rel_l2=1e-3),
    torch.bfloat16: dict(atol=1e-6, rtol=1e-2, rel_l2=8e-3),
}
DTYPES = list(TOL)


def ref_softmax(rows, cols, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(torch.randn(rows, cols, generator=g, dtype=torch.float64) * 3, -1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_correctly_rounded_output_passes(dtype):
    ref = ref_softmax(64, 1000)
    c = compare(ref.to(dtype), ref, **TOL[dtype])
    assert c.ok and c.category == "pass"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cols", [7, 4096, 262144])
def test_all_zeros_never_passes(dtype, cols):
    # KernelBench's hole: with wide rows every output is below a fixed atol; the relative L2 bound closes it.
    ref = ref_softmax(2, cols)
    c = compare(torch.zeros(2, cols, dtype=dtype), ref, **TOL[dtype])
    assert not c.ok and c.category == "mismatch" and c.rel_l2 == pytest.approx(1.0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_untouched_output_is_not_implemented(dtype):
    out = torch.empty(5, 9, dtype=dtype)
    poison(out)
    assert poisoned_mask(out).all()
    c = compare(out, ref_softmax(5, 9), **TOL[dtype])
    assert c.category == "not_implemented" and "never written" in c.message


@pytest.mark.parametrize("dtype", DTYPES)
def test_partial_write_names_the_first_missing_element(dtype):
    ref = ref_softmax(6, 33)
    out = ref.to(dtype)
    poison(out[4:])
    c = compare(out, ref, **TOL[dtype])
    assert c.category == "unwritten" and c.worst_index == [4, 0] and "66 of 198" in c.message


def test_computed_nan_is_not_mistaken_for_poison():
    ref = ref_softmax(3, 5)
    out = ref.float()
    out[1, 2] = float("nan")  # what an unstabilized softmax produces: a quiet NaN, not the poison pattern
    c = compare(out, ref, **TOL[torch.float32])
    assert c.category == "nonfinite" and c.worst_index == [1, 2]


def test_infinities_must_match_exactly():
    ref = torch.tensor([[float("inf"), 1.0], [0.5, float("-inf")]], dtype=torch.float64)
    assert compare(ref.float(), ref, **TOL[torch.float32]).ok
    bad = ref.float().clone()
    bad[1, 1] = 0.0
    assert compare(bad, ref, **TOL[torch.float32]).category == "nonfinite"


def test_mismatch_reports_worst_index_and_fraction():
    ref = ref_softmax(4, 100)
    out = ref.float()
    out[2, 17] += 0.01
    c = compare(out, ref, **TOL[torch.float32])
    assert not c.ok and c.worst_index == [2, 17] and c.mismatches == 1 and c.mismatch_frac == pytest.approx(1 / 400)
    assert "worst at [2, 17]" in c.message


def test_small_relative_errors_within_tolerance_pass():
    ref = ref_softmax(4, 100)
    out = (ref * (1 + 5e-6)).float()
    assert compare(out, ref, **TOL[torch.float32]).ok
    out = (ref * (1 + 5e-5)).float()
    assert not compare(out, ref, **TOL[torch.float32]).ok


def test_same_bits_distinguishes_nan_payloads_and_signed_zero():
    a = torch.tensor([0.0, 1.0])
    b = torch.tensor([-0.0, 1.0])
    assert not same_bits(a, b) and same_bits(a, a.clone())


def test_l2_floor_holds_a_near_zero_reference_to_the_precision_of_its_scale():
    """The sweep's case: a one-key logsumexp is that key's score, here -0.0043, and a correct fp32 kernel is 1.1e-7
    off. Relative to its own norm that is 2.5e-5, over fp32 attention's rel_l2 of 2e-5; relative to values of size
    1 (the scores'), 1.1e-7. The floor changes nothing where the reference is larger than it."""
    fp32_attention = dict(atol=1.5e-4, rtol=1e-4, rel_l2=2e-5)
    ref = torch.tensor([-0.00429634], dtype=torch.float64)
    got = torch.tensor([-0.00429623], dtype=torch.float32)
    plain = compare(got, ref, **fp32_attention)
    assert not plain.ok and plain.mismatches == 0 and "relative L2 error" in plain.message
    floored = compare(got, ref, **fp32_attention, l2_floor=1.0)
    assert floored.ok and floored.tol_ratio < 0.01
    # a real error of an lse (a term of log l lost: 0.69 = ln 2) still fails, floor or not
    assert not compare(got - 0.69, ref, **fp32_attention, l2_floor=1.0).ok
    big = torch.linspace(3.0, 8.0, 1000, dtype=torch.float64)
    off = (big * (1 + 3e-5)).float()  # 1.5x the rel_l2 bound, inside the elementwise bound
    assert not compare(off, big, **fp32_attention).ok and not compare(off, big, **fp32_attention, l2_floor=1.0).ok


def test_an_output_spec_gives_its_l2_floor_to_every_dtype_of_the_exercise(course):
    ex = course.day("day10").exercises[0]
    for d in ex.dtypes:
        assert ex.tolerance("lse", d).l2_floor == 1.0 and ex.tolerance("o", d).l2_floor == 0.0
        assert ex.tolerance("lse", d).rel_l2 == ex.tolerances[d].rel_l2


def test_same_bits_compares_integer_inputs_of_every_width():
    """An input such as attention dropout's RNG state (int64 seed and offset) is checked for mutation too."""
    for dtype in (torch.int64, torch.int32, torch.int16, torch.int8, torch.float64):
        a = torch.tensor([3, -5], dtype=dtype)
        b = a.clone()
        b[1] = 7
        assert same_bits(a, a.clone()) and not same_bits(a, b)
