// Day 09: an optimized CUDA-core matmul, c[M, N] = a[M, K] @ b[K, N] (row-major), fp32 accumulation, for float,
// __half and __nv_bfloat16 storage. The fp32 version is measured against cuBLAS's SGEMM (TF32 off).
//
// Changes vs day 08's matmul_2d (128 x 128 block tile, 8 x 8 outputs per thread, scalar everything), each
// measured on an H200 at 4096^3 fp32 against cuBLAS in the same run (measured/NOTES.md has the table):
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
// Element conversion (fp16/bf16 -> float) happens once, when a tile is written into shared memory: the inner
// loop is pure fp32 for every dtype.
// Where it stands (H200, scripts/sgemm_sweep.py): about 94.5% of cuBLAS fp32 at 4096^3 and 95.5% at 8192^3.
// Tried and slower (measured/NOTES.md): a 128 x 256 tile (8 x 16 per thread, one block per SM), 128-thread blocks
// with 8 x 16, an XOR swizzle instead of padding, explicit fragment double buffering, column-major FMA order,
// 2 x 2 zigzag and interleaved FMA orders.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "float_convert.cuh"  // to_float(v), from_float<T>(v)

namespace sgemm {

// Tuning knobs. scripts/sgemm_sweep.py rebuilds this file with -D overrides to compare configurations.
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
#ifndef SGEMM_STASH_K
#define SGEMM_STASH_K (SGEMM_BK * 3 / 4)  // fp32: the k step at which the next A tile goes to shared memory
#endif
#ifndef SGEMM_ORDER
#define SGEMM_ORDER 2  // rows per group in the FMA loop's serpentine order; 0 = plain row by row
#endif
#ifndef SGEMM_STASH_K16
#define SGEMM_STASH_K16 (SGEMM_BK * 3 / 4)  // fp16/bf16: the k step at which A is stored and B fetched
#endif
#ifndef SGEMM_GROUP
#define SGEMM_GROUP 8  // block-rows per swizzle group
#endif
#ifndef SGEMM_B_EARLY
#define SGEMM_B_EARLY 1  // fp32: issue B's cp.async at the top of the step instead of at STASH_K
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

// BEGIN SOLUTION
// 16 bytes global -> shared without passing through registers (sm_80+); zeros instead when !ok.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool ok) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(ok ? 16 : 0));
}

template <typename T, typename Raw>
__device__ __forceinline__ float element(const Raw& raw, int e) {
  return to_float(reinterpret_cast<const T*>(&raw)[e]);
}

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
// END SOLUTION

template <typename T, bool kVec>
__global__ void __launch_bounds__(kThreads, kVec ? SGEMM_MIN_BLOCKS : 1)
    kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M, int N, int K) {
  using L = Loads<T, kVec>;
  using Raw = typename L::Raw;
  constexpr int VEC = L::VEC;
  __shared__ __align__(16) float As[2][BK][BM + SGEMM_AS_PAD];  // transposed: As[s][k][m]
  __shared__ __align__(16) float Bs[2][BK][BN];
  // BEGIN SOLUTION
  // Block swizzle: groups of kGroup block-rows, walked column by column.
  constexpr int kGroup = SGEMM_GROUP;
  const int gm = (M + BM - 1) / BM, gn = (N + BN - 1) / BN;
  const int per_group = kGroup * gn;
  const int group = blockIdx.x / per_group, first = group * kGroup;
  const int rows_in_group = min(gm - first, kGroup);
  const int in_group = blockIdx.x % per_group;
  const int m0 = (first + in_group % rows_in_group) * BM;
  const int n0 = (in_group / rows_in_group) * BN;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;
  const int lm = lane / LN, ln = lane % LN;
  const int am = wm + lm * 4, bn = wn + ln * 4;  // first row / column of this lane's 4 x 4 blocks

  Raw ra[L::A_PER_THREAD], rb[L::B_PER_THREAD];  // the next K-tile, in flight in registers
  // Which vectors of the tiles this thread loads is fixed: a column (k or n) and rows `step` apart. The loads
  // go through one base pointer per matrix plus constant offsets, which keeps address registers few.
  constexpr int A_VPR = BK / VEC, A_STEP = kThreads / A_VPR;  // vectors per tile row; rows between loads
  constexpr int B_VPR = BN / VEC, B_STEP = kThreads / B_VPR;
  const int a_r = tid / A_VPR, a_k = tid % A_VPR * VEC;
  const int b_r = tid / B_VPR, b_n = tid % B_VPR * VEC;
  const T* pa = a + static_cast<size_t>(m0 + a_r) * K + a_k;  // only dereferenced where in range
  const T* pb = b + static_cast<size_t>(b_r) * N + n0 + b_n;
  const bool b_col_ok = n0 + b_n < N;
  auto fetch_a = [&](int k0) {
#pragma unroll
    for (int i = 0; i < L::A_PER_THREAD; ++i) {
      const bool ok = m0 + a_r + i * A_STEP < M && k0 + a_k < K;
      ra[i] = ok ? __ldg(reinterpret_cast<const Raw*>(pa + static_cast<size_t>(i * A_STEP) * K + k0)) : Raw{};
    }
  };
  // fp32 B needs no conversion and no transpose: it is copied straight into shared memory with cp.async,
  // which frees the registers it would be staged in (the fp32 kernel is the one short of registers).
  constexpr bool kAsyncB = kVec && std::is_same_v<T, float>;
  auto fetch_b = [&](int k0, int s) {
#pragma unroll
    for (int i = 0; i < L::B_PER_THREAD; ++i) {
      const bool ok = b_col_ok && k0 + b_r + i * B_STEP < K;
      const T* src = pb + static_cast<size_t>(k0 + i * B_STEP) * N;
      if constexpr (kAsyncB)
        cp_async16(&Bs[s][b_r + i * B_STEP][b_n], ok ? src : b, ok);
      else
        rb[i] = ok ? __ldg(reinterpret_cast<const Raw*>(src)) : Raw{};
    }
  };
  auto stash_a = [&](int s) {
#pragma unroll
    for (int i = 0; i < L::A_PER_THREAD; ++i)
#pragma unroll
      for (int e = 0; e < VEC; ++e) As[s][a_k + e][a_r + i * A_STEP] = element<T>(ra[i], e);  // the transpose
  };
  auto stash_b = [&](int s) {
    if constexpr (kAsyncB) {
      asm volatile("cp.async.wait_all;\n" ::);  // this thread's copies have landed; the barrier does the rest
    } else {
#pragma unroll
      for (int i = 0; i < L::B_PER_THREAD; ++i) {
        float* dst = &Bs[s][b_r + i * B_STEP][b_n];
        if constexpr (VEC % 4 == 0) {
#pragma unroll
          for (int q = 0; q < VEC; q += 4)
            *reinterpret_cast<float4*>(dst + q) = make_float4(element<T>(rb[i], q), element<T>(rb[i], q + 1),
                                                              element<T>(rb[i], q + 2), element<T>(rb[i], q + 3));
        } else {
#pragma unroll
          for (int e = 0; e < VEC; ++e) dst[e] = element<T>(rb[i], e);
        }
      }
    }
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
  float acc[TM][TN] = {};
  float fa[TM], fb[TN];
  const int tiles = (K + BK - 1) / BK;
  fetch_a(0);
  fetch_b(0, 0);
  stash_a(0);
  stash_b(0);
  __syncthreads();
  for (int t = 0; t < tiles; ++t) {
    const int s = t & 1;
    const bool next = t + 1 < tiles;
    // The next tile of A is loaded at the top and stored to stage s^1 three quarters of the way through the math
    // (fp32 B is already on its way by cp.async; fp16/bf16 B is loaded into registers after A is stored, so only
    // one tile is staged in registers at a time: that keeps every instance within 128 registers, two blocks per
    // SM). Stage s^1 is free: it was last read in iteration t-1, before that iteration's barrier.
    constexpr bool b_early = kAsyncB && SGEMM_B_EARLY;
    if (next) fetch_a((t + 1) * BK);
    if (next && b_early) fetch_b((t + 1) * BK, s ^ 1);
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      if (k == (kAsyncB ? SGEMM_STASH_K : SGEMM_STASH_K16) && next) {
        stash_a(s ^ 1);
        if (!b_early) fetch_b((t + 1) * BK, s ^ 1);
      }
      load_frags(s, k, fa, fb);
#if SGEMM_ORDER > 0
      // The order of these 64 independent FMAs matters (measured: 88% -> 94% of cuBLAS). Two rows at a time walk
      // the columns, the next two rows walk back: each FFMA then shares an operand register with the one before
      // it, which the hardware's operand reuse cache serves, sparing register-file reads (and bank conflicts).
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
    if (next) stash_b(s ^ 1);
    __syncthreads();
  }

  // Epilogue: row block i starts at am + i * WM/TMB, column block j at bn + j * WN/TNB.
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int r = m0 + am + (i / 4) * (WM / TMB) + i % 4;
    if (r >= M) continue;
#pragma unroll
    for (int h = 0; h < TNB; ++h) {
      const int col = n0 + bn + h * (WN / TNB);
      const float* v = &acc[i][h * 4];
      T* p = c + static_cast<size_t>(r) * N + col;
      if (kVec) {
        if (col < N) store4(p, v[0], v[1], v[2], v[3]);  // N % 4 == 0: all four or none
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (col + j < N) p[j] = from_float<T>(v[j]);
      }
    }
  }
  // END SOLUTION
}

}  // namespace sgemm

template <typename T>
cudaError_t matmul_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream) {
  using namespace sgemm;
  // BEGIN SOLUTION
  const int gm = (M + BM - 1) / BM, gn = (N + BN - 1) / BN;
  const dim3 grid(gm * gn);
  // The 16-byte path needs whole vectors along K (rows of a) and N (rows of b and c) and aligned bases.
  constexpr int VEC = 16 / sizeof(T);
  const bool aligned = ((reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b) |
                         reinterpret_cast<uintptr_t>(c)) % 16) == 0;
  if (aligned && K % VEC == 0 && N % VEC == 0)
    kernel<T, true><<<grid, kThreads, 0, stream>>>(a, b, c, M, N, K);
  else
    kernel<T, false><<<grid, kThreads, 0, stream>>>(a, b, c, M, N, K);
  // END SOLUTION
  return cudaGetLastError();
}

template cudaError_t matmul_forward<float>(const float*, const float*, float*, int, int, int, cudaStream_t);
template cudaError_t matmul_forward<__half>(const __half*, const __half*, __half*, int, int, int, cudaStream_t);
template cudaError_t matmul_forward<__nv_bfloat16>(const __nv_bfloat16*, const __nv_bfloat16*, __nv_bfloat16*, int,
                                                   int, int, cudaStream_t);
