// Day 17, optional step: attention with dropout on the probabilities, forward and backward, as FlashAttention-2
// fuses it. The mask is never stored: element (b, h, i, j) is kept or dropped by Philox4x32-10 on a counter made of
// its own coordinates (common/philox.cuh), so the forward and the backward draw the same bits, in any order, on
// any thread, from the (seed, offset) pair in `rng` (int64 [2], on the device, as PyTorch passes its generator's
// state to its own attention kernels).
//
//   forward:  P = softmax(scale · q kᵀ), o = (P ∘ M / (1 − p)) v, lse = logsumexp of the scores (undropped)
//   backward: D = rowsum(dO ∘ O) (O the dropped output), dV = (P ∘ M / (1 − p))ᵀ dO,
//             dP = (dO Vᵀ) ∘ M / (1 − p), dS = P ∘ (dP − D), dQ = scale · dS K, dK = scale · dSᵀ Q
//
// The walks are deliberately plain, one warp per row (a query for the forward and dQ, a key for dK and dV), so that
// what is new stands out: where the mask's factor enters, and where it must not (the softmax's sum). Days 17 and 20
// put the same few lines into their tiled walks at the same places.
#include <cuda_runtime.h>

#include <cstdint>

#include "float_convert.cuh"
#include "philox.cuh"

namespace dropout_attn {

constexpr int kWarpSize = 32;
constexpr int kWarps = 4;  // rows per block, one warp each
constexpr int kThreads = kWarps * kWarpSize;

// The mask's parameters as a kernel reads them: seed and offset from the device tensor, p from the call.
struct Dropout {
  uint64_t seed, offset;
  float p;
};

__device__ __forceinline__ Dropout read_dropout(const int64_t* rng, float p) {
  return {static_cast<uint64_t>(rng[0]), static_cast<uint64_t>(rng[1]), p};
}

// The sum over the warp, in every lane.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = kWarpSize / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Row r of a head's [N, D] matrix, this lane's D / 32 columns (lane, lane + 32, ...), widened to fp32.
template <int D, typename T>
__device__ __forceinline__ void load_row(float (&dst)[D / kWarpSize], const T* __restrict__ head, int r, int lane) {
#pragma unroll
  for (int c = 0; c < D / kWarpSize; ++c) dst[c] = to_float(head[static_cast<size_t>(r) * D + lane + kWarpSize * c]);
}

template <int D>
__device__ __forceinline__ float dot(const float (&a)[D / kWarpSize], const float (&b)[D / kWarpSize]) {
  float s = 0.0f;
#pragma unroll
  for (int c = 0; c < D / kWarpSize; ++c) s = fmaf(a[c], b[c], s);
  return warp_sum(s);
}

// The factor that element (bh, i, j) of P is multiplied by: 1 / (1 − p) where the mask keeps it, 0 where it drops
// it (dividing the kept ones by the keep probability leaves the output's expectation undropped).
__device__ __forceinline__ float keep_factor(const Dropout& r, uint32_t bh, uint32_t i, uint32_t j) {
  float f = 1.0f;  // no dropout
  // YOUR CODE HERE: f from element (bh, i, j)'s keep bit (philox::keep, with the seed and offset): 1 / (1 − p) if kept, else 0
  return f;
}

// One warp per query row i: the online softmax over the keys, one key at a time.
template <typename T, int D>
__global__ void __launch_bounds__(kThreads)
    forward_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v, T* __restrict__ o,
                   float* __restrict__ lse, const int64_t* __restrict__ rng, float p, int n, float scale,
                   bool causal) {
  const int lane = threadIdx.x % kWarpSize, bh = blockIdx.y;
  const int i = blockIdx.x * kWarps + threadIdx.x / kWarpSize;
  if (i >= n) return;
  const Dropout r = read_dropout(rng, p);
  const size_t head = static_cast<size_t>(bh) * n * D;
  constexpr int kCols = D / kWarpSize;
  float qi[kCols], kj[kCols], vj[kCols], acc[kCols] = {};
  load_row<D>(qi, q + head, i, lane);
  float m = -INFINITY, l = 0.0f;
  const int end = causal ? i + 1 : n;
  for (int j = 0; j < end; ++j) {
    load_row<D>(kj, k + head, j, lane);
    load_row<D>(vj, v + head, j, lane);
    const float s = dot<D>(qi, kj) * scale;
    const float m_new = fmaxf(m, s);
    const float alpha = expf(m - m_new);  // 0 at the first key (m = −inf)
    const float pj = expf(s - m_new);
    l = l * alpha + pj;  // the softmax's own sum: every key, kept or not
    float dropped = pj;  // what key j adds to the output, before the mask
    // YOUR CODE HERE: with dropout: pj times key j's mask factor (the output's weight only; l keeps pj)
#pragma unroll
    for (int c = 0; c < kCols; ++c) acc[c] = fmaf(acc[c], alpha, dropped * vj[c]);
    m = m_new;
  }
#pragma unroll
  for (int c = 0; c < kCols; ++c) {
    o[head + static_cast<size_t>(i) * D + lane + kWarpSize * c] = from_float<T>(acc[c] / l);
  }
  if (lane == 0) lse[static_cast<size_t>(bh) * n + i] = m + logf(l);
}

// D = rowsum(dO ∘ O), one warp per row of all B·H·N.
template <typename T, int D>
__global__ void __launch_bounds__(kThreads)
    delta_kernel(const T* __restrict__ o, const T* __restrict__ dout, float* __restrict__ delta, int rows) {
  const int lane = threadIdx.x % kWarpSize, row = blockIdx.x * kWarps + threadIdx.x / kWarpSize;
  if (row >= rows) return;
  float a[D / kWarpSize], b[D / kWarpSize];
  load_row<D>(a, o, row, lane);
  load_row<D>(b, dout, row, lane);
  const float s = dot<D>(a, b);
  if (lane == 0) delta[row] = s;
}

// One warp per key row j: dK and dV summed over the queries that see key j.
template <typename T, int D>
__global__ void __launch_bounds__(kThreads)
    dkdv_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                const float* __restrict__ lse, const float* __restrict__ delta, const T* __restrict__ dout,
                T* __restrict__ dk, T* __restrict__ dv, const int64_t* __restrict__ rng, float p, int n, float scale,
                bool causal) {
  const int lane = threadIdx.x % kWarpSize, bh = blockIdx.y;
  const int j = blockIdx.x * kWarps + threadIdx.x / kWarpSize;
  if (j >= n) return;
  const Dropout r = read_dropout(rng, p);
  const size_t head = static_cast<size_t>(bh) * n * D, stats = static_cast<size_t>(bh) * n;
  constexpr int kCols = D / kWarpSize;
  float kj[kCols], vj[kCols], qi[kCols], doi[kCols], acc_dk[kCols] = {}, acc_dv[kCols] = {};
  load_row<D>(kj, k + head, j, lane);
  load_row<D>(vj, v + head, j, lane);
  for (int i = causal ? j : 0; i < n; ++i) {
    load_row<D>(qi, q + head, i, lane);
    load_row<D>(doi, dout + head, i, lane);
    const float pij = expf(dot<D>(qi, kj) * scale - lse[stats + i]);
    const float dp_dropped = dot<D>(doi, vj);  // (dO Vᵀ)[i][j], the gradient of the dropped P
    float dv_weight = pij, ds = pij * (dp_dropped - delta[stats + i]);  // without dropout (day 15)
    // YOUR CODE HERE: with dropout: (i, j)'s mask factor f multiplies pij in dV's weight and dp_dropped in dS
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      acc_dv[c] = fmaf(dv_weight, doi[c], acc_dv[c]);
      acc_dk[c] = fmaf(ds, qi[c], acc_dk[c]);
    }
  }
#pragma unroll
  for (int c = 0; c < kCols; ++c) {
    const size_t at = head + static_cast<size_t>(j) * D + lane + kWarpSize * c;
    dk[at] = from_float<T>(acc_dk[c] * scale);
    dv[at] = from_float<T>(acc_dv[c]);
  }
}

// One warp per query row i: dQ summed over the keys i sees (a second walk, so no atomics: deterministic).
template <typename T, int D>
__global__ void __launch_bounds__(kThreads)
    dq_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
              const float* __restrict__ lse, const float* __restrict__ delta, const T* __restrict__ dout,
              T* __restrict__ dq, const int64_t* __restrict__ rng, float p, int n, float scale, bool causal) {
  const int lane = threadIdx.x % kWarpSize, bh = blockIdx.y;
  const int i = blockIdx.x * kWarps + threadIdx.x / kWarpSize;
  if (i >= n) return;
  const Dropout r = read_dropout(rng, p);
  const size_t head = static_cast<size_t>(bh) * n * D, stats = static_cast<size_t>(bh) * n;
  constexpr int kCols = D / kWarpSize;
  float qi[kCols], doi[kCols], kj[kCols], vj[kCols], acc[kCols] = {};
  load_row<D>(qi, q + head, i, lane);
  load_row<D>(doi, dout + head, i, lane);
  const float lse_i = lse[stats + i], delta_i = delta[stats + i];
  const int end = causal ? i + 1 : n;
  for (int j = 0; j < end; ++j) {
    load_row<D>(kj, k + head, j, lane);
    load_row<D>(vj, v + head, j, lane);
    float f = 1.0f;  // (i, j)'s mask factor: 1 without dropout
    // YOUR CODE HERE: with dropout: the factor of (i, j), drawn before the dot products (it needs none of their data)
    const float pij = expf(dot<D>(qi, kj) * scale - lse_i);
    const float ds = pij * (dot<D>(doi, vj) * f - delta_i);  // dS = P ∘ (dP − D), dP = (dO Vᵀ) ∘ M / (1 − p)
#pragma unroll
    for (int c = 0; c < kCols; ++c) acc[c] = fmaf(ds, kj[c], acc[c]);
  }
#pragma unroll
  for (int c = 0; c < kCols; ++c) {
    dq[head + static_cast<size_t>(i) * D + lane + kWarpSize * c] = from_float<T>(acc[c] * scale);
  }
}

template <typename T, int D>
cudaError_t forward(const T* q, const T* k, const T* v, T* o, float* lse, const int64_t* rng, float p, int bh, int n,
                    bool causal, cudaStream_t stream) {
  const float scale = 1.0f / sqrtf(static_cast<float>(D));
  // YOUR CODE HERE: forward_kernel<T, D> on a grid of (⌈n / kWarps⌉, bh) blocks of kThreads, on `stream`
  return cudaGetLastError();
}

template <typename T, int D>
cudaError_t backward(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* dout, T* dq, T* dk,
                     T* dv, float* delta, const int64_t* rng, float p, int bh, int n, bool causal,
                     cudaStream_t stream) {
  const float scale = 1.0f / sqrtf(static_cast<float>(D));
  // YOUR CODE HERE: delta_kernel over all bh·n rows, then dkdv_kernel and dq_kernel on (⌈n / kWarps⌉, bh) blocks, on `stream`
  return cudaGetLastError();
}

}  // namespace dropout_attn

template <typename T>
cudaError_t attention_dropout_forward(const T* q, const T* k, const T* v, T* o, float* lse, const int64_t* rng,
                                      float p, int batch, int heads, int n, int d, bool causal, cudaStream_t stream) {
  if (batch == 0 || heads == 0 || n == 0) return cudaSuccess;
  return d == 64 ? dropout_attn::forward<T, 64>(q, k, v, o, lse, rng, p, batch * heads, n, causal, stream)
                 : dropout_attn::forward<T, 128>(q, k, v, o, lse, rng, p, batch * heads, n, causal, stream);
}

template <typename T>
cudaError_t attention_dropout_backward(const T* q, const T* k, const T* v, const T* o, const float* lse,
                                       const T* dout, T* dq, T* dk, T* dv, float* delta, const int64_t* rng, float p,
                                       int batch, int heads, int n, int d, bool causal, cudaStream_t stream) {
  if (batch == 0 || heads == 0 || n == 0) return cudaSuccess;
  return d == 64 ? dropout_attn::backward<T, 64>(q, k, v, o, lse, dout, dq, dk, dv, delta, rng, p, batch * heads, n,
                                                 causal, stream)
                 : dropout_attn::backward<T, 128>(q, k, v, o, lse, dout, dq, dk, dv, delta, rng, p, batch * heads, n,
                                                  causal, stream);
}

#define INSTANTIATE(T)                                                                                             \
  template cudaError_t attention_dropout_forward<T>(const T*, const T*, const T*, T*, float*, const int64_t*, float, \
                                                    int, int, int, int, bool, cudaStream_t);                       \
  template cudaError_t attention_dropout_backward<T>(const T*, const T*, const T*, const T*, const float*, const T*, \
                                                     T*, T*, T*, float*, const int64_t*, float, int, int, int, int,  \
                                                     bool, cudaStream_t);
INSTANTIATE(float)
INSTANTIATE(__half)
INSTANTIATE(__nv_bfloat16)
