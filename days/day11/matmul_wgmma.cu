// Day 11, kernel 3 (Hopper): matmul_wgmma, the same product with sm_90a's warpgroup MMA. It exists because on an
// H100/H200 mma.sync (kernel 2) cannot reach the tensor cores' rate: cuBLAS runs wgmma, and so must we to come
// within reach of it. Built with -gencode=arch=compute_90a,code=sm_90a (course.yaml, this exercise's
// extra_cuda_cflags); on any other GPU, or a build without sm_90a, the op runs kernel 2 (matmul_mma) instead.
//
// Kernel 3a, what changes vs kernel 2:
//   - wgmma.mma_async.sync.aligned.m64n256k16: one instruction, issued by a whole warpgroup (4 warps, 128
//     threads), multiplies a 64 x 16 tile of A by a 16 x 256 tile of B into a 64 x 256 fp32 accumulator spread
//     over the warpgroup's registers (128 floats per thread: warp w of the group holds rows 16w .. 16w+15 in
//     mma.sync's C layout, c0..c3 for every 8 columns). 16 times the work of an m16n8k16 per instruction.
//   - Both operands come straight from shared memory: no ldmatrix, no fragments in registers. Each is named by
//     a 64-bit matrix descriptor (start address, two strides, swizzle mode) instead of per-lane addresses.
//   - It is asynchronous: wgmma_commit() closes a group of wgmma, wgmma_wait<N>() waits until at most N groups
//     are pending. The tensor cores work while the warps go on issuing the next copies.
//   - Shared memory is written in the layout the descriptors describe, the "128-byte swizzle": 128-byte rows
//     (64 elements), and 16-byte chunk c of row r stored at chunk c ^ (r % 8). That is kernel 2's swizzle for
//     rows of 8 chunks, now imposed by the hardware. A tile [128][64] (K-major: 64 k per row) is 16 swizzle atoms
//     of 8 rows x 128 B, 1024 B apart (the descriptor's stride byte offset, SBO); B [64 k][256 n] is stored as
//     four [64][64] column blocks (MN-major: 64 n per 128-byte row), 8 KiB apart (leading byte offset, LBO), each
//     8-row group of k 1024 B apart (SBO).
//   - Stepping k by 16 inside a BK = 64 stage moves the descriptors' start address by 32 bytes (A, within the
//     128-byte rows) or 16 rows = 2 KiB (B). The hardware applies the XOR to the full address, so the atoms must
//     be 1024-byte aligned.
//   - cp.async (generic proxy) writes, wgmma (async proxy) reads: each thread runs fence.proxy.async after its
//     copies land, before the barrier that publishes the stage.
//   - Block tile 128 x 256 x 64, 2 warpgroups (256 threads), each a 64 x 256 half of the tile; 4 stages of 48 KiB
//     (193 KiB with the alignment slack). One wgmma group stays in flight across iterations, so the stage
//     rewritten at iteration kt is the one read at kt - 2: the copies run 2 tiles (128 k) ahead.
//   - Any shape: K and N multiples of 8 and 16-byte-aligned bases can take 16-byte copies (edge chunks
//     zero-filled); anything else (odd K or N, the `offset` cases) takes guarded scalar loads into the same
//     layout. That guarded instance is what still runs kernel 3a in matmul_wgmma (step 11e).
// Kernel 3a is graded on its own as step 11d (matmul_wgmma_async: every shape); kernel 3b as step 11e
// (matmul_wgmma: 3b on the aligned shapes, 3a's guarded instance on the others).
//
// Kernel 3b, what changes vs kernel 3a (the aligned shapes, the fast path):
//   - The Tensor Memory Accelerator copies the tiles: cp.async.bulk.tensor.2d, one instruction per box, issued by
//     one thread, from a tensor map made on the host (cuTensorMapEncodeTiled: the matrix's sizes and row stride,
//     the box, CU_TENSOR_MAP_SWIZZLE_128B). A [128][64] box of A and four [64][64] boxes of B per stage, written
//     in exactly the 128-byte-swizzled layout above, out-of-range elements as zeros: the descriptors and the
//     wgmma code are kernel 3a's, unchanged. TMA needs what the 16-byte copies needed (16-byte-aligned base, row
//     stride a multiple of 16 bytes), so the shapes that take it are the same.
//   - Warp specialization: 3 warpgroups. Warpgroup 0 (the producer) issues the copies of every K-tile into a ring
//     of 4 stages; warpgroups 1 and 2 (the consumers) run wgmma on 64 rows each, one group in flight.
//   - mbarriers instead of __syncthreads: full[s] completes when the producer has armed it with the stage's
//     byte count (arrive.expect_tx) and the TMA unit has delivered those bytes; empty[s] when the 8 consumer
//     warps have retired the wgmma that read the stage. Waits name the phase by its parity: use u of stage s
//     (tile kt = u * 4 + s) waits for parity u % 2 of full[s], and the producer, before refilling, for parity
//     (u - 1) % 2 of empty[s]. The loop has no CTA-wide barrier, no per-thread copy instructions, no proxy fence.
//   - setmaxnreg: registers move from the producer to the consumers (see kTmaThreads below).
// Measured: days/day11/README.md (`grader check day11 --solution`) and the instructors' measured/NOTES.md.

#include <cuda.h>          // CUtensorMap, the TMA descriptor (a struct: no libcuda needed to compile or link)
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "device_cache.h"  // allow_smem: cudaFuncSetAttribute for over 48 KiB of shared memory
#include "float_convert.cuh"  // from_float<T>(v)

// Kernel 2's launcher (matmul.cu): the fallback where wgmma cannot run.
template <typename T>
cudaError_t matmul_mma_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream);

#ifndef TC_WG_GROUP
#define TC_WG_GROUP 8  // tile-rows per block-swizzle group (L2 reuse)
#endif

namespace wgmma_gemm {

constexpr int BM = 128, BN = 256, BK = 64, STAGES = 4;
constexpr int kWarpgroups = BM / 64, kThreads = 128 * kWarpgroups;  // one warpgroup per 64 rows
constexpr int kGroup = TC_WG_GROUP;                                  // block-rows per swizzle group
constexpr int A_BYTES = BM * BK * 2, B_BYTES = BK * BN * 2, STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int kAtomBytes = 8 * 128;                   // one swizzle atom: 8 rows of 128 bytes
constexpr int B_BLOCK_BYTES = BK * 128;               // one [BK][64] column block of B
constexpr int kSmemBytes = STAGES * STAGE_BYTES + 1024;  // + slack to align the stages to 1024 bytes
// Kernel 3b: one more warpgroup, the producer. The 384 threads start with 168 registers each (65,536 / 384,
// rounded down to a multiple of 8); setmaxnreg then moves registers from the producer (down to 40) to the two
// consumers (up to 232; 40 x 128 + 232 x 256 = 64,512). ptxas fits the consumers of this tile in 151 registers,
// so here the move is the pattern, not a necessity: it becomes one when the consumers hold more accumulators.
// After the stages, STAGES "full" and STAGES "empty" mbarriers (8 bytes each).
constexpr int kTmaThreads = 128 + kThreads;
constexpr int kProducerRegs = 40, kConsumerRegs = 232;
constexpr int kTmaSmemBytes = kSmemBytes + 2 * STAGES * 8;
static_assert(BK * 2 == 128, "a K-major row of A is one 128-byte swizzle row");
static_assert(BN % 64 == 0 && STAGES >= 3, "B is whole 64-column blocks; one wgmma group stays in flight");
static_assert(kTmaSmemBytes <= 227 * 1024, "the stages must fit in an H100/H200 SM's shared memory");
static_assert(kAtomBytes * 8 == B_BLOCK_BYTES, "BK = 64 rows of k are 8 swizzle atoms");
static_assert(kGroup >= 1, "a swizzle group has at least one block-row");
static_assert(kProducerRegs * 128 + kConsumerRegs * kThreads <= 65536 && 65536 / kTmaThreads / 8 * 8 >= kProducerRegs,
              "the register file holds the producer and the consumers");

// PTX wrappers (provided). The wgmma ones assemble only for sm_90a; elsewhere they are empty and never called.
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool ok) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(ok ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
// This thread's shared-memory writes (cp.async or plain stores) become visible to the async proxy (wgmma).
__device__ __forceinline__ void fence_proxy_async() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
// Orders this thread's accumulator registers before the wgmma that follow (needed before the first of a batch).
__device__ __forceinline__ void wgmma_fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
// d[0..127] (+)= A (64 x 16, K-major, from shared memory) * B (16 x 256, MN-major: trans-b = 1), fp32 accumulators.
// accumulate = 0 overwrites d instead of adding to it. Asynchronous: the results are in d only after
// wgmma_wait<N>() has retired this group.
template <typename T>
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], uint64_t desc_a, uint64_t desc_b, int accumulate) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
        "%128, %129, p, 1, 1, 0, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(desc_a), "l"(desc_b), "r"(accumulate));
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
        "%128, %129, p, 1, 1, 0, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(desc_a), "l"(desc_b), "r"(accumulate));
  }
#endif
}
// Two fp32 results of a row as one 32-bit value of two T, rounded to nearest.
template <typename T>
__device__ __forceinline__ uint32_t pack2(float x, float y) {
  if constexpr (std::is_same_v<T, __half>) {
    const __half2 v = __floats2half2_rn(x, y);
    return *reinterpret_cast<const uint32_t*>(&v);
  } else {
    const __nv_bfloat162 v = __floats2bfloat162_rn(x, y);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
}

// Kernel 3b's wrappers: mbarriers, TMA, register reallocation (sm_90a only, like wgmma).
// An mbarrier is 8 bytes of shared memory that completes a "phase" when `count` threads have arrived and the
// transaction bytes announced with expect_tx have all landed; waiters name the phase by its parity (0, 1, 0, ...).
__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
#endif
}
// Makes the initialised barriers visible to the other threads and to the TMA unit (before the CTA barrier).
__device__ __forceinline__ void fence_mbar_init() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
// One arrival that also announces `bytes` of copies to come (the producer, once per stage and use).
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
#endif
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
#endif
}
// Returns once the phase of this parity has completed.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  uint32_t done;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
#endif
}
// One box of a 2-D tensor map into shared memory at dst; coordinates innermost first (column, row). Elements
// outside the tensor arrive as zeros; the box's bytes count towards bar's transaction count, zeros included.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, int col, int row, uint32_t bar) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
      ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(col), "r"(row), "r"(bar)
      : "memory");
#endif
}
// The executing warpgroup's registers per thread, lowered (dec) or raised (inc) to N; all 4 warps run it.
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
#endif
}
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
#endif
}

// Writes 1 where this image has wgmma (an sm_90a build running on compute capability 9.0), else 0.
__global__ void probe(int* has_wgmma) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  *has_wgmma = 1;
#else
  *has_wgmma = 0;
#endif
}

// cuTensorMapEncodeTiled (host side) is a driver function: fetched once through the runtime, so the extension
// needs no -lcuda. nullptr where the driver does not have it (then kernel 3a runs instead).
[[maybe_unused]] static PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
#if CUDART_VERSION >= 12050
    const cudaError_t err =
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found);
#else
    const cudaError_t err = cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &p, cudaEnableDefault, &found);
#endif
    return err == cudaSuccess && found == cudaDriverEntryPointSuccess
               ? reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p)
               : nullptr;
  }();
  return fn;
}

// Contract: make_desc(addr, lbo, sbo) is a 128-byte-swizzle matrix descriptor; mma_stage issues one stage's
// four k16 wgmma as one committed group; store_tile writes a warp's accumulator rows, guarded by M and N;
// tile_origin(idx, ...) gives the block-swizzled tile's (m0, n0).
// YOUR CODE HERE: helpers for both kernels: make_desc, a guarded load, mma_stage, store_tile, tile_origin

// Kernel 3a: every thread copies (cp.async, or guarded loads where 16-byte copies cannot go) and computes.
template <typename T, bool kAsync>
__global__ void __launch_bounds__(kThreads, 1)
    kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N, int K) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ unsigned char smem_raw[];  // STAGES x {A [BM][BK], B 4 x [BK][64]}, 128-byte swizzle
  // Contract: stages 1024-byte aligned inside smem_raw, laid out as the header says; each thread runs
  // fence.proxy.async after its copies land, before the barrier; warpgroup w owns rows 64w .. 64w + 63.
  // YOUR CODE HERE: C tile at tile_origin(blockIdx.x): cp.async or guarded copies, one wgmma group in flight
#endif
}

// Kernel 3b: warp specialization. Warpgroup 0 is the producer: one thread issues the TMA copies of every K-tile
// into a ring of STAGES stages. Warpgroups 1 and 2 are the consumers, 64 rows of the tile each. Stage s has two
// mbarriers: full[s] (the producer's arrival + the copies' bytes) and empty[s] (one arrival per consumer warp once
// the wgmma that read the stage have retired). No __syncthreads in the loop. a and b come as tensor maps: 2-D
// views of the row-major matrices, boxes of [BM][64] (A) and [BK][64] (B), 128-byte swizzle.
template <typename T>
__global__ void __launch_bounds__(kTmaThreads, 1)
    tma_kernel(T* __restrict__ c, int M, int N, int K, const __grid_constant__ CUtensorMap tm_a,
               const __grid_constant__ CUtensorMap tm_b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ unsigned char smem_raw[];  // STAGES x {A [BM][BK], B 4 x [BK][64]}, then the mbarriers
  // Contract: full[s] and empty[s] mbarriers after the stages, initialised before any use; use u of stage s
  // waits for parity u % 2 of full[s], the producer for (u - 1) % 2 of empty[s]; setmaxnreg as in the header.
  // YOUR CODE HERE: warpgroup 0 TMA-loads every K-tile into the ring; warpgroups 1 and 2 run wgmma on 64 rows each
#endif
}

// Given (launch boilerplate, as kernel 2's): kernel 3a on ceil(M / BM) · ceil(N / BN) blocks of kThreads, its
// shared memory asked for on every launch (see matmul.cu's launch).
template <typename T, bool kAsync>
static cudaError_t launch(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream) {
  if (const cudaError_t err = allow_smem(kernel<T, kAsync>, kSmemBytes); err != cudaSuccess) return err;
  const dim3 grid(((M + BM - 1) / BM) * ((N + BN - 1) / BN));
  kernel<T, kAsync><<<grid, kThreads, kSmemBytes, stream>>>(a, b, c, M, N, K);
  return cudaGetLastError();
}

// Contract: allow_smem(tma_kernel<T>, kTmaSmemBytes) before each launch; maps give boxes [BM][64] of A and
// [BK][64] of B with CU_TENSOR_MAP_SWIZZLE_128B; a 1-D grid of tiles on `stream`; launch<T, true> where no map
// can be made.
// YOUR CODE HERE: the two tensor maps, launch_tma (3b; 3a where no map can be made)

// Whether this build's image for the current GPU has wgmma: asked once per module, with a one-thread kernel
// (static: internal linkage, so that a build without sm_90a loaded in the same process keeps its own answer).
static bool has_wgmma() {
  static const bool yes = [] {
    int dev = 0, major = 0, minor = 0, smem = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return false;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    if (major != 9 || minor != 0 || smem < kTmaSmemBytes) return false;
    int* flag = nullptr;
    int host = 0;
    if (cudaMalloc(&flag, sizeof(int)) != cudaSuccess) return false;
    probe<<<1, 1>>>(flag);
    const bool ok = cudaMemcpy(&host, flag, sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess;
    cudaFree(flag);
    return ok && host == 1;
  }();
  return yes;
}

}  // namespace wgmma_gemm

// Step 11d: kernel 3a on every shape (cp.async where 16-byte copies can go, guarded loads elsewhere).
template <typename T>
cudaError_t matmul_wgmma_async_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream) {
  using namespace wgmma_gemm;
  if (!has_wgmma()) return matmul_mma_forward(a, b, c, M, N, K, stream);  // not an sm_90a image: kernel 2
  // Contract: M == 0 or N == 0 launches nothing; aligned shapes take launch<T, true>, all others launch<T, false>.
  // YOUR CODE HERE: aligned (a, b, c 16-byte, K and N % 8 == 0): launch<T, true>; else launch<T, false>
  return cudaGetLastError();
}

// Step 11e: kernel 3b where TMA can go, kernel 3a elsewhere.
template <typename T>
cudaError_t matmul_wgmma_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream) {
  using namespace wgmma_gemm;
  if (!has_wgmma()) return matmul_mma_forward(a, b, c, M, N, K, stream);  // not an sm_90a image: kernel 2
  // Contract: M == 0 or N == 0 launches nothing; every unaligned shape takes launch<T, false>.
  // YOUR CODE HERE: aligned (a, b, c 16-byte, K and N % 8 == 0) and K > 0: launch_tma; other aligned: launch<T, true>
  return cudaGetLastError();
}

template cudaError_t matmul_wgmma_async_forward<__half>(const __half*, const __half*, __half*, int, int, int,
                                                        cudaStream_t);
template cudaError_t matmul_wgmma_async_forward<__nv_bfloat16>(const __nv_bfloat16*, const __nv_bfloat16*,
                                                               __nv_bfloat16*, int, int, int, cudaStream_t);
template cudaError_t matmul_wgmma_forward<__half>(const __half*, const __half*, __half*, int, int, int, cudaStream_t);
template cudaError_t matmul_wgmma_forward<__nv_bfloat16>(const __nv_bfloat16*, const __nv_bfloat16*, __nv_bfloat16*,
                                                         int, int, int, cudaStream_t);
