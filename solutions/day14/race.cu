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
struct WarpThenBlock : MaxAndSum<WarpThenBlock> {
  static constexpr int kSharedFloats = kWarps;
  float* partial;
  __device__ explicit WarpThenBlock(float* shared) : partial(shared) {}

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
};

template <typename T>
cudaError_t softmax_forward(const T* x, T* y, int rows, int cols, cudaStream_t stream) {
  return launch_block_softmax<WarpThenBlock, kThreads>(x, y, rows, cols, stream);
}

INSTANTIATE_SOFTMAX_FORWARD();
