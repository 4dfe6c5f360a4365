// Day 09: an optimized CUDA-core matmul, c[M, N] = a[M, K] @ b[K, N] (row-major), fp32 accumulation, for float,
// __half and __nv_bfloat16 storage. The fp32 version is measured against cuBLAS's SGEMM (TF32 off).
// Two graded steps share this file: 09c (op matmul_pipelined) is changes 1 to 9 below with one whole tile per block
// (`kernel`); 09d (op matmul, an extra step) adds change 10, stream-K for the last wave (`streamk_kernel`, launched
// after it).
//
// Changes vs day 08's matmul_2d (128 x 128 block tile, 8 x 8 outputs per thread, scalar everything), each
// measured on an H200 at 4096^3 fp32 against cuBLAS in the same run (the instructors' measured/NOTES.md has the table):
//   1. 16-byte global loads: a float4 (or 8 halves) per load instruction, 4x fewer instructions. Needs K and N to
//      be multiples of the vector width and 16-byte aligned bases; otherwise a scalar-load instance of the same
//      kernel runs (the launcher picks), so any shape and any offset still works.
//   2. A is stored TRANSPOSED in shared memory, As[k][m]: the 8 values of A a thread needs at step k are then
//      contiguous and come in two 16-byte shared loads (LDS.128) instead of eight 4-byte ones. B is already
//      [k][n]. Per k: 4 LDS.128 feed 64 FFMA.
//   3. Warptiling: the 8 x 8 outputs of a thread are two 4 x 4 blocks 32 rows apart and two 16 columns apart, so
//      a warp's 16-byte reads land on 8 (A) and 4 (B) distinct contiguous addresses: no bank conflicts on reads.
//   4. Double buffering: two shared-memory stages, one __syncthreads per K-tile. While the block multiplies
//      stage s, the next K-tile is already on its way: A through registers (it must be transposed, and fp16/bf16
//      converted), stored to stage s^1 three quarters of the way through the math; fp32 B straight into stage
//      s^1 with cp.async, issued at the top (no registers, no conversion needed).
//   5. The transposed store of A has 4 lanes writing the same bank (4-way conflict: ncu counted 3 extra
//      wavefronts per store); padding each row of As by 4 floats makes it 2-way and keeps rows 16-byte aligned.
//      Padding and the early cp.async of B took fp32 from 78% to 88% of cuBLAS.
//   6. BK = 16 (was 8): half as many barriers and loop overheads per FMA.
//   7. Block swizzle: consecutive blocks walk down a group of 8 block-rows before moving right, so the tiles of A
//      and B they share are still in L2 (A and B at 4096^3 are 128 MiB, the H200's L2 50 MiB).
//   8. __launch_bounds__(256, 2): at most 128 registers per thread so that two blocks share an SM (16 warps to
//      hide each other's latencies). It fits because only one tile is staged in registers at a time (item 4).
//   9. The order of the 64 FMAs of a step: pairs of rows walk the columns in alternating directions, so each FFMA
//      shares an operand register with the previous one (the operand reuse cache serves it). 88% -> 94% of cuBLAS
//      at 4096^3. ncu's top stall had been "dispatch" with warps eligible, consistent with register-bank
//      conflicts between the three operands of an FFMA; nvcc keeps the order we write for independent FMAs.
//  10. Stream-K for the last, partial wave (fp32): 1024 tiles on 264 slots are 3.88 waves, and an exact 4 waves
//      (4224 x 4096 x 4096) measured 98.5% of cuBLAS where 4096^3 measured 94.3%. `streamk_kernel` spreads the
//      tail's tiles over a full wave of blocks along K (each block a range of K-tiles; partial sums in a workspace,
//      the last block to arrive adds them). What made it pay at 4096^3 (94.5% -> 96.8%): the block that finishes
//      a tile keeps its own partial in registers and sums the others' with all their loads in flight (the sum had
//      been latency-bound, on every block's critical path), and the stream-K kernel walks K downwards, so its
//      blocks work on the same K-tiles of A and B at the same time (+0.7 points; walking up, ncu measured 35% L2
//      hits against 82% in `kernel`).
// Element conversion (fp16/bf16 -> float) happens once, when a tile is written into shared memory: the inner
// loop is pure fp32 for every dtype.
// Where it stands (H200, the instructors' scripts/sgemm_sweep.py, cuBLAS in the same run): 96.7-96.9% of cuBLAS fp32 at 4096^3,
// 98.7% at 8192^3, 105% at 3000 x 5000 x 2000, 98.5% at 1024^3, 93.6% at 2048^3 (256 tiles: one wave, nothing to
// split).
// Tried and slower (the instructors' measured/NOTES.md): a 128 x 256 tile (8 x 16 per thread, one block per SM), 128-thread blocks
// with 8 x 16, an XOR swizzle instead of padding, explicit fragment double buffering, column-major FMA order,
// 2 x 2 zigzag and interleaved FMA orders; stream-K in the same kernel as the whole tiles (the shared mainloop
// compiled to a schedule 5% slower).

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <type_traits>
#include <utility>

#include "device_cache.h"    // per_device_value: an SM count or occupancy asked once per device
#include "float_convert.cuh"  // to_float(v), from_float<T>(v)

namespace sgemm {

// Tuning knobs. The instructors' scripts/sgemm_sweep.py rebuilds this file with -D overrides to compare configurations.
// A thread owns TMB x TNB blocks of 4 x 4 outputs; a warp's lanes form an LM x LN grid; a block's warps form a
// WARPS_M x WARPS_N grid. The defaults: 128 x 128 tile, 256 threads, 8 x 8 outputs each.
#ifndef SGEMM_BK
#define SGEMM_BK 16
#endif
#ifndef SGEMM_LM
#define SGEMM_LM 8
#endif
#ifndef SGEMM_TMB
#define SGEMM_TMB 2
#endif
#ifndef SGEMM_TNB
#define SGEMM_TNB 2
#endif
#ifndef SGEMM_WARPS_M
#define SGEMM_WARPS_M 2
#endif
#ifndef SGEMM_WARPS_N
#define SGEMM_WARPS_N 4
#endif
#ifndef SGEMM_MIN_BLOCKS
#define SGEMM_MIN_BLOCKS 2
#endif
#ifndef SGEMM_AS_PAD
#define SGEMM_AS_PAD 4  // floats of padding per row of the transposed A tile
#endif
// Knobs of the given code below: the FMA order and the block swizzle (step 09c), the stream-K plan and its launch
// (step 09d).
#ifndef SGEMM_ORDER
#define SGEMM_ORDER 2  // rows per group in the FMA loop's serpentine order; 0 = plain row by row
#endif
#ifndef SGEMM_GROUP
#define SGEMM_GROUP 8  // block-rows per swizzle group
#endif
#ifndef SGEMM_STREAMK
#define SGEMM_STREAMK 1  // the last partial wave by stream-K: 0 never, 1 when the cost model says so, 2 always
#endif
#ifndef SGEMM_SK_SEG_COST
#define SGEMM_SK_SEG_COST 2  // stream-K: a segment's prologue and partial sum, in K-tiles of time
#endif
#ifndef SGEMM_SK_WORTH
#define SGEMM_SK_WORTH 95  // stream-K when the tail costs at most this % of a wave of whole tiles
#endif
#ifndef SGEMM_PDL
#define SGEMM_PDL 1  // sm_90: the stream-K kernel's blocks may start while the whole-tile kernel's last blocks run
#endif
// Knobs of the given main loop (step 09c's stage loop), for the sweeps.
#ifndef SGEMM_STASH_K
#define SGEMM_STASH_K (SGEMM_BK * 3 / 4)  // fp32: the k step at which the next A tile goes to shared memory
#endif
#ifndef SGEMM_STASH_K16
#define SGEMM_STASH_K16 (SGEMM_BK * 3 / 4)  // fp16/bf16: the k step at which A is stored and B fetched
#endif
#ifndef SGEMM_B_EARLY
#define SGEMM_B_EARLY 1  // fp32: issue B's cp.async at the top of the step instead of at STASH_K
#endif
#ifndef SGEMM_SK_DOWN
#define SGEMM_SK_DOWN 1  // the stream-K kernel walks K downwards (see mainloop)
#endif
constexpr int BK = SGEMM_BK;
constexpr int TMB = SGEMM_TMB, TNB = SGEMM_TNB, TM = 4 * TMB, TN = 4 * TNB;  // outputs per thread: TM x TN
constexpr int LM = SGEMM_LM, LN = 32 / LM;                                     // lane grid inside a warp
constexpr int WM = TM * LM, WN = TN * LN;                                      // warp tile
constexpr int WARPS_M = SGEMM_WARPS_M, WARPS_N = SGEMM_WARPS_N;
constexpr int kThreads = 32 * WARPS_M * WARPS_N;
constexpr int BM = WM * WARPS_M, BN = WN * WARPS_N;  // block tile
static_assert(LM * LN == 32, "a warp has 32 lanes");

// What one thread loads per step: a 16-byte vector (uint4) on the fast path, one element otherwise.
template <typename T, bool kVec>
struct Loads {
  using Raw = std::conditional_t<kVec, uint4, T>;
  static constexpr int VEC = sizeof(Raw) / sizeof(T);          // elements per load
  static constexpr int A_PER_THREAD = BM * BK / VEC / kThreads;  // loads of the A tile per thread
  static constexpr int B_PER_THREAD = BK * BN / VEC / kThreads;
  static_assert(A_PER_THREAD >= 1 && B_PER_THREAD >= 1, "tile too small for the block");
};

// Yours, in namespace sgemm, for the bodies you write in gemm_block below (the reference's names; only your code
// calls them): a 16-byte cp.async global -> shared that writes zeros when out of range, and element e of a loaded
// vector as float.
// YOUR CODE HERE: (step 09c) device helpers for your fetch/stash bodies: cp_async16(smem, gmem, ok) (16 bytes by cp.async, zeros when !ok), element<T>(raw, e)

// Given (step 09c): plumbing of the given epilogue (store_c below), not the step's lesson.
// Four consecutive outputs of a row: one 16-byte (float) or 8-byte (half) store.
template <typename T>
__device__ __forceinline__ void store4(T* p, float x, float y, float z, float w) {
  if constexpr (std::is_same_v<T, float>) {
    *reinterpret_cast<float4*>(p) = make_float4(x, y, z, w);
  } else {
    T v[4] = {from_float<T>(x), from_float<T>(y), from_float<T>(z), from_float<T>(w)};
    *reinterpret_cast<uint2*>(p) = *reinterpret_cast<const uint2*>(v);
  }
}

// Given (step 09c): two of the instructors' tuning choices, each measured in their sweeps. Call them or write your
// own.
// One k step of the outer product, acc[i][j] += fa[i] * fb[j] for every i < TM, j < TN, in the order measured
// fastest (change 9): two rows at a time walk the columns, the next two walk back, so each FFMA shares an operand
// register with the one before it and the hardware's operand reuse cache serves it (88% -> 94% of cuBLAS).
__device__ __forceinline__ void outer_product(float (&acc)[TM][TN], const float (&fa)[TM], const float (&fb)[TN]) {
#if SGEMM_ORDER > 0
#pragma unroll
  for (int i0 = 0; i0 < TM; i0 += SGEMM_ORDER)
#pragma unroll
    for (int jj = 0; jj < TN; ++jj) {
      const int j = ((i0 / SGEMM_ORDER) & 1) ? TN - 1 - jj : jj;
#pragma unroll
      for (int i = i0; i < i0 + SGEMM_ORDER; ++i) acc[i][j] = fmaf(fa[i], fb[j], acc[i][j]);
    }
#else
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(fa[i], fb[j], acc[i][j]);  // the outer product
#endif
}

// The block swizzle (change 7): where tile t of a gm x gn grid of output tiles starts, (m0, n0) in elements of C.
// Consecutive t walk down a group of SGEMM_GROUP tile rows, then one tile column right, so the blocks that run at
// the same time share tiles of A and B in L2. Every t < gm * gn gets a distinct tile.
__device__ __forceinline__ void tile_origin(int t, int gm, int gn, int& m0, int& n0) {
  constexpr int kGroup = SGEMM_GROUP;
  const int per_group = kGroup * gn;
  const int group = t / per_group, first_row = group * kGroup;
  const int rows_in_group = min(gm - first_row, kGroup);
  const int in_group = t % per_group;
  m0 = (first_row + in_group % rows_in_group) * BM;
  n0 = (in_group / rows_in_group) * BN;
}

// Given (step 09d): the plan of stream-K (change 10), made by the host code at the end of this file. `kernel`
// computes the first dp_blocks tiles, one whole tile per block. The sk_tiles tiles after those (the last, partial
// wave) go to `streamk_kernel`, split along K: their K-tiles, laid end to end (tile u's K-tiles 0 .. iters - 1,
// then tile u + 1's), are cut into sk_blocks equal ranges, block j's [j * total / sk_blocks, (j + 1) * total /
// sk_blocks) with total = sk_tiles * iters. The blocks that share a tile leave their partial sums in `partials`;
// the last of them to finish adds them up (in a fixed order, so the result does not depend on who came last) and
// writes the tile.
struct StreamK {
  int dp_blocks = 0;
  int sk_blocks = 0;
  int sk_tiles = 0;
  float* partials = nullptr;  // BM x BN floats per (block, tile) pair: sk_blocks + sk_tiles of them
  int* arrivals = nullptr;    // per stream-K tile: how many of its blocks are done (zero between launches)
};

// The stream-K block that owns K-tile x of the stream-K part (x counted from its start), when `total` K-tiles
// are cut into `blocks` ranges [j * total / blocks, (j + 1) * total / blocks).
__device__ __forceinline__ int sk_owner(long long x, long long total, int blocks) {
  return static_cast<int>(((x + 1) * blocks - 1) / total);
}

// Given (step 09c), but for four bodies that are yours: gemm_block, the work of one block for both kernels below
// (kSplit = false, output tile blockIdx.x whole; kSplit = true, step 09d, stream-K block blockIdx.x of `sk`): its
// set-up, `mainloop` with its stage loop and fragments, and the epilogue `store_c`. The stage loop calls your
// fetch_a, fetch_b, stash_a and stash_b where change 4 needs them: fetch_a(next tile) at the top, stash_a(s ^ 1)
// three quarters of the way through the K-tile, fetch_b(next, s ^ 1) at the top (fp32 vectors: cp.async) or after
// stash_a (otherwise: registers), stash_b(s ^ 1) before the barrier.
template <typename T, bool kVec, bool kSplit>
__device__ __forceinline__ void gemm_block(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M,
                                           int N, int K, const StreamK& sk,
                                           float (&As)[2][BK][BM + SGEMM_AS_PAD], float (&Bs)[2][BK][BN]) {
  using L = Loads<T, kVec>;
  using Raw = typename L::Raw;
  constexpr int VEC = L::VEC;
  const int gm = (M + BM - 1) / BM, gn = (N + BN - 1) / BN;
  const int iters = max(1, (K + BK - 1) / BK);  // K-tiles per output tile (K = 0: one tile of zeros)

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;
  const int lm = lane / LN, ln = lane % LN;
  const int am = wm + lm * 4, bn = wn + ln * 4;  // first row / column of this lane's 4 x 4 blocks
  // Which vectors of the tiles this thread loads is fixed: a column (k or n) and rows `step` apart. The loads
  // go through one base pointer per matrix plus constant offsets, which keeps address registers few.
  constexpr int A_VPR = BK / VEC, A_STEP = kThreads / A_VPR;  // vectors per tile row; rows between loads
  constexpr int B_VPR = BN / VEC, B_STEP = kThreads / B_VPR;
  const int a_r = tid / A_VPR, a_k = tid % A_VPR * VEC;
  const int b_r = tid / B_VPR, b_n = tid % B_VPR * VEC;
  // fp32 B needs no conversion and no transpose: it is copied straight into shared memory with cp.async,
  // which frees the registers it would be staged in (the fp32 kernel is the one short of registers).
  constexpr bool kAsyncB = kVec && std::is_same_v<T, float>;
  float acc[TM][TN];

  // acc = the sum over K-tiles [kt0, kt1) of output tile (m0, n0). The pointers and the K bound are shifted to
  // K-tile kt0, so the loop itself is the whole-K loop of a K - kt0 * BK problem. The stream-K kernel walks K
  // downwards: its blocks start together, each with its tile's last K-tile, so they stay at one or two K-tiles of
  // A and B between them, which L2 holds (walking up, each would be at a different K: ncu measured 35% L2 hits
  // against `kernel`'s 82%; walking down measured 0.7 points faster at 4096^3).
  auto mainloop = [&](int m0, int n0, int kt0, int kt1) {
    Raw ra[L::A_PER_THREAD], rb[L::B_PER_THREAD];  // the next K-tile, in flight in registers
    const int k_base = kt0 * BK, k_end = K - k_base;  // k below counts from k_base
    const T* pa = a + static_cast<size_t>(m0 + a_r) * K + k_base + a_k;  // only dereferenced where in range
    const T* pb = b + static_cast<size_t>(k_base + b_r) * N + n0 + b_n;
    const bool b_col_ok = n0 + b_n < N;
    auto fetch_a = [&](int k0) {
      // YOUR CODE HERE: (step 09c) fetch_a(k0): ra[i] = this thread's vector i of A's K-tile at k0 (rows a_r + i · A_STEP of m0, column a_k; pa points there at k0 = 0), zeros past M or k_end
    };
    auto fetch_b = [&](int k0, int s) {
      // Contract: a zero-filled cp.async (source size 0) reads nothing but still takes a global address that is
      // valid: pass b, B's base pointer, there, since pb moved to a vector past N or k_end may point beyond B.
      // YOUR CODE HERE: (step 09c) fetch_b(k0, s): B's K-tile at k0 (rows b_r + i · B_STEP, column b_n; pb at k0 = 0), zeros past N or k_end: kAsyncB, cp.async into Bs[s]; else into rb[i]
    };
    auto stash_a = [&](int s) {
      // YOUR CODE HERE: (step 09c) stash_a(s): ra into stage s of As, transposed (As[s][k][m]) and converted to float
    };
    auto stash_b = [&](int s) {
      // YOUR CODE HERE: (step 09c) stash_b(s): stage s of Bs complete as far as this thread goes: kAsyncB, its cp.asyncs landed; else rb converted into Bs[s][k][n]
    };
    // This thread's values of A (rows am + ...) and B (columns bn + ...) at step k of stage s.
    auto load_frags = [&](int s, int k, float* fa, float* fb) {
#pragma unroll
      for (int i = 0; i < TMB; ++i) {
        const float4 v = *reinterpret_cast<const float4*>(&As[s][k][am + i * (WM / TMB)]);
        fa[4 * i] = v.x; fa[4 * i + 1] = v.y; fa[4 * i + 2] = v.z; fa[4 * i + 3] = v.w;
      }
#pragma unroll
      for (int j = 0; j < TNB; ++j) {
        const float4 v = *reinterpret_cast<const float4*>(&Bs[s][k][bn + j * (WN / TNB)]);
        fb[4 * j] = v.x; fb[4 * j + 1] = v.y; fb[4 * j + 2] = v.z; fb[4 * j + 3] = v.w;
      }
    };
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;
    float fa[TM], fb[TN];
    const int tiles = kt1 - kt0;
    auto k_of = [&](int t) { return (kSplit && SGEMM_SK_DOWN ? tiles - 1 - t : t) * BK; };  // k of the loop's tile t
    fetch_a(k_of(0));
    fetch_b(k_of(0), 0);
    stash_a(0);
    stash_b(0);
    __syncthreads();
    for (int t = 0; t < tiles; ++t) {
      const int s = t & 1;
      const bool next = t + 1 < tiles;
      // The next tile of A is loaded at the top and stored to stage s^1 three quarters of the way through the
      // math (fp32 B is already on its way by cp.async; fp16/bf16 B is loaded into registers after A is stored,
      // so only one tile is staged in registers at a time: that keeps every instance within 128 registers, two
      // blocks per SM). Stage s^1 is free: it was last read in iteration t-1, before that iteration's barrier.
      constexpr bool b_early = kAsyncB && SGEMM_B_EARLY;
      if (next) fetch_a(k_of(t + 1));
      if (next && b_early) fetch_b(k_of(t + 1), s ^ 1);
#pragma unroll
      for (int k = 0; k < BK; ++k) {
        if (k == (kAsyncB ? SGEMM_STASH_K : SGEMM_STASH_K16) && next) {
          stash_a(s ^ 1);
          if (!b_early) fetch_b(k_of(t + 1), s ^ 1);
        }
        load_frags(s, k, fa, fb);
        outer_product(acc, fa, fb);  // the order of these 64 independent FMAs matters (given above)
      }
      if (next) stash_b(s ^ 1);
      __syncthreads();
    }
  };

  // Output element (r, col .. col + 3) of C from v[0..3], guarded at the edges.
  auto put4 = [&](int r, int col, const float* v) {
    if (r >= M) return;
    T* p = c + static_cast<size_t>(r) * N + col;
    if (kVec) {
      if (col < N) store4(p, v[0], v[1], v[2], v[3]);  // N % 4 == 0: all four or none
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (col + e < N) p[e] = from_float<T>(v[e]);
    }
  };
  // acc[i][4h .. 4h+3] is row block i (starting at am + (i/4) * WM/TMB) and column block h (bn + h * WN/TNB).
  auto row_of = [&](int m0, int i) { return m0 + am + (i / 4) * (WM / TMB) + i % 4; };
  auto col_of = [&](int n0, int h) { return n0 + bn + h * (WN / TNB); };
  auto store_c = [&](int m0, int n0) {
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int h = 0; h < TNB; ++h) put4(row_of(m0, i), col_of(n0, h), &acc[i][h * 4]);
  };
  // YOUR CODE HERE: (step 09d) gemm_block, continued, kSplit: stream-K's `fixup`, then this block's segments
  if constexpr (!kSplit) {  // one whole tile per block: tile blockIdx.x
    int m0, n0;
    tile_origin(blockIdx.x, gm, gn, m0, n0);
    mainloop(m0, n0, 0, iters);
    store_c(m0, n0);
  }
}

// Step 09c: the whole tiles, one per block (all of C, or the first sk.dp_blocks tiles in step 09d).
template <typename T, bool kVec>
__global__ void __launch_bounds__(kThreads, kVec ? SGEMM_MIN_BLOCKS : 1)
    kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N, int K) {
  // (maybe_unused: in the stub, nothing reads these until the body is written)
  using L = Loads<T, kVec>;
  using Raw = typename L::Raw;
  [[maybe_unused]] constexpr int VEC = L::VEC;
  [[maybe_unused]] __shared__ __align__(16) float As[2][BK][BM + SGEMM_AS_PAD];  // transposed: As[s][k][m]
  [[maybe_unused]] __shared__ __align__(16) float Bs[2][BK][BN];
#if __CUDA_ARCH__ >= 900
  // Given (step 09d): on sm_90 the stream-K kernel is launched as this grid's programmatic dependent; this lets it
  // be scheduled now, so its blocks take the slots of our last blocks as they finish (a no-op without one).
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  // Contract: As[s][k][m] holds A transposed (padded rows), Bs[s][k][n] B, two stages; values past M, N or K
  // are zeros; kVec: 16-byte loads and 4-wide stores, else one element per load; fp32 acc, stores guarded.
  // YOUR CODE HERE: (step 09c) the BM x BN tile of C for blockIdx.x: call gemm_block<T, kVec, false> once its four bodies are written
}

// Step 09d: the tail, sk.sk_blocks stream-K blocks (launched after `kernel`, on the same stream). sm_120's ptxas
// spills the fp32 instance under SGEMM_MIN_BLOCKS' cap: there it is compiled uncapped (not timed on such a GPU).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1200
constexpr int kStreamKMinBlocks = 1;
#else
constexpr int kStreamKMinBlocks = SGEMM_MIN_BLOCKS;
#endif
template <typename T, bool kVec>
__global__ void __launch_bounds__(kThreads, kVec ? kStreamKMinBlocks : 1)
    streamk_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N, int K,
                   const StreamK sk) {
  [[maybe_unused]] __shared__ __align__(16) float As[2][BK][BM + SGEMM_AS_PAD];
  [[maybe_unused]] __shared__ __align__(16) float Bs[2][BK][BN];
  // Contract: block blockIdx.x computes its range of the stream-K part's K-tiles (see StreamK), one segment (a run
  // of one tile's K-tiles) at a time, and takes part in the fixup of each tile it touched; As and Bs as in
  // `kernel`. Return from here only at the end: the wait below must run in every block.
  // YOUR CODE HERE: (step 09d) stream-K block blockIdx.x of `sk`: its segments, each tile's partial sums and fixup
#if __CUDA_ARCH__ >= 900
  // Given (step 09d): launched as a programmatic dependent of `kernel`, this grid may run beside it; waiting for it
  // before exiting makes our completion mean C is complete, for whatever the stream runs next.
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

}  // namespace sgemm

namespace {  // internal linkage: each build of this file keeps its own caches (the instructors' scripts/sgemm_sweep.py loads several)
// Given (step 09d): the host side of stream-K, the instructors' tuned plan. `launch` below asks the runtime how
// many blocks of each kernel fit on the GPU at once, decides whether the last wave is worth splitting (`plan`),
// and launches `kernel` for the whole tiles, then `streamk_kernel` for the tail.
//
// Stream-K for the last wave. 1024 tiles of 128 x 128 (4096^3) on 132 SMs x 2 blocks are 3.88 waves: the last
// one leaves 32 slots idle, and a shape with exactly 4 waves (4224 x 4096 x 4096) measured 98.5% of cuBLAS where
// 4096^3 measured 94.3%. So the tiles of the last, partial wave are shared out along K over a full wave of blocks.
constexpr int kMinSkIters = 8;  // K-tiles per stream-K block at least (fewer: the fixup costs more than it saves)
constexpr int kSegCost = SGEMM_SK_SEG_COST;  // K-tiles' worth of time per segment: prologue and partial sum
constexpr int kSkWorth = SGEMM_SK_WORTH;     // stream-K when its tail costs at most this % of a whole-tile wave

// (maybe_unused here and on `plan`: in the stub, `launch`'s only caller, matmul_forward, is a hole)
[[maybe_unused]] int major_version(int device) {  // compute capability (the runtime keeps it: no cache needed)
  int v = 0;
  if (cudaDeviceGetAttribute(&v, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) (void)cudaGetLastError();
  return v;
}

// Blocks of `kern` that fit on the whole GPU at once on the current device (one cache per instance of this
// template); 0 where the runtime cannot say (then no stream-K).
template <typename Kernel, Kernel kern>
int resident_blocks() {
  static DeviceCache cache;
  int n = 0;
  const cudaError_t err = per_device_value(cache, [](int dev, int* v) {
    int sms = 0, per_sm = 0;
    cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e == cudaSuccess) e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, sgemm::kThreads, 0);
    *v = sms * per_sm;
    return e;
  }, &n);
  if (err != cudaSuccess) (void)cudaGetLastError();
  return err == cudaSuccess ? n : 0;
}

// One workspace per (device, stream): launches on one stream run in order, so they can share it; launches on
// two streams get two. Two buffers that only grow: the arrival counters, zeroed when allocated (the last block of
// each tile puts its counter back to zero), and the partial tiles.
struct Workspace {
  int* arrivals = nullptr;
  float* partials = nullptr;
};
Workspace workspace(int device, cudaStream_t stream, size_t counters, size_t partial_floats) {
  struct Space {
    void* ptr[2] = {nullptr, nullptr};
    size_t bytes[2] = {0, 0};
  };
  static std::mutex mutex;
  static std::map<std::pair<int, cudaStream_t>, Space> spaces;
  std::lock_guard<std::mutex> lock(mutex);
  Space& s = spaces[{device, stream}];
  const size_t need[2] = {counters * sizeof(int), partial_floats * sizeof(float)};
  for (int i = 0; i < 2; ++i) {
    if (s.bytes[i] >= need[i]) continue;
    if (s.ptr[i]) cudaFree(s.ptr[i]);  // waits for the device: only when a larger shape comes along
    s.ptr[i] = nullptr, s.bytes[i] = 0;
    if (cudaMalloc(&s.ptr[i], need[i]) != cudaSuccess || (i == 0 && cudaMemsetAsync(s.ptr[i], 0, need[i], stream))) {
      if (s.ptr[i]) cudaFree(s.ptr[i]);
      s.ptr[i] = nullptr;
      (void)cudaGetLastError();  // out of memory is not an error here: the launch goes without stream-K
      return {};
    }
    s.bytes[i] = need[i];
  }
  return {static_cast<int*>(s.ptr[0]), static_cast<float*>(s.ptr[1])};
}

// The stream-K plan for `tiles` output tiles of `iters` K-tiles each: `wave` whole-tile blocks run at once, and
// `sk_slots` stream-K blocks.
[[maybe_unused]] sgemm::StreamK plan(int tiles, int iters, int wave, int sk_slots, int device, cudaStream_t stream) {
  sgemm::StreamK sk;
  if (wave <= 0 || sk_slots <= 0 || iters < kMinSkIters || SGEMM_STREAMK == 0) return sk;
  const int rem = tiles % wave;  // tiles in the last, partial wave
  if (rem == 0) return sk;
  const long long total = static_cast<long long>(rem) * iters;
  const int blocks = static_cast<int>(std::min<long long>(sk_slots, total / kMinSkIters));
  // The slowest block's time in K-tiles: its share, plus two segments' prologues and partial sums. Stream-K when
  // that is at most kSkWorth % of a whole tile's iters: below it the split won, above it the whole tile did
  // (the instructors' measured/NOTES.md, day09's stream-K).
  const long long cost = (total + blocks - 1) / blocks + 2 * kSegCost;
  if (SGEMM_STREAMK == 1 && cost * 100 > static_cast<long long>(iters) * kSkWorth) return sk;
  const Workspace ws = workspace(device, stream, rem, static_cast<size_t>(blocks + rem) * sgemm::BM * sgemm::BN);
  if (!ws.arrivals) return sk;
  sk.dp_blocks = tiles - rem;
  sk.sk_blocks = blocks;
  sk.sk_tiles = rem;
  sk.arrivals = ws.arrivals;
  sk.partials = ws.partials;
  return sk;
}

// C = A B by kernel<T, kVec> alone, or by kernel<T, kVec> on the first sk.dp_blocks tiles and streamk_kernel<T, kVec>
// on the rest (fp32, when plan() splits), both on `stream`.
template <typename T, bool kVec>
cudaError_t launch(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream) {
  using namespace sgemm;
  const int tiles = ((M + BM - 1) / BM) * ((N + BN - 1) / BN);
  const int iters = std::max(1, (K + BK - 1) / BK);
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return cudaGetLastError();
  StreamK sk;
  // fp32 only: the 16-bit instances stage both next tiles in registers, and with the stream-K bookkeeping their
  // stream-K kernel needed more than 128 registers (spills). Their tails run as whole tiles.
  if constexpr (std::is_same_v<T, float>) {
    using Whole = decltype(&kernel<T, kVec>);
    using Split = decltype(&streamk_kernel<T, kVec>);
    sk = plan(tiles, iters, resident_blocks<Whole, &kernel<T, kVec>>(),
              resident_blocks<Split, &streamk_kernel<T, kVec>>(), device, stream);
  }
  if (sk.sk_blocks == 0) {
    kernel<T, kVec><<<tiles, kThreads, 0, stream>>>(a, b, c, M, N, K);
    return cudaGetLastError();
  }
  // Two launches on one stream: the whole tiles, then the tail. On sm_90 the tail is a programmatic dependent
  // launch: its blocks take the slots of the last whole-tile blocks as they finish, instead of waiting for the
  // slowest of them (each `kernel` block allows it as it starts, griddepcontrol.launch_dependents).
  if (sk.dp_blocks > 0) kernel<T, kVec><<<sk.dp_blocks, kThreads, 0, stream>>>(a, b, c, M, N, K);
  if constexpr (std::is_same_v<T, float>) {
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(sk.sk_blocks);
    config.blockDim = dim3(kThreads);
    config.stream = stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    config.attrs = attr;
    config.numAttrs = SGEMM_PDL && sk.dp_blocks > 0 && major_version(device) >= 9 ? 1 : 0;
    return cudaLaunchKernelEx(&config, streamk_kernel<T, kVec>, a, b, c, M, N, K, sk);
  }
  return cudaGetLastError();
}

// Which instance may run: kernel<T, true> (16-byte loads, 4-wide stores) or kernel<T, false> (any shape, any offset).
template <typename T>
bool use_vectors(const T* a, const T* b, const T* c, int N, int K) {
  // Contract: true only when a, b and c are 16-byte aligned and K and N are multiples of 16 / sizeof(T) elements.
  // YOUR CODE HERE: (step 09c) the test, as 09a's
  return false;
}
}  // namespace

// Step 09c (op matmul_pipelined): whole tiles only.
template <typename T>
cudaError_t matmul_pipelined_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream) {
  // YOUR CODE HERE: (step 09c) launch sgemm::kernel<T, true> or <T, false>, whichever use_vectors(...) picks at run time: a 1-D grid of ceil(M / BM) · ceil(N / BN) tiles, kThreads each, on `stream`
  return cudaGetLastError();
}

// Step 09d (op matmul, extra credit): the instance use_vectors picks, launched by the given `launch` above: the whole
// tiles, then, in fp32 where the plan says so, the last wave by stream-K. A hole of its own, so that an untouched
// 09d launches nothing (not implemented, which does not fail the day) rather than 09c's whole tiles without a tail.
template <typename T>
cudaError_t matmul_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream) {
  // YOUR CODE HERE: (step 09d) return launch<T, true> or launch<T, false>(a, b, c, M, N, K, stream), whichever use_vectors(...) picks at run time, once your stream-K holes are written
  return cudaSuccess;
}

template cudaError_t matmul_pipelined_forward<float>(const float*, const float*, float*, int, int, int, cudaStream_t);
template cudaError_t matmul_pipelined_forward<__half>(const __half*, const __half*, __half*, int, int, int,
                                                      cudaStream_t);
template cudaError_t matmul_pipelined_forward<__nv_bfloat16>(const __nv_bfloat16*, const __nv_bfloat16*,
                                                             __nv_bfloat16*, int, int, int, cudaStream_t);
template cudaError_t matmul_forward<float>(const float*, const float*, float*, int, int, int, cudaStream_t);
template cudaError_t matmul_forward<__half>(const __half*, const __half*, __half*, int, int, int, cudaStream_t);
template cudaError_t matmul_forward<__nv_bfloat16>(const __nv_bfloat16*, const __nv_bfloat16*, __nv_bfloat16*, int,
                                                   int, int, cudaStream_t);
