// Day 07: shared-memory tiled matmul, c[M, N] = a[M, K] @ b[K, N] (row-major), fp32 accumulation.
//
// Changes vs day 06 (one thread per output, every operand fetched from the memory system for every use):
//   - A block of 32 x 32 threads owns a 32 x 32 tile of C. It walks K in steps of 32: all 1024 threads copy one
//     element of a 32 x 32 tile of A and one of B into shared memory (coalesced: threadIdx.x runs along a row),
//     wait, then each thread does 32 multiply-adds out of shared memory.
//   - Each value loaded from global memory is now used 32 times (by the 32 threads that need it), so global
//     traffic drops 32x versus the naive count. Shared memory is stored as float: converted once on load.
//   - Two __syncthreads per step: after the copy (nobody reads a tile before it is complete) and after the
//     multiply-adds (nobody overwrites a tile another thread is still reading).
//   - Tiles that hang over the edge of A or B are filled with zeros, so M, N, K need not be multiples of 32
//     and the inner loop has no bounds checks.
// Still one output per thread: each multiply-add needs two values from shared memory (ptxas fetches As's four at
// a time, but every Bs value is a load of its own), which is what day 08 attacks.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "float_convert.cuh"  // to_float(v), from_float<T>(v)

constexpr int kTile = 32;

template <typename T>
__global__ void matmul_tiled_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M,
                                    int N, int K) {
  // Contract: __shared__ float As[32][32], Bs[32][32]; per step k0 each thread stores one element of each
  // (zero outside A or B), __syncthreads, 32 FMAs, __syncthreads; every thread stays for the barriers,
  // only the final store is guarded by row < M && col < N.
  // BEGIN SOLUTION: c[row, col], row = blockIdx.y · 32 + ty, col = blockIdx.x · 32 + tx, from shared-memory tiles
  __shared__ float As[kTile][kTile];  // As[r][k]: rows of this block's A tile
  __shared__ float Bs[kTile][kTile];  // Bs[k][c]: columns of this block's B tile
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * kTile + ty;
  const int col = blockIdx.x * kTile + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += kTile) {
    const int ka = k0 + tx, kb = k0 + ty;
    As[ty][tx] = (row < M && ka < K) ? to_float(a[static_cast<size_t>(row) * K + ka]) : 0.0f;
    Bs[ty][tx] = (kb < K && col < N) ? to_float(b[static_cast<size_t>(kb) * N + col]) : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kTile; ++k) acc += As[ty][k] * Bs[k][tx];  // As: broadcast; Bs: 32 banks, no conflict
    __syncthreads();
  }
  if (row < M && col < N) c[static_cast<size_t>(row) * N + col] = from_float<T>(acc);
  // END SOLUTION
}

template <typename T>
cudaError_t matmul_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream) {
  const dim3 block(kTile, kTile);
  // BEGIN SOLUTION: grid: x covers the N columns, y the M rows, in steps of kTile; launch on `stream`
  const dim3 grid((N + kTile - 1) / kTile, (M + kTile - 1) / kTile);
  matmul_tiled_kernel<T><<<grid, block, 0, stream>>>(a, b, c, M, N, K);
  // END SOLUTION
  return cudaGetLastError();
}

template cudaError_t matmul_forward<float>(const float*, const float*, float*, int, int, int, cudaStream_t);
template cudaError_t matmul_forward<__half>(const __half*, const __half*, __half*, int, int, int, cudaStream_t);
template cudaError_t matmul_forward<__nv_bfloat16>(const __nv_bfloat16*, const __nv_bfloat16*, __nv_bfloat16*, int,
                                                   int, int, cudaStream_t);
