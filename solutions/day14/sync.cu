// Day 14, exercise sync (find it with synccheck): a block-per-row softmax with the classic shared-memory tree
// reduction: at each step the lower half of the active threads adds in the upper half.
//
// Symptom: wrong values on some rows, sometimes different between two runs; on another GPU, or with another
//          block size, a hang.
// Tool:    grader sanitize day14 --exercise sync --tool synccheck
// Done:    correct in every case, and synccheck reports nothing (grader check day14 runs it for you).

#include <cuda_runtime.h>

#include "softmax_rows.cuh"

constexpr int kThreads = 256;  // a power of two: the tree halves it at each step

struct Tree {
  float* red;  // kThreads floats of shared memory

  template <typename Op>
  __device__ float reduce(float v, Op op) {
    red[threadIdx.x] = v;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s /= 2) {
      if (threadIdx.x < s) red[threadIdx.x] = op(red[threadIdx.x], red[threadIdx.x + s]);
      __syncthreads();
    }
    const float result = red[0];
    __syncthreads();  // read by all before the next reduction stores into red
    return result;
  }
  __device__ float max(float v) { return reduce(v, [](float a, float b) { return fmaxf(a, b); }); }
  __device__ float sum(float v) { return reduce(v, [](float a, float b) { return a + b; }); }
};

template <typename T>
__global__ void softmax_tree_kernel(const T* __restrict__ x, T* __restrict__ y, int cols) {
  __shared__ float red[kThreads];
  Tree reduce{red};
  const size_t row = blockIdx.x;
  block_softmax_row(x + row * cols, y + row * cols, cols, reduce);
}

template <typename T>
cudaError_t softmax_forward(const T* x, T* y, int rows, int cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  softmax_tree_kernel<T><<<rows, kThreads, 0, stream>>>(x, y, cols);
  return cudaGetLastError();
}

INSTANTIATE_SOFTMAX_FORWARD();
