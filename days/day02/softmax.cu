// Day 02: warp softmax, one warp (32 threads) per row.
//
// Changes vs day 01 (one thread per row):
//   - A row belongs to a warp, and lane i reads columns i, i+32, i+64, ... On each step the warp's 32 loads are 32
//     consecutive floats (128 bytes), which the memory system serves as one coalesced request. Day 01's threads
//     read 32 addresses a row apart: 32 separate requests for the same amount of useful data.
//   - 32x more threads are in flight for the same shape, which hides memory latency far better.
//   - Each lane now holds a partial max / partial sum; the 32 partials are combined with warp shuffles
//     (__shfl_xor_sync): registers exchanged directly between lanes, no shared memory and no __syncthreads.
// The three passes (max, sum, write) are unchanged; day 03 merges the first two.

#include <cuda_runtime.h>

constexpr int kWarpSize = 32;
constexpr int kWarpsPerBlock = 8;  // 256 threads per block, 8 rows per block
static_assert(kWarpsPerBlock * kWarpSize <= 1024, "a block holds at most 1024 threads");

// Butterfly reduction: after the step with offset o, every lane holds the max over a group of 2*o lanes, and
// after offsets 16, 8, 4, 2, 1 every lane holds the max of all 32 (no broadcast step needed). The mask
// 0xffffffff says all 32 lanes take part, so the caller must not let part of a warp skip the call.
__device__ __forceinline__ float warp_reduce_max(float v) {
  // YOUR CODE HERE: v = max over the 32 lanes' v, in every lane (__shfl_xor_sync, offsets 16, 8, 4, 2, 1)
  return v;
}

// Same butterfly with + instead of max.
__device__ __forceinline__ float warp_reduce_sum(float v) {
  // YOUR CODE HERE: v = sum over the 32 lanes' v, in every lane (same butterfly as warp_reduce_max)
  return v;
}

__global__ void softmax_warp_kernel(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  // Contract: three coalesced passes (lane partial max -> warp max m; Σ exp(x - m) -> warp sum; write).
  // A warp whose row >= rows returns whole, before any shuffle (every shuffle needs all 32 lanes).
  // YOUR CODE HERE: row = blockIdx.x · 8 + warp; lane owns columns lane, lane + 32, ...; y[row, :] = softmax(x[row, :])
}

cudaError_t softmax_forward(const float* x, float* y, int rows, int cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  // YOUR CODE HERE: launch softmax_warp_kernel: 8 warps (256 threads) per block, ceil(rows / 8) blocks
  return cudaGetLastError();
}
