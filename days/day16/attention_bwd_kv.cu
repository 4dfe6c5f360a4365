// Day 16: FlashAttention-2 backward, dK and dV. The same gradients as day 15's dk and dv, with no N x N matrix in
// memory: P and dS exist one [kBr x kBc] tile at a time, in shared memory.
//
// Changes vs day 15 (six kernels over a materialized [B, H, N, N] scratch):
//   - One block per (batch·head, tile of kBc keys). It keeps its keys' k and v rows in shared memory and its dK,
//     dV rows in registers, and walks the query tiles: for each, it recomputes S and P = exp(S - lse) from q, k
//     and the forward's lse (no max, no sum: the forward already found them), dP = dO Vᵀ and dS = P ∘ (dP - D),
//     then adds Pᵀ dO to dV and dSᵀ Q to dK. Every product runs over the tile in shared memory.
//   - D = rowsum(dO ∘ O) comes from a pre-pass into an fp32 [B, H, N] scratch: O(N) memory instead of O(N²).
//   - Causal: a key tile starts at the first query tile that can see it (queries i < j never see key j), so the
//     causal backward does about half the work. Within the diagonal tile the mask sets p to 0.
//   - No atomics, one writer per output element, sums in a fixed order: two calls give the same bits.
// Still CUDA cores with fp32 arithmetic throughout (tensor cores are day 20's), and no dQ (day 17's).
//
// Shared memory per block, fp32: k and v tiles [kBc][D + 1] (the +1 pads each row so that 32 threads reading 32
// different rows at one column hit 32 different banks), q and dO tiles [kBr][D], the P and dS tiles [kBr][kBc],
// and lse and D for the kBr queries: 88.6 KiB at D = 128 (Smem<128>::total = 22,688 floats), over the 48 KiB a
// kernel gets by default, so the launcher raises the limit (cudaFuncAttributeMaxDynamicSharedMemorySize).

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>

#include "device_cache.h"    // allow_smem: cudaFuncSetAttribute for over 48 KiB of shared memory
#include "float_convert.cuh"  // to_float(v), from_float<T>(v)

namespace fa2_bwd {

constexpr int kWarpSize = 32;
constexpr int kThreads = 256;
constexpr int kBc = 64;  // keys per block
constexpr int kBr = 16;  // queries per step of the walk
// (maybe_unused: in the stub, nothing refers to these until the kernel is written)
[[maybe_unused]] constexpr int kThreadsPerKey = kThreads / kBc;  // 4: each owns every 4th column of a key's rows
[[maybe_unused]] constexpr int kPairsPerThread = kBr * kBc / kThreads;  // 4 entries of each tile per thread

// D[row] = sum_c dout[row][c] · o[row][c] over all B·H·N rows: one warp per row.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    delta_kernel(const T* __restrict__ o, const T* __restrict__ dout, float* __restrict__ delta, int rows, int d) {
  // YOUR CODE HERE: D = rowsum(dO ∘ O), one warp per row
}

template <int D>
struct Smem {  // offsets, in floats, into the dynamic shared memory
  static constexpr int kStride = D + 1;
  static constexpr int k = 0;
  static constexpr int v = k + kBc * kStride;
  static constexpr int q = v + kBc * kStride;
  static constexpr int dout = q + kBr * D;
  static constexpr int p = dout + kBr * D;
  static constexpr int ds = p + kBr * kBc;
  static constexpr int lse = ds + kBr * kBc;
  static constexpr int delta = lse + kBr;
  static constexpr int total = delta + kBr;
  static_assert(sizeof(float) * total <= 99 * 1024, "over the 99 KiB a block of sm_86, sm_89 and sm_120 (grader/gpu_support.py)");
};

// Block (key tile, batch·head). Thread t owns key j = t / 4 of the tile for dK and dV, columns c = t % 4 + 4m.
template <typename T, int D>
__global__ void __launch_bounds__(kThreads)
    dkdv_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                const float* __restrict__ lse, const T* __restrict__ dout, const float* __restrict__ delta,
                T* __restrict__ dk, T* __restrict__ dv, int n, float scale, bool causal) {
  // YOUR CODE HERE: set up (tiles at Smem<D>'s offsets, the head, key tile j0, this thread's key and columns, acc_dk and acc_dv); load k, v rows (stride S::kStride, zeros past N); zero the accumulators

  // YOUR CODE HERE: the walk over query tiles (causal: from the first that sees this tile): load q, dO, lse, D; S, P, dP, dS tiles; acc_dv += Pᵀ dO, acc_dk += dSᵀ Q
  // YOUR CODE HERE: write dK = scale · acc_dk and dV = acc_dv for this thread's key (if j < N) and columns
}

template <typename T, int D>
cudaError_t launch_dkdv(const T* q, const T* k, const T* v, const float* lse, const T* dout, const float* delta,
                        T* dk, T* dv, int bh, int n, bool causal, cudaStream_t stream) {
  const size_t bytes = sizeof(float) * Smem<D>::total;
  cudaError_t err = allow_smem(dkdv_kernel<T, D>, bytes);
  if (err != cudaSuccess) return err;
  const dim3 grid((n + kBc - 1) / kBc, bh);
  dkdv_kernel<T, D><<<grid, kThreads, bytes, stream>>>(q, k, v, lse, dout, delta, dk, dv, n,
                                                       1.0f / sqrtf(static_cast<float>(D)), causal);
  return cudaGetLastError();
}

}  // namespace fa2_bwd

// dk, dv of attention; delta is an fp32 [B, H, N] scratch for D (the bindings allocate it).
template <typename T>
cudaError_t attention_bwd_dkdv(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* dout,
                               T* dk, T* dv, float* delta, int batch, int heads, int n, int d, bool causal,
                               cudaStream_t stream) {
  using namespace fa2_bwd;
  if (batch == 0 || heads == 0 || n == 0) return cudaSuccess;
  const int rows = batch * heads * n;
  delta_kernel<T><<<(rows + kThreads / kWarpSize - 1) / (kThreads / kWarpSize), kThreads, 0, stream>>>(
      o, dout, delta, rows, d);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  if (d == 64) return launch_dkdv<T, 64>(q, k, v, lse, dout, delta, dk, dv, batch * heads, n, causal, stream);
  if (d == 128) return launch_dkdv<T, 128>(q, k, v, lse, dout, delta, dk, dv, batch * heads, n, causal, stream);
  return cudaErrorInvalidValue;  // the bindings accept d = 64 and 128 only
}

template cudaError_t attention_bwd_dkdv<float>(const float*, const float*, const float*, const float*, const float*,
                                               const float*, float*, float*, float*, int, int, int, int, bool,
                                               cudaStream_t);
template cudaError_t attention_bwd_dkdv<__half>(const __half*, const __half*, const __half*, const __half*,
                                                const float*, const __half*, __half*, __half*, float*, int, int, int,
                                                int, bool, cudaStream_t);
template cudaError_t attention_bwd_dkdv<__nv_bfloat16>(const __nv_bfloat16*, const __nv_bfloat16*,
                                                       const __nv_bfloat16*, const __nv_bfloat16*, const float*,
                                                       const __nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, float*,
                                                       int, int, int, int, bool, cudaStream_t);
