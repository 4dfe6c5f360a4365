// softmax_rows.cuh: the row softmax that day 14's block-per-row exercises share. One block per row; each thread
// folds a strided set of columns, and the block combines the threads' values through a reducer the exercise
// defines (its max and sum are where the bugs are). Storage type T; every max, exp and sum in fp32.
#pragma once

#include <cuda_runtime.h>

#include "float_convert.cuh"  // to_float(v), from_float<T>(v)

constexpr int kWarpSize = 32;

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

// The three storage types the op accepts, each an explicit instantiation of the day's launcher.
#define INSTANTIATE_SOFTMAX_FORWARD()                                                                          \
  template cudaError_t softmax_forward<float>(const float*, float*, int, int, cudaStream_t);                  \
  template cudaError_t softmax_forward<__half>(const __half*, __half*, int, int, cudaStream_t);               \
  template cudaError_t softmax_forward<__nv_bfloat16>(const __nv_bfloat16*, __nv_bfloat16*, int, int, cudaStream_t)
