// FP32 FFMA peak: the compute roof of the roofline, measured rather than taken from a datasheet.
//
// Every thread runs kChains independent multiply-add chains, so each warp scheduler always has a ready FFMA while
// earlier ones are still in flight (FFMA latency is about 4 cycles; 8 chains and 8 warps per scheduler hide it).
// The inner loop is unrolled so loop overhead is about 1% of the issued instructions. x and y come from the host,
// so the compiler cannot fold the chains away, and each thread stores its sum, so it cannot drop them either.
#include <cuda_runtime.h>

namespace {

constexpr int kChains = 8;
constexpr int kUnroll = 16;

__global__ void ffma_peak_kernel(float* __restrict__ out, float x, float y, int iters) {
  float a[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) a[c] = threadIdx.x * 1e-3f + c;
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int c = 0; c < kChains; ++c) a[c] = fmaf(a[c], x, y);
    }
  }
  float s = 0.f;
#pragma unroll
  for (int c = 0; c < kChains; ++c) s += a[c];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

}  // namespace

// FMAs one launch performs per thread and per unit of `iters`, for the host's FLOP count.
int ffma_per_thread_iter() { return kChains * kUnroll; }

cudaError_t launch_ffma_peak(float* out, float x, float y, int iters, int blocks, int threads, cudaStream_t stream) {
  ffma_peak_kernel<<<blocks, threads, 0, stream>>>(out, x, y, iters);
  return cudaGetLastError();
}
