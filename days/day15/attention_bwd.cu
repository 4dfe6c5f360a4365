// Day 15: attention backward, naive. Given the forward's inputs q, k, v, its saved outputs o and lse (the row
// logsumexp, fp32) and the incoming gradient dout = dL/dO, compute dq, dk, dv. All tensors are contiguous
// [B, H, N, d] (lse: [B, H, N]) in float, __half or __nv_bfloat16 storage, with fp32 arithmetic; d is 64 or 128;
// scale = 1/sqrt(d). Causal: query i sees keys j <= i only.
//
// The math, per (batch, head), with S = scale · Q Kᵀ, P = softmax(S) by rows, O = P V:
//   dV = Pᵀ dO                    [N, d]   (O = P V: each v_j is weighted by p_ij in every o_i)
//   dP = dO Vᵀ                    [N, N]
//   D  = rowsum(dO ∘ O)           [N]      (= rowsum(P ∘ dP): the softmax's Jacobian, one number per row)
//   dS = P ∘ (dP - D)             [N, N]   (D broadcast along each row)
//   dQ = scale · dS K,  dK = scale · dSᵀ Q
// P is not saved by the forward: it is recomputed from the scores and the saved logsumexp, P = exp(S - lse), with
// no max and no sum.
//
// Six plain launches of five kernels (one step each; steps 3 and 6 share one), in this order on the caller's stream:
//   (1) delta_kernel               D = rowsum(dO ∘ O)                  one warp per row, lanes along d
//   (2) probs_kernel               P = exp(scale · Q Kᵀ - lse) -> s    one thread per (i, j); masked: 0
//   (3) transposed_product_kernel  dV = Pᵀ dO                          one thread per (j, c)
//   (4) ds_kernel                  s <- P ∘ (dO Vᵀ - D), in place      one thread per (i, j)
//   (5) product_kernel             dQ = scale · dS K                   one thread per (i, c)
//   (6) transposed_product_kernel  dK = scale · dSᵀ Q                  one thread per (j, c)
// Materialized: s, an fp32 [B, H, N, N] scratch (4·N² bytes per head: 64 MiB for B·H = 16 at N = 1024, 1 GiB at
// N = 4096), holding P and then, overwritten in place, dS; and D, fp32 [B, H, N]. The bindings allocate both
// through PyTorch. Step (3) is the last reader of P, so it must run before step (4) overwrites it.
// The causal mask lives in one place, step (2): P is 0 above the diagonal, so dS = P ∘ (...) is 0 there too, and
// the sums of steps (3), (5) and (6) add exact zeros for the masked pairs. Apart from step (2)'s skipped dot
// products, the causal case does the full work of the unmasked one (skipping the zeros is day 16's business).
// Memory access: in the N × N kernels a warp is 32 consecutive keys j of one query row i, so q[i] and dout[i] are
// the same address for the whole warp (a broadcast) while k[j] and v[j] are 32 different rows (each warp load
// touches 32 sectors, most of them hits in L1 after the first column). In the N × d kernels a warp is 32
// consecutive columns c of one output row: x[·][c] is coalesced and the scratch entry is a broadcast.
// No atomics, and every sum runs in a fixed order: two calls give the same bits.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>

#include "float_convert.cuh"  // to_float(v), from_float<T>(v)

namespace naive_bwd {

constexpr int kBlockX = 32;  // every kernel: blocks of 32 x 8 threads, threadIdx.x the fast (contiguous) axis
constexpr int kBlockY = 8;

// (1) delta[row] = sum_c dout[row][c] · o[row][c], over all B·H·N rows. Block (32, 8): warp threadIdx.y of block
// blockIdx.x owns one row, its lanes (threadIdx.x) stride along c.
template <typename T>
__global__ void __launch_bounds__(kBlockX* kBlockY)
    delta_kernel(const T* __restrict__ o, const T* __restrict__ dout, float* __restrict__ delta, int rows, int d) {
  constexpr int kWarpSize = 32;  // = kBlockX: threadIdx.x is the lane
  const int row = blockIdx.x * kBlockY + threadIdx.y;
  if (row >= rows) return;  // the whole warp leaves together: the shuffles below see all 32 lanes
  const T* orow = o + static_cast<size_t>(row) * d;
  const T* grow = dout + static_cast<size_t>(row) * d;
  float acc = 0.0f;
  // YOUR CODE HERE: acc = this lane's part of dout[row] · o[row]; the warp's sum (day 02's butterfly) into delta[row]
}

// (2) s[bh][i][j] = exp(scale · q[bh][i] · k[bh][j] - lse[bh][i]), or 0 where causal and j > i. Block (32, 8), one
// thread per (i, j); blockIdx = (key block, query block, batch·head).
template <typename T>
__global__ void __launch_bounds__(kBlockX* kBlockY)
    probs_kernel(const T* __restrict__ q, const T* __restrict__ k, const float* __restrict__ lse,
                 float* __restrict__ s, int n, int d, float scale, bool causal) {
  const int j = blockIdx.x * kBlockX + threadIdx.x;
  const int i = blockIdx.y * kBlockY + threadIdx.y;
  if (i >= n || j >= n) return;
  const size_t bh = blockIdx.z;
  const T* qi = q + (bh * n + i) * d;
  const T* kj = k + (bh * n + j) * d;
  // YOUR CODE HERE: p = 0 where masked, else exp(scale · qi·kj - lse[bh·n + i]); s[(bh·n + i)·n + j] = p
}

// (4) In place: s[bh][i][j] = p · (dout[bh][i] · v[bh][j] - delta[bh][i]), p the value s holds on entry (P).
// Block (32, 8), one thread per (i, j); blockIdx = (key block, query block, batch·head).
template <typename T>
__global__ void __launch_bounds__(kBlockX* kBlockY)
    ds_kernel(const T* __restrict__ dout, const T* __restrict__ v, const float* __restrict__ delta,
              float* __restrict__ s, int n, int d) {
  const int j = blockIdx.x * kBlockX + threadIdx.x;
  const int i = blockIdx.y * kBlockY + threadIdx.y;
  if (i >= n || j >= n) return;
  const size_t bh = blockIdx.z;
  // YOUR CODE HERE: dS = P ∘ (dP - D), dP = dO·v computed on the spot
}

// (5) out[bh][i][c] = alpha · sum_j m[bh][i][j] · x[bh][j][c]: the [N, N] scratch times an [N, d] input (dQ = scale
// · dS K). Block (32, 8), one thread per output element; blockIdx = (column block, row block, batch·head).
template <typename T>
__global__ void __launch_bounds__(kBlockX* kBlockY)
    product_kernel(const float* __restrict__ m, const T* __restrict__ x, T* __restrict__ out, int n, int d,
                   float alpha) {
  const int c = blockIdx.x * kBlockX + threadIdx.x;
  const int i = blockIdx.y * kBlockY + threadIdx.y;
  if (i >= n || c >= d) return;
  const size_t bh = blockIdx.z;
  const float* mi = m + (bh * n + i) * n;  // row i of M: the same address for the whole warp
  const T* xh = x + bh * n * d;
  // YOUR CODE HERE: out[(bh·n + i)·d + c] = alpha · Σ_j mi[j] · xh[j·d + c], accumulated in fp32
}

// (3), (6) out[bh][j][c] = alpha · sum_i m[bh][i][j] · x[bh][i][c]: the scratch transposed times an [N, d] input
// (dV = Pᵀ dO, dK = scale · dSᵀ Q). Block (32, 8), one thread per output element; blockIdx = (column block, row
// block, batch·head).
template <typename T>
__global__ void __launch_bounds__(kBlockX* kBlockY)
    transposed_product_kernel(const float* __restrict__ m, const T* __restrict__ x, T* __restrict__ out, int n,
                              int d, float alpha) {
  const int c = blockIdx.x * kBlockX + threadIdx.x;
  const int j = blockIdx.y * kBlockY + threadIdx.y;
  if (j >= n || c >= d) return;
  const size_t bh = blockIdx.z;
  const float* mh = m + bh * n * n;
  const T* xh = x + bh * n * d;
  // YOUR CODE HERE: out[(bh·n + j)·d + c] = alpha · Σ_i mh[i·n + j] · xh[i·d + c], accumulated in fp32
}

}  // namespace naive_bwd

// scratch: fp32 [batch, heads, n, n] (P, then dS); delta: fp32 [batch, heads, n]. Both allocated by the bindings.
template <typename T>
cudaError_t attention_bwd_naive(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* dout,
                                T* dq, T* dk, T* dv, float* scratch, float* delta, int batch, int heads, int n, int d,
                                bool causal, cudaStream_t stream) {
  using namespace naive_bwd;
  if (batch == 0 || heads == 0 || n == 0) return cudaSuccess;
  const int bh = batch * heads;  // blockIdx.z: at most 65535 (a larger grid fails to launch, with that error)
  const float scale = 1.0f / sqrtf(static_cast<float>(d));
  const dim3 block(kBlockX, kBlockY);
  const dim3 nn_grid((n + kBlockX - 1) / kBlockX, (n + kBlockY - 1) / kBlockY, bh);  // one thread per (i, j)
  const dim3 nd_grid((d + kBlockX - 1) / kBlockX, (n + kBlockY - 1) / kBlockY, bh);  // one thread per (row, c)
  // YOUR CODE HERE: the six launches, in order, each followed by a cudaGetLastError() check
  return cudaGetLastError();
}

// The bindings see only the declaration (common/attention_bwd_binding.h calls it): the versions they use are
// compiled here.
template cudaError_t attention_bwd_naive<float>(const float*, const float*, const float*, const float*, const float*,
                                               const float*, float*, float*, float*, float*, float*, int, int, int,
                                               int, bool, cudaStream_t);
template cudaError_t attention_bwd_naive<__half>(const __half*, const __half*, const __half*, const __half*,
                                                const float*, const __half*, __half*, __half*, __half*, float*,
                                                float*, int, int, int, int, bool, cudaStream_t);
template cudaError_t attention_bwd_naive<__nv_bfloat16>(const __nv_bfloat16*, const __nv_bfloat16*,
                                                       const __nv_bfloat16*, const __nv_bfloat16*, const float*,
                                                       const __nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*,
                                                       __nv_bfloat16*, float*, float*, int, int, int, int, bool,
                                                       cudaStream_t);
