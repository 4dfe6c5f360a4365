"""Day 11, optional step: kernel 3b again, in CuTe DSL (CUTLASS's Python front end; `pip install -e ".[cute]"`).

c[M, N] = a[M, K] @ b[K, N], row-major, fp16 or bf16, fp32 accumulation, on Hopper (sm_90a): the plan of
`matmul_wgmma` in matmul_wgmma.cu, written with CuTe's pieces instead of inline PTX.

- The tile is 128 x 256 x 64 and there are 4 stages of 48 KiB. A stage's A tile is K-major ([128][64], k
  contiguous) and its B tile MN-major ([64][256], n contiguous), both in the 128-byte swizzle that wgmma reads:
  `make_smem_layout_atom` gives the 8-row swizzled atom, `tile_to_shape` repeats it over the tile and the stages.
- TMA brings each tile (`make_tiled_tma_atom`: the tensor map, built on the host when the kernel is launched);
  elements outside the matrices arrive as zeros, so ragged M, N and K need nothing in the main loop.
- Three warpgroups: warpgroup 0 loads (one warp issues the copies), warpgroups 1 and 2 multiply 64 rows each with
  wgmma m64n256k16 (`MmaF16BF16Op`), reading both operands from shared memory. Between them, `PipelineTmaAsync`:
  a full and an empty mbarrier per stage, their phases kept by the pipeline's producer and consumer states.
- The epilogue writes the accumulators from registers, guarded by the matrix's bounds.

CuTe names B by (N, K), whatever its memory order: the kernel sees b[K, N] through a transposed view, whose
layout says that n is contiguous. TMA needs 16-byte-aligned rows: an operand whose row is not a multiple of 8
elements (or that starts at an unaligned address) is first copied into rows padded to that (a device-to-device
cudaMemcpy2D), which only the small ragged shapes of the correctness cases take.
"""
from __future__ import annotations

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import torch
from cutlass import Float32
from cutlass.cute.nvgpu import OperandMajorMode, cpasync, warpgroup
from cutlass.cute.runtime import from_dlpack

BM, BN, BK = 128, 256, 64  # the block's tile of C, and the K of one stage
STAGES = 4                 # 4 x (16 KiB of A + 32 KiB of B)
CONSUMERS = 2              # warpgroups 1 and 2 multiply, 64 rows of the tile each; warpgroup 0 loads
THREADS = 128 * (1 + CONSUMERS)


@cute.kernel
def _gemm(mma: cute.TiledMma, tma_a: cute.CopyAtom, mA: cute.Tensor, tma_b: cute.CopyAtom, mB: cute.Tensor,
          mC: cute.Tensor, a_layout: cute.ComposedLayout, b_layout: cute.ComposedLayout):
    tid, _, _ = cute.arch.thread_idx()
    bm, bn, _ = cute.arch.block_idx()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    dtype = mC.element_type

    smem = cutlass.memory.SmemAllocator()
    barriers = smem.allocate_array(cutlass.Int64, 2 * STAGES)  # full[STAGES], then empty[STAGES]
    sA = smem.allocate_tensor(dtype, a_layout.outer, byte_alignment=1024, swizzle=a_layout.inner)  # (BM, BK, STAGES)
    sB = smem.allocate_tensor(dtype, b_layout.outer, byte_alignment=1024, swizzle=b_layout.inner)  # (BN, BK, STAGES)

    # full[s]: one arrival (the producer's, with the stage's bytes to expect); empty[s]: one per consumer warp.
    pipe = pipeline.PipelineTmaAsync.create(
        barrier_storage=barriers, num_stages=STAGES,
        producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 4 * CONSUMERS),
        tx_count=cute.size_in_bytes(dtype, cute.slice_(a_layout, (None, None, 0)))
        + cute.size_in_bytes(dtype, cute.slice_(b_layout, (None, None, 0))),
        cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)))

    gA = cute.local_tile(mA, (BM, BK), (bm, None))  # (BM, BK, k-tiles): this block's rows of A
    gB = cute.local_tile(mB, (BN, BK), (bn, None))  # (BN, BK, k-tiles): its columns of B
    k_tiles = cute.size(gA, mode=[2])

    if warp // 4 == 0:  # warpgroup 0, the producer: gives most of its registers to the consumers
        cute.arch.setmaxregister_decrease(40)
        if warp == 0:
            # TMA's view of a stage: one copy instruction per box (A: one [128][64] box; B: four [64][64]).
            tAsA, tAgA = cpasync.tma_partition(tma_a, 0, cute.make_layout(1), cute.group_modes(sA, 0, 2),
                                               cute.group_modes(gA, 0, 2))
            tBsB, tBgB = cpasync.tma_partition(tma_b, 0, cute.make_layout(1), cute.group_modes(sB, 0, 2),
                                               cute.group_modes(gB, 0, 2))
            producer = pipe.make_producer()
            # Contract: for each K-tile k, acquire the next stage (the call waits until the stage is empty and arms
            # its full barrier with the stage's bytes), then copy tile k of A and of B into it, on that barrier.
            # YOUR CODE HERE: the producer's loop over the K-tiles
    else:  # warpgroups 1 and 2, the consumers
        cute.arch.setmaxregister_increase(232)
        thr = mma.get_slice(tid - 128)
        tCrA = mma.make_fragment_A(thr.partition_A(sA))  # wgmma descriptors: (MMA, m, k-block, stage)
        tCrB = mma.make_fragment_B(thr.partition_B(sB))
        tCgC = thr.partition_C(cute.local_tile(mC, (BM, BN), (bm, bn)))  # this thread's 128 elements of C
        coords = cute.make_identity_tensor(mC.shape)  # (row, column) of every element of C
        tCcC = thr.partition_C(cute.local_tile(coords, (BM, BN), (bm, bn)))
        acc = cute.make_rmem_tensor(tCgC.shape, Float32)
        acc.fill(0.0)
        mma.set(warpgroup.Field.ACCUMULATE, True)
        # Contract: for each K-tile, wait for its stage, issue its BK / 16 wgmma into acc as one group, and keep one
        # group in flight: a stage goes back to the producer (empty barrier) only once the group reading it has
        # retired. Then the epilogue: acc rounded to c's dtype, each element stored only if it lies inside c.
        # YOUR CODE HERE: the consumers' main loop and the guarded epilogue


@cute.jit
def _launch(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, stream):
    dtype = a.element_type
    bt = cute.make_tensor(b.iterator, cute.select(b.layout, mode=[1, 0]))  # b as CuTe's (N, K), n contiguous
    a_layout = cute.tile_to_shape(warpgroup.make_smem_layout_atom(warpgroup.SmemLayoutAtomKind.K_SW128, dtype),
                                  (BM, BK, STAGES), order=(0, 1, 2))
    b_layout = cute.tile_to_shape(warpgroup.make_smem_layout_atom(warpgroup.SmemLayoutAtomKind.MN_SW128, dtype),
                                  (BN, BK, STAGES), order=(1, 0, 2))
    tma_a, mA = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a,
                                            cute.slice_(a_layout, (None, None, 0)), (BM, BK))
    tma_b, mB = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), bt,
                                            cute.slice_(b_layout, (None, None, 0)), (BN, BK))
    mma = cute.make_tiled_mma(cute.make_mma_atom(warpgroup.MmaF16BF16Op(
        dtype, Float32, (64, BN, 16), warpgroup.OperandSource.SMEM, OperandMajorMode.K, OperandMajorMode.MN)),
        (CONSUMERS, 1, 1))
    grid = (cute.ceil_div(c.shape[0], BM), cute.ceil_div(c.shape[1], BN), 1)
    _gemm(mma, tma_a, mA, tma_b, mB, c, a_layout, b_layout).launch(grid=grid, block=(THREADS, 1, 1), stream=stream)


_compiled: dict = {}  # one build per dtype: the shapes are dynamic


def _cute(t: torch.Tensor, align: int):
    return from_dlpack(t, assumed_align=align).mark_layout_dynamic(leading_dim=1)


def _stream():
    import cuda.bindings.driver as driver

    return driver.CUstream(torch.cuda.current_stream().cuda_stream)


def compile_for(dtype: torch.dtype, device: str = "cuda"):
    """The compiled launch for one dtype (built on first use; `device="cpu"` compiles without a GPU: CI's check)."""
    if dtype not in (torch.float16, torch.bfloat16):
        raise TypeError(f"matmul_cute: wgmma multiplies fp16 or bf16, not {dtype}")
    key = (dtype, device)
    if key not in _compiled:
        import cuda.bindings.driver as driver

        a = torch.empty((128, 64), dtype=dtype, device=device)
        b = torch.empty((64, 256), dtype=dtype, device=device)
        c = torch.empty((128, 256), dtype=dtype, device=device)
        # Always sm_90a, the only target with wgmma, whatever GPU (or none) this machine has.
        _compiled[key] = cute.compile[cute.GPUArch("sm_90a")](_launch, _cute(a, 16), _cute(b, 16), _cute(c, 2),
                                                              driver.CUstream(0))
    return _compiled[key]


def _tma_ready(t: torch.Tensor) -> torch.Tensor:
    """t itself if TMA can read it (rows a multiple of 16 bytes, 16-byte-aligned start), else a copy whose rows are
    padded to 8 elements, made by a device-to-device cudaMemcpy2D on torch's current stream."""
    if t.stride(0) % 8 == 0 and t.data_ptr() % 16 == 0:
        return t
    import cuda.bindings.runtime as rt

    rows, cols = t.shape
    pitch = (cols + 7) // 8 * 8
    padded = torch.empty((rows, pitch), dtype=t.dtype, device=t.device)
    size = t.element_size()
    (err,) = rt.cudaMemcpy2DAsync(padded.data_ptr(), pitch * size, t.data_ptr(), t.stride(0) * size, cols * size,
                                  rows, rt.cudaMemcpyKind.cudaMemcpyDeviceToDevice,
                                  torch.cuda.current_stream().cuda_stream)
    if err != rt.cudaError_t.cudaSuccess:
        raise RuntimeError(f"matmul_cute: cudaMemcpy2DAsync failed: {err}")
    return padded[:, :cols]


def matmul_cute(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> None:
    """c = a @ b on an H100/H200, on torch's current stream."""
    if a.dtype not in (torch.float16, torch.bfloat16) or b.dtype != a.dtype or c.dtype != a.dtype:
        raise TypeError(f"matmul_cute: a, b and c must share fp16 or bf16 (wgmma), got {a.dtype}, {b.dtype}, "
                        f"{c.dtype}")
    if not (a.dim() == b.dim() == c.dim() == 2):
        raise ValueError(f"matmul_cute: a, b and c must be 2-D, got {a.dim()}-D, {b.dim()}-D and {c.dim()}-D")
    (m, k), (k2, n) = a.shape, b.shape
    if k2 != k or tuple(c.shape) != (m, n):
        raise ValueError(f"matmul_cute: shapes {tuple(a.shape)} @ {tuple(b.shape)} -> {tuple(c.shape)} do not match")
    if not (a.is_contiguous() and b.is_contiguous() and c.is_contiguous()):
        raise ValueError("matmul_cute: a, b and c must be contiguous (row-major)")
    if not (a.is_cuda and b.device == a.device and c.device == a.device):
        raise ValueError(f"matmul_cute: a, b and c must be on one CUDA device, got {a.device}, {b.device}, {c.device}")
    if torch.cuda.get_device_capability(a.device) != (9, 0):
        raise RuntimeError("matmul_cute: wgmma needs a GPU of compute capability 9.0 (H100/H200), got "
                           f"{torch.cuda.get_device_name(a.device)}")
    if m == 0 or n == 0:
        return
    if k == 0:
        c.zero_()
        return
    compile_for(a.dtype)(_cute(_tma_ready(a), 16), _cute(_tma_ready(b), 16), _cute(c, 2), _stream())
