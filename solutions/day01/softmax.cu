// Day 01: naive row softmax, one thread per row.
//
//   out[r, c] = exp(x[r, c] - max_r) / sum_c' exp(x[r, c'] - max_r)
//
// This is the baseline the rest of the softmax ladder is measured against. Each thread owns a whole row and walks
// it three times: once for the maximum, once for the sum of exponentials, once to write the outputs. It is correct
// for every shape and slow on purpose: neighbouring threads read addresses `cols` floats apart, so a warp's 32
// loads touch 32 different memory segments (uncoalesced), and a 4096-row input keeps only 4096 threads busy on a
// GPU that wants tens of thousands. Day 02 fixes both by giving each row to a whole warp.
//
// Only CUDA headers here: the kernel compiles in seconds with plain nvcc, and bindings.cpp connects it to PyTorch.

#include <cuda_runtime.h>

// One thread = one row. The grid is the loop over rows that a CPU version would write; threadIdx/blockIdx tell
// each thread which iteration it is.
__global__ void softmax_naive_kernel(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  // Contract: one thread owns row r and walks it three times (max m, then Σ exp(x - m), then write).
  // Every exponent is x - m <= 0, so nothing overflows; the row sum is >= 1.
  // size_t, not int: blockIdx.x * blockDim.x can pass INT_MAX when rows is close to it, and row * cols
  // (the row's offset) passes it for any tensor over 2^31 elements.
  const size_t row = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= static_cast<size_t>(rows)) return;  // the last block is partly outside the tensor
  const float* xr = x + row * cols;

  // Pass 1: the row maximum. Subtracting it keeps every exponent <= 0, so expf never overflows (x = 1000
  // would give expf(1000) = inf without it). -INFINITY is the identity of max and handles -inf entries.
  float m = -INFINITY;
  for (int c = 0; c < cols; ++c) m = fmaxf(m, xr[c]);

  // BEGIN SOLUTION: pass 2, sum = Σ_c exp(xr[c] - m); pass 3, y's row (yr) = exp(xr[c] - m) / sum for every c
  float* yr = y + row * cols;

  // Pass 2: the normaliser. The max term contributes exp(0) = 1, so sum >= 1 and the division below is safe.
  float sum = 0.0f;
  for (int c = 0; c < cols; ++c) sum += expf(xr[c] - m);

  // Pass 3: write. One division per row, then a multiply per element.
  const float inv_sum = 1.0f / sum;
  for (int c = 0; c < cols; ++c) yr[c] = expf(xr[c] - m) * inv_sum;
  // END SOLUTION
}

// The launcher: the only entry point bindings.cpp sees. It picks the launch configuration and reports launch
// errors (a bad configuration fails here, at launch, not at the next synchronisation).
cudaError_t softmax_forward(const float* x, float* y, int rows, int cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;  // a grid of 0 blocks is an error, and there is nothing to do
  // BEGIN SOLUTION: launch softmax_naive_kernel on `stream`: 256 threads per block, ceil(rows / 256) blocks
  // 256 threads per block is a safe default: a multiple of the warp size, and small enough that several blocks
  // fit on one SM. Ceil-divide so the last partial block covers the remaining rows.
  const int threads = 256;
  const int blocks = (rows - 1) / threads + 1;  // (rows + threads - 1) / threads could overflow near INT_MAX
  softmax_naive_kernel<<<blocks, threads, 0, stream>>>(x, y, rows, cols);
  // END SOLUTION
  return cudaGetLastError();
}
