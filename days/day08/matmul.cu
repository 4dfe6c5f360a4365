// Day 08: register blocktiling, read through the profiler. c[M, N] = a[M, K] @ b[K, N], fp32 accumulation.
//
// Changes vs day 07 (32 x 32 tiles, one output per thread: 2 shared-memory loads per multiply-add):
//   - matmul_1d: a 64 x 64 tile of C per block of 512 threads, K in steps of 8. Each thread computes a column
//     of TM = 8 outputs: per k it loads ONE value of B from shared memory into a register and reuses it for 8
//     multiply-adds against 8 values of A. Shared-memory loads per multiply-add: 2 -> 9/8.
//   - matmul_2d: a 128 x 128 tile per block of 256 threads, each thread an 8 x 8 block of outputs held in 64
//     registers. Per k it loads 8 values of A and 8 of B into registers and does 8 x 8 = 64 multiply-adds with
//     them: 16 shared loads for 64 FMAs (1/4 per multiply-add), and each global value is reused 128 times.
// Both fill out-of-range tile entries with zeros and guard the stores, so any M, N, K works. The profiler
// (`grader profile day08`) shows the difference: day 07 is bound by shared-memory load instructions (the MIO
// pipe), these move the limit towards the FMA units. What they still leave on the table is day 09's topic:
// scalar global loads, A read from shared memory one column at a time, and no overlap of loads with math.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "float_convert.cuh"  // to_float(v), from_float<T>(v)

// Zero outside the matrix, so edge tiles need no special case in the inner loops.
template <typename T>
__device__ __forceinline__ float load_or_zero(const T* p, int r, int c, int rows, int cols) {
  return (r < rows && c < cols) ? to_float(p[static_cast<size_t>(r) * cols + c]) : 0.0f;
}

namespace blocktile_1d {
constexpr int BM = 64, BN = 64, BK = 8, TM = 8;
constexpr int kThreads = BM * BN / TM;  // 512
static_assert(BM * BK == kThreads && BK * BN == kThreads, "one element of each tile per thread");

template <typename T>
__global__ void __launch_bounds__(kThreads) kernel(const T* __restrict__ a, const T* __restrict__ b,
                                                   T* __restrict__ c, int M, int N, int K) {
  // Contract: __shared__ float As[BM][BK], Bs[BK][BN], each thread loading one element of each per K step
  // (load_or_zero); per k one Bs value in a register, reused for TM FMAs; guarded stores, rounded to T.
  // YOUR CODE HERE: C tile (blockIdx.y · BM, blockIdx.x · BN): thread t owns column t % BN, rows t / BN · TM + [0, TM)
}
}  // namespace blocktile_1d

namespace blocktile_2d {
constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
constexpr int kThreads = (BM / TM) * (BN / TN);  // 256
// __launch_bounds__(256, 2) asks for two resident blocks per SM: at most 128 registers per thread (unbounded, the
// compiler takes 144 and only one block of 8 warps fits per SM, too few to hide the loads' latency).
// sm_100's and sm_120's ptxas spill under that cap: there the kernel is compiled uncapped, one block an SM (day 10's
// flash kernel does the same); which of the two is faster on those GPUs has not been timed.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
constexpr int kMinBlocks = 1;
#else
constexpr int kMinBlocks = 2;
#endif
static_assert((BM * BK) % kThreads == 0 && (BK * BN) % kThreads == 0, "whole tiles per pass");

template <typename T>
__global__ void __launch_bounds__(kThreads, kMinBlocks) kernel(const T* __restrict__ a, const T* __restrict__ b,
                                                               T* __restrict__ c, int M, int N, int K) {
  // Contract: __shared__ float As[BM][BK], Bs[BK][BN], loaded with load_or_zero by all kThreads per K step;
  // per k, TM values of A and TN of B into registers, then their outer product into acc[TM][TN].
  // YOUR CODE HERE: C tile at (blockIdx.y · BM, blockIdx.x · BN); thread t: TM x TN at (t / 16 · TM, t % 16 · TN)
}
}  // namespace blocktile_2d

template <typename T>
cudaError_t matmul_1d_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream) {
  using namespace blocktile_1d;
  // YOUR CODE HERE: grid: x covers N in steps of BN, y covers M in steps of BM; kThreads per block, on `stream`
  return cudaGetLastError();
}

template <typename T>
cudaError_t matmul_2d_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream) {
  using namespace blocktile_2d;
  // YOUR CODE HERE: grid: x covers N in steps of BN, y covers M in steps of BM; kThreads per block, on `stream`
  return cudaGetLastError();
}

#define INSTANTIATE(T)                                                                                \
  template cudaError_t matmul_1d_forward<T>(const T*, const T*, T*, int, int, int, cudaStream_t);     \
  template cudaError_t matmul_2d_forward<T>(const T*, const T*, T*, int, int, int, cudaStream_t);
INSTANTIATE(float)
INSTANTIATE(__half)
INSTANTIATE(__nv_bfloat16)
