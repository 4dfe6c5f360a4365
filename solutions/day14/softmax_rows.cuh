// softmax_rows.cuh: what day 14's exercises share. The block-per-row softmax (race, sync): each thread folds a
// strided set of columns, and the block combines the threads' values through a reducer the exercise defines (its
// reduction is where the bug is); and the warp reductions of the warp-per-row kernels (oob, spill). Storage type
// T; every max, exp and sum in fp32.
#pragma once

#include <cuda_runtime.h>

#include "float_convert.cuh"  // to_float(v), from_float<T>(v)

constexpr int kWarpSize = 32;

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// A block reducer: Derived::reduce(v, op) combines v over the block with op; max and sum are its two uses.
template <typename Derived>
struct MaxAndSum {
  __device__ float max(float v) {
    return static_cast<Derived*>(this)->reduce(v, [](float a, float b) { return fmaxf(a, b); });
  }
  __device__ float sum(float v) {
    return static_cast<Derived*>(this)->reduce(v, [](float a, float b) { return a + b; });
  }
};

template <typename T, typename Reducer>
__device__ void block_softmax_row(const T* __restrict__ xr, T* __restrict__ yr, int cols, Reducer& reduce) {
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, to_float(xr[c]));
  m = reduce.max(m);
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(to_float(xr[c]) - m);
  s = reduce.sum(s);
  const float inv_s = 1.0f / s;  // s >= 1: the maximum contributes exp(0)
  for (int c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = from_float<T>(expf(to_float(xr[c]) - m) * inv_s);
}

// One block of kThreads per row; Reducer needs Reducer::kSharedFloats floats of shared memory.
template <typename T, typename Reducer, int kThreads>
__global__ void __launch_bounds__(kThreads) block_softmax_kernel(const T* __restrict__ x, T* __restrict__ y, int cols) {
  __shared__ float scratch[Reducer::kSharedFloats];
  Reducer reduce(scratch);
  const size_t row = blockIdx.x;
  block_softmax_row(x + row * cols, y + row * cols, cols, reduce);
}

template <typename Reducer, int kThreads, typename T>
cudaError_t launch_block_softmax(const T* x, T* y, int rows, int cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  block_softmax_kernel<T, Reducer, kThreads><<<rows, kThreads, 0, stream>>>(x, y, cols);
  return cudaGetLastError();
}

// The three storage types the op accepts, each an explicit instantiation of the day's launcher.
#define INSTANTIATE_SOFTMAX_FORWARD()                                                                          \
  template cudaError_t softmax_forward<float>(const float*, float*, int, int, cudaStream_t);                  \
  template cudaError_t softmax_forward<__half>(const __half*, __half*, int, int, cudaStream_t);               \
  template cudaError_t softmax_forward<__nv_bfloat16>(const __nv_bfloat16*, __nv_bfloat16*, int, int, cudaStream_t)
