// Day 11: matmul on the tensor cores, c[M, N] = a[M, K] @ b[K, N] (row-major), __half or __nv_bfloat16 storage,
// fp32 accumulation, the result rounded once to the storage type. Three kernels, one graded step each, the same
// interface as days 06-09 (kernel 3, Hopper's wgmma, is in matmul_wgmma.cu):
//   step 11a matmul_wmma      kernel 1: WMMA fragments, one stage, padded rows
//   step 11b matmul_mma_sync  kernel 2a: mma.sync + ldmatrix in inline PTX, kernel 1's one-stage loads (padded rows)
//   step 11c matmul_mma       kernel 2: kernel 2a's math fed by a cp.async pipeline into XOR-swizzled tiles
//
// Kernel 1, matmul_wmma: the first tensor-core kernel, through CUDA's C++ WMMA API (<mma.h>).
//   - The unit of work is a warp-wide 16 x 16 x 16 product: wmma::mma_sync(acc, a_frag, b_frag, acc) multiplies a
//     16 x 16 tile of A by a 16 x 16 tile of B and adds it to a 16 x 16 fp32 accumulator. A fragment is that tile
//     spread over the 32 lanes' registers (8 values each for a, b; 8 floats for acc) in a layout WMMA keeps
//     opaque: it is filled only by wmma::load_matrix_sync from memory and emptied by wmma::store_matrix_sync.
//   - Block tile 128 x 128, BK = 32, 8 warps as 2 x 4, each warp a 64 x 32 tile = 4 x 2 accumulator fragments.
//     __launch_bounds__(256, 2): at most 128 registers, so two blocks (16 warps) share an SM and hide each other's
//     loads and barriers; the 64 accumulators take half of them.
//     Per 16-wide k step a warp loads 2 B and 4 A fragments from shared memory and issues 8 mma_sync.
//   - Tiles go global -> registers -> shared memory (16-byte loads when K and N are multiples of 8 and the bases
//     aligned, guarded scalar loads otherwise, out-of-range entries zero), one stage, two barriers per K-tile:
//     simple on purpose. Rows are padded by 8 elements (16 bytes) so that the 8 rows a load_matrix_sync reads at
//     once fall in different banks.
//   - Epilogue: each fragment goes through a per-warp 16 x 16 fp32 patch of shared memory (its layout is opaque,
//     so this is the only way to know which element is which), then out with guarded stores, rounded to T.
//
// Kernel 2, matmul_mma: the same product with the instructions WMMA compiles to, in inline PTX, and the data
// movement that feeds them at speed. Kernel 2a (matmul_mma_sync, below the PTX wrappers) is its first half: the
// mma.sync, ldmatrix and register epilogue parts of this list, with kernel 1's loads instead of the pipeline.
//   - mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}: a warp multiplies a 16 x 16 A tile by a 16 x 8 B tile
//     into a 16 x 8 fp32 accumulator. Unlike WMMA, the fragment layouts are documented (PTX ISA, "Matrix
//     Fragments for mma.m16n8k16"): with g = lane / 4 and t = lane % 4,
//        A (4 regs of 2 x 16 bit): a0 = A[g][2t, 2t+1]  a1 = A[g+8][2t, 2t+1]  a2 = A[g][2t+8, +9]  a3 = A[g+8][2t+8, +9]
//        B (2 regs):               b0 = B[2t, 2t+1][g]   b1 = B[2t+8, 2t+9][g]
//        C (4 fp32):               c0, c1 = C[g][2t, 2t+1]                     c2, c3 = C[g+8][2t, 2t+1]
//     so the epilogue writes C straight from registers.
//   - ldmatrix.sync.aligned.m8n8.x4.shared.b16 loads four 8 x 8 16-bit matrices from shared memory, each lane
//     supplying the address of one 16-byte row (lanes 8i .. 8i+7 the rows of matrix i) and receiving, of every
//     matrix, row lane/4, elements 2(lane%4) and +1: exactly the A fragment above. B is stored [k][n] (row-major,
//     as in global memory), and the fragment wants two k values at one n: the .trans variant delivers each
//     matrix transposed, which is that. One x4 (non-trans) per 16 x 16 A fragment, one x4.trans per two 8-wide
//     B fragments.
//   - cp.async multi-stage pipeline: global -> shared without registers, STAGES (4) buffers, 3 tiles in flight; one
//     cp.async.wait_group + one __syncthreads per K-tile. K-tile kt+3 is copied while kt is computed.
//   - XOR swizzle of 16-byte chunks in shared memory: chunk c of row r is stored at chunk c ^ f(r). Without it, an
//     ldmatrix phase (8 lanes, 8 rows, the same chunk column) hits one bank group 8 times (B rows are 256 bytes
//     apart) or 4 times (A rows 64 bytes apart, two per 128 bytes). With it, the 8 rows land in 8 distinct
//     16-byte slots of a 128-byte line: conflict-free reads, and the cp.async writes stay conflict-free (the XOR
//     permutes chunks within 128 bytes).
//   - Block tile 128 x 128, BK = 32, 4 warps as 2 x 2 with a 64 x 64 warp tile: per 16-wide k step 4 ldmatrix.x4
//     (A), 4 ldmatrix.x4.trans (B) feed 32 mma. 128 fp32 accumulators per thread (ptxas, sm_80 and sm_90: 236
//     registers, 255 for the guarded instance, no spills). 4 stages x 16 KiB = 64 KiB of dynamic shared memory; __launch_bounds__(128, 2): two blocks per SM.
//     Measured against 128 x 256 tiles with 8 warps (one block per SM; 41% of cuBLAS bf16 at 4096^3 and 8192^3),
//     3 stages, 256 x 128 tiles and BK = 64 (the instructors' scripts/tc_sweep.py, the instructors' measured/NOTES.md): this one, at 48.5%
//     (geometric mean of the two), and BK = 64 (48.8%, but the guarded path then spills) were the best.
//   - Block swizzle: a 1-D grid walked down groups of 8 block-rows, so blocks running together share A and B
//     tiles in L2.
//   - Any shape: the 16-byte cp.async path needs K and N multiples of 8 and 16-byte-aligned bases; edge chunks
//     are zero-filled by cp.async itself (source size 0). Other shapes (odd K, unaligned offsets) take the same
//     kernel with guarded scalar loads that write the same swizzled layout (kAsync = false), and guarded stores.
//
// Where it stands (H200, `grader check day11 --solution`): kernel 1 at 95-110 TFLOP/s, 2.2x day 09's CUDA-core
// kernel; kernel 2 at 275-410 TFLOP/s, 0.44-0.55x cuBLAS (geometric mean 0.51x). mma.sync does not reach
// cuBLAS on Hopper, which runs wgmma: kernel 3. days/day11/README.md ("Measured") has the tables.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cstdint>
#include <type_traits>

#include "device_cache.h"    // allow_smem: cudaFuncSetAttribute for over 48 KiB of shared memory
#include "float_convert.cuh"  // to_float(v), from_float<T>(v)

// Two fp32 results of a row as one 32-bit value of two T, rounded to nearest (for 4- and 16-byte stores).
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

// ---------------------------------------------------------------------------------------------------------------
// Kernel 1: WMMA
// ---------------------------------------------------------------------------------------------------------------
namespace wmma_gemm {

constexpr int BM = 128, BN = 128, BK = 32;       // block tile
constexpr int WARPS_M = 2, WARPS_N = 4;          // 8 warps
constexpr int kThreads = 32 * WARPS_M * WARPS_N;
constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;  // warp tile 64 x 32
constexpr int FM = WM / 16, FN = WN / 16;             // 4 x 2 fragments of 16 x 16 per warp
constexpr int PAD = 8;                                // elements of padding per shared row (16 bytes)
constexpr int LDA = BK + PAD, LDB = BN + PAD;         // shared row lengths (ldm), multiples of 8 as WMMA needs
static_assert(FM * 16 == WM && FN * 16 == WN && BK % 16 == 0, "warp tiles are whole 16 x 16 x 16 fragments");
static_assert(LDA % 8 == 0 && LDB % 8 == 0, "WMMA's ldm for 16-bit types is a multiple of 8 elements");

// Contract: valid = how many of the 8 elements lie inside the matrix, unclamped: the given loops pass
// min(8, K - k), which is negative past the edge; valid <= 0 means 8 zeros, valid >= 8 the whole chunk. kVec
// means one 16-byte load (aligned, all 8 in or all out); otherwise 8 guarded scalar loads.
template <typename T, bool kVec>
__device__ __forceinline__ void load_chunk(T* dst, const T* src, int valid) {
  // YOUR CODE HERE: load_chunk<T, kVec>(dst, src, valid): 8 elements of a row into shared memory, zeros past valid
}

template <typename T, bool kVec>
__global__ void __launch_bounds__(kThreads, 2)
    kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N, int K) {
  using namespace nvcuda;
  __shared__ __align__(32) T As[BM][LDA];
  __shared__ __align__(32) T Bs[BK][LDB];
  __shared__ __align__(32) float Cs[WARPS_M * WARPS_N][16][16];  // per-warp patch for the epilogue
  // Given, to read and run, not to write: WMMA is the tensor cores' C++ API, met before step 11b's PTX, and the
  // later steps keep only its load_chunk (step 11a's holes: load_chunk above, which this calls, and the launcher).
  // C tile (blockIdx.y · BM, blockIdx.x · BN); warp w computes its WM x WN patch as FM x FN wmma fragments. Per BK
  // step all threads fill As[BM][LDA], Bs[BK][LDB] in 8-element chunks with load_chunk (zeros outside A, B),
  // barrier, BK / 16 mma_sync steps, barrier; fp32 accumulators; epilogue through this warp's Cs[warp] patch,
  // rounded to T, stores guarded by M and N.
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  for (int k0 = 0; k0 < K; k0 += BK) {
    // A tile: BM rows of BK/8 chunks; B tile: BK rows of BN/8 chunks. A chunk is 8 consecutive elements of a row.
#pragma unroll
    for (int q = tid; q < BM * BK / 8; q += kThreads) {
      const int r = q / (BK / 8), col = q % (BK / 8) * 8;
      const int row = m0 + r, k = k0 + col;
      const int valid = row < M ? min(8, K - k) : 0;
      load_chunk<T, kVec>(&As[r][col], a + static_cast<size_t>(row) * K + k, valid);
    }
#pragma unroll
    for (int q = tid; q < BK * BN / 8; q += kThreads) {
      const int r = q / (BN / 8), col = q % (BN / 8) * 8;
      const int k = k0 + r, n = n0 + col;
      const int valid = k < K ? min(8, N - n) : 0;
      load_chunk<T, kVec>(&Bs[r][col], b + static_cast<size_t>(k) * N + n, valid);
    }
    __syncthreads();
#pragma unroll 1  // (unrolled, nvcc hoists the next step's fragments: over 128 registers, spills)
    for (int kk = 0; kk < BK; kk += 16) {
      // The B fragments of this k step, then one A fragment at a time (fewer live registers).
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb[FN];
#pragma unroll
      for (int j = 0; j < FN; ++j) wmma::load_matrix_sync(fb[j], &Bs[kk][wn + 16 * j], LDB);
#pragma unroll
      for (int i = 0; i < FM; ++i) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
        wmma::load_matrix_sync(fa, &As[wm + 16 * i][kk], LDA);
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], fa, fb[j], acc[i][j]);
      }
    }
    __syncthreads();  // everyone is done with this tile before the next one overwrites it
  }

  // Epilogue: fragment -> this warp's fp32 patch -> T in global memory. Lane l writes row l/2, 8 columns.
  float(*patch)[16] = Cs[warp];
  const int pr = lane / 2, pc = lane % 2 * 8;
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) {
      wmma::store_matrix_sync(&patch[0][0], acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      const int row = m0 + wm + 16 * i + pr, col = n0 + wn + 16 * j + pc;
      if (row < M) {
        T* dst = c + static_cast<size_t>(row) * N + col;
        const float* v = &patch[pr][pc];
        if (kVec && col < N) {  // N % 8 == 0: all 8 columns or none
          *reinterpret_cast<uint4*>(dst) = make_uint4(pack2<T>(v[0], v[1]), pack2<T>(v[2], v[3]),
                                                      pack2<T>(v[4], v[5]), pack2<T>(v[6], v[7]));
        } else if (!kVec) {
#pragma unroll
          for (int e = 0; e < 8; ++e)
            if (col + e < N) dst[e] = from_float<T>(v[e]);
        }
      }
      __syncwarp();  // the patch is overwritten by the next fragment
    }
}

}  // namespace wmma_gemm

// ---------------------------------------------------------------------------------------------------------------
// Kernels 2a and 2: mma.sync + ldmatrix (2a with kernel 1's loads; 2 with cp.async stages, swizzled shared memory)
// ---------------------------------------------------------------------------------------------------------------
namespace mma_gemm {

// Tuning knobs (the instructors' scripts/tc_sweep.py rebuilds this file with -D overrides). The defaults: 128 x 128 x 32 tiles,
// 4 warps as 2 x 2 (64 x 64 per warp), 4 stages, two blocks per SM.
#ifndef TC_BM
#define TC_BM 128
#endif
#ifndef TC_BN
#define TC_BN 128
#endif
#ifndef TC_BK
#define TC_BK 32
#endif
#ifndef TC_WARPS_M
#define TC_WARPS_M 2
#endif
#ifndef TC_WARPS_N
#define TC_WARPS_N 2
#endif
#ifndef TC_STAGES
#define TC_STAGES 4
#endif
#ifndef TC_MIN_BLOCKS
#define TC_MIN_BLOCKS 2
#endif
#ifndef TC_GROUP
#define TC_GROUP 8  // block-rows per group of kernel 2's block swizzle (given code)
#endif
constexpr int BM = TC_BM, BN = TC_BN, BK = TC_BK, STAGES = TC_STAGES;
constexpr int WARPS_M = TC_WARPS_M, WARPS_N = TC_WARPS_N;
constexpr int kThreads = 32 * WARPS_M * WARPS_N;
constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;  // warp tile
constexpr int MI = WM / 16, NJ = WN / 8;             // m16 A fragments and n8 B fragments per warp
constexpr int A_CPR = BK / 8, B_CPR = BN / 8;        // 16-byte chunks per shared row of A [BM][BK] and B [BK][BN]
constexpr int A_LOADS = BM * A_CPR / kThreads;       // 16-byte chunks per thread per tile
constexpr int B_LOADS = BK * B_CPR / kThreads;
constexpr int kStageElems = BM * BK + BK * BN;       // one stage: the A tile, then the B tile
constexpr int kSmemBytes = STAGES * kStageElems * 2;
static_assert(kSmemBytes <= 99 * 1024, "over the 99 KiB a block of sm_86, sm_89 and sm_120 (grader/gpu_support.py)");
static_assert(MI * 16 == WM && NJ * 8 == WN && NJ % 2 == 0 && BK % 16 == 0, "warp tiles are whole 16 x 16 steps");
static_assert(kSmemBytes <= 227 * 1024, "the stages must fit in an SM's shared memory (227 KiB on H100/H200)");
static_assert((A_CPR == 4 || A_CPR % 8 == 0) && B_CPR % 8 == 0, "the swizzle needs rows of 4 or 8k chunks");
static_assert(A_LOADS * kThreads == BM * A_CPR && B_LOADS * kThreads == BK * B_CPR, "tiles split evenly");
static_assert(STAGES >= 2, "a pipeline needs two stages at least");

// PTX wrappers (provided). Shared-memory operands are 32-bit shared-window addresses (smem_addr).
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// 16 bytes global -> shared, asynchronously; the 16 bytes are zeros instead when !ok (src-size 0: nothing is read,
// but the kernels still pass an address inside the tensor, which costs nothing and keeps tools quiet).
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool ok) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(ok ? 16 : 0)
               : "memory");
}
// Closes the group of this thread's cp.async issued since the last commit.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most N of this thread's committed groups are still in flight (the oldest complete first).
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
// Four 8 x 8 matrices of 16-bit values: lane 8i + r gives the address of row r of matrix i; every lane receives,
// in r[i], row lane/4 and columns 2(lane%4), 2(lane%4)+1 of matrix i (with .trans: of matrix i transposed).
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
// d += a (16 x 16, row-major fragment) * b (16 x 8, column-major fragment), fp32 accumulators.
template <typename T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Kernel 2a (step 11b, matmul_mma_sync): mma.sync + ldmatrix fed by kernel 1's plain, one-stage loads
// ---------------------------------------------------------------------------------------------------------------
// The first step towards kernel 2: its math with kernel 1's data movement. Tiles go global -> registers -> shared
// memory with wmma_gemm::load_chunk (kernel 1's helper: 16-byte loads on the aligned path, guarded scalar loads
// with zeros elsewhere), one stage, a barrier before and after the math. Rows are padded by 8 elements, so a row is
// an odd number of 16-byte chunks long (A: 40 elements = 5 chunks, B: 136 = 17): the 8 rows an ldmatrix phase
// reads start in 8 distinct 16-byte slots of a 128-byte line, no bank conflict. New here: the fragments are in
// registers in the documented m16n8k16 layouts, filled by ldmatrix.x4 (A) and ldmatrix.x4.trans (B) from per-lane
// row addresses, and the epilogue writes C straight from the accumulators. The block tile and warp tiles are
// kernel 2's (128 x 128 x 32, 4 warps of 64 x 64), so the next step changes only how the tiles arrive.
namespace simple {

constexpr int BM = 128, BN = 128, BK = 32;
constexpr int WARPS_M = 2, WARPS_N = 2;
constexpr int kThreads = 32 * WARPS_M * WARPS_N;
constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;  // warp tile 64 x 64
constexpr int MI = WM / 16, NJ = WN / 8;             // 4 m16 A fragments, 8 n8 B fragments per warp
constexpr int PAD = 8;                               // elements of padding per shared row (16 bytes)
constexpr int LDA = BK + PAD, LDB = BN + PAD;        // shared row lengths: 80 and 272 bytes
static_assert((LDA / 8) % 2 == 1 && (LDB / 8) % 2 == 1, "an odd number of 16-byte chunks per row: 8 rows, 8 slots");
static_assert(MI * 16 == WM && NJ * 8 == WN && NJ % 2 == 0 && BK % 16 == 0, "warp tiles are whole 16 x 16 steps");

// Contract: one 16-wide k step of a warp's kMI x kNJ m16n8 accumulators: the kMI A fragments by ldmatrix_x4 at
// a_addr(i), the kNJ B fragments in pairs by ldmatrix_x4_trans at b_addr(jp) (b0 b1 of fragments 2jp and 2jp + 1),
// then the kMI x kNJ mma_16816 into acc. a_addr and b_addr return this lane's shared-window addresses (Concept 4),
// so the same step reads 11b's padded tiles and 11c's swizzled stages. Both mma.sync kernels call it.
template <typename T, int kMI, int kNJ, typename AAddr, typename BAddr>
__device__ __forceinline__ void mma_k16(float (&acc)[kMI][kNJ][4], AAddr a_addr, BAddr b_addr) {
  // YOUR CODE HERE: ldmatrix_x4 of each A fragment, ldmatrix_x4_trans of each B pair, then every mma_16816
}

// Contract: this warp's kMI x kNJ m16n8 accumulators (acc[i][j]: rows row0 + 16·i .. + 15, columns col0 + 8·j .. + 7,
// Concept 3's C fragment) rounded to T into c (M x N, row-major), rows >= M and columns >= N not written; kVec
// (N % 8 == 0, c 16-byte aligned): two columns per 4-byte store. Both mma.sync kernels (11b, 11c) end with it.
template <typename T, bool kVec, int kMI, int kNJ>
__device__ __forceinline__ void store_acc(T* __restrict__ c, const float (&acc)[kMI][kNJ][4], int row0, int col0,
                                          int M, int N) {
  // YOUR CODE HERE: the epilogue straight from the accumulators: c0 c1 at (g, 2t), c2 c3 at (g + 8, 2t) of each fragment
}

template <typename T, bool kVec>
__global__ void __launch_bounds__(kThreads, 2)
    kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N, int K) {
  __shared__ __align__(128) T As[BM][LDA];
  __shared__ __align__(128) T Bs[BK][LDB];
  // Contract: per BK step all threads fill As[BM][LDA], Bs[BK][LDB] in 8-element chunks with
  // wmma_gemm::load_chunk<T, kVec> (zeros outside A, B), barrier, BK / 16 steps of ldmatrix_x4 (A),
  // ldmatrix_x4_trans (B) and mma_16816 on fp32 accumulators, barrier; the epilogue is your store_acc (above).
  // Given: the C tile (blockIdx.y · BM, blockIdx.x · BN), warp w's 64 x 64 patch (MI x NJ m16n8 accumulators)
  // and kernel 1's loads through your load_chunk, between two barriers per BK step.
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int tid = threadIdx.x, warp = tid / 32;
  const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;
  // YOUR CODE HERE: a_lane, b_lane: this lane's ldmatrix row addresses (shared window) in As and Bs for k step 0, fragment 0

  float acc[MI][NJ][4] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
    for (int q = tid; q < BM * BK / 8; q += kThreads) {
      const int r = q / (BK / 8), col = q % (BK / 8) * 8;
      const int row = m0 + r, k = k0 + col;
      const int valid = row < M ? min(8, K - k) : 0;
      wmma_gemm::load_chunk<T, kVec>(&As[r][col], a + static_cast<size_t>(row) * K + k, valid);
    }
#pragma unroll
    for (int q = tid; q < BK * BN / 8; q += kThreads) {
      const int r = q / (BN / 8), col = q % (BN / 8) * 8;
      const int k = k0 + r, n = n0 + col;
      const int valid = k < K ? min(8, N - n) : 0;
      wmma_gemm::load_chunk<T, kVec>(&Bs[r][col], b + static_cast<size_t>(k) * N + n, valid);
    }
    __syncthreads();
    // YOUR CODE HERE: BK / 16 k steps, each one mma_k16 at this lane's addresses of A's fragment i and B's pair jp
    __syncthreads();  // everyone is done with this tile before the next one overwrites it
  }

  store_acc<T, kVec>(c, acc, m0 + wm, n0 + wn, M, N);
}

}  // namespace simple

// ---------------------------------------------------------------------------------------------------------------
// Kernel 2 (step 11c, matmul_mma): the same math, tiles by a cp.async pipeline into swizzled shared memory
// ---------------------------------------------------------------------------------------------------------------

// Contract: swizzle maps logical 16-byte chunk `chunk` of `row` to its physical chunk so that 8 rows read
// at one logical chunk hit 8 distinct 16-byte slots of a 128-byte line (CPR = 4, or CPR >= 8).
// YOUR CODE HERE: template <int CPR> __device__ __forceinline__ int swizzle(int row, int chunk): the physical 16-byte chunk of logical chunk `chunk` in row `row`

template <typename T, bool kAsync>
__global__ void __launch_bounds__(kThreads, TC_MIN_BLOCKS)
    kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N, int K) {
  extern __shared__ __align__(128) unsigned char smem[];  // STAGES x {A tile [BM][BK], B tile [BK][BN]}, swizzled
  // Contract: stage s of smem = A tile [BM][BK], then B tile [BK][BN], 16-byte chunks swizzled; kAsync:
  // cp.async, else guarded loads; zeros past M, N, K; no cp.async in flight at exit; fp32 accumulators,
  // stores rounded to T and guarded by M and N (kAsync: two columns per 4-byte store).
  // Given: the block swizzle (day 09's), the set-up, 11b's mma_k16 at a_offset and b_offset, and the pipeline of
  // day 09's double buffer with STAGES stages: STAGES - 1 K-tiles in flight, one commit per iteration, wait_group
  // STAGES - 2 then one barrier per K-tile, the stages rotated. Step 11c's lesson is the swizzle: yours are swizzle
  // (above), load_tile, a_offset and b_offset; the epilogue is 11b's store_acc.
  // Block swizzle: groups of TC_GROUP block-rows, walked column by column.
  const int gm = (M + BM - 1) / BM, gn = (N + BN - 1) / BN;
  const int per_group = TC_GROUP * gn;
  const int group = blockIdx.x / per_group, first = group * TC_GROUP;
  const int rows_in_group = min(gm - first, TC_GROUP);
  const int in_group = blockIdx.x % per_group;
  const int m0 = (first + in_group % rows_in_group) * BM;
  const int n0 = (in_group / rows_in_group) * BN;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;
  T* const tiles = reinterpret_cast<T*>(smem);
  const uint32_t tiles_addr = smem_addr(smem);

  // Copies K-tile kt into stage s. Thread tid moves chunks tid, tid + kThreads, ... of each tile.
  auto load_tile = [&](int kt, int s) {
    // YOUR CODE HERE: K-tile kt into stage s: A [BM][BK], then B [BK][BN], chunk ch of row r at swizzle<CPR>(r, ch); kAsync: cp_async16 (zeros past M, N, K), else 11a's wmma_gemm::load_chunk<T, false>
  };

  // This lane's ldmatrix row addresses (bytes from the stage's A or B tile) for k step kk and fragment 0; the
  // swizzle of A rows does not change by adding 16 rows, so fragment i is + 16·i rows.
  //   A, x4: lanes 0-15 rows 0-15 at k 0-7, lanes 16-31 rows 0-15 at k 8-15 -> a0 a1 a2 a3.
  //   B, x4.trans: lanes 0-7 k 0-7, 8-15 k 8-15 at n 0-7; lanes 16-23, 24-31 the same at n 8-15 -> b0 b1 of two
  //   n8 fragments.
  auto a_offset = [&](int kk) -> int {
    // YOUR CODE HERE: return the byte offset from the stage of this lane's A row for ldmatrix_x4 (k step kk, fragment 0), swizzled as load_tile wrote it: swizzle<A_CPR>, A_CPR = 4, chunk ^ ((row / 2) % 4)
  };
  auto b_offset = [&](int kk, int jp) -> int {
    // YOUR CODE HERE: return the byte offset from the stage of this lane's B row for ldmatrix_x4_trans (k step kk, fragments 2jp and 2jp + 1), swizzled; B follows A's BM x BK tile
  };

  float acc[MI][NJ][4] = {};
  const int tiles_k = (K + BK - 1) / BK;
  // Prologue: STAGES - 1 tiles in flight. Every iteration commits one group (possibly empty), so that
  // "wait until at most STAGES - 2 groups are pending" always means "tile kt has landed".
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < tiles_k) load_tile(s, s);
    cp_async_commit();
  }
  int read_stage = 0, write_stage = STAGES - 1;
  for (int kt = 0; kt < tiles_k; ++kt) {
    cp_async_wait<STAGES - 2>();  // this thread's copies of tile kt are in shared memory
    __syncthreads();              // ... and everyone's; everyone is also done with tile kt - 1 (write_stage)
    if (kt + STAGES - 1 < tiles_k) load_tile(kt + STAGES - 1, write_stage);
    cp_async_commit();

    const uint32_t stage = tiles_addr + read_stage * kStageElems * 2;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16)  // 11b's k step, at the swizzled offsets
      simple::mma_k16<T>(acc, [&](int i) { return stage + a_offset(kk) + i * 16 * BK * 2; },
                         [&](int jp) { return stage + b_offset(kk, jp); });
    read_stage = read_stage + 1 == STAGES ? 0 : read_stage + 1;
    write_stage = write_stage + 1 == STAGES ? 0 : write_stage + 1;
  }
  cp_async_wait<0>();  // nothing may be in flight into shared memory when the block exits

  simple::store_acc<T, kAsync>(c, acc, m0 + wm, n0 + wn, M, N);  // 11b's epilogue (the same warp tile)
}

// Given (launch boilerplate, as on day 10):
// One launch of kernel<T, kAsync>. Over 48 KiB of dynamic shared memory must be asked for, per kernel and per
// device: allow_smem asks on every launch (its opt-in query is cached, and the driver call is cheap next to a
// GEMM), so a second GPU in the same process gets its attribute too.
template <typename T, bool kAsync>
static cudaError_t launch(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream) {
  if (const cudaError_t err = allow_smem(kernel<T, kAsync>, kSmemBytes); err != cudaSuccess) return err;
  const dim3 grid(((M + BM - 1) / BM) * ((N + BN - 1) / BN));
  kernel<T, kAsync><<<grid, kThreads, kSmemBytes, stream>>>(a, b, c, M, N, K);
  return cudaGetLastError();
}

}  // namespace mma_gemm

// ---------------------------------------------------------------------------------------------------------------
// Launchers (float is not a tensor-core type here: the bindings reject it before calling these)
// ---------------------------------------------------------------------------------------------------------------
template <typename T>
cudaError_t matmul_wmma_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream) {
  using namespace wmma_gemm;
  // Aligned: a, b and c 16-byte aligned and K and N multiples of 8 (whole 16-byte chunks).
  const dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
  // YOUR CODE HERE: (step 11a) kernel<T, true><<<grid, kThreads, 0, stream>>>(a, b, c, M, N, K) (load_chunk's 16-byte path) only when aligned, else kernel<T, false> (static shared memory only: no allow_smem)
  return cudaGetLastError();
}

template <typename T>
cudaError_t matmul_mma_sync_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream) {
  using namespace mma_gemm::simple;
  // Aligned, as for kernel 1: a, b and c 16-byte aligned and K and N multiples of 8 (whole 16-byte chunks).
  const dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
  // YOUR CODE HERE: (step 11b) as step 11a's launch: kernel<T, true><<<grid, kThreads, 0, stream>>>(a, b, c, M, N, K) only when aligned, else kernel<T, false>
  return cudaGetLastError();
}

template <typename T>
cudaError_t matmul_mma_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream) {
  using namespace mma_gemm;
  // YOUR CODE HERE: launch<T, true> when a, b, c are 16-byte aligned and K, N are multiples of 8; else launch<T, false>
  return cudaGetLastError();
}

#define INSTANTIATE(T)                                                                                      \
  template cudaError_t matmul_wmma_forward<T>(const T*, const T*, T*, int, int, int, cudaStream_t);        \
  template cudaError_t matmul_mma_sync_forward<T>(const T*, const T*, T*, int, int, int, cudaStream_t);    \
  template cudaError_t matmul_mma_forward<T>(const T*, const T*, T*, int, int, int, cudaStream_t);
INSTANTIATE(__half)
INSTANTIATE(__nv_bfloat16)
#undef INSTANTIATE
