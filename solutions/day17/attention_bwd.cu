// Day 17: FlashAttention-2 backward, complete: dq, dk, dv with no N x N matrix in memory, and the two ways to get
// dQ out of day 16's key-tile walk.
//
// Changes vs day 16 (dK and dV only):
//   - dQ_i = scale · Σ_j dS_ij k_j is a sum over keys, but each block of day 16's walk owns a tile of keys and sees
//     every query: its dS tile holds a piece of dQ for kStep queries, and every block holds a piece for every query.
//   - (a) attention_bwd_atomic: each block adds its pieces of dQ into an fp32 [B, H, N, d] workspace with
//     atomicAdd (zeroed by a memset first), and a last kernel rounds it into dq. One walk, so the dS tile is made
//     once. But the additions from different blocks arrive in an order that changes from run to run, and fp32
//     addition is not associative: dq's last bits differ between two calls.
//   - (b) attention_bwd_twopass: day 16's walk for dK and dV, then a second kernel with the loops swapped, one block
//     per tile of queries walking the key tiles, which recomputes S, P, dP and dS (two more N²·d products: seven in
//     all instead of five) and keeps its dQ rows in registers. Every output element has one writer and its sums a
//     fixed order: bitwise deterministic.
// Both: CUDA cores, fp32 arithmetic, tiles in shared memory, D = rowsum(dO ∘ O) from a pre-pass.

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
constexpr int kOwn = 64;   // rows a block owns: keys in the dK/dV walk, queries in the dQ walk
constexpr int kStep = 16;  // rows of the other side loaded per step of a walk
// (maybe_unused: the stub's kernels are templates that nothing instantiates until the launcher is written)
[[maybe_unused]] constexpr int kThreadsPerRow = kThreads / kOwn;  // 4: each owns every 4th column of a row
[[maybe_unused]] constexpr int kPairsPerThread = kStep * kOwn / kThreads;  // 4 entries of each tile per thread

template <typename T>
__global__ void __launch_bounds__(kThreads)
    delta_kernel(const T* __restrict__ o, const T* __restrict__ dout, float* __restrict__ delta, int rows, int d) {
  // BEGIN SOLUTION: D = rowsum(dO ∘ O), one warp per row (as on day 16)
  const int row = blockIdx.x * (kThreads / kWarpSize) + threadIdx.x / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  if (row >= rows) return;  // uniform per warp
  const T* orow = o + static_cast<size_t>(row) * d;
  const T* grow = dout + static_cast<size_t>(row) * d;
  float acc = 0.0f;
  for (int c = lane; c < d; c += kWarpSize) acc = fmaf(to_float(grow[c]), to_float(orow[c]), acc);
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, offset);
  if (lane == 0) delta[row] = acc;
  // END SOLUTION
}

// rows [r0, r0 + R) of a head's [N, D] matrix into shared memory as fp32 with row stride `stride`; zeros past N.
template <int R, int D, typename T>
__device__ void load_rows(float* dst, int stride, const T* __restrict__ src, int r0, int n) {
  for (int idx = threadIdx.x; idx < R * D; idx += kThreads) {
    const int r = idx / D, c = idx % D;
    dst[r * stride + c] = r0 + r < n ? to_float(src[static_cast<size_t>(r0 + r) * D + c]) : 0.0f;
  }
}

// lse and D of queries [i0, i0 + kStep or kOwn) into shared memory (0 past N: those queries are masked anyway).
template <int R>
__device__ void load_row_stats(float* slse, float* sdelta, const float* lse, const float* delta, int i0, int n) {
  for (int r = threadIdx.x; r < R; r += kThreads) {
    slse[r] = i0 + r < n ? lse[i0 + r] : 0.0f;
    sdelta[r] = i0 + r < n ? delta[i0 + r] : 0.0f;
  }
}

// One (query i, key j) entry of P and dS from rows in shared memory: p = exp(scale · q·k − lse_i), masked to 0
// past N and above the diagonal when causal; ds = p · (dO_i · v_j − D_i).
template <int D>
__device__ __forceinline__ void p_and_ds(const float* qi, const float* doi, const float* kj, const float* vj,
                                         float lse_i, float delta_i, bool visible, float scale, float& p, float& ds) {
  float s = 0.0f, dp = 0.0f;
#pragma unroll 8
  for (int c = 0; c < D; ++c) {
    s = fmaf(qi[c], kj[c], s);
    dp = fmaf(doi[c], vj[c], dp);
  }
  p = visible ? expf(s * scale - lse_i) : 0.0f;
  ds = p * (dp - delta_i);
}

// rows [r0, r0 + R) of a head's [N, D] matrix into shared memory transposed, dst[c * kTStride + r], as fp32; zeros
// past N. kTStride = R + 4 keeps a column's 4 rows 16-byte aligned (one float4 load) and puts 8 consecutive columns
// of one row in 8 different banks.
template <int R, int D, typename T>
__device__ void load_rows_t(float* dst, const T* __restrict__ src, int r0, int n) {
  constexpr int kTStride = R + 4;
  for (int idx = threadIdx.x; idx < R * D; idx += kThreads) {
    const int r = idx / D, c = idx % D;
    dst[c * kTStride + r] = r0 + r < n ? to_float(src[static_cast<size_t>(r0 + r) * D + c]) : 0.0f;
  }
}

template <int D>
struct KvSmem {  // the dK/dV walk, in floats: k, v tiles (owned, padded), q, dO step tiles (transposed), P, dS, lse, D
  static constexpr int kStride = D + 1;
  static constexpr int kTStride = kStep + 4;
  static constexpr int k = 0, v = k + kOwn * kStride, q = v + kOwn * kStride, dout = q + D * kTStride;
  static constexpr int p = dout + D * kTStride, ds = p + kStep * kOwn, lse = ds + kStep * kOwn, delta = lse + kStep;
  static constexpr int total = delta + kStep;
  static_assert(sizeof(float) * total <= 99 * 1024, "over the 99 KiB a block of sm_86, sm_89 and sm_120 (grader/gpu_support.py)");
  static_assert(q % 4 == 0 && dout % 4 == 0, "float4 reads of the transposed q and dO columns");
};

// Day 16's walk over query tiles for the block's kOwn keys; with kAtomicDq, each step also adds its dQ pieces,
// scale · dS K, into the fp32 workspace dq_acc with atomicAdd.
// Each thread computes a small tile of every product so that one shared-memory read feeds several FMAs (one read
// per FMA made the walk bound by shared memory, not arithmetic): S and dP for 1 key x 4 queries (the 4 queries'
// q and dO values of one column are one float4, the same for the whole warp), dK and dV for 2 keys x D/8 columns.
// On sm_86 and sm_89 (shared memory for one such block an SM) ptxas, not told that one block is all an SM holds,
// fits the d = 64 two-pass walk into 64 registers for occupancy it cannot have, and spills: there the bounds say
// one block. sm_80 and sm_90 keep their plain bounds (and their code).
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 890)
#define FA17_DKDV_BOUNDS __launch_bounds__(kThreads, 1)
#else
#define FA17_DKDV_BOUNDS __launch_bounds__(kThreads)
#endif
template <typename T, int D, bool kAtomicDq>
__global__ void FA17_DKDV_BOUNDS
    dkdv_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                const float* __restrict__ lse, const T* __restrict__ dout, const float* __restrict__ delta,
                T* __restrict__ dk, T* __restrict__ dv, float* __restrict__ dq_acc, int n, float scale, bool causal) {
  extern __shared__ float smem[];
  using S = KvSmem<D>;
  const size_t head = static_cast<size_t>(blockIdx.y) * n * D;
  const size_t head_rows = static_cast<size_t>(blockIdx.y) * n;
  const int j0 = blockIdx.x * kOwn;
  constexpr int kCols = D / 8;
  const int my_pair = threadIdx.x / 8, my_phase = threadIdx.x % 8;  // keys 2·my_pair, +1; columns my_phase + 8m
  float acc_dk[2][kCols], acc_dv[2][kCols];
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int m = 0; m < kCols; ++m) acc_dk[h][m] = acc_dv[h][m] = 0.0f;
  load_rows<kOwn, D>(smem + S::k, S::kStride, k + head, j0, n);
  load_rows<kOwn, D>(smem + S::v, S::kStride, v + head, j0, n);
  for (int i0 = causal ? (j0 / kStep) * kStep : 0; i0 < n; i0 += kStep) {
    __syncthreads();  // the previous step's readers are done
    load_rows_t<kStep, D>(smem + S::q, q + head, i0, n);
    load_rows_t<kStep, D>(smem + S::dout, dout + head, i0, n);
    load_row_stats<kStep>(smem + S::lse, smem + S::delta, lse + head_rows, delta + head_rows, i0, n);
    __syncthreads();
    {
      // S and dP for key j and queries 4g .. 4g + 3 of the step.
      const int j = threadIdx.x % kOwn, g = threadIdx.x / kOwn;
      const float* kj = smem + S::k + j * S::kStride;
      const float* vj = smem + S::v + j * S::kStride;
      float sc[4] = {}, dp[4] = {};
#pragma unroll 8
      for (int c = 0; c < D; ++c) {
        const float4 qc = *reinterpret_cast<const float4*>(smem + S::q + c * S::kTStride + 4 * g);
        const float4 dc = *reinterpret_cast<const float4*>(smem + S::dout + c * S::kTStride + 4 * g);
        const float kc = kj[c], vc = vj[c];
        sc[0] = fmaf(qc.x, kc, sc[0]), sc[1] = fmaf(qc.y, kc, sc[1]), sc[2] = fmaf(qc.z, kc, sc[2]);
        sc[3] = fmaf(qc.w, kc, sc[3]);
        dp[0] = fmaf(dc.x, vc, dp[0]), dp[1] = fmaf(dc.y, vc, dp[1]), dp[2] = fmaf(dc.z, vc, dp[2]);
        dp[3] = fmaf(dc.w, vc, dp[3]);
      }
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int i = 4 * g + r;
        const bool visible = i0 + i < n && j0 + j < n && (!causal || j0 + j <= i0 + i);
        const float p = visible ? expf(sc[r] * scale - smem[S::lse + i]) : 0.0f;
        smem[S::p + i * kOwn + j] = p;
        smem[S::ds + i * kOwn + j] = p * (dp[r] - smem[S::delta + i]);
      }
    }
    __syncthreads();
#pragma unroll 2
    for (int i = 0; i < kStep; ++i) {
      const float2 p = *reinterpret_cast<const float2*>(smem + S::p + i * kOwn + 2 * my_pair);
      const float2 ds = *reinterpret_cast<const float2*>(smem + S::ds + i * kOwn + 2 * my_pair);
#pragma unroll
      for (int m = 0; m < kCols; ++m) {
        const int c = my_phase + 8 * m;
        const float dov = smem[S::dout + c * S::kTStride + i], qv = smem[S::q + c * S::kTStride + i];
        acc_dv[0][m] = fmaf(p.x, dov, acc_dv[0][m]);
        acc_dv[1][m] = fmaf(p.y, dov, acc_dv[1][m]);
        acc_dk[0][m] = fmaf(ds.x, qv, acc_dk[0][m]);
        acc_dk[1][m] = fmaf(ds.y, qv, acc_dk[1][m]);
      }
    }
    if constexpr (kAtomicDq) {
      // BEGIN SOLUTION: dQ[i0 + i][c] += scale · Σ_j dS[i][j] · K[j][c] for this step's queries, with atomicAdd
      // Thread t: query t / 16 of the step, columns t % 16 + 16m. 16 threads of a row read 16 consecutive columns
      // of one k row (the padded stride keeps the 2 rows a warp reads in different banks); each dS value is read
      // once for all the thread's D / 16 columns.
      const int i = threadIdx.x / 16, phase = threadIdx.x % 16;
      float acc[D / 16] = {};
#pragma unroll 4
      for (int j = 0; j < kOwn; ++j) {
        const float dsv = smem[S::ds + i * kOwn + j];
#pragma unroll
        for (int m = 0; m < D / 16; ++m) acc[m] = fmaf(dsv, smem[S::k + j * S::kStride + phase + 16 * m], acc[m]);
      }
      if (i0 + i < n) {
#pragma unroll
        for (int m = 0; m < D / 16; ++m)
          atomicAdd(dq_acc + head + static_cast<size_t>(i0 + i) * D + phase + 16 * m, acc[m] * scale);
      }
      // END SOLUTION
    }
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int j = j0 + 2 * my_pair + h;
    if (j < n) {
#pragma unroll
      for (int m = 0; m < kCols; ++m) {
        const size_t at = head + static_cast<size_t>(j) * D + my_phase + 8 * m;
        dk[at] = from_float<T>(acc_dk[h][m] * scale);
        dv[at] = from_float<T>(acc_dv[h][m]);
      }
    }
  }
}

template <int D>
struct QSmem {  // the dQ walk, in floats: q, dO tiles (owned), k, v step tiles (padded), P, dS, lse, D
  static constexpr int kStride = D + 1;
  static constexpr int q = 0, dout = q + kOwn * D, k = dout + kOwn * D, v = k + kStep * kStride;
  static constexpr int ds = v + kStep * kStride, lse = ds + kOwn * kStep, delta = lse + kOwn;
  static constexpr int total = delta + kOwn;
  static_assert(sizeof(float) * total <= 99 * 1024, "over the 99 KiB a block of sm_86, sm_89 and sm_120 (grader/gpu_support.py)");
};

// (b) The second pass: one block per tile of kOwn queries walks the key tiles (causal: up to its last query) and
// keeps dQ in registers. Thread t owns query t / 4, columns t % 4 + 4m.
// (kThreads, 1): without the minimum of one block, ptxas held this kernel to 48 registers at d = 64 on sm_90
// and spilled.
template <typename T, int D>
__global__ void __launch_bounds__(kThreads, 1)
    dq_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v, const float* __restrict__ lse,
              const T* __restrict__ dout, const float* __restrict__ delta, T* __restrict__ dq, int n, float scale,
              bool causal) {
  extern __shared__ float smem[];
  using S = QSmem<D>;
  const size_t head = static_cast<size_t>(blockIdx.y) * n * D;
  const size_t head_rows = static_cast<size_t>(blockIdx.y) * n;
  const int i0 = blockIdx.x * kOwn;
  constexpr int kCols = D / kThreadsPerRow;
  const int my_query = threadIdx.x / kThreadsPerRow, my_phase = threadIdx.x % kThreadsPerRow;
  float acc_dq[kCols];
  // BEGIN SOLUTION: load the query tile (q, dO, lse, D); walk the key tiles: dS tile, acc_dq += dS K; write dq
#pragma unroll
  for (int m = 0; m < kCols; ++m) acc_dq[m] = 0.0f;
  load_rows<kOwn, D>(smem + S::q, D, q + head, i0, n);
  load_rows<kOwn, D>(smem + S::dout, D, dout + head, i0, n);
  load_row_stats<kOwn>(smem + S::lse, smem + S::delta, lse + head_rows, delta + head_rows, i0, n);
  const int end = causal ? min(n, i0 + kOwn) : n;  // causal: no key after the tile's last query is seen
  for (int j0 = 0; j0 < end; j0 += kStep) {
    __syncthreads();
    load_rows<kStep, D>(smem + S::k, S::kStride, k + head, j0, n);
    load_rows<kStep, D>(smem + S::v, S::kStride, v + head, j0, n);
    __syncthreads();
    // The [kOwn x kStep] dS tile: thread t takes key t % 16 and queries t / 16 + 16r (16 keys of one query per
    // half warp: the padded k, v rows keep them in different banks).
#pragma unroll
    for (int r = 0; r < kPairsPerThread; ++r) {
      const int j = threadIdx.x % kStep, i = threadIdx.x / kStep + r * (kThreads / kStep);
      const bool visible = i0 + i < n && j0 + j < n && (!causal || j0 + j <= i0 + i);
      float p, ds;
      p_and_ds<D>(smem + S::q + i * D, smem + S::dout + i * D, smem + S::k + j * S::kStride,
                  smem + S::v + j * S::kStride, smem[S::lse + i], smem[S::delta + i], visible, scale, p, ds);
      smem[S::ds + i * kStep + j] = ds;
    }
    __syncthreads();
#pragma unroll 4
    for (int j = 0; j < kStep; ++j) {
      const float ds = smem[S::ds + my_query * kStep + j];
#pragma unroll
      for (int m = 0; m < kCols; ++m) {
        acc_dq[m] = fmaf(ds, smem[S::k + j * S::kStride + my_phase + kThreadsPerRow * m], acc_dq[m]);
      }
    }
  }
  const int i = i0 + my_query;
  if (i < n) {
#pragma unroll
    for (int m = 0; m < kCols; ++m) {
      dq[head + static_cast<size_t>(i) * D + my_phase + kThreadsPerRow * m] = from_float<T>(acc_dq[m] * scale);
    }
  }
  // END SOLUTION
}

template <typename T>
__global__ void round_kernel(const float* __restrict__ src, T* __restrict__ dst, size_t count) {
  for (size_t idx = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; idx < count;
       idx += static_cast<size_t>(gridDim.x) * blockDim.x) {
    dst[idx] = from_float<T>(src[idx]);
  }
}

template <typename T, int D>
cudaError_t backward(const T* q, const T* k, const T* v, const float* lse, const T* dout, const float* delta, T* dq,
                     T* dk, T* dv, float* dq_acc, int bh, int n, bool causal, bool atomic, cudaStream_t stream) {
  // BEGIN SOLUTION: atomic: zero dq_acc (cudaMemsetAsync), the walk with atomics, round dq_acc into dq; else the walk, then the dQ walk
  const float scale = 1.0f / sqrtf(static_cast<float>(D));
  const dim3 grid((n + kOwn - 1) / kOwn, bh);
  const size_t kv_bytes = sizeof(float) * KvSmem<D>::total;
  cudaError_t err;
  if (atomic) {
    const size_t count = static_cast<size_t>(bh) * n * D;
    if ((err = cudaMemsetAsync(dq_acc, 0, count * sizeof(float), stream)) != cudaSuccess) return err;
    if ((err = allow_smem(dkdv_kernel<T, D, true>, kv_bytes)) != cudaSuccess) return err;
    dkdv_kernel<T, D, true><<<grid, kThreads, kv_bytes, stream>>>(q, k, v, lse, dout, delta, dk, dv, dq_acc, n, scale,
                                                                   causal);
    round_kernel<T><<<static_cast<unsigned>((count + kThreads - 1) / kThreads), kThreads, 0, stream>>>(dq_acc, dq,
                                                                                                         count);
    return cudaGetLastError();
  }
  if ((err = allow_smem(dkdv_kernel<T, D, false>, kv_bytes)) != cudaSuccess) return err;
  dkdv_kernel<T, D, false><<<grid, kThreads, kv_bytes, stream>>>(q, k, v, lse, dout, delta, dk, dv, nullptr, n, scale,
                                                                  causal);
  const size_t q_bytes = sizeof(float) * QSmem<D>::total;
  if ((err = allow_smem(dq_kernel<T, D>, q_bytes)) != cudaSuccess) return err;
  dq_kernel<T, D><<<grid, kThreads, q_bytes, stream>>>(q, k, v, lse, dout, delta, dq, n, scale, causal);
  // END SOLUTION
  return cudaGetLastError();
}

template <typename T>
cudaError_t attention_bwd(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* dout, T* dq,
                          T* dk, T* dv, float* delta, float* dq_acc, int batch, int heads, int n, int d, bool causal,
                          bool atomic, cudaStream_t stream) {
  if (batch == 0 || heads == 0 || n == 0) return cudaSuccess;
  const int rows = batch * heads * n;
  delta_kernel<T><<<(rows + kThreads / kWarpSize - 1) / (kThreads / kWarpSize), kThreads, 0, stream>>>(o, dout, delta,
                                                                                                      rows, d);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  const int bh = batch * heads;
  if (d == 64) return backward<T, 64>(q, k, v, lse, dout, delta, dq, dk, dv, dq_acc, bh, n, causal, atomic, stream);
  if (d == 128) return backward<T, 128>(q, k, v, lse, dout, delta, dq, dk, dv, dq_acc, bh, n, causal, atomic, stream);
  return cudaErrorInvalidValue;  // the bindings accept d = 64 and 128 only
}

}  // namespace fa2_bwd

// The launchers the bindings call (common/attention_bwd_binding.h): delta is an fp32 [B, H, N] scratch for D,
// dq_acc an fp32 [B, H, N, d] one for the atomic version's dQ sums.
template <typename T>
cudaError_t attention_bwd_atomic(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* dout,
                                 T* dq, T* dk, T* dv, float* delta, float* dq_acc, int batch, int heads, int n, int d,
                                 bool causal, cudaStream_t stream) {
  return fa2_bwd::attention_bwd(q, k, v, o, lse, dout, dq, dk, dv, delta, dq_acc, batch, heads, n, d, causal, true,
                                stream);
}

template <typename T>
cudaError_t attention_bwd_twopass(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* dout,
                                  T* dq, T* dk, T* dv, float* delta, float* dq_acc, int batch, int heads, int n, int d,
                                  bool causal, cudaStream_t stream) {
  return fa2_bwd::attention_bwd(q, k, v, o, lse, dout, dq, dk, dv, delta, dq_acc, batch, heads, n, d, causal, false,
                                stream);
}

#define INSTANTIATE(T)                                                                                              \
  template cudaError_t attention_bwd_atomic<T>(const T*, const T*, const T*, const T*, const float*, const T*, T*,   \
                                               T*, T*, float*, float*, int, int, int, int, bool, cudaStream_t);     \
  template cudaError_t attention_bwd_twopass<T>(const T*, const T*, const T*, const T*, const float*, const T*, T*,  \
                                                T*, T*, float*, float*, int, int, int, int, bool, cudaStream_t)
INSTANTIATE(float);
INSTANTIATE(__half);
INSTANTIATE(__nv_bfloat16);
