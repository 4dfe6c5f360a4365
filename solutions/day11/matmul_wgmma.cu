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
// BEGIN INSTRUCTOR ONLY
// The instructors' kernel 3b goes further (knobs, measured in the instructors' measured/NOTES.md). It is tma_kernel_edge, with its
// helpers and launcher, in one instructor-only block after the holes: the solution's op runs it by default
// (TC_WG_EDGE=1), while the holes hold kernel 3b as step 11e teaches it (TC_WG_EDGE=0 builds that one).
//   - TC_WG_CLUSTER=2 (the default): clusters of 2 CTAs, consecutive tiles down M with the same columns; each
//     fetches half of B's column blocks and multicasts them to both, so B crosses from L2 once per cluster.
//   - TC_WG_TMA_STORE=1 (the default): the epilogue through shared memory. Each consumer warpgroup writes its
//     64 x 256 as T into its half of a 128-byte-swizzled staging tile (64 KiB), fences, syncs on its own named
//     barrier, and one thread TMA-stores four [64][64] boxes (clipped at M and N). The scattered 4-byte stores of
//     store_tile were the epilogue's cost, most of all where K is short.
//   - TC_WG_PERSISTENT=1 (the default): a persistent grid, as many clusters as run at once, each walking every
//     (clusters)-th tile; the producer's ring (4 stages) runs on across tiles, so the next tile's loads are in flight
//     while the consumers write this one's C, box by box ([64][64], two 8 KiB buffers a warpgroup, one TMA store
//     each). No CTA launch, barrier set-up or empty ring between tiles.
//   - TC_WG_STAGING_REUSE=1 (with TC_WG_PERSISTENT=0): the staging tile is the ring's first stages, written once
//     both consumer warpgroups are past the mainloop, so the ring keeps its 4 stages (a separate tile would cut it
//     to 3).
// END INSTRUCTOR ONLY

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
// BEGIN INSTRUCTOR ONLY
// Knobs of the solution's own code (the stub's holes do not use them), for the sweeps.
// TC_WG_EDGE=1 (the default): step 11e's op runs the instructors' kernel 3b, tma_kernel_edge (after the holes,
// dispatched by edge_forward), tuned by the knobs below. TC_WG_EDGE=0: it runs kernel 3b as the step asks a student
// for it (tma_kernel and launch_tma, the holes: one tile a CTA, no cluster, C stored from the registers), and the
// knobs below default to that kernel's choices. The holes hold the step's lesson only; the edge code is outside them.
#ifndef TC_WG_EDGE
#define TC_WG_EDGE 1
#endif
#ifndef TC_WG_CLUSTER
#define TC_WG_CLUSTER (TC_WG_EDGE ? 2 : 1)  // kernel 3b: CTAs per thread-block cluster along M (2: each B tile
                                            // fetched once, multicast)
#endif
#ifndef TC_WG_TMA
#define TC_WG_TMA 1  // 1: aligned shapes by TMA + a producer warpgroup (kernel 3b); 0: all by cp.async (kernel 3a)
#endif
#ifndef TC_WG_STAGING_REUSE
#define TC_WG_STAGING_REUSE 1  // kernel 3b with TC_WG_TMA_STORE: C staged in the ring's stages once the mainloop is
                               // done (a barrier over the consumers first), so the ring keeps 4 stages
#endif
#ifndef TC_WG_TMA_STORE
#define TC_WG_TMA_STORE TC_WG_EDGE  // kernel 3b: C leaves through a staging tile in shared memory and TMA stores
#endif
#ifndef TC_WG_PERSISTENT
#define TC_WG_PERSISTENT TC_WG_EDGE  // kernel 3b with TC_WG_TMA_STORE: 1: as many clusters as fit at once, each
                                     // walking tiles; the ring runs on across tiles (4 stages) and C leaves by
                                     // [64][64] boxes through two 8 KiB buffers a consumer warpgroup, so the next
                                     // tile's loads run under the epilogue
#endif
// END INSTRUCTOR ONLY

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
// BEGIN INSTRUCTOR ONLY
// TC_WG_TMA_STORE: kernel 3b's ring has 3 stages and a [BM][BN] staging tile of C (64 KiB, 1024-byte aligned like
// the stages) lies between them and the mbarriers: 4 stages + the tile would not fit in 227 KiB. With
// TC_WG_STAGING_REUSE the tile is the ring's first stages instead, written once the mainloop is done, and the ring
// has 4. That holds only while a CTA computes one tile: a persistent kernel's next loads into those stages would
// race with the TMA store still reading them. Kernel 3a keeps its STAGES (with 3, ptxas serialises its wgmma:
// C7515).
// TC_WG_PERSISTENT: the ring is never free between tiles, so C has its own staging: two [64][64] box buffers
// (8 KiB each) per consumer warpgroup, 32 KiB beside 4 stages.
constexpr bool kEdge = TC_WG_EDGE;
constexpr int kCluster = TC_WG_CLUSTER;
static_assert(kCluster == 1 || kCluster == 2 || kCluster == 4, "a cluster shares B between 1, 2 or 4 CTAs");
static_assert((BN / 64) % kCluster == 0, "each CTA of a cluster multicasts the same number of B's column blocks");
constexpr bool kPersistent = TC_WG_PERSISTENT;
static_assert(!kPersistent || TC_WG_TMA_STORE, "the persistent walk's epilogue is the TMA store's");
static_assert(kEdge || (kCluster == 1 && !TC_WG_TMA_STORE && TC_WG_TMA),
              "clusters, TMA stores and TC_WG_TMA=0 are the instructors' kernel 3b's: they need TC_WG_EDGE=1");
constexpr bool kStagingReuse = TC_WG_STAGING_REUSE && !kPersistent;
constexpr int kBoxBytes = 64 * 128;  // one [64][64] box of C, 128-byte rows
constexpr int kTmaStages = TC_WG_TMA_STORE ? (kStagingReuse || kPersistent ? 4 : 3) : STAGES;
constexpr int kStagingBytes = TC_WG_TMA_STORE ? (kPersistent ? kWarpgroups * 2 * kBoxBytes : BM * BN * 2) : 0;
// With TC_WG_STAGING_REUSE the staging tile is the start of the ring: no bytes of its own.
[[maybe_unused]] constexpr int kStagingOwnBytes = kStagingReuse ? 0 : kStagingBytes;
static_assert(!kStagingReuse || kStagingBytes <= kTmaStages * STAGE_BYTES, "C fits in the ring's stages");
static_assert(kTmaStages >= 3, "kernel 3b: two stages held by the consumers (one wgmma group in flight), one filling");
#if TC_WG_TMA_STORE
constexpr int kTmaSmemBytes = kTmaStages * STAGE_BYTES + 1024 + kStagingOwnBytes + 2 * kTmaStages * 8;
#else
// END INSTRUCTOR ONLY
constexpr int kTmaSmemBytes = kSmemBytes + 2 * STAGES * 8;
#endif  // INSTRUCTOR ONLY
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
// BEGIN INSTRUCTOR ONLY
// Wrappers of the instructors' kernel 3b only (TC_WG_EDGE; the stub has none of them).
// TC_WG_TMA_STORE's epilogue. tma_store_2d: one box of shared memory at src, in the map's (swizzled) layout, into
// the tensor at (col, row); the TMA unit drops what falls outside it. The stores issued since the last
// bulk_commit form one bulk group: bulk_wait_read<N> returns once at most N groups still read their shared source
// (which may then be rewritten), bulk_wait<N> once at most N are not complete. named_sync: barrier `id` (1..15;
// 0 is __syncthreads) over `threads` threads, whole warps.
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, int col, int row, uint32_t src) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n"
               ::"l"(reinterpret_cast<uint64_t>(map)), "r"(col), "r"(row), "r"(src)
               : "memory");
#endif
}
__device__ __forceinline__ void bulk_commit() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
#endif
}
template <int N>
__device__ __forceinline__ void bulk_wait() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}
__device__ __forceinline__ void named_sync(int id, int threads) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
#endif
}
// Thread-block clusters (TC_WG_CLUSTER > 1, the instructors' measured/NOTES.md): this CTA's rank in its cluster, a barrier over all
// the cluster's threads, an arrival on the barrier at the same offset in CTA `cta`'s shared memory, and a TMA copy
// whose box lands at the same offset in every CTA of `mask`, counted on each one's barrier at offset bar.
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r = 0;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
#endif
  return r;
}
__device__ __forceinline__ void cluster_sync() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void mbar_arrive_remote(uint32_t bar, uint32_t cta) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [ra];\n}\n" ::"r"(bar), "r"(cta)
      : "memory");
#endif
}
__device__ __forceinline__ void tma_load_2d_multicast(uint32_t dst, const CUtensorMap* map, int col, int row,
                                                      uint32_t bar, uint16_t mask) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;\n"
      ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(col), "r"(row), "r"(bar), "h"(mask)
      : "memory");
#endif
}
// END INSTRUCTOR ONLY

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
// BEGIN SOLUTION: helpers for both kernels: make_desc, a guarded load, mma_stage, store_tile, tile_origin
// Shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"): bits 0-13 start address >> 4,
// 16-29 leading byte offset >> 4, 32-45 stride byte offset >> 4, 62-63 the swizzle mode (1: 128-byte).
__device__ __forceinline__ uint64_t make_desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | (static_cast<uint64_t>((lbo & 0x3FFFF) >> 4) << 16) |
         (static_cast<uint64_t>((sbo & 0x3FFFF) >> 4) << 32) | (1ull << 62);
}

// 8 elements of a row, the first `valid` real and the rest zeros (the guarded path).
__device__ __forceinline__ uint4 load8_guarded(const unsigned short* src, int valid) {
  uint32_t w[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const uint32_t lo = 2 * e < valid ? __ldg(src + 2 * e) : 0u;
    const uint32_t hi = 2 * e + 1 < valid ? __ldg(src + 2 * e + 1) : 0u;
    w[e] = lo | (hi << 16);
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// One stage for one warpgroup, as one wgmma group: its 64 rows of A (sa) times the stage's B (sb), BK = 64 as
// four k16 steps. Both kernels use it.
template <typename T>
__device__ __forceinline__ void mma_stage(float (&d)[128], uint32_t sa, uint32_t sb) {
  wgmma_fence();
#pragma unroll
  for (int ks = 0; ks < BK / 16; ++ks) {
    // A: K-major, 16 k = 32 bytes further along the 128-byte rows; atoms of 8 rows 1024 B apart (SBO).
    // B: MN-major, 16 k = 16 rows further; 64-column blocks B_BLOCK_BYTES apart (LBO), 8-row groups 1024 B (SBO).
    const uint64_t da = make_desc(sa + ks * 32, 16, kAtomBytes);
    const uint64_t db = make_desc(sb + ks * 16 * 128, B_BLOCK_BYTES, kAtomBytes);
    wgmma_m64n256k16<T>(d, da, db, 1);
  }
  wgmma_commit();
}

// Epilogue from the accumulators of warp `warp` of a warpgroup whose 64 rows start at row0: the warp holds rows
// row0 + 16 warp + g and + 8, and for every 8 columns j, columns 8j + 2t and + 1 (d[4j .. 4j+3] = c0..c3 of
// mma.sync's layout). kVector: N % 8 == 0 and c aligned, so a pair is both in or both out, one 4-byte store.
template <typename T, bool kVector>
__device__ __forceinline__ void store_tile(const float (&d)[128], T* c, int M, int N, int row0, int n0, int warp,
                                           int lane) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = row0 + warp * 16 + g + 8 * h;
    if (row >= M) continue;
    T* const crow = c + static_cast<size_t>(row) * N;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
      const int col = n0 + 8 * j + 2 * t;
      const float x = d[4 * j + 2 * h], y = d[4 * j + 2 * h + 1];
      if constexpr (kVector) {
        if (col < N) *reinterpret_cast<uint32_t*>(crow + col) = pack2<T>(x, y);
      } else {
        if (col < N) crow[col] = from_float<T>(x);
        if (col + 1 < N) crow[col + 1] = from_float<T>(y);
      }
    }
  }
}

// Block swizzle, as in kernel 2: tile `idx` of bm x BN tiles, in groups of kGroup tile-rows walked column by column.
__device__ __forceinline__ void tile_origin(int idx, int bm, int M, int N, int& m0, int& n0) {
  const int gm = (M + bm - 1) / bm, gn = (N + BN - 1) / BN;
  const int per_group = kGroup * gn;
  const int group = idx / per_group, first = group * kGroup;
  const int rows_in_group = min(gm - first, kGroup);
  const int in_group = idx % per_group;
  m0 = (first + in_group % rows_in_group) * bm;
  n0 = (in_group / rows_in_group) * BN;
}
// END SOLUTION

// Kernel 3a: every thread copies (cp.async, or guarded loads where 16-byte copies cannot go) and computes.
template <typename T, bool kAsync>
__global__ void __launch_bounds__(kThreads, 1)
    kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N, int K) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ unsigned char smem_raw[];  // STAGES x {A [BM][BK], B 4 x [BK][64]}, 128-byte swizzle
  // Contract: stages 1024-byte aligned inside smem_raw, laid out as the header says; each thread runs
  // fence.proxy.async after its copies land, before the barrier; warpgroup w owns rows 64w .. 64w + 63.
  // BEGIN SOLUTION: C tile at tile_origin(blockIdx.x): cp.async or guarded copies, one wgmma group in flight
  const uint32_t raw = smem_addr(smem_raw);
  const uint32_t base = (raw + 1023) & ~1023u;  // whole swizzle atoms: the hardware XORs address bits 4-6 with 7-9
  unsigned char* const sbase = smem_raw + (base - raw);
  int m0, n0;
  tile_origin(blockIdx.x, BM, M, N, m0, n0);
  const int tid = threadIdx.x, wg = tid / 128, warp = tid % 128 / 32, lane = tid % 32;

  // Copies K-tile kt into stage s: chunk ch of row r of A at r * 128 + (ch ^ r % 8) * 16; chunk cn of row k of B
  // in column block cn / 8, at k * 128 + (cn % 8 ^ k % 8) * 16 within it.
  auto load_tile = [&](int kt, int s) {
    const int k0 = kt * BK;
    const uint32_t sa = s * STAGE_BYTES, sb = sa + A_BYTES;  // byte offsets from base
#pragma unroll
    for (int i = 0; i < BM * 8 / kThreads; ++i) {
      const int q = tid + i * kThreads, r = q / 8, ch = q % 8;
      const int row = m0 + r, k = k0 + ch * 8;
      const uint32_t dst = sa + r * 128 + ((ch ^ (r & 7)) * 16);
      const T* const src = a + static_cast<size_t>(row) * K + k;
      if constexpr (kAsync) {
        const bool ok = row < M && k < K;
        cp_async16(base + dst, ok ? src : a, ok);
      } else {
        const int valid = row < M ? min(8, K - k) : 0;
        *reinterpret_cast<uint4*>(sbase + dst) = load8_guarded(reinterpret_cast<const unsigned short*>(src), valid);
      }
    }
#pragma unroll
    for (int i = 0; i < BK * (BN / 8) / kThreads; ++i) {
      const int q = tid + i * kThreads, r = q / (BN / 8), cn = q % (BN / 8);
      const int k = k0 + r, n = n0 + cn * 8;
      const uint32_t dst = sb + (cn / 8) * B_BLOCK_BYTES + r * 128 + (((cn % 8) ^ (r & 7)) * 16);
      const T* const src = b + static_cast<size_t>(k) * N + n;
      if constexpr (kAsync) {
        const bool ok = k < K && n < N;
        cp_async16(base + dst, ok ? src : b, ok);
      } else {
        const int valid = k < K ? min(8, N - n) : 0;
        *reinterpret_cast<uint4*>(sbase + dst) = load8_guarded(reinterpret_cast<const unsigned short*>(src), valid);
      }
    }
  };

  float d[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) d[i] = 0.0f;
  const int tiles_k = (K + BK - 1) / BK;
  // STAGES - 2 tiles ahead: one stage is being copied into, one is read by the wgmma group still in flight.
#pragma unroll
  for (int s = 0; s < STAGES - 2; ++s) {
    if (s < tiles_k) load_tile(s, s);
    cp_async_commit();
  }
  for (int kt = 0; kt < tiles_k; ++kt) {
    cp_async_wait<STAGES - 3>();  // this thread's copies of tile kt have landed
    fence_proxy_async();          // ... and are visible to wgmma
    __syncthreads();              // everyone's; and every warpgroup has retired the wgmma of tile kt - 2
    if (kt + STAGES - 2 < tiles_k) load_tile(kt + STAGES - 2, (kt + STAGES - 2) % STAGES);
    cp_async_commit();
    const uint32_t stage = base + (kt % STAGES) * STAGE_BYTES;
    mma_stage<T>(d, stage + wg * 64 * 128, stage + A_BYTES);  // this warpgroup's 64 rows of A, all of B
    wgmma_wait<1>();  // the group of tile kt - 1 has retired; tile kt's may still run
  }
  wgmma_wait<0>();
  cp_async_wait<0>();
  store_tile<T, kAsync>(d, c, M, N, m0 + wg * 64, n0, warp, lane);
  // END SOLUTION
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
  // BEGIN SOLUTION: warpgroup 0 TMA-loads every K-tile into the ring; warpgroups 1 and 2 run wgmma on 64 rows each
  // TMA's 128-byte swizzle, like wgmma's, is computed from address bits: 1024-byte-aligned stages.
  const uint32_t base = (smem_addr(smem_raw) + 1023) & ~1023u;
  const uint32_t full = base + STAGES * STAGE_BYTES, empty = full + 8 * STAGES;
  int m0, n0;
  tile_origin(blockIdx.x, BM, M, N, m0, n0);
  const int wg = threadIdx.x / 128, warp = threadIdx.x % 128 / 32, lane = threadIdx.x % 32;
  const int tiles_k = (K + BK - 1) / BK;

  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full + 8 * s, 1);                 // the producer's arrive.expect_tx (+ the bytes)
      mbar_init(empty + 8 * s, 4 * kWarpgroups);  // lane 0 of each consumer warp
    }
    fence_mbar_init();
  }
  __syncthreads();  // the only CTA-wide barrier: the mbarriers exist before anyone uses them

  if (wg == 0) {  // producer
    setmaxnreg_dec<kProducerRegs>();
    if (threadIdx.x == 0) {
      for (int kt = 0; kt < tiles_k; ++kt) {
        const int s = kt % STAGES;
        // Use u = kt / STAGES of stage s: wait until the consumers released use u - 1 (its phase u - 1).
        if (kt >= STAGES) mbar_wait(empty + 8 * s, (kt / STAGES - 1) & 1);
        const uint32_t stage = base + s * STAGE_BYTES, bar = full + 8 * s;
        mbar_arrive_expect_tx(bar, STAGE_BYTES);  // all of A and B, out-of-range zeros included
        tma_load_2d(stage, &tm_a, kt * BK, m0, bar);
#pragma unroll
        for (int j = 0; j < BN / 64; ++j)
          tma_load_2d(stage + A_BYTES + j * B_BLOCK_BYTES, &tm_b, n0 + 64 * j, kt * BK, bar);
      }
    }
  } else {
    setmaxnreg_inc<kConsumerRegs>();
    const int cw = wg - 1;  // consumer warpgroup: rows 64 cw .. 64 cw + 63 of the tile
    float d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = 0.0f;
    for (int kt = 0; kt < tiles_k; ++kt) {
      const int s = kt % STAGES;
      mbar_wait(full + 8 * s, (kt / STAGES) & 1);  // K-tile kt has landed (use kt / STAGES of stage s)
      const uint32_t stage = base + s * STAGE_BYTES;
      mma_stage<T>(d, stage + cw * 64 * 128, stage + A_BYTES);
      wgmma_wait<1>();  // the group of K-tile kt - 1 has retired: lane 0 of each warp releases its stage
      if (kt > 0 && lane == 0) mbar_arrive(empty + 8 * ((kt - 1) % STAGES));
    }
    wgmma_wait<0>();
    store_tile<T, true>(d, c, M, N, m0 + cw * 64, n0, warp, lane);
  }
  // END SOLUTION
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
// BEGIN SOLUTION: the two tensor maps, launch_tma (3b; 3a where no map can be made)
// A row-major [rows][cols] matrix as a 2-D TMA view (innermost dimension first), boxes of [box_rows][64]: one box
// row is 64 elements = 128 bytes, stored with the 128-byte swizzle, which is exactly the layout the descriptors
// describe. Needs a 16-byte-aligned base and a row stride (cols x 2 bytes) that is a multiple of 16.
template <typename T>
static bool make_map(CUtensorMap* map, const T* ptr, int rows, int cols, int box_rows) {
  const auto encode = encode_tiled();
  if (encode == nullptr) return false;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(cols) * sizeof(T)};
  const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t steps[2] = {1, 1};
  const CUtensorMapDataType type =
      std::is_same_v<T, __half> ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  return encode(map, type, 2, const_cast<T*>(ptr), dims, strides, box, steps, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// Kernel 3b where the tensor maps can be made; kernel 3a (cp.async) where this driver cannot make them.
template <typename T>
static cudaError_t launch_tma(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream) {
  CUtensorMap tm_a{}, tm_b{};
  if (!make_map(&tm_a, a, M, K, BM) || !make_map(&tm_b, b, K, N, BK)) return launch<T, true>(a, b, c, M, N, K, stream);
  if (const cudaError_t err = allow_smem(tma_kernel<T>, kTmaSmemBytes); err != cudaSuccess) return err;
  const int tiles = ((M + BM - 1) / BM) * ((N + BN - 1) / BN);
  tma_kernel<T><<<tiles, kTmaThreads, kTmaSmemBytes, stream>>>(c, M, N, K, tm_a, tm_b);
  return cudaGetLastError();
}
// END SOLUTION
// BEGIN INSTRUCTOR ONLY
// The instructors' kernel 3b (TC_WG_EDGE=1, the default). Step 11e's lesson is tma_kernel and launch_tma above: one
// tile a CTA, the ring of full/empty mbarriers, C stored from the registers. What follows is that kernel with the
// measured additions the knobs choose (the list at the top of this file): clusters sharing B by TMA multicast
// (TC_WG_CLUSTER), C through swizzled staging boxes and TMA stores (TC_WG_TMA_STORE, TC_WG_STAGING_REUSE), a
// persistent grid (TC_WG_PERSISTENT). The solution's op runs it by default (edge_forward), so the solution's
// timings are its; TC_WG_EDGE=0 builds the step's own kernel instead. None of it is in a hole, and the stub has
// none of it. Contract: what launch_tma does (the same shapes, the same fallbacks), faster.

// Column block jb (columns 64 jb .. 64 jb + 63) of a consumer warpgroup's 64 x BN accumulators, as T, into a [64][64]
// box at `box`, laid out as the store map's boxes are: 128-byte rows, 16-byte chunk q of row r at q ^ (r % 8), as
// the loads. One warp's 4-byte stores of an (h, q) are rows g = 0..7 at chunk q ^ g, bytes 4t: each bank once.
template <typename T>
__device__ __forceinline__ void write_box(const float (&d)[128], unsigned char* box, int jb, int warp, int lane) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    unsigned char* const row = box + (warp * 16 + g + 8 * h) * 128 + 4 * t;  // row % 8 == g
#pragma unroll
    for (int q = 0; q < 8; ++q) {
      const int col8 = 8 * jb + q;  // the accumulators' 8-column group
      *reinterpret_cast<uint32_t*>(row + (q ^ g) * 16) = pack2<T>(d[4 * col8 + 2 * h], d[4 * col8 + 2 * h + 1]);
    }
  }
}

// TC_WG_TMA_STORE's epilogue, for consumer warpgroup cw of a tile (rows row0 .. row0 + 63, columns n0 ..): its
// accumulators into its [64][BN] half of the staging tile (shared address sc, the same as the pointer sp), as BN / 64
// boxes (write_box). Every writer's fence.proxy.async (the TMA unit reads through the async proxy), the
// warpgroup's named barrier (1 + cw), then one thread stores the boxes as one bulk group and goes on: the next
// tile's wgmma start while the TMA unit writes. The half is rewritten only once that group has read it out.
template <typename T>
__device__ __forceinline__ void store_tile_tma(const float (&d)[128], const CUtensorMap* map, uint32_t sc,
                                               unsigned char* sp, int M, int N, int row0, int n0, int cw, int warp,
                                               int lane) {
  const bool leader = warp == 0 && lane == 0;
  if (leader) bulk_wait_read<0>();  // the previous tile's stores have read this half out
  named_sync(1 + cw, 128);
#pragma unroll
  for (int j = 0; j < BN / 64; ++j) write_box<T>(d, sp + j * kBoxBytes, j, warp, lane);
  fence_proxy_async();
  named_sync(1 + cw, 128);
  if (leader) {
    if (row0 < M) {
#pragma unroll
      for (int j = 0; j < BN / 64; ++j)
        if (n0 + 64 * j < N) tma_store_2d(map, n0 + 64 * j, row0, sc + j * kBoxBytes);  // rows, columns clipped
    }
    bulk_commit();
  }
}
// TC_WG_PERSISTENT's epilogue for consumer warpgroup cw: the same boxes, each through one of the warpgroup's two box
// buffers (shared address sc, pointer sp), so that a box is written while the one before is stored. Before a buffer
// is rewritten, its last store (two boxes ago, maybe of the previous tile) has read it out: bulk_wait_read<1>, one
// bulk group a box.
template <typename T>
__device__ __forceinline__ void store_tile_boxes(const float (&d)[128], const CUtensorMap* map, uint32_t sc,
                                                 unsigned char* sp, int M, int N, int row0, int n0, int cw, int warp,
                                                 int lane) {
  const bool leader = warp == 0 && lane == 0;
#pragma unroll
  for (int j = 0; j < BN / 64; ++j) {
    const int buf = j % 2;
    if (leader) bulk_wait_read<1>();
    named_sync(1 + cw, 128);
    write_box<T>(d, sp + buf * kBoxBytes, j, warp, lane);
    fence_proxy_async();
    named_sync(1 + cw, 128);
    if (leader) {
      if (row0 < M && n0 + 64 * j < N) tma_store_2d(map, n0 + 64 * j, row0, sc + buf * kBoxBytes);
      bulk_commit();
    }
  }
}
static_assert(kTmaStages * STAGE_BYTES % 1024 == 0 && kStagingBytes / 2 % 1024 == 0,
              "the staging tile's boxes are 1024-byte aligned: the 128-byte swizzle is computed from address bits");

// The instructors' kernel 3b: tma_kernel's producer, ring and consumers, on kTmaStages stages, with what the knobs
// add (the list at the top of this file; measured in the instructors' measured/NOTES.md).
// With kCluster > 1, the kCluster CTAs of a cluster are consecutive tiles down M with the same columns: each
// fetches its own A and 1/kCluster of B's column blocks, multicast into every CTA of the cluster, so a stage may
// be refilled only when the consumers of all of them have released it (empty[s] counts the cluster's warps).
template <typename T>
__global__ void __launch_bounds__(kTmaThreads, 1)
#if TC_WG_TMA_STORE
    tma_kernel_edge(T* __restrict__ c, int M, int N, int K, const __grid_constant__ CUtensorMap tm_a,
                    const __grid_constant__ CUtensorMap tm_b, const __grid_constant__ CUtensorMap tm_c) {
#else
    tma_kernel_edge(T* __restrict__ c, int M, int N, int K, const __grid_constant__ CUtensorMap tm_a,
                    const __grid_constant__ CUtensorMap tm_b) {
#endif
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ unsigned char smem_raw[];  // STAGES x {A [BM][BK], B 4 x [BK][64]}, then the mbarriers
  // TMA's 128-byte swizzle, like wgmma's, is computed from address bits: 1024-byte-aligned stages. (Dynamic
  // shared memory starts at the same offset in every CTA, so the stages do too: multicast needs it.)
  const uint32_t base = (smem_addr(smem_raw) + 1023) & ~1023u;
  // With TC_WG_TMA_STORE the C staging tile (kStagingBytes, else 0) lies between the stages and the mbarriers
  // (with TC_WG_STAGING_REUSE it is the ring's first stages, free once the mainloop is done).
  const uint32_t staging = kStagingReuse ? base : base + kTmaStages * STAGE_BYTES;
  const uint32_t full = base + kTmaStages * STAGE_BYTES + kStagingOwnBytes, empty = full + 8 * kTmaStages;
  const uint32_t rank = kCluster > 1 ? cluster_rank() : 0;
  // The cluster's tiles: its own, or with TC_WG_PERSISTENT every (clusters)-th from its own. Both CTAs of a cluster
  // walk the same ones (the same columns, rows BM apart), so their rings stay in step.
  const int cluster_id = blockIdx.x / kCluster, clusters = gridDim.x / kCluster;
  const int cluster_tiles = ((M + BM * kCluster - 1) / (BM * kCluster)) * ((N + BN - 1) / BN);
  const auto origin = [&](int ct, int& m0, int& n0) {
    tile_origin(ct, BM * kCluster, M, N, m0, n0);
    m0 += rank * BM;
  };
  const int wg = threadIdx.x / 128, warp = threadIdx.x % 128 / 32, lane = threadIdx.x % 32;
  const int tiles_k = (K + BK - 1) / BK;

  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < kTmaStages; ++s) {
      mbar_init(full + 8 * s, 1);                              // the producer's arrive.expect_tx (+ the bytes)
      mbar_init(empty + 8 * s, 4 * kWarpgroups * kCluster);    // lane 0 of each consumer warp (of the cluster)
    }
    fence_mbar_init();
  }
  if constexpr (kCluster > 1)
    cluster_sync();  // every CTA's barriers exist before any copy or arrival reaches them
  else
    __syncthreads();  // the only CTA-wide barrier: the mbarriers exist before anyone uses them

  if (wg == 0) {  // producer
    setmaxnreg_dec<kProducerRegs>();
    if (threadIdx.x == 0) {
      int it = 0;  // K-tiles issued by this CTA over all its tiles: stage it % kTmaStages, use it / kTmaStages
      for (int ct = cluster_id; ct < cluster_tiles; ct += clusters) {
      int m0, n0;
      origin(ct, m0, n0);
      for (int kt = 0; kt < tiles_k; ++kt, ++it) {
        const int s = it % kTmaStages;
        // Use u = it / kTmaStages of stage s: wait until the consumers released use u - 1 (its phase u - 1).
        if (it >= kTmaStages) mbar_wait(empty + 8 * s, (it / kTmaStages - 1) & 1);
        const uint32_t stage = base + s * STAGE_BYTES, bar = full + 8 * s;
        mbar_arrive_expect_tx(bar, STAGE_BYTES);  // all of A and B, whoever copies them
        tma_load_2d(stage, &tm_a, kt * BK, m0, bar);
        if constexpr (kCluster > 1) {
          constexpr int kPer = BN / 64 / kCluster;  // column blocks of B this CTA fetches for the cluster
#pragma unroll
          for (int i = 0; i < kPer; ++i) {
            const int j = rank * kPer + i;
            tma_load_2d_multicast(stage + A_BYTES + j * B_BLOCK_BYTES, &tm_b, n0 + 64 * j, kt * BK, bar,
                                  static_cast<uint16_t>((1u << kCluster) - 1));
          }
        } else {
#pragma unroll
          for (int j = 0; j < BN / 64; ++j)
            tma_load_2d(stage + A_BYTES + j * B_BLOCK_BYTES, &tm_b, n0 + 64 * j, kt * BK, bar);
        }
      }
      }
    }
  } else {
    setmaxnreg_inc<kConsumerRegs>();
    const int cw = wg - 1;  // consumer warpgroup: rows 64 cw .. 64 cw + 63 of the tile
    // Lane 0 of each consumer warp releases use `u` of its stage (on every CTA of the cluster).
    auto release = [&](int u) {
      if (lane != 0) return;
      const uint32_t bar = empty + 8 * (u % kTmaStages);
      if constexpr (kCluster > 1) {
#pragma unroll
        for (int r = 0; r < kCluster; ++r) mbar_arrive_remote(bar, r);
      } else {
        mbar_arrive(bar);
      }
    };
    int it = 0;  // as the producer's
    for (int ct = cluster_id; ct < cluster_tiles; ct += clusters) {
    int m0, n0;
    origin(ct, m0, n0);
    float d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = 0.0f;
    for (int kt = 0; kt < tiles_k; ++kt, ++it) {
      const int s = it % kTmaStages;
      mbar_wait(full + 8 * s, (it / kTmaStages) & 1);  // K-tile kt has landed (use it / kTmaStages of stage s)
      const uint32_t stage = base + s * STAGE_BYTES;
      mma_stage<T>(d, stage + cw * 64 * 128, stage + A_BYTES);
      wgmma_wait<1>();  // the group of K-tile kt - 1 has retired: its stage may be refilled
      if (kt > 0) release(it - 1);
    }
    wgmma_wait<0>();
#if TC_WG_PERSISTENT
    release(it - 1);  // the tile's last stage, for the next tile's loads; then C by boxes
    const uint32_t bufs = staging + cw * 2 * kBoxBytes;
    store_tile_boxes<T>(d, &tm_c, bufs, smem_raw + (bufs - smem_addr(smem_raw)), M, N, m0 + cw * 64, n0, cw, warp,
                        lane);
#elif TC_WG_TMA_STORE
    // TC_WG_STAGING_REUSE: the other consumer warpgroup may still be reading any stage (it can lag by up to the
    // ring's depth); every write into this CTA's stages (its own copies and the cluster's multicasts) has landed,
    // since both warpgroups waited for every stage's bytes, and none is issued after the last K-tile.
    if constexpr (kStagingReuse) named_sync(1 + kWarpgroups, kThreads);
    const uint32_t half = staging + cw * (kStagingBytes / 2);  // this warpgroup's [64][BN] of the staging tile
    store_tile_tma<T>(d, &tm_c, half, smem_raw + (half - smem_addr(smem_raw)), M, N, m0 + cw * 64, n0, cw, warp,
                      lane);
    if (warp == 0 && lane == 0) bulk_wait<0>();  // the stores complete before the CTA exits
#else
    store_tile<T, true>(d, c, M, N, m0 + cw * 64, n0, warp, lane);
#endif
    }
    if (kPersistent && warp == 0 && lane == 0) bulk_wait<0>();  // the last boxes complete before the CTA exits
  }
  if constexpr (kCluster > 1) {
    __syncwarp();
    cluster_sync();  // no CTA exits while another may still arrive on its barriers
  }
#endif
}

// launch_tma for tma_kernel_edge: C's map too (TC_WG_TMA_STORE), a cluster launch (TC_WG_CLUSTER > 1), and with
// TC_WG_PERSISTENT as many clusters as run at once.
template <typename T>
static cudaError_t launch_tma_edge(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream) {
  CUtensorMap tm_a{}, tm_b{};
  if (!make_map(&tm_a, a, M, K, BM) || !make_map(&tm_b, b, K, N, BK)) return launch<T, true>(a, b, c, M, N, K, stream);
#if TC_WG_TMA_STORE
  // C's map for the epilogue's stores: boxes [64][64] (one consumer warpgroup's rows, one column block), its real
  // M and N (the TMA unit clips the ragged edges). The caller's test (c 16-byte aligned, N % 8 == 0) is TMA's.
  CUtensorMap tm_c{};
  if (!make_map(&tm_c, static_cast<const T*>(c), M, N, 64)) return launch<T, true>(a, b, c, M, N, K, stream);
#endif
  if (const cudaError_t err = allow_smem(tma_kernel_edge<T>, kTmaSmemBytes); err != cudaSuccess) return err;
  const int tiles = ((M + BM * kCluster - 1) / (BM * kCluster)) * ((N + BN - 1) / BN);
  if constexpr (kCluster == 1 && !kPersistent) {
#if TC_WG_TMA_STORE
    tma_kernel_edge<T><<<tiles, kTmaThreads, kTmaSmemBytes, stream>>>(c, M, N, K, tm_a, tm_b, tm_c);
#else
    tma_kernel_edge<T><<<tiles, kTmaThreads, kTmaSmemBytes, stream>>>(c, M, N, K, tm_a, tm_b);
#endif
    return cudaGetLastError();
  } else {
    cudaLaunchConfig_t cfg{};
    cudaLaunchAttribute attrs[1];
    attrs[0].id = cudaLaunchAttributeClusterDimension;
    attrs[0].val.clusterDim.x = kCluster;
    attrs[0].val.clusterDim.y = 1;
    attrs[0].val.clusterDim.z = 1;
    cfg.gridDim = dim3(tiles * kCluster);
    cfg.blockDim = dim3(kTmaThreads);
    cfg.dynamicSmemBytes = kTmaSmemBytes;
    cfg.stream = stream;
    cfg.attrs = attrs;
    cfg.numAttrs = 1;
    if constexpr (kPersistent) {  // as many clusters as run at once, asked once per device
      static DeviceCache resident;
      int clusters = 0;
      const cudaError_t err = per_device_value(resident, [&cfg](int, int* v) {
        return cudaOccupancyMaxActiveClusters(v, tma_kernel_edge<T>, &cfg);
      }, &clusters);
      if (err != cudaSuccess) return err;
      if (clusters < 1) return cudaErrorInvalidConfiguration;
      cfg.gridDim = dim3(min(tiles, clusters) * kCluster);
    }
#if TC_WG_TMA_STORE
    return cudaLaunchKernelEx(&cfg, tma_kernel_edge<T>, static_cast<T*>(c), M, N, K, tm_a, tm_b, tm_c);
#else
    return cudaLaunchKernelEx(&cfg, tma_kernel_edge<T>, static_cast<T*>(c), M, N, K, tm_a, tm_b);
#endif
  }
}

// matmul_wgmma_forward's choice with the instructors' launcher; TC_WG_TMA=0 runs kernel 3a on every shape.
template <typename T>
static cudaError_t edge_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream) {
  if (M == 0 || N == 0) return cudaSuccess;
  const bool aligned = ((reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b) |
                         reinterpret_cast<uintptr_t>(c)) % 16) == 0;
  if (aligned && K % 8 == 0 && N % 8 == 0) {
    if (TC_WG_TMA && K > 0) return launch_tma_edge<T>(a, b, c, M, N, K, stream);
    return launch<T, true>(a, b, c, M, N, K, stream);
  }
  return launch<T, false>(a, b, c, M, N, K, stream);
}
// END INSTRUCTOR ONLY

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
  // BEGIN SOLUTION: aligned (a, b, c 16-byte, K and N % 8 == 0): launch<T, true>; else launch<T, false>
  if (M == 0 || N == 0) return cudaSuccess;
  const bool aligned = ((reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b) |
                         reinterpret_cast<uintptr_t>(c)) % 16) == 0;
  if (aligned && K % 8 == 0 && N % 8 == 0) return launch<T, true>(a, b, c, M, N, K, stream);
  return launch<T, false>(a, b, c, M, N, K, stream);
  // END SOLUTION
  return cudaGetLastError();
}

// Step 11e: kernel 3b where TMA can go, kernel 3a elsewhere.
template <typename T>
cudaError_t matmul_wgmma_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream) {
  using namespace wgmma_gemm;
  if (!has_wgmma()) return matmul_mma_forward(a, b, c, M, N, K, stream);  // not an sm_90a image: kernel 2
  // BEGIN INSTRUCTOR ONLY
  if constexpr (kEdge) {  // the instructors' kernel 3b (TC_WG_EDGE=1, the default); the step's own below
    return edge_forward<T>(a, b, c, M, N, K, stream);
  } else {
  // END INSTRUCTOR ONLY
  // Contract: M == 0 or N == 0 launches nothing; every unaligned shape takes launch<T, false>.
  // BEGIN SOLUTION: aligned (a, b, c 16-byte, K and N % 8 == 0) and K > 0: launch_tma; other aligned: launch<T, true>
  if (M == 0 || N == 0) return cudaSuccess;
  // 16-byte copies and TMA both need K and N multiples of 8 (16-byte rows) and 16-byte-aligned bases.
  const bool aligned = ((reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b) |
                         reinterpret_cast<uintptr_t>(c)) % 16) == 0;
  if (aligned && K % 8 == 0 && N % 8 == 0) {
    if (K > 0) return launch_tma<T>(a, b, c, M, N, K, stream);
    return launch<T, true>(a, b, c, M, N, K, stream);
  }
  return launch<T, false>(a, b, c, M, N, K, stream);
  // END SOLUTION
  }  // INSTRUCTOR ONLY
  return cudaGetLastError();
}

template cudaError_t matmul_wgmma_async_forward<__half>(const __half*, const __half*, __half*, int, int, int,
                                                        cudaStream_t);
template cudaError_t matmul_wgmma_async_forward<__nv_bfloat16>(const __nv_bfloat16*, const __nv_bfloat16*,
                                                               __nv_bfloat16*, int, int, int, cudaStream_t);
template cudaError_t matmul_wgmma_forward<__half>(const __half*, const __half*, __half*, int, int, int, cudaStream_t);
template cudaError_t matmul_wgmma_forward<__nv_bfloat16>(const __nv_bfloat16*, const __nv_bfloat16*, __nv_bfloat16*,
                                                         int, int, int, cudaStream_t);
