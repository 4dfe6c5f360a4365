"""GPU test: an op captured into a CUDA graph and replayed gives what its eager call gives. A launcher that allocates,
zeroes or chooses its kernels per call must stay right when a graph replays one call's choices: day 05's split rows
take the one pass eagerly (a cooperative launch, a workspace kept per stream) and kernels A and B under capture."""
import pytest

from tests.conftest import lesson_table

pytestmark = pytest.mark.gpu

# (day, exercise, shape): the split rows (64 x 262144, 16 x 1048576) and a block-per-row shape beside them.
CASES = [("day05", "softmax", (64, 262144)), ("day05", "softmax", (16, 1048576)), ("day05", "softmax", (512, 4096))]
# Relative L2 error against fp64 allowed: several times a correct kernel's rounding (unit roundoff 6e-8, 4.9e-4 and
# 3.9e-3), far below what a wrong or unwritten output gives.
REL_L2 = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 1.6e-2}


@pytest.mark.parametrize("dtype", sorted(REL_L2))
@pytest.mark.parametrize("day, exercise, shape", CASES, ids=[f"{d}-{e}-{r}x{c}" for d, e, (r, c) in CASES])
def test_an_op_replayed_from_a_cuda_graph_gives_its_eager_result(day, exercise, shape, dtype):
    import torch

    fn = getattr(lesson_table().build_module(torch, day, exercise), exercise)
    dt = getattr(torch, dtype)
    g = torch.Generator(device="cuda").manual_seed(11)
    x = (torch.randn(shape, device="cuda", generator=g) * 3.0).to(dt)
    eager = torch.full_like(x, float("nan"))
    fn(x, eager)
    out = torch.full_like(x, float("nan"))
    side = torch.cuda.Stream()  # capture needs the op warmed up off the default stream first
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn(x, out)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn(x, out)
    for _ in range(2):  # replayed twice: a workspace the graph reuses must be as the first replay left it
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert not torch.isnan(out).any(), "the replayed graph left elements unwritten"
        ref = torch.softmax(x.double(), dim=-1)
        rel = ((out.double() - ref).norm() / ref.norm()).item()
        assert rel <= REL_L2[dtype], f"replayed: relative L2 error {rel:.3g} > {REL_L2[dtype]}"
    ref_eager = ((eager.double() - ref).norm() / ref.norm()).item()
    assert ref_eager <= REL_L2[dtype], f"eager: relative L2 error {ref_eager:.3g} > {REL_L2[dtype]}"
    if dtype == "float32":  # kernels A and B merge in the one pass's order: the same bits
        assert torch.equal(out, eager)
