// Day 12: FlashAttention-2 forward on tensor cores. The same op as day 10 (O = softmax(scale · Q Kᵀ) V per
// (batch, head) and the fp32 row logsumexp; q, k, v, o [B, H, N, d], lse fp32 [B, H, N], scale = 1/sqrt(d),
// d = 64 or 128, causal: query i sees keys j <= i), for __half and __nv_bfloat16 only: both products run on tensor
// cores with fp32 accumulation. fp32 inputs are rejected (day 10 is the fp32 kernel). Step 12a takes contiguous
// tensors; step 12b takes views too (head_strides.h: each tensor's batch, head and row strides), which is what a
// model hands over: q, k, v sliced from one projection, o wanted in [B, N, H, d] memory.
//
// Changes vs day 10's flash_attention (CUDA cores, fp32 tiles in shared memory, P through shared memory):
//   - mma.sync.m16n8k16 (inline PTX, day 11) for S = Q Kᵀ and O += P V, fp32 accumulators in registers. One
//     block = 8 warps = 128 query rows (Br), each warp owns 16 rows and walks all keys: warps never exchange
//     anything, so the row max and row sum are reductions over the 4 lanes of a quad (2 shuffles).
//   - Q's fragments are loaded once (ldmatrix.x4, d/16 x 4 registers) and stay in registers for the whole loop.
//     Registers (ptxas): d = 128: O 64 + Q 32 + S 32 and addresses, 194 (one 8-warp block per SM, 96 KiB of
//     shared memory); d = 64: 128 under a 2-blocks-per-SM cap (48 KiB each), no spills on sm_80 or sm_90.
//   - K and V tiles of Bc rows are stored as they are (fp16/bf16, no conversion) and double-buffered: cp.async
//     fetches tile t+1 while the warps compute on tile t, with K's and V's copies in separate commit groups so
//     that S = Q Kᵀ can start before V has landed.
//   - Shared rows are XOR-swizzled in 16-byte chunks (chunk c of row r is stored at c ^ (r % 8)): the 8 rows an
//     ldmatrix phase reads hit 8 different bank groups, so ldmatrix (x4, and x4.trans for V, whose B fragments
//     run down the rows) is conflict-free without padding, and cp.async's 16-byte stores stay aligned.
//   - P never touches shared memory: the m16n8 accumulator layout of S (thread t holds row t/4 (+8), columns
//     2(t%4), +1 of each 8-column tile) is the layout of the m16n8k16 A operand, so two adjacent S tiles, rounded
//     to 16 bits and packed in pairs, are P's A fragment for 16 keys.
//   - exp2 with log2(e)/sqrt(d) folded into one FFMA per score: p = ex2(s · c − m · c), ex2.approx.ftz (one MUFU
//     op; results under 2^-126 flush to 0, which is invisible next to a row sum >= 1). lse = m/sqrt(d) + ln l.
//   - Causal: key tiles past the block's last row are never loaded; a warp skips the arithmetic of a tile that
//     is entirely above its own 16 rows; only tiles that cross the diagonal (or N) are masked elementwise. Blocks
//     of a head run heaviest first, as on day 10.
//   - Any N: rows past N are zero-filled by cp.async (src-size 0: nothing is read), keys past N are masked to
//     -inf, rows past N are never stored. Tensors whose start is not 16-byte aligned (the `offset` cases) take
//     an instance that copies 2-byte elements instead of cp.async and stores O element by element.
//   - The O tile leaves through shared memory (each warp's own 16 Q rows, dead by then): 16-byte coalesced
//     stores instead of the accumulator layout's scattered 4-byte ones.
// Hopper (sm_90a): a second kernel on wgmma, compiled only into the sm_90a image (`__CUDA_ARCH_FEAT_SM90_ALL`,
//   `-gencode=arch=compute_90a,code=sm_90a` from course.yaml) and chosen at run time when the GPU is a 9.0 part,
//   the image really is sm_90a (a one-time probe kernel says so) and the tensors are 16-byte aligned; everything
//   else takes the mma.sync kernel. Consumer warpgroups of 64 query rows, two at d = 128 (Br = 128) and three at
//   d = 64 (Br = 192: its products are half as long and its softmax is not, so there is more to hide), Bc = 128
//   (176 at d = 128 without a mask: fewer softmax passes and barriers per key), and a producer warpgroup:
//   - S = Q Kᵀ is wgmma m64n128k16 (n176) with both operands read from shared memory through descriptors (128-byte
//     swizzle, K-major); O += P V is m64n{d}k16 with P from registers (the same accumulator-to-A-fragment
//     identity as above, per warp) and V from shared memory as an N-major operand (imm-trans-b = 1), so V needs
//     no transpose either.
//   - wgmma is asynchronous: each iteration issues S for tile t+1 and P V for tile t back to back, waits for S
//     only, and runs the softmax of tile t+1 on the CUDA cores while the tensor cores are still busy with P V.
//   - Tiles arrive by TMA: one thread issues cp.async.bulk.tensor copies of [rows][64] boxes from a 4-D view
//     [B][H][N][d] of each tensor with the tensor's own strides (rows past N come back as zeros), the Tensor
//     Memory Accelerator writes them in the 128-byte-swizzled layout wgmma reads, and a "full" mbarrier per
//     buffer counts the bytes in; the consumers wait on its phase. (FA12_WG_TMA=0: the same tiles by cp.async
//     from every thread, 16 bytes each, and a __syncthreads per iteration.)
//   - That thread is a producer warpgroup's: it waits on an "empty" mbarrier per buffer, which each consumer warp
//     arrives on once its products are done with the buffer, so the walk has no block-wide barrier. The producer
//     keeps 24 registers and gives the rest to the consumers (setmaxnreg: 240 each at d = 128, where the walk
//     needs 189; 160 each for three at d = 64).
//   - Ping-pong: the consumer warpgroups take turns issuing their products (named barriers 1 to 3, round robin), so
//     the tensor cores run one warpgroup's products while the others run their softmax. (FA12_WG_PINGPONG=0: no turns;
//     FA12_WG_PRODUCER=0: thread 0 issues the copies and a __syncthreads per iteration frees the buffers.)
// Measured: days/day12/README.md's tables (grader check day12 --solution) and the instructors' measured/NOTES.md's day 12 steps.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "device_cache.h"  // allow_smem: cudaFuncSetAttribute for over 48 KiB of shared memory
#include "head_strides.h"  // course::HeadStrides: where a head's rows lie (the op takes views)
#include "hopper.cuh"  // wgmma, TMA and mbarrier wrappers, the sm_90a probe (shared with day 20's backward)
#include "ptx.cuh"     // cp.async, ldmatrix, mma.sync, pack2, ex2, quad reductions (day 11's wrappers)

// Knobs (-D...) for measuring alternatives; the defaults are what the notes found fastest.
#ifndef FA12_MMA_BC64
#define FA12_MMA_BC64 64  // mma.sync kernel, d = 64: keys per tile
#endif
#ifndef FA12_MMA_MIN_BLOCKS64
#define FA12_MMA_MIN_BLOCKS64 2  // mma.sync kernel, d = 64: blocks per SM promised to ptxas (2: <= 128 registers)
#endif
// The optional wgmma kernel's schedule (given code reads them; the defaults are the instructors' FlashAttention-3
// schedule, each knob turns one of its steps off).
#ifndef FA12_WG_TMA
#define FA12_WG_TMA 1  // wgmma kernel: 1 = tiles by TMA (one thread, mbarriers), 0 = cp.async by every thread
#endif
#ifndef FA12_WG_STAGES
#define FA12_WG_STAGES 2  // wgmma kernel: K and V buffers (2 or 3: tiles are fetched 1 or 2 iterations ahead)
#endif
#ifndef FA12_WG_PRODUCER
#define FA12_WG_PRODUCER 1  // 1 (TMA only): a third warpgroup issues every copy; the others free buffers by mbarrier
#endif
#ifndef FA12_WG_PINGPONG
#define FA12_WG_PINGPONG 1  // 1 (with the producer): the two consumer warpgroups take turns issuing their products
#endif
#ifndef FA12_WG_D64_GROUPS
#define FA12_WG_D64_GROUPS 3  // d = 64 with the producer: consumer warpgroups per block (2 or 3: Br = 128 or 192)
#endif
#ifndef FA12_WG_BC_D128
#define FA12_WG_BC_D128 176  // d = 128 without a causal mask: keys per tile (Bc), 176 (FlashAttention-3's) or 128
#endif
// BEGIN INSTRUCTOR ONLY
// Knobs of the solution's own code (the stub's holes do not use them), for the sweeps.
#ifndef FA12_WG_OVERLAP
#define FA12_WG_OVERLAP 1  // 0: the wgmma kernel waits for each product before the next step (to measure overlap)
#endif
#ifndef FA12_HOPPER
#define FA12_HOPPER 1  // 0: never take the wgmma kernel (to time the mma.sync kernel on a Hopper GPU)
#endif
// END INSTRUCTOR ONLY

// ---------------------------------------------------------------------------------------------------------------
// The mma.sync kernel (sm_80 and later)
// ---------------------------------------------------------------------------------------------------------------

namespace mma {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kBr = 16 * kWarps;  // query rows per block: 16 per warp

template <int D>
struct Cfg;
template <>
struct Cfg<64> {
  static constexpr int kBc = FA12_MMA_BC64;
  static constexpr int kMinBlocks = FA12_MMA_MIN_BLOCKS64;
};
template <>
struct Cfg<128> {
  static constexpr int kBc = 64;
  static constexpr int kMinBlocks = 1;  // O (64) + Q (32) + S (32) registers alone are 128: one block per SM
};

// Shared memory: Q [Br][D], K [2][Bc][D], V [2][Bc][D], all 16-bit, rows swizzled (see swz).
template <int D>
struct Smem {
  static constexpr int kBc = Cfg<D>::kBc;
  static constexpr int kQ = 0;                   // elements
  static constexpr int kK = kQ + kBr * D;
  static constexpr int kV = kK + 2 * kBc * D;
  static constexpr size_t kBytes = 2 * (kV + 2 * kBc * D);  // d = 64: 48 KiB; d = 128: 96 KiB
  static_assert(kBytes <= 99 * 1024, "over the 99 KiB a block of sm_86, sm_89 and sm_120 (grader/gpu_support.py)");
};

// Contract: within a row the 16-byte chunks are permuted by row % 8, so 8 consecutive rows read at one
// logical chunk hit 8 distinct 16-byte slots (ldmatrix without bank conflicts).
// BEGIN SOLUTION: swz<D>(row, chunk) = element offset of 16-byte chunk `chunk` of `row` in a swizzled [rows][D] tile
// Element offset of (row, 16-byte chunk) in a [rows][D] tile of 16-bit values, chunks XOR-swizzled by row % 8.
template <int D>
__device__ __forceinline__ int swz(int row, int chunk) {
  return row * D + ((chunk ^ (row & 7)) << 3);
}
// END SOLUTION

}  // namespace mma

// Helpers shared by both kernels.
namespace tc {

// Day 11's PTX wrappers, from common/ptx.cuh (the same ones the backward days use). Two differ from day 11's
// matmul.cu: mma16816<T>(d, a, b0, b1) takes pointers and B's two registers apart (day 11: mma_16816<T> on
// arrays), and ex2, quad_max and quad_sum are new (days/day12/README.md lists every signature).
using ptx::cp_async16;
using ptx::cp_async_commit;
using ptx::cp_async_wait;
using ptx::ex2;
using ptx::ldmatrix_x4;
using ptx::ldmatrix_x4_trans;
using ptx::mma16816;
using ptx::pack2;
using ptx::quad_max;
using ptx::quad_sum;
using ptx::smem_addr;

// Contract (the given quad_max/quad_sum leave the same bits in all 4 lanes): online_softmax works on one warp's
// S for a whole key tile, kCols keys = kCols / 8 m16n8 accumulator tiles, in this lane's two rows: s[4·j + e] for
// 8-column tile j, e = 0, 1 on row `row` and e = 2, 3 on row + 8, columns col0 + 8·j + 2·(lane % 4) + (e % 2).
// It masks (if kMask) keys >= n and, if causal, keys > row to -inf; updates the running max m[2] (raw score
// units: the scale is folded into the exponent) and this lane's share of the sum l[2]; leaves p = 2^(s·c − m·c)
// in s, and alpha[2] = 2^(m_old·c − m·c) for the two rows, what the given rescale below takes (0 while m_old is
// -inf, never NaN). pack_p, after rescale, turns p into P V's A fragments. Both kernels (12a, 12b) call it.
template <int kCols, bool kMask>
__device__ __forceinline__ void online_softmax(float (&s)[kCols / 2], float (&m)[2], float (&l)[2],
                                               float (&alpha)[2], int row, int col0, int n, bool causal,
                                               float c) {
  // BEGIN SOLUTION: online_softmax<kCols, kMask>'s body: a key tile's kCols / 8 m16n8 S tiles, this lane's rows row and row + 8 (mask, m, l, p, alpha)
  constexpr int kTiles = kCols / 8;
  if constexpr (kMask) {
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int j = 0; j < kTiles; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int col = col0 + 8 * j + 2 * (lane % 4) + (e & 1);
        const int r = row + 8 * (e >> 1);
        if (col >= n || (causal && col > r)) s[4 * j + e] = -INFINITY;
      }
  }
  float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int j = 0; j < kTiles; ++j) {
    mx[0] = fmaxf(mx[0], fmaxf(s[4 * j], s[4 * j + 1]));
    mx[1] = fmaxf(mx[1], fmaxf(s[4 * j + 2], s[4 * j + 3]));
  }
  float ref[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float m_new = fmaxf(m[h], quad_max(mx[h]));
    ref[h] = (m_new == -INFINITY) ? 0.0f : m_new * c;  // a row masked so far: avoid -inf - -inf
    alpha[h] = ex2(m[h] * c - ref[h]);                  // 0 on the first tile, 1 while the max holds
    m[h] = m_new;
  }
  float sum[2] = {0.0f, 0.0f};
#pragma unroll
  for (int j = 0; j < kTiles; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float p = ex2(fmaf(s[4 * j + e], c, -ref[e >> 1]));
      s[4 * j + e] = p;
      sum[e >> 1] += p;
    }
  l[0] = fmaf(l[0], alpha[0], sum[0]);
  l[1] = fmaf(l[1], alpha[1], sum[1]);
  // END SOLUTION
}

// Given (fragment re-indexing, not the day's lesson): O tile rows (accumulator layout) times the rows' alphas.
// Expects o = kCols / 2 accumulators of one thread, o[4j + e] on row lane / 4 for e = 0, 1 and row + 8 for e = 2,
// 3 (Concept 2's C fragment), and alpha[2] = those two rows' factors, as online_softmax returns them.
template <int kCols>
__device__ __forceinline__ void rescale(float (&o)[kCols / 2], const float (&alpha)[2]) {
#pragma unroll
  for (int i = 0; i < kCols / 2; ++i) o[i] *= alpha[(i >> 1) & 1];
}

// Contract: pack_p<T, kCols>(pa, s) rounds p (accumulator layout) to T, two values to a 32-bit register, so that
// pa holds P V's A fragments (Concept 3); no shuffle and no shared memory.
template <typename T, int kCols>
__device__ __forceinline__ void pack_p(uint32_t (&pa)[kCols / 4], const float (&s)[kCols / 2]) {
  // BEGIN SOLUTION: pack_p<T, kCols>(pa, s): p in the accumulator layout into P V's A fragments, 16-bit pairs
  // p (accumulator layout, kCols columns) -> 16-bit pairs: reg 2j = row, tile j; reg 2j+1 = row + 8, tile j. The A
  // fragment for keys 16·t .. 16·t+15 is then regs 4t .. 4t+3.
#pragma unroll
  for (int i = 0; i < kCols / 4; ++i) pa[i] = pack2<T>(s[2 * i], s[2 * i + 1]);
  // END SOLUTION
}

// Given (the epilogue's store, through a per-warp patch of shared memory as in day 11's WMMA epilogue): writes this
// warp's 16 rows of O and their lse. Expects o in the accumulator layout (D columns, already divided by l),
// lse[2] = the lse of this thread's rows (row0 + lane / 4 and + 8, the same in the 4 lanes of a quad), and `stage`
// = 16 · D elements of shared memory that only this warp uses (the kernels pass the warp's own rows of the Q tile,
// dead by then). Each lane writes its pairs into a [16][D] staging tile (chunk c of row r at c ^ (r % 8), Concept
// 6's swizzle, so the writes do not conflict), then the warp copies the tile out 16 bytes per lane (kVec; 2-byte
// stores otherwise) to out + r · ld for rows r < n; lane 0 of each quad writes the lse of rows < n to lse_out.
template <typename T, int D, bool kVec>
__device__ __forceinline__ void store_rows(T* stage, const float (&o)[D / 2], T* out, long long ld, float* lse_out,
                                           int row0, int n, const float (&lse)[2]) {
  const int lane = threadIdx.x % 32;
  const int r = lane / 4;
#pragma unroll
  for (int j = 0; j < D / 8; ++j) {
    const int chunk = j;  // 8 columns = one 16-byte chunk
    const int col = 2 * (lane % 4);
    *reinterpret_cast<uint32_t*>(stage + r * D + ((chunk ^ (r & 7)) << 3) + col) = pack2<T>(o[4 * j], o[4 * j + 1]);
    *reinterpret_cast<uint32_t*>(stage + (r + 8) * D + ((chunk ^ ((r + 8) & 7)) << 3) + col) =
        pack2<T>(o[4 * j + 2], o[4 * j + 3]);
  }
  __syncwarp();
  constexpr int kChunks = 16 * D / 8;
#pragma unroll
  for (int e = lane; e < kChunks; e += 32) {
    const int rr = e / (D / 8), cc = e % (D / 8);
    if (row0 + rr >= n) continue;
    const T* src = stage + rr * D + ((cc ^ (rr & 7)) << 3);
    T* dst = out + (row0 + rr) * ld + cc * 8;
    if constexpr (kVec) {
      *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
    } else {
#pragma unroll
      for (int x = 0; x < 8; ++x) dst[x] = src[x];
    }
  }
  if (lane % 4 == 0) {
    if (row0 + r < n) lse_out[row0 + r] = lse[0];
    if (row0 + r + 8 < n) lse_out[row0 + r + 8] = lse[1];
  }
}

// The walk's building blocks, written once in step 12a and called by both kernels (12a's padded tiles, 12b's
// swizzled ones). A layout `off` is a callable: off(row, chunk) = the element offset of 16-byte chunk `chunk` of
// row `row` in a tile (12a: row · (D + 8) + 8 · chunk; 12b: swz<D>(row, chunk)). Every lane of a warp calls them.

// Contract: qf[kk] = this warp's A fragment of Q for k-step kk (rows 16·warp .. +15, columns 16·kk .. +15), one
// ldmatrix.x4 each from the tile at Qs (Concept 4).
template <typename T, int D, typename Off>
__device__ __forceinline__ void load_q(uint32_t (&qf)[D / 16][4], const T* Qs, Off off) {
  // BEGIN SOLUTION: load_q<T, D>(qf, Qs, off): Q's A fragments for this warp's 16 rows, once per block
  // Lane t addresses row t % 16 of chunk 2kk + t / 16: rows 0-7 and 8-15 of chunk 2kk, then of chunk 2kk + 1.
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
    ldmatrix_x4(qf[kk], smem_addr(Qs + off(16 * warp + lane % 16, 2 * kk + lane / 16)));
  // END SOLUTION
}

// Contract: s = Q Kᵀ for this warp's 16 rows and the kCols keys of the tile at Ks (accumulator layout: s[4·j + e]
// as online_softmax reads it), from Q's fragments qf; s is overwritten, not added to.
template <typename T, int D, int kCols, typename Off>
__device__ __forceinline__ void scores(float (&s)[kCols / 2], const uint32_t (&qf)[D / 16][4], const T* Ks, Off off) {
  // BEGIN SOLUTION: scores<T, D, kCols>(s, qf, Ks, off): S = Q Kᵀ for one key tile, ldmatrix.x4 of K feeding mma16816
  // Per k-step and 16 keys, one ldmatrix.x4 of K (keys 0-7 chunk 2kk, 0-7 chunk 2kk+1, 8-15 chunk 2kk, 8-15 chunk
  // 2kk+1: the B fragments of two 8-key tiles) feeds two mma.
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int i = 0; i < kCols / 2; ++i) s[i] = 0.0f;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
    for (int np = 0; np < kCols / 16; ++np) {
      uint32_t b[4];
      ldmatrix_x4(b, smem_addr(Ks + off(16 * np + lane % 8 + 8 * (lane / 16), 2 * kk + (lane / 8) % 2)));
      mma16816<T>(s + 8 * np, qf[kk], b[0], b[1]);
      mma16816<T>(s + 8 * np + 4, qf[kk], b[2], b[3]);
    }
  // END SOLUTION
}

// Contract: the tile's softmax step: masks elementwise only where the tile (keys col0 .. col0 + kCols - 1) crosses
// n or, causal, this warp's diagonal (rows first_row .. first_row + 15; `row` = this lane's first row), updates m
// and l, rescales acc (D / 2 accumulators of O~) by alpha, and packs p into pa, P V's A fragments.
template <typename T, int D, int kCols>
__device__ __forceinline__ void softmax_step(float (&s)[kCols / 2], uint32_t (&pa)[kCols / 4], float (&acc)[D / 2],
                                             float (&m)[2], float (&l)[2], int row, int first_row, int col0, int n,
                                             bool causal, float c) {
  // BEGIN SOLUTION: softmax_step<T, D, kCols>(...): online_softmax (masked only where needed), rescale, pack_p
  float alpha[2];
  if (col0 + kCols > n || (causal && col0 + kCols - 1 > first_row))
    online_softmax<kCols, true>(s, m, l, alpha, row, col0, n, causal, c);
  else
    online_softmax<kCols, false>(s, m, l, alpha, row, col0, n, causal, c);
  rescale<D>(acc, alpha);
  pack_p<T, kCols>(pa, s);
  // END SOLUTION
}

// Contract: acc += P V for this warp's 16 rows, the kCols keys of the tile at Vs and P's A fragments pa.
template <typename T, int D, int kCols, typename Off>
__device__ __forceinline__ void add_pv(float (&acc)[D / 2], const uint32_t (&pa)[kCols / 4], const T* Vs, Off off) {
  // BEGIN SOLUTION: add_pv<T, D, kCols>(acc, pa, Vs, off): O~ += P V for one key tile, ldmatrix.x4.trans of V
  // Per 16 keys and 16 columns, one ldmatrix.x4.trans of V (keys 0-7 and 8-15 of chunk 2dp, then of chunk 2dp+1:
  // the B fragments of two 8-column tiles) feeds two mma.
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int kk = 0; kk < kCols / 16; ++kk)
#pragma unroll
    for (int dp = 0; dp < D / 16; ++dp) {
      uint32_t b[4];
      ldmatrix_x4_trans(b, smem_addr(Vs + off(16 * kk + lane % 8 + 8 * ((lane / 8) % 2), 2 * dp + lane / 16)));
      mma16816<T>(acc + 8 * dp, pa + 4 * kk, b[0], b[1]);
      mma16816<T>(acc + 8 * dp + 4, pa + 4 * kk, b[2], b[3]);
    }
  // END SOLUTION
}

// Contract: the epilogue: o = O~ / l (l summed over the quad) and lse = m · scale + ln l for this warp's 16 rows,
// written through store_rows (stage: 16 · D elements of this warp's own shared memory; rows >= n not written).
template <typename T, int D, bool kVec>
__device__ __forceinline__ void finish(float (&acc)[D / 2], const float (&m)[2], float (&l)[2], T* stage, T* out,
                                       long long ld, float* lse_out, int first_row, int n, float scale) {
  // BEGIN SOLUTION: finish<T, D, kVec>(acc, m, l, stage, out, ld, lse_out, first_row, n, scale): O / l and lse, stored
  // l >= 1 for every row (its max term is 2^0).
  float lse_v[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float lt = quad_sum(l[h]);
    lse_v[h] = m[h] * scale + logf(lt);
    l[h] = 1.0f / lt;
  }
#pragma unroll
  for (int i = 0; i < D / 2; ++i) acc[i] *= l[(i >> 1) & 1];
  store_rows<T, D, kVec>(stage, acc, out, ld, lse_out, first_row, n, lse_v);
  // END SOLUTION
}

}  // namespace tc

namespace mma {

// Contract: row r of the tile is src + r · ld; rows >= rows_valid become zeros; kVec: cp.async, 16 bytes per
// thread per step, consecutive threads on consecutive chunks (the caller commits and waits); !kVec: 2-byte loads
// and stores.
// BEGIN SOLUTION: load_tile<T, D, kRows, kVec>(dst, src, ld, rows_valid): kRows x D rows of src into swizzled dst
// kRows x D tile of a head (src = its first row, rows ld elements apart; rows >= rows_valid become zeros) into
// swizzled shared memory. kVec: cp.async, 16 bytes per thread per step, consecutive threads on consecutive chunks
// of a row (coalesced); otherwise 2-byte loads and stores (tensors or rows not 16-byte aligned).
template <typename T, int D, int kRows, bool kVec>
__device__ __forceinline__ void load_tile(T* dst, const T* src, long long ld, int rows_valid) {
  constexpr int kChunks = kRows * D / 8;
  static_assert(kChunks % kThreads == 0, "whole steps");
#pragma unroll
  for (int e = threadIdx.x; e < kChunks; e += kThreads) {
    const int r = e / (D / 8), c = e % (D / 8);
    const bool ok = r < rows_valid;
    if constexpr (kVec) {
      tc::cp_async16(tc::smem_addr(dst + swz<D>(r, c)), ok ? src + r * ld + c * 8 : src, ok);
    } else {
      const uint16_t* s16 = reinterpret_cast<const uint16_t*>(src) + r * ld + c * 8;
      uint16_t* d16 = reinterpret_cast<uint16_t*>(dst + swz<D>(r, c));
#pragma unroll
      for (int x = 0; x < 8; ++x) d16[x] = ok ? s16[x] : uint16_t{0};
    }
  }
}
// END SOLUTION

// One block per (batch·head, tile of 128 query rows), heaviest causal tiles first:
// blockIdx.x = bh · q_tiles + (q_tiles - 1 - tile), bh = b · heads + h; head bh of q starts at
// q + st.q.start(bh, heads) and its rows are st.q.row apart (k, v, o likewise; lse is contiguous).
// c = log2(e)/sqrt(D), scale = 1/sqrt(D).
template <typename T, int D, bool kVec>
__global__ void __launch_bounds__(kThreads, Cfg<D>::kMinBlocks)
    flash_mma_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v, T* __restrict__ o,
                     float* __restrict__ lse, int n, int heads, course::AttentionStrides st, int q_tiles,
                     bool causal, float c, float scale) {
  // Contract: Q, K[2], V[2] in swizzled shared memory (Smem<D>, swz), K/V tiles double-buffered by cp.async in
  // separate commit groups (S = Q Kᵀ may start before V[t] has landed); the math is step 12a's, through the same
  // tc:: building blocks (load_q, scores, softmax_step, add_pv, finish) with the swizzled layout; causal: no key
  // tile past the block's last row is loaded; rows >= n not written.
  // BEGIN SOLUTION: o rows q0 .. q0 + 127 of head bh and their lse; warp w owns rows q0 + 16w .. + 15, all in registers
  constexpr int kBc = Cfg<D>::kBc;
  extern __shared__ uint4 smem_raw[];
  T* const Qs = reinterpret_cast<T*>(smem_raw) + Smem<D>::kQ;
  T* const Ks = reinterpret_cast<T*>(smem_raw) + Smem<D>::kK;  // K[0], then K[1] at + kBc · D
  T* const Vs = reinterpret_cast<T*>(smem_raw) + Smem<D>::kV;  // V[0], then V[1]
  const int bh = blockIdx.x / q_tiles;
  const int q0 = (q_tiles - 1 - blockIdx.x % q_tiles) * kBr;
  const T* const kh = k + st.k.start(bh, heads);
  const T* const vh = v + st.v.start(bh, heads);
  const auto off = [](int r, int ch) { return swz<D>(r, ch); };
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int kv_end = causal ? min(n, q0 + kBr) : n;
  const int tiles = (kv_end + kBc - 1) / kBc;
  const int wrow = q0 + 16 * warp;  // this warp's first query row
  const int row = wrow + lane / 4;  // this thread's rows: row and row + 8
  // Three commit groups: Q, K[0], V[0].
  load_tile<T, D, kBr, kVec>(Qs, q + st.q.start(bh, heads) + q0 * st.q.row, st.q.row, n - q0);
  tc::cp_async_commit();
  load_tile<T, D, kBc, kVec>(Ks, kh, st.k.row, n);
  tc::cp_async_commit();
  load_tile<T, D, kBc, kVec>(Vs, vh, st.v.row, n);
  tc::cp_async_commit();
  tc::cp_async_wait<2>();
  __syncthreads();  // Q complete
  uint32_t qf[D / 16][4];
  tc::load_q<T, D>(qf, Qs, off);

  float acc[D / 2];  // O~: 16 rows x D per warp, accumulator layout
#pragma unroll
  for (int i = 0; i < D / 2; ++i) acc[i] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

  for (int t = 0; t < tiles; ++t) {
    const int kv0 = t * kBc;
    tc::cp_async_wait<1>();  // K[t] landed (V[t] may still be in flight)
    __syncthreads();         // ... for every thread; and tile t-1 is done with the other buffers
    if (t + 1 < tiles)
      load_tile<T, D, kBc, kVec>(Ks + ((t + 1) & 1) * kBc * D, kh + (kv0 + kBc) * st.k.row, st.k.row,
                                 n - kv0 - kBc);
    tc::cp_async_commit();  // possibly empty: keeps the group count uniform

    // A warp whose 16 rows all precede this tile (causal) has nothing to add.
    const bool active = !(causal && kv0 > wrow + 15);
    float s[kBc / 2];
    uint32_t pa[kBc / 4];
    if (active) {
      tc::scores<T, D, kBc>(s, qf, Ks + (t & 1) * kBc * D, off);
      tc::softmax_step<T, D, kBc>(s, pa, acc, m, l, row, wrow, kv0, n, causal, c);
    }

    tc::cp_async_wait<1>();  // V[t] landed
    __syncthreads();
    if (t + 1 < tiles)
      load_tile<T, D, kBc, kVec>(Vs + ((t + 1) & 1) * kBc * D, vh + (kv0 + kBc) * st.v.row, st.v.row,
                                 n - kv0 - kBc);
    tc::cp_async_commit();

    if (active) tc::add_pv<T, D, kBc>(acc, pa, Vs + (t & 1) * kBc * D, off);
  }
  tc::cp_async_wait<0>();  // nothing is in flight when the block exits (all groups are empty by now anyway)

  // The warp's own 16 rows of the Q tile are dead (their fragments are in registers): the staging area.
  tc::finish<T, D, kVec>(acc, m, l, Qs + 16 * warp * D, o + st.o.start(bh, heads), st.o.row,
                         lse + static_cast<size_t>(bh) * n, wrow, n, scale);
  // END SOLUTION
}

// Given (launch boilerplate, as on days 10 and 11): flash_mma_kernel<T, D, aligned> on batch · heads · ceil(n / kBr)
// blocks of kThreads with Smem<D>::kBytes of dynamic shared memory (allow_smem first: over 48 KiB at
// d = 128); passes scale = 1 / sqrt(D) and c = log2(e) · scale; returns the first error.
template <typename T, int D, bool kVec>
cudaError_t launch_as(const T* q, const T* k, const T* v, T* o, float* lse, int batch, int heads, int n,
                      const course::AttentionStrides& st, bool causal, cudaStream_t stream) {
  auto kernel = flash_mma_kernel<T, D, kVec>;
  const cudaError_t err = allow_smem(kernel, Smem<D>::kBytes);
  if (err != cudaSuccess) return err;
  const int q_tiles = (n + kBr - 1) / kBr;
  const float scale = 1.0f / sqrtf(static_cast<float>(D));
  kernel<<<batch * heads * q_tiles, kThreads, Smem<D>::kBytes, stream>>>(q, k, v, o, lse, n, heads, st, q_tiles,
                                                                        causal, 1.4426950408889634f * scale, scale);
  return cudaGetLastError();
}

template <typename T, int D>
cudaError_t launch(const T* q, const T* k, const T* v, T* o, float* lse, int batch, int heads, int n,
                   const course::AttentionStrides& st, bool causal, bool aligned, cudaStream_t stream) {
  return aligned ? launch_as<T, D, true>(q, k, v, o, lse, batch, heads, n, st, causal, stream)
                 : launch_as<T, D, false>(q, k, v, o, lse, batch, heads, n, st, causal, stream);
}

}  // namespace mma

// ---------------------------------------------------------------------------------------------------------------
// Step 12a (flash_attention_mma_simple): the same algorithm with plain loads into padded tiles
// ---------------------------------------------------------------------------------------------------------------
// What step 12a asks for, before the data movement of step 12b: both products on tensor cores (mma.sync fed by
// ldmatrix, Q's fragments kept in registers, P passed from S's accumulators to P V's A operand without shared
// memory) and the online softmax in registers (tc::), causal included. The tiles are loaded the simple way: every
// thread copies 16-byte chunks through registers into one K and one V buffer, between two barriers, so the warps
// wait for each tile's loads and nothing overlaps them. Rows are padded by 8 elements instead of swizzled: a row of
// D + 8 elements is an odd number of 16-byte chunks (9 or 17), so the 8 rows an ldmatrix phase reads start in 8
// distinct 16-byte slots. The block shape (8 warps x 16 query rows), Bc and the register budget are the mma.sync
// kernel's (mma::Cfg), so step 12b changes only the shared-memory layout and how the tiles arrive.
namespace simple {

using mma::kBr;
using mma::kThreads;
template <int D>
using Cfg = mma::Cfg<D>;

// Shared memory: Q [Br][D + 8], K [Bc][D + 8], V [Bc][D + 8], 16-bit, one buffer each.
template <int D>
struct Smem {
  static constexpr int kBc = Cfg<D>::kBc;
  static constexpr int kLd = D + 8;  // elements per padded row
  static constexpr int kQ = 0;       // elements
  static constexpr int kK = kQ + kBr * kLd;
  static constexpr int kV = kK + kBc * kLd;
  static constexpr size_t kBytes = 2 * (kV + kBc * kLd);  // d = 64: 36 KiB; d = 128: 68 KiB
  static_assert(kBytes <= 99 * 1024, "over the 99 KiB a block of sm_86, sm_89 and sm_120 (grader/gpu_support.py)");
  static_assert((kLd / 8) % 2 == 1, "an odd number of 16-byte chunks per row: 8 rows start in 8 slots");
};

// Contract: all kThreads threads; row r of src at src + r · D; rows >= rows_valid become zeros (not read); row r
// of the tile at dst + r · (D + 8);
// kVec: one 16-byte load and store per chunk, consecutive threads on consecutive chunks of a row (coalesced);
// !kVec: 2-byte loads and stores (tensors not 16-byte aligned). The caller places the barriers.
template <typename T, int D, int kRows, bool kVec>
__device__ __forceinline__ void load_rows(T* dst, const T* src, int rows_valid) {
  // BEGIN SOLUTION: load_rows<T, D, kRows, kVec>(dst, src, rows_valid): kRows x D rows of src into padded dst
  constexpr int kLd = D + 8, kChunks = kRows * D / 8;
  static_assert(kChunks % kThreads == 0, "whole steps");
#pragma unroll
  for (int e = threadIdx.x; e < kChunks; e += kThreads) {
    const int r = e / (D / 8), ch = e % (D / 8);
    const bool ok = r < rows_valid;
    if constexpr (kVec) {
      *reinterpret_cast<uint4*>(dst + r * kLd + ch * 8) =
          ok ? *reinterpret_cast<const uint4*>(src + r * D + ch * 8) : make_uint4(0, 0, 0, 0);
    } else {
      const uint16_t* s16 = reinterpret_cast<const uint16_t*>(src) + r * D + ch * 8;
      uint16_t* d16 = reinterpret_cast<uint16_t*>(dst + r * kLd + ch * 8);
#pragma unroll
      for (int x = 0; x < 8; ++x) d16[x] = ok ? s16[x] : uint16_t{0};
    }
  }
  // END SOLUTION
}

// One block per (batch·head, tile of 128 query rows), heaviest causal tiles first, as in flash_mma_kernel:
// blockIdx.x = bh · q_tiles + (q_tiles - 1 - tile). c = log2(e)/sqrt(D), scale = 1/sqrt(D).
template <typename T, int D, bool kVec>
__global__ void __launch_bounds__(kThreads, Cfg<D>::kMinBlocks)
    flash_simple_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                        T* __restrict__ o, float* __restrict__ lse, int n, int q_tiles, bool causal, float c,
                        float scale) {
  // Contract: Q, K, V in padded shared memory (Smem<D>), one K and one V tile at a time, each loaded by
  // load_rows between two barriers; per key tile, your tc:: building blocks (load_q once, then scores,
  // softmax_step, add_pv; finish at the end) with the padded layout off(r, ch) = r · (D + 8) + 8 · ch; causal: no
  // key tile past the block's last row is loaded, and a warp skips a tile entirely above its 16 rows; rows >= n
  // not written.
  // BEGIN SOLUTION: o rows q0 .. q0 + 127 of head bh and their lse; warp w owns rows q0 + 16w .. + 15, in registers
  constexpr int kBc = Cfg<D>::kBc;
  constexpr int kLd = Smem<D>::kLd;
  extern __shared__ uint4 smem_raw[];
  T* const Qs = reinterpret_cast<T*>(smem_raw) + Smem<D>::kQ;
  T* const Ks = reinterpret_cast<T*>(smem_raw) + Smem<D>::kK;
  T* const Vs = reinterpret_cast<T*>(smem_raw) + Smem<D>::kV;
  const auto off = [](int r, int ch) { return r * kLd + 8 * ch; };  // padded rows

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int bh = blockIdx.x / q_tiles;
  const int q0 = (q_tiles - 1 - blockIdx.x % q_tiles) * kBr;
  const size_t head = static_cast<size_t>(bh) * n * D;
  const int keys = causal ? min(n, q0 + kBr) : n;  // the keys any row of this block sees
  const int first_row = q0 + 16 * warp;            // this warp's first query row
  const int row = first_row + lane / 4;            // this thread's rows: row and row + 8

  load_rows<T, D, kBr, kVec>(Qs, q + head + static_cast<size_t>(q0) * D, n - q0);
  __syncthreads();
  uint32_t qf[D / 16][4];
  tc::load_q<T, D>(qf, Qs, off);

  float acc[D / 2];  // O~: 16 rows x D per warp, accumulator layout
#pragma unroll
  for (int i = 0; i < D / 2; ++i) acc[i] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

  for (int key0 = 0; key0 < keys; key0 += kBc) {
    __syncthreads();  // every warp is done with the previous K and V tiles
    load_rows<T, D, kBc, kVec>(Ks, k + head + static_cast<size_t>(key0) * D, n - key0);
    load_rows<T, D, kBc, kVec>(Vs, v + head + static_cast<size_t>(key0) * D, n - key0);
    __syncthreads();  // ... and everyone's copies of this tile are in
    if (causal && key0 > first_row + 15) continue;  // the whole tile is above this warp's 16 rows
    float s[kBc / 2];
    uint32_t pa[kBc / 4];
    tc::scores<T, D, kBc>(s, qf, Ks, off);
    tc::softmax_step<T, D, kBc>(s, pa, acc, m, l, row, first_row, key0, n, causal, c);
    tc::add_pv<T, D, kBc>(acc, pa, Vs, off);
  }

  // The warp's own 16 padded rows of Q are dead (their fragments are in registers): 16 · D elements of staging.
  tc::finish<T, D, kVec>(acc, m, l, Qs + 16 * warp * kLd, o + head, D, lse + static_cast<size_t>(bh) * n,
                         first_row, n, scale);
  // END SOLUTION
}

// Given (launch boilerplate, as on days 10 and 11): flash_simple_kernel<T, D, aligned> on bh · ceil(n / kBr)
// blocks of kThreads with Smem<D>::kBytes of dynamic shared memory (allow_smem first: over 48 KiB at
// d = 128); passes scale = 1 / sqrt(D) and c = log2(e) · scale; returns the first error.
template <typename T, int D, bool kVec>
cudaError_t launch_as(const T* q, const T* k, const T* v, T* o, float* lse, int bh, int n, bool causal,
                      cudaStream_t stream) {
  auto kernel = flash_simple_kernel<T, D, kVec>;
  const cudaError_t err = allow_smem(kernel, Smem<D>::kBytes);
  if (err != cudaSuccess) return err;
  const int q_tiles = (n + kBr - 1) / kBr;
  const float scale = 1.0f / sqrtf(static_cast<float>(D));
  kernel<<<bh * q_tiles, kThreads, Smem<D>::kBytes, stream>>>(q, k, v, o, lse, n, q_tiles, causal,
                                                              1.4426950408889634f * scale, scale);
  return cudaGetLastError();
}

template <typename T, int D>
cudaError_t launch(const T* q, const T* k, const T* v, T* o, float* lse, int bh, int n, bool causal, bool aligned,
                   cudaStream_t stream) {
  return aligned ? launch_as<T, D, true>(q, k, v, o, lse, bh, n, causal, stream)
                 : launch_as<T, D, false>(q, k, v, o, lse, bh, n, causal, stream);
}

}  // namespace simple


// ---------------------------------------------------------------------------------------------------------------
// The wgmma kernel (sm_90a only)
// ---------------------------------------------------------------------------------------------------------------

// Optional (Concept 8): the same outputs (o, lse) as flash_mma_kernel, with both products on wgmma. Given: the
// block's shape and shared memory, the kernel's set-up (TMA copies counted in by mbarriers, day 11's kernel 3b,
// and the instructors' FlashAttention-3 schedule: a producer warpgroup, ping-pong turns, three consumers at d = 64,
// 176-key tiles), the launchers and the sm_90a guard. Yours, in four holes: the two products (issue_s, issue_pv),
// the walk's first tile, each of its steps (the softmax of S[t+1] overlapped with P V[t]), and the last P V with
// the epilogue.
// The walk's switch, FA12_HOPPER: 0 keeps every GPU on flash_mma_kernel; 1 lets the given
// flash_attention_mma_forward take this kernel where the sm_90a image runs (hopper::available()) and every row is
// 16-byte aligned. Set it to 1 once the four holes are written, not before: an empty walk never frees a buffer,
// so the given producer would wait forever. A -DFA12_HOPPER=0 or =1 flag overrides the line below.
#ifndef FA12_HOPPER
#define FA12_HOPPER 0
#endif
namespace hopper {

constexpr int kThreads = 256;  // two warpgroups (without the producer)
constexpr int kBc = 128;  // keys per tile, the kernel's Bc; d = 128 without a mask may take FA12_WG_BC_D128
constexpr int kBcD128 = FA12_WG_BC_D128;
static_assert(kBcD128 == 128 || kBcD128 == 176, "wgmma_ss has n128 and n176");

constexpr int kStages = FA12_WG_STAGES;  // K and V buffers each: tile t+1's K and t's V are read while the copies
                                         // of the following kStages - 1 tiles are in flight
constexpr bool kTma = FA12_WG_TMA;      // tiles by the Tensor Memory Accelerator (one thread, mbarriers) or cp.async
// Producer warpgroup: one thread of one more warpgroup issues every TMA copy and waits for "empty" barriers, which
// the consumer warpgroups arrive on as their products finish with a buffer; the walk has no block-wide barrier
// left, so the consumers may drift apart. At d = 128, 384 threads get 168 registers each at launch (the walk needs
// 189): the producer gives all but 24 back (setmaxnreg) and the consumers take 240 (Shape<D>::kConsumerRegs).
constexpr bool kProducer = FA12_WG_PRODUCER && kTma;
constexpr int kProducerRegs = 24;
// Ping-pong: each consumer warpgroup issues its products, then hands the turn to the next (named barriers 1 to
// kGroups, round robin): the tensor cores run one warpgroup's products while the others run their softmax.
[[maybe_unused]] constexpr bool kPingPong = FA12_WG_PINGPONG && kProducer;  // (read only in sm_90a code)

// The block: kGroups consumer warpgroups of 64 query rows each (Br = 64 · kGroups), plus the producer's. At d = 64
// the products are half as long and the softmax is not, so a third consumer may help hide it (FA12_WG_D64_GROUPS).
template <int D>
struct Shape {
  static constexpr int kGroups = (D == 64 && kProducer) ? FA12_WG_D64_GROUPS : 2;
  static constexpr int kConsumers = 128 * kGroups;
  static constexpr int kBr = 64 * kGroups;
  static constexpr int kBlockThreads = kConsumers + (kProducer ? 128 : 0);
  static constexpr int kConsumerRegs = kGroups == 3 ? 160 : 240;  // setmaxnreg: multiples of 8
  static_assert(kGroups == 2 || kGroups == 3, "two or three consumer warpgroups");
  static_assert(kProducer || kConsumers == kThreads, "the cp.async path's copies are spread over two warpgroups");
  static_assert(128 * kProducerRegs + kConsumers * kConsumerRegs <= launch_registers(kBlockThreads),
                "the block's launch registers hold them all");
};

// Shared memory, bytes from a 1024-aligned base (the 128-byte swizzle repeats every 8 rows of 128 bytes, and
// wgmma computes it from address bits, so every tile starts on a 1024-byte boundary). Each tile is stored as D/64
// column blocks of [rows][64] 16-bit values, rows of 128 bytes, 16-byte chunk c of row r at c ^ (r % 8): the
// canonical K-major 128-byte-swizzled layout, which is also what TMA writes with CU_TENSOR_MAP_SWIZZLE_128B.
// Q: one [64][D] tile per warpgroup; K and V: kStages buffers of [Bc][D] each; then the TMA path's mbarriers.
template <int D, int Bc = kBc>
struct Smem {
  static constexpr int kQ = 0;
  static constexpr int kQWarpgroup = 64 * D * 2;  // bytes per warpgroup's Q tile
  static constexpr int kK = kQ + Shape<D>::kGroups * kQWarpgroup;
  static constexpr int kStage = Bc * D * 2;
  static constexpr int kV = kK + kStages * kStage;
  // Q's, then one per K buffer, one per V buffer ("full"), then with the producer warp one "empty" per buffer.
  static constexpr int kBar = kV + kStages * kStage;
  static constexpr int kBars = 1 + 2 * kStages + (kProducer ? 2 * kStages : 0);
  static constexpr size_t kBytes = kBar + 8 * kBars + 1024;  // + room to align: 161 KiB (d = 128, 2 stages; 209 with Bc = 176)
  static_assert(kBytes <= 227 * 1024, "the tiles must fit in an H100/H200 SM's shared memory (FA12_WG_STAGES)");
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

// kRows x D tile (rows ld elements apart, rows >= rows_valid zero-filled; `safe` is any readable address) into the
// swizzled layout at shared address dst, by all 256 threads with cp.async.
template <typename T, int D, int kRows>
__device__ __forceinline__ void load_sw128(uint32_t dst, const T* src, long long ld, int rows_valid, const T* safe) {
  constexpr int kChunks = kRows * D / 8;
  static_assert(kChunks % kThreads == 0, "whole steps");
#pragma unroll
  for (int e = threadIdx.x; e < kChunks; e += kThreads) {
    const int r = e / (D / 8), c = e % (D / 8);
    const bool ok = r < rows_valid;
    const uint32_t at = dst + (c / 8) * (kRows * 128) + r * 128 + (((c % 8) ^ (r & 7)) << 4);
    tc::cp_async16(at, ok ? src + r * ld + c * 8 : safe, ok);
  }
}

// Contract: issue_s issues, without waiting, this warpgroup's S[64 x Bc] = Q Kᵀ (the first k-step overwrites s):
// Q's [64][D] tile at shared address q_base and K's [Bc][D] tile at k_base, each stored as D/64 column blocks of
// [rows][64] (128-byte rows, 128-byte swizzle; q's blocks 64·128 bytes apart, K's Bc·128). issue_pv issues
// O[64 x D] += P V with P's A fragments in pa (pack_p's layout: registers 4j .. 4j+3 are keys 16j .. 16j+15) and
// V's [Bc][D] tile at v_base, the same layout as K, read as an N-major B operand. desc_sw128, wgmma_ss and
// wgmma_rs are hopper.cuh's (day 11); the caller fences, commits and waits.
// BEGIN SOLUTION: optional: hopper::issue_s and issue_pv, both products on wgmma (S from shared memory, P from registers)
// S[64 x Bc] = Q Kᵀ for this warpgroup: D/16 wgmma, each advancing 16 columns (32 bytes) inside a 128-byte row,
// and to the next column block every 4.
template <typename T, int D, int Bc>
__device__ __forceinline__ void issue_s(float (&s)[Bc / 2], uint32_t q_base, uint32_t k_base) {
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const uint64_t da = desc_sw128(q_base + (kk / 4) * (64 * 128) + (kk % 4) * 32, 16, 1024);
    const uint64_t db = desc_sw128(k_base + (kk / 4) * (Bc * 128) + (kk % 4) * 32, 16, 1024);
    if (kk == 0)
      wgmma_ss<T, Bc, false, 0, 0>(s, da, db);
    else
      wgmma_ss<T, Bc, true, 0, 0>(s, da, db);
  }
}

// O[64 x D] += P V: Bc/16 wgmma, each 16 keys = 16 rows of 128 bytes further into V; the column blocks of V are
// kBc·128 bytes apart (the leading byte offset of an N-major operand), 8-row groups 1024 (the stride offset).
template <typename T, int D, int Bc>
__device__ __forceinline__ void issue_pv(float (&o)[D / 2], const uint32_t (&pa)[Bc / 4], uint32_t v_base) {
#pragma unroll
  for (int j = 0; j < Bc / 16; ++j) {
    const uint64_t db = desc_sw128(v_base + j * 16 * 128, Bc * 128, 1024);
    if constexpr (D == 128)
      wgmma_rs<T, 128>(o, pa + 4 * j, db);
    else
      wgmma_rs<T, 64>(o, pa + 4 * j, db);
  }
}
// END SOLUTION

#endif  // __CUDA_ARCH_FEAT_SM90_ALL

// One block per (batch·head, tile of Shape<D>::kBr query rows), heaviest causal tiles first, as flash_mma_kernel;
// consumer warpgroup wg owns rows q0 + 64·wg .. + 63, its warp w rows wrow = q0 + 64·wg + 16·w .. + 15.
template <typename T, int D, int kBc>
__global__ void __launch_bounds__(Shape<D>::kBlockThreads, 1)
    flash_wgmma_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v, T* __restrict__ o,
                       float* __restrict__ lse, int n, int heads, course::AttentionStrides st, int q_tiles,
                       bool causal, float c, float scale,
                       const __grid_constant__ CUtensorMap tm_q, const __grid_constant__ CUtensorMap tm_k,
                       const __grid_constant__ CUtensorMap tm_v) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using S = Smem<D, kBc>;
  extern __shared__ uint4 smem_raw[];
  const uint32_t raw = tc::smem_addr(smem_raw);
  const uint32_t base = (raw + 1023) & ~1023u;
  // sbase and row are read only in the walk's holes: [[maybe_unused]] keeps the stub's build free of warnings.
  [[maybe_unused]] unsigned char* const sbase = reinterpret_cast<unsigned char*>(smem_raw) + (base - raw);

  const int wg = threadIdx.x / 128, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const int bh = blockIdx.x / q_tiles;
  using Sh = Shape<D>;
  const int q0 = (q_tiles - 1 - blockIdx.x % q_tiles) * Sh::kBr;
  const Head hd{bh % heads, bh / heads};  // TMA's coordinates of this head
  const T* const qh = q + st.q.start(bh, heads);
  const T* const kh = k + st.k.start(bh, heads);
  const T* const vh = v + st.v.start(bh, heads);
  const int kv_end = causal ? min(n, q0 + Sh::kBr) : n;
  const int tiles = (kv_end + kBc - 1) / kBc;
  const int wrow = q0 + 64 * wg + 16 * warp;  // this warp's first query row
  [[maybe_unused]] const int row = wrow + lane / 4;  // this thread's rows: row and row + 8
  const uint32_t q_base = base + S::kQ + wg * S::kQWarpgroup;
  const T* const safe = qh + q0 * st.q.row;  // a row that exists
  // Tile j of K or V lives in buffer j % kStages; its barrier (TMA path) completes once per use of that buffer, so
  // tile j waits for the phase of parity (j / kStages) % 2.
  auto k_stage = [&](int j) { return base + S::kK + (j % kStages) * S::kStage; };
  auto v_stage = [&](int j) { return base + S::kV + (j % kStages) * S::kStage; };
  auto k_bar = [&](int j) { return base + S::kBar + 8 * (1 + j % kStages); };
  auto v_bar = [&](int j) { return base + S::kBar + 8 * (1 + kStages + j % kStages); };
  // Producer warpgroup only: tile j's buffer is free again once the 4 · kGroups consumer warps have arrived on
  // its "empty" barrier; the producer waits for the phase of tile j - kStages, parity (j / kStages + 1) % 2.
  auto k_empty = [&](int j) { return base + S::kBar + 8 * (1 + 2 * kStages + j % kStages); };
  auto v_empty = [&](int j) { return base + S::kBar + 8 * (1 + 3 * kStages + j % kStages); };
  auto release = [&](uint32_t bar) {
    if constexpr (kProducer) {
      if (lane == 0) mbar_arrive(bar);  // after this warp's wgmma_wait: its reads of the buffer are done
    }
  };
  // Ping-pong turns, round robin: warpgroup w waits on barrier 1 + w, issues, then arrives on the next one's. Each
  // warpgroup has tiles + 1 turns (S[0], the walk's tiles - 1, the last P V); the last warpgroup starts by giving
  // warpgroup 0 the first turn and skips the arrival after its own last, so every use of every barrier completes.
  auto turn_begin = [&]() {
    if constexpr (kPingPong) named_sync(1 + wg, 256);
  };
  auto turn_end = [&](bool last) {
    if constexpr (kPingPong) {
      if (!(last && wg == Sh::kGroups - 1)) named_arrive(1 + (wg + 1) % Sh::kGroups, 256);
    }
  };
  // Copies of tile j: TMA by thread 0, or cp.async by every thread (into the caller's commit group).
  auto load_k = [&](int j) {
    if constexpr (kTma) {
      if (threadIdx.x == 0) tma_tile<D, kBc>(k_stage(j), &tm_k, j * kBc, hd, k_bar(j));
    } else {
      load_sw128<T, D, kBc>(k_stage(j), kh + j * kBc * st.k.row, st.k.row, n - j * kBc, safe);
    }
  };
  auto load_v = [&](int j) {
    if constexpr (kTma) {
      if (threadIdx.x == 0) tma_tile<D, kBc>(v_stage(j), &tm_v, j * kBc, hd, v_bar(j));
    } else {
      load_sw128<T, D, kBc>(v_stage(j), vh + j * kBc * st.v.row, st.v.row, n - j * kBc, safe);
    }
  };

  // Q of every consumer warpgroup by TMA, counted in by barrier 0 (one thread).
  auto load_q = [&]() {
    const uint32_t bar_q = base + S::kBar;
    mbar_expect_tx(bar_q, Sh::kBr * D * 2);
#pragma unroll
    for (int w = 0; w < Sh::kGroups; ++w)
#pragma unroll
      for (int h = 0; h < D / 64; ++h)
        tma_load(base + S::kQ + w * S::kQWarpgroup + h * (64 * 128), &tm_q, 64 * h, q0 + 64 * w, hd, bar_q);
  };
  if constexpr (kTma) {
    if (threadIdx.x == 0) {
      for (int i = 0; i < S::kBars; ++i) mbar_init(base + S::kBar + 8 * i, i <= 2 * kStages ? 1 : 4 * Sh::kGroups);
      mbar_init_fence();
    }
    __syncthreads();  // barriers initialised before anyone waits on them (with the producer: the last block barrier)
  }
  // Producer: Q, then K[j] and V[j-1] in the order the walk uses them, each once its buffer is free.
  if constexpr (kProducer) {
    if (threadIdx.x >= Sh::kConsumers) {
      setmaxnreg_dec<kProducerRegs>();
      if (threadIdx.x == Sh::kConsumers) {
        load_q();
        for (int j = 0; j <= tiles; ++j) {
          if (j < tiles) {
            if (j >= kStages) mbar_wait(k_empty(j), (j / kStages + 1) & 1);
            tma_tile<D, kBc>(k_stage(j), &tm_k, j * kBc, hd, k_bar(j));
          }
          if (j >= 1) {
            const int i = j - 1;
            if (i >= kStages) mbar_wait(v_empty(i), (i / kStages + 1) & 1);
            tma_tile<D, kBc>(v_stage(i), &tm_v, i * kBc, hd, v_bar(i));
          }
        }
      }
      return;  // nothing below waits for this warpgroup
    }
    setmaxnreg_inc<Sh::kConsumerRegs>();
    if (wg == Sh::kGroups - 1) turn_end(false);  // ping-pong: warpgroup 0 takes the first turn
  } else if constexpr (kTma) {
    if (threadIdx.x == 0) load_q();
  } else {
    load_sw128<T, D, 64>(base + S::kQ, safe, st.q.row, n - q0, safe);
    load_sw128<T, D, 64>(base + S::kQ + S::kQWarpgroup, safe + 64 * st.q.row, st.q.row, n - q0 - 64, safe);
  }
  // Prologue without the producer: Q and K[0] (cp.async: group 0), then V[i-1] and K[i] for i < kStages (group i).
  if constexpr (!kProducer) {
    load_k(0);
    tc::cp_async_commit();
#pragma unroll
    for (int i = 1; i < kStages; ++i) {
      if (i - 1 < tiles) load_v(i - 1);
      if (i < tiles) load_k(i);
      tc::cp_async_commit();
    }
  }
  if constexpr (kTma) {
    mbar_wait(base + S::kBar, 0);
    mbar_wait(k_bar(0), 0);
  } else {
    tc::cp_async_wait<kStages - 1>();  // group 0: Q and K[0]
    fence_proxy_async();
    __syncthreads();
  }

  // The walk, for each consumer warpgroup (its 64 rows; each warp its 16, thread rows `row` and row + 8). Given above:
  // Q's tile at q_base, tile j's K and V buffers at k_stage(j) and v_stage(j); K[0] and Q have landed, and the loop
  // below waits for K[t+1] and V[t] before step t. Around every issue of products: turn_begin() before the
  // wgmma_fence, turn_end(last) once the group is committed (the ping-pong turns; last = the very last issue).
  // After the wgmma_wait that retires a group reading a K or V buffer: release(k_empty(j)) or release(v_empty(j)),
  // which lets the producer refill it (a buffer never released leaves the producer, and the block, waiting for
  // ever). fence_regs(x) (hopper.cuh) before registers a pending wgmma writes or reads
  // are touched. Tiles that cross N or the diagonal (row kv0 + kBc - 1 > wrow) take the masked softmax.
  // BEGIN SOLUTION: hopper, continued: the walk's first tile (O, m, l zeroed; S[0] = Q K[0]ᵀ, its softmax, P packed)
  float o_acc[D / 2];
#pragma unroll
  for (int i = 0; i < D / 2; ++i) o_acc[i] = 0.0f;
  float s[kBc / 2];
  uint32_t pa[kBc / 4];
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f}, alpha[2];

  turn_begin();
  wgmma_fence();
  issue_s<T, D, kBc>(s, q_base, k_stage(0));
  wgmma_commit();
  turn_end(false);
  wgmma_wait<0>();
  release(k_empty(0));
  fence_regs(s);
  if (kBc > n || (causal && kBc - 1 > wrow))
    tc::online_softmax<kBc, true>(s, m, l, alpha, row, 0, n, causal, c);
  else
    tc::online_softmax<kBc, false>(s, m, l, alpha, row, 0, n, causal, c);
  tc::pack_p<T, kBc>(pa, s);
  // END SOLUTION

  // Iteration t: P V[t] and S[t+1] on the tensor cores, the softmax of S[t+1] on the CUDA cores meanwhile. The
  // last tile (P V only) is peeled off, so that no branch separates the wgmma of one stage.
  for (int t = 0; t + 1 < tiles; ++t) {
    // Given: the instructors' variants (FA12_WG_TMA=0: cp.async copies; FA12_WG_PRODUCER=0: every thread refills
    // the buffers after a block barrier), then the waits for K[t+1] and V[t] on their full barriers.
    if constexpr (!kTma) {
      tc::cp_async_wait<kStages - 2>();  // group t+1: V[t] and K[t+1]
      fence_proxy_async();               // (cp.async writes -> wgmma's async-proxy reads)
    }
    if constexpr (!kProducer) {
      // Everyone is done with iteration t-1, so V[t-1]'s and K[t]'s buffers may be refilled.
      __syncthreads();
      if (t + kStages - 1 < tiles) load_v(t + kStages - 1);
      if (t + kStages < tiles) load_k(t + kStages);
      tc::cp_async_commit();
    }
    if constexpr (kTma) {
      mbar_wait(k_bar(t + 1), ((t + 1) / kStages) & 1);
      mbar_wait(v_bar(t), (t / kStages) & 1);
    }

    // BEGIN SOLUTION: hopper, continued: step t (S[t+1] and P V[t] issued together, S[t+1]'s softmax meanwhile)
    fence_regs(pa);
    fence_regs(o_acc);
    turn_begin();
    wgmma_fence();
#if FA12_WG_OVERLAP
    issue_s<T, D, kBc>(s, q_base, k_stage(t + 1));
    wgmma_commit();
    issue_pv<T, D, kBc>(o_acc, pa, v_stage(t));
    wgmma_commit();
    turn_end(false);
    wgmma_wait<1>();  // S[t+1] done; P V[t] may still be running: the softmax below overlaps it
#else
    issue_pv<T, D, kBc>(o_acc, pa, v_stage(t));  // (measurement only) one product at a time, nothing overlapped
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(o_acc);
    issue_s<T, D, kBc>(s, q_base, k_stage(t + 1));
    wgmma_commit();
    turn_end(false);
    wgmma_wait<0>();
#endif
    release(k_empty(t + 1));
    fence_regs(s);
    const int kv0 = (t + 1) * kBc;
    if (kv0 + kBc > n || (causal && kv0 + kBc - 1 > wrow))
      tc::online_softmax<kBc, true>(s, m, l, alpha, row, kv0, n, causal, c);
    else
      tc::online_softmax<kBc, false>(s, m, l, alpha, row, kv0, n, causal, c);
    wgmma_wait<0>();
    release(v_empty(t));
    fence_regs(o_acc);
    fence_regs(pa);
    tc::rescale<D>(o_acc, alpha);
    tc::pack_p<T, kBc>(pa, s);
    // END SOLUTION
  }
  // Given: V[tiles-1] has landed.
  if constexpr (kTma) {
    mbar_wait(v_bar(tiles - 1), ((tiles - 1) / kStages) & 1);
  } else {
    tc::cp_async_wait<0>();  // V[tiles-1]
    fence_proxy_async();
    __syncthreads();
  }
  // BEGIN SOLUTION: hopper, continued: the last P V, then the epilogue (O / l and lse; O staged through shared memory)
  fence_regs(pa);
  fence_regs(o_acc);
  turn_begin();
  wgmma_fence();
  issue_pv<T, D, kBc>(o_acc, pa, v_stage(tiles - 1));
  wgmma_commit();
  turn_end(true);
  wgmma_wait<0>();
  fence_regs(o_acc);

  float lse_v[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float lt = tc::quad_sum(l[h]);
    lse_v[h] = m[h] * scale + logf(lt);
    l[h] = 1.0f / lt;
  }
#pragma unroll
  for (int i = 0; i < D / 2; ++i) o_acc[i] *= l[(i >> 1) & 1];
  // Q is dead once every warp's part of the last S product has completed; then each warp stages its 16 rows of O
  // in 16 · D · 2 bytes of its warpgroup's Q tile (bytes that held other warps' Q rows: hence the barrier, over
  // this warpgroup only: named barrier 1 + kGroups + wg, after the ping-pong's).
  named_sync(1 + Sh::kGroups + wg, 128);
  T* const stage = reinterpret_cast<T*>(sbase + S::kQ + wg * S::kQWarpgroup) + 16 * warp * D;
  tc::store_rows<T, D, true>(stage, o_acc, o + st.o.start(bh, heads), st.o.row, lse + static_cast<size_t>(bh) * n,
                             wrow, n, lse_v);
  // END SOLUTION
#else
  __trap();  // only the sm_90a image has this kernel; the launcher never picks it elsewhere
#endif
}

// Given: flash_wgmma_kernel<T, D, kBc> on batch · heads · ceil(n / Shape<D>::kBr) blocks of Shape<D>::kBlockThreads
// with Smem<D, kBc>::kBytes of dynamic shared memory, its three TMA maps made from the tensors' strides (a tensor
// that cannot have one takes the mma.sync kernel instead, as aligned: call it for 16-byte-aligned rows only);
// returns the first error.
template <typename T, int D, int kBc>
cudaError_t launch_bc(const T* q, const T* k, const T* v, T* o, float* lse, int batch, int heads, int n,
                      const course::AttentionStrides& st, bool causal, cudaStream_t stream) {
  CUtensorMap tm_q{}, tm_k{}, tm_v{};
  if (kTma && !(make_map(&tm_q, q, st.q, batch, heads, n, D, 64) && make_map(&tm_k, k, st.k, batch, heads, n, D, kBc) &&
                make_map(&tm_v, v, st.v, batch, heads, n, D, kBc)))
    return mma::launch<T, D>(q, k, v, o, lse, batch, heads, n, st, causal, true, stream);  // no TMA here
  auto kernel = flash_wgmma_kernel<T, D, kBc>;
  const cudaError_t err = allow_smem(kernel, Smem<D, kBc>::kBytes);
  if (err != cudaSuccess) return err;
  const int q_tiles = (n + Shape<D>::kBr - 1) / Shape<D>::kBr;
  const float scale = 1.0f / sqrtf(static_cast<float>(D));
  kernel<<<batch * heads * q_tiles, Shape<D>::kBlockThreads, Smem<D, kBc>::kBytes, stream>>>(
      q, k, v, o, lse, n, heads, st, q_tiles, causal, 1.4426950408889634f * scale, scale, tm_q, tm_k, tm_v);
  return cudaGetLastError();
}

// Bc: 128, or at d = 128 without a mask FA12_WG_BC_D128 (a causal walk keeps 128, so its diagonal tiles stay
// aligned with the query tiles).
template <typename T, int D>
cudaError_t launch(const T* q, const T* k, const T* v, T* o, float* lse, int batch, int heads, int n,
                   const course::AttentionStrides& st, bool causal, cudaStream_t stream) {
  if constexpr (D == 128 && kBcD128 != kBc) {
    if (!causal) return launch_bc<T, D, kBcD128>(q, k, v, o, lse, batch, heads, n, st, false, stream);
  }
  return launch_bc<T, D, kBc>(q, k, v, o, lse, batch, heads, n, st, causal, stream);
}

}  // namespace hopper

// q, k, v, o: [B, H, N, d] with the head strides in `st` (views of bigger tensors are fine; columns contiguous).
template <typename T>
cudaError_t flash_attention_mma_forward(const T* q, const T* k, const T* v, T* o, float* lse, int batch, int heads,
                                        int n, int d, course::AttentionStrides st, bool causal,
                                        cudaStream_t stream) {
  if constexpr (std::is_same_v<T, float>) {
    return cudaErrorNotSupported;  // tensor cores take 16-bit inputs here (the bindings reject fp32 first)
  } else {
    if (batch == 0 || heads == 0 || n == 0) return cudaSuccess;
    cudaError_t err = cudaSuccess;
    // Given (plumbing, as the launches of days 10 and 11): the 16-byte alignment test (start pointers and every
    // stride) picks the cp.async instance; d = 64 or 128 go to mma::launch, or to the wgmma kernel
    // (hopper::launch) where FA12_HOPPER is 1 (see the Hopper walk), the rows are aligned and the GPU runs the
    // sm_90a image; any other d: cudaErrorInvalidValue.
    // cp.async and the 16-byte stores need 16-byte aligned rows: the start pointers and every stride decide.
    const bool aligned = ((reinterpret_cast<uintptr_t>(q) | reinterpret_cast<uintptr_t>(k) |
                           reinterpret_cast<uintptr_t>(v) | reinterpret_cast<uintptr_t>(o)) % 16) == 0 &&
                         st.rows16(sizeof(T));
    const bool wgmma = FA12_HOPPER && aligned && hopper::available();
    if (d == 64) {
      err = wgmma ? hopper::launch<T, 64>(q, k, v, o, lse, batch, heads, n, st, causal, stream)
                  : mma::launch<T, 64>(q, k, v, o, lse, batch, heads, n, st, causal, aligned, stream);
    } else if (d == 128) {
      err = wgmma ? hopper::launch<T, 128>(q, k, v, o, lse, batch, heads, n, st, causal, stream)
                  : mma::launch<T, 128>(q, k, v, o, lse, batch, heads, n, st, causal, aligned, stream);
    } else {
      err = cudaErrorInvalidValue;  // no instance for this head dim (the bindings reject it first)
    }
    return err;
  }
}

// The bindings see only the declaration (common/attention_binding.h dispatches all three dtypes, so the float
// instance exists and returns an error).
template cudaError_t flash_attention_mma_forward<float>(const float*, const float*, const float*, float*, float*,
                                                        int, int, int, int, course::AttentionStrides, bool,
                                                        cudaStream_t);
template cudaError_t flash_attention_mma_forward<__half>(const __half*, const __half*, const __half*, __half*,
                                                         float*, int, int, int, int, course::AttentionStrides, bool,
                                                         cudaStream_t);
template cudaError_t flash_attention_mma_forward<__nv_bfloat16>(const __nv_bfloat16*, const __nv_bfloat16*,
                                                                const __nv_bfloat16*, __nv_bfloat16*, float*, int,
                                                                int, int, int, course::AttentionStrides, bool,
                                                                cudaStream_t);

// Step 12a: the simple kernel for every shape and device (no wgmma path).
template <typename T>
cudaError_t flash_attention_mma_simple_forward(const T* q, const T* k, const T* v, T* o, float* lse, int batch,
                                               int heads, int n, int d, bool causal, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, float>) {
    return cudaErrorNotSupported;  // tensor cores take 16-bit inputs here (the bindings reject fp32 first)
  } else {
    if (batch == 0 || heads == 0 || n == 0) return cudaSuccess;
    // Given: d = 64 or 128 to simple::launch (any other d: cudaErrorInvalidValue), the 16-byte instance only when
    // q, k, v and o are 16-byte aligned (12a's tensors are contiguous, so their starts decide).
    cudaError_t err = cudaSuccess;
    const int bh = batch * heads;
    const bool aligned = ((reinterpret_cast<uintptr_t>(q) | reinterpret_cast<uintptr_t>(k) |
                           reinterpret_cast<uintptr_t>(v) | reinterpret_cast<uintptr_t>(o)) % 16) == 0;
    if (d == 64)
      err = simple::launch<T, 64>(q, k, v, o, lse, bh, n, causal, aligned, stream);
    else if (d == 128)
      err = simple::launch<T, 128>(q, k, v, o, lse, bh, n, causal, aligned, stream);
    else
      err = cudaErrorInvalidValue;  // no instance for this head dim (the bindings reject it first)
    return err;
  }
}

template cudaError_t flash_attention_mma_simple_forward<float>(const float*, const float*, const float*, float*,
                                                               float*, int, int, int, int, bool, cudaStream_t);
template cudaError_t flash_attention_mma_simple_forward<__half>(const __half*, const __half*, const __half*,
                                                                __half*, float*, int, int, int, int, bool,
                                                                cudaStream_t);
template cudaError_t flash_attention_mma_simple_forward<__nv_bfloat16>(const __nv_bfloat16*, const __nv_bfloat16*,
                                                                       const __nv_bfloat16*, __nv_bfloat16*, float*,
                                                                       int, int, int, int, bool, cudaStream_t);
