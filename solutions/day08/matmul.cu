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
  // BEGIN SOLUTION: C tile (blockIdx.y · BM, blockIdx.x · BN): thread t owns column t % BN, rows t / BN · TM + [0, TM)
  __shared__ float As[BM][BK];
  __shared__ float Bs[BK][BN];
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int tcol = threadIdx.x % BN;        // this thread's column of C within the tile
  const int trow = threadIdx.x / BN * TM;   // first of its TM rows
  // Loading: thread t copies As[t / BK][t % BK] and Bs[t / BN][t % BN] (consecutive threads, consecutive addresses).
  const int ar = threadIdx.x / BK, ac = threadIdx.x % BK;
  const int br = threadIdx.x / BN, bc = threadIdx.x % BN;
  float acc[TM] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    As[ar][ac] = load_or_zero(a, m0 + ar, k0 + ac, M, K);
    Bs[br][bc] = load_or_zero(b, k0 + br, n0 + bc, K, N);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float bv = Bs[k][tcol];  // one shared load, reused TM times
#pragma unroll
      for (int i = 0; i < TM; ++i) acc[i] += As[trow + i][k] * bv;
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int r = m0 + trow + i, cc = n0 + tcol;
    if (r < M && cc < N) c[static_cast<size_t>(r) * N + cc] = from_float<T>(acc[i]);
  }
  // END SOLUTION
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
  // BEGIN SOLUTION: C tile at (blockIdx.y · BM, blockIdx.x · BN); thread t: TM x TN at (t / 16 · TM, t % 16 · TN)
  __shared__ float As[BM][BK];
  __shared__ float Bs[BK][BN];
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int trow = threadIdx.x / (BN / TN) * TM;  // this thread's TM x TN block of the tile
  const int tcol = threadIdx.x % (BN / TN) * TN;
  float acc[TM][TN] = {};
  float ra[TM], rb[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
    // 1024 elements per tile, 256 threads: each copies 4 of A and 4 of B, consecutive threads on consecutive
    // addresses.
#pragma unroll
    for (int i = threadIdx.x; i < BM * BK; i += kThreads)
      As[i / BK][i % BK] = load_or_zero(a, m0 + i / BK, k0 + i % BK, M, K);
#pragma unroll
    for (int i = threadIdx.x; i < BK * BN; i += kThreads)
      Bs[i / BN][i % BN] = load_or_zero(b, k0 + i / BN, n0 + i % BN, K, N);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int i = 0; i < TM; ++i) ra[i] = As[trow + i][k];
#pragma unroll
      for (int j = 0; j < TN; ++j) rb[j] = Bs[k][tcol + j];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += ra[i] * rb[j];  // an outer product in registers
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int r = m0 + trow + i, cc = n0 + tcol + j;
      if (r < M && cc < N) c[static_cast<size_t>(r) * N + cc] = from_float<T>(acc[i][j]);
    }
  // END SOLUTION
}
}  // namespace blocktile_2d

template <typename T>
cudaError_t matmul_1d_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream) {
  using namespace blocktile_1d;
  // BEGIN SOLUTION: grid: x covers N in steps of BN, y covers M in steps of BM; kThreads per block, on `stream`
  const dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
  kernel<T><<<grid, kThreads, 0, stream>>>(a, b, c, M, N, K);
  // END SOLUTION
  return cudaGetLastError();
}

template <typename T>
cudaError_t matmul_2d_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream) {
  using namespace blocktile_2d;
  // BEGIN SOLUTION: grid: x covers N in steps of BN, y covers M in steps of BM; kThreads per block, on `stream`
  const dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
  kernel<T><<<grid, kThreads, 0, stream>>>(a, b, c, M, N, K);
  // END SOLUTION
  return cudaGetLastError();
}

#define INSTANTIATE(T)                                                                                \
  template cudaError_t matmul_1d_forward<T>(const T*, const T*, T*, int, int, int, cudaStream_t);     \
  template cudaError_t matmul_2d_forward<T>(const T*, const T*, T*, int, int, int, cudaStream_t);
INSTANTIATE(float)
INSTANTIATE(__half)
INSTANTIATE(__nv_bfloat16)
