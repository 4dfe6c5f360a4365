// Day 04: block softmax, one thread block (1024 threads) per row.
//
// Changes vs day 03 (one warp per row):
//   - A row belongs to a whole block of 1024 threads (32 warps) instead of one warp. Thread t reads columns
//     t, t + 1024, t + 2048, ...: each warp's load is still 32 consecutive elements, but 32x more loads of the same
//     row are in flight. A 262144-column row is 256 steps per thread instead of 8192 steps per lane.
//   - The 32 warps must combine their partial states, and warps cannot shuffle with each other: the block reduction
//     goes through shared memory. Each warp reduces itself with day 03's butterfly, lane 0 writes the warp's
//     (m, s) to shared memory, a __syncthreads() makes the 32 partials visible, and then every warp merges the 32
//     partials with the same butterfly, so every thread ends with the row's state without a second broadcast.
//   - __syncthreads() is a barrier for the whole block. It is what makes a shared-memory write by one warp
//     visible to the others, and it must be reached by every thread of the block (never inside a branch that
//     only part of the block takes). A missing barrier is a race: the code usually works and sometimes reads a
//     partial that has not been written yet.
// Unchanged: scalar loads, fp32 online (m, s) states, two reads of the row (state pass, write pass), one write.
// Day 05 vectorizes the loads, keeps the row in registers (one read), and splits very long rows across blocks.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "float_convert.cuh"  // to_float(v), from_float<T>(v): storage type <-> fp32

#include <cstddef>

constexpr int kWarpSize = 32;
constexpr int kThreads = 1024;                 // one block per row: the largest block CUDA allows
constexpr int kWarps = kThreads / kWarpSize;   // 32 warps, so 32 partials: exactly one warp can merge them
static_assert(kWarps <= kWarpSize, "the partials must fit in one warp for the second butterfly");

// Online-softmax state merge from day 03: (m, s) and (m_other, s_other) -> the state of both sets of values.
__device__ __forceinline__ void online_merge(float& m, float& s, float m_other, float s_other) {
  const float hi = fmaxf(m, m_other);
  const float scale = (hi == -INFINITY) ? 0.0f : expf(fminf(m, m_other) - hi);
  s = (m >= m_other) ? s + s_other * scale : s * scale + s_other;
  m = hi;
}

// Day 03's butterfly over (m, s): afterwards all 32 lanes hold the warp's state, bit-identical.
__device__ __forceinline__ void warp_reduce_online(float& m, float& s) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    const float m_other = __shfl_xor_sync(0xffffffffu, m, offset);
    const float s_other = __shfl_xor_sync(0xffffffffu, s, offset);
    online_merge(m, s, m_other, s_other);
  }
}

// Block-wide merge: on return every thread of the block holds the block's (m, s).
// Requirements: blockDim.x is a multiple of 32 (whole warps, for the full-mask shuffles) and at most 1024, and
// every thread of the block calls it (it contains __syncthreads). partials points to __shared__ float2[32].
__device__ __forceinline__ void block_reduce_online(float& m, float& s, float2* partials) {
  // Contract: warp butterfly, lane 0 writes partials[warp], __syncthreads, every warp merges partials[0..warps)
  // (empty state (-inf, 0) past the last warp), then a second __syncthreads before partials[] may be rewritten.
  // YOUR CODE HERE: every thread's (m, s) = the block's merged state; partials[] free to reuse on return
}

// One block per row. Pass 1 folds the thread's columns into its (m, s); the block merges them; pass 2 writes.
template <typename T>
__global__ void __launch_bounds__(kThreads) softmax_block_kernel(const T* __restrict__ x, T* __restrict__ y, int cols) {
  // Contract: partials is __shared__ float2[kWarps]; every thread, even one with no columns, calls
  // block_reduce_online (it holds barriers); outputs exp(x - m) / s in fp32, rounded to T.
  // YOUR CODE HERE: y[blockIdx.x, :] = softmax of that row of x; thread t owns columns t, t + 1024, ...
}

template <typename T>
cudaError_t softmax_forward(const T* x, T* y, int rows, int cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  // YOUR CODE HERE: launch softmax_block_kernel<T>: one block of kThreads (1024) per row, no dynamic shared memory
  return cudaGetLastError();
}

// The bindings only see the template's declaration, so the three versions they call are compiled here.
template cudaError_t softmax_forward<float>(const float*, float*, int, int, cudaStream_t);
template cudaError_t softmax_forward<__half>(const __half*, __half*, int, int, cudaStream_t);
template cudaError_t softmax_forward<__nv_bfloat16>(const __nv_bfloat16*, __nv_bfloat16*, int, int, cudaStream_t);
