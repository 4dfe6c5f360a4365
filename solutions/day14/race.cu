// Day 14, exercise race (find it with racecheck): a block-per-row softmax whose two block reductions share one
// small shared-memory array.
//
// Symptom: right on almost every run; now and then a row comes out wrong, and never the same one twice.
// Tool:    grader sanitize day14 --exercise race --tool racecheck
// Done:    correct in every case, and racecheck reports nothing (grader check day14 runs it for you).

#include <cuda_runtime.h>

#include "softmax_rows.cuh"

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / kWarpSize;

// Two-level reduction: a butterfly within each warp, then every thread folds the kWarps warp results that lane 0
// of each warp left in shared memory. The same `partial` array serves the max and then the sum.
struct WarpThenBlock {
  float* partial;  // kWarps floats of shared memory

  template <typename Op>
  __device__ float reduce(float v, Op op) {
    const int lane = threadIdx.x % kWarpSize;
    const int warp = threadIdx.x / kWarpSize;
#pragma unroll
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
    if (lane == 0) partial[warp] = v;
    __syncthreads();  // every warp's result is in shared memory
    v = partial[0];
    for (int w = 1; w < kWarps; ++w) v = op(v, partial[w]);
    __syncthreads();  // every thread has read them, before the next reduction writes over them
    return v;
  }
  __device__ float max(float v) { return reduce(v, [](float a, float b) { return fmaxf(a, b); }); }
  __device__ float sum(float v) { return reduce(v, [](float a, float b) { return a + b; }); }
};

template <typename T>
__global__ void softmax_block_kernel(const T* __restrict__ x, T* __restrict__ y, int cols) {
  __shared__ float partial[kWarps];
  WarpThenBlock reduce{partial};
  const size_t row = blockIdx.x;
  block_softmax_row(x + row * cols, y + row * cols, cols, reduce);
}

template <typename T>
cudaError_t softmax_forward(const T* x, T* y, int rows, int cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  softmax_block_kernel<T><<<rows, kThreads, 0, stream>>>(x, y, cols);
  return cudaGetLastError();
}

INSTANTIATE_SOFTMAX_FORWARD();
