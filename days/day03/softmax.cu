// Day 03: dtype-aware warp softmax for float, __half and __nv_bfloat16, with a single read pass for max and sum.
//
// Changes vs day 02 (fp32 warp softmax, three passes):
//   - The kernel and launcher are templates over the storage type T. Values are converted to float as they are
//     loaded, every max, exp and sum is done in fp32, and only the final result is rounded back to T. Summing
//     thousands of terms in fp16 (11-bit significand) or bf16 (8-bit) would lose most of the small ones.
//   - Max and sum come from one pass instead of two ("online softmax"): each lane keeps a running max m and a
//     running sum s of exp(x - m); when a larger value arrives, s is rescaled by exp(m_old - m_new). Two such
//     (m, s) states merge the same way, so the warp combines its 32 lanes with the same butterfly as day 02.
//     The input is now read twice (state pass + write pass) instead of three times.
//   - Conversions use the intrinsics (__half2float, __float2half_rn, ...): PyTorch compiles extensions with
//     __CUDA_NO_HALF_CONVERSIONS__ and friends, which remove the implicit conversions and operators.
// Still one warp per row and scalar (unvectorised) loads; days 04 and 05 address very long rows and wide loads.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "float_convert.cuh"  // to_float(v), from_float<T>(v): storage type <-> fp32

constexpr int kWarpSize = 32;
constexpr int kWarpsPerBlock = 8;
static_assert(kWarpsPerBlock * kWarpSize <= 1024, "a block holds at most 1024 threads");

// Online-softmax state (m, s): m = max of the values seen, s = sum of exp(value - m) over them. Empty state:
// (-inf, 0). One new value v is the state (v, 1). Merging two states keeps the larger max and rescales the other
// state's sum to it:  s = s_a * exp(m_a - m) + s_b * exp(m_b - m),  m = max(m_a, m_b).
// One of the two factors is exp(0) = 1, so only one expf is needed.
__device__ __forceinline__ void online_merge(float& m, float& s, float m_other, float s_other) {
  // YOUR CODE HERE: (m, s) = merge with (m_other, s_other); both maxima -inf gives m = -inf, never NaN
}

// Butterfly over the 32 lanes, as in day 02, but each step exchanges a whole (m, s) state. Both partners of a step
// compute the same sum (the two additions are the same numbers in swapped order), so all lanes end identical.
__device__ __forceinline__ void warp_reduce_online(float& m, float& s) {
  // YOUR CODE HERE: (m, s) = merge of the 32 lanes' states, identical in every lane (xor butterfly over m and s)
}

template <typename T>
__global__ void softmax_warp_kernel(const T* __restrict__ x, T* __restrict__ y, int rows, int cols) {
  // Contract: pass 1 folds each lane's columns (lane, lane + 32, ...) into an fp32 (m, s) with online_merge
  // and merges the warp; pass 2 writes exp(x - m) / s rounded to T. Whole warps return for rows >= rows.
  // YOUR CODE HERE: row = blockIdx.x · 8 + warp; y[row, :] = softmax(x[row, :]) in type T
}

template <typename T>
cudaError_t softmax_forward(const T* x, T* y, int rows, int cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  // YOUR CODE HERE: launch softmax_warp_kernel<T>: 8 warps (256 threads) per block, ceil(rows / 8) blocks
  return cudaGetLastError();
}

// The bindings only see the template's declaration, so the three versions they call are compiled here.
template cudaError_t softmax_forward<float>(const float*, float*, int, int, cudaStream_t);
template cudaError_t softmax_forward<__half>(const __half*, __half*, int, int, cudaStream_t);
template cudaError_t softmax_forward<__nv_bfloat16>(const __nv_bfloat16*, __nv_bfloat16*, int, int, cudaStream_t);
