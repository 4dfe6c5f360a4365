// Day 14, exercise oob (find it with memcheck): a warp-per-row softmax that walks each row in steps of 32
// columns, one column per lane.
//
// Symptom: right on most shapes; on some, a few values at the start of a row are wrong, and only sometimes.
// Tool:    grader sanitize day14 --exercise oob --tool memcheck
// Done:    correct in every case, and memcheck reports nothing (grader check day14 runs it for you).

#include <cuda_runtime.h>

#include "softmax_rows.cuh"

constexpr int kWarpsPerBlock = 8;

template <typename T>
__global__ void softmax_warp_kernel(const T* __restrict__ x, T* __restrict__ y, int rows, int cols) {
  const int lane = threadIdx.x % kWarpSize;
  const size_t row = static_cast<size_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize;
  if (row >= static_cast<size_t>(rows)) return;  // uniform per warp
  const T* xr = x + row * cols;
  T* yr = y + row * cols;
  const int steps = (cols + kWarpSize - 1) / kWarpSize;  // the last step may be partly past the row's end

  float m = -INFINITY;
  for (int k = 0; k < steps; ++k) {
    const int c = k * kWarpSize + lane;
    if (c < cols) m = fmaxf(m, to_float(xr[c]));
  }
  m = warp_max(m);
  float s = 0.0f;
  for (int k = 0; k < steps; ++k) {
    const int c = k * kWarpSize + lane;
    if (c < cols) s += expf(to_float(xr[c]) - m);
  }
  const float inv_s = 1.0f / warp_sum(s);
  for (int k = 0; k < steps; ++k) {
    const int c = k * kWarpSize + lane;
    yr[c] = from_float<T>(expf(to_float(xr[c]) - m) * inv_s);
  }
}

template <typename T>
cudaError_t softmax_forward(const T* x, T* y, int rows, int cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  const int blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  softmax_warp_kernel<T><<<blocks, kWarpsPerBlock * kWarpSize, 0, stream>>>(x, y, rows, cols);
  return cudaGetLastError();
}

INSTANTIATE_SOFTMAX_FORWARD();
