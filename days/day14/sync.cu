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

struct Tree : MaxAndSum<Tree> {
  static constexpr int kSharedFloats = kThreads;
  float* red;
  __device__ explicit Tree(float* shared) : red(shared) {}

  template <typename Op>
  __device__ float reduce(float v, Op op) {
    red[threadIdx.x] = v;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s /= 2) {
      if (threadIdx.x < s) {
        red[threadIdx.x] = op(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
      }
    }
    const float result = red[0];
    __syncthreads();  // read by all before the next reduction stores into red
    return result;
  }
};

template <typename T>
cudaError_t softmax_forward(const T* x, T* y, int rows, int cols, cudaStream_t stream) {
  return launch_block_softmax<Tree, kThreads>(x, y, rows, cols, stream);
}

INSTANTIATE_SOFTMAX_FORWARD();
