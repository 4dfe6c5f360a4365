// Day 06: naive matmul, c[M, N] = a[M, K] @ b[K, N] (row-major), one thread per output element.
//
// Two kernels that do exactly the same arithmetic and differ only in which output each thread of a warp owns:
//   - matmul_uncoalesced: threadIdx.x walks DOWN a column of C. The 32 threads of a warp read a[row, k] from 32
//     different rows (32 separate 32-byte sectors per load instruction) and write c down a column (32 sectors
//     per store). Every warp-wide load touches 32 sectors to use 4 bytes of each.
//   - matmul_naive: threadIdx.x walks ALONG a row of C. A warp's 32 threads read the same a[row, k] (one sector,
//     broadcast) and 32 consecutive b[k, col] (128 contiguous bytes: 4 sectors), and write 128 contiguous bytes.
// Both re-read a row of A and a column of B from the memory system for every single output: 2K loads for 2K
// FLOPs. The caches absorb some of it, but arithmetic intensity stays around that of the naive count; days 07-09
// raise it by reusing each loaded value many times.
//
// Elements are converted to float as they are loaded and accumulated in fp32; only c is rounded to T.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "float_convert.cuh"  // to_float(v), from_float<T>(v)

constexpr int kTile = 32;  // a 32 x 32 block of threads: 1024 threads, one output each

// threadIdx.x -> row (down a column of C): the mapping to avoid. Kept to measure what coalescing is worth.
template <typename T>
__global__ void matmul_uncoalesced_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c,
                                          int M, int N, int K) {
  // Contract: one thread per output, fp32 accumulation, rounded to T once; threads outside M x N return;
  // size_t offsets (row · K can pass INT_MAX).
  // BEGIN SOLUTION: c[row, col] = Σ_k a[row, k] · b[k, col], row = blockIdx.x · 32 + threadIdx.x, col from y
  const int row = blockIdx.x * kTile + threadIdx.x;
  const int col = blockIdx.y * kTile + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += to_float(a[static_cast<size_t>(row) * K + k]) * to_float(b[static_cast<size_t>(k) * N + col]);
  c[static_cast<size_t>(row) * N + col] = from_float<T>(acc);
  // END SOLUTION
}

// threadIdx.x -> column (along a row of C): consecutive threads touch consecutive addresses of b and c.
template <typename T>
__global__ void matmul_naive_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int M,
                                    int N, int K) {
  // Contract: as above, but threadIdx.x runs along a row of C, so a warp's b and c accesses are contiguous.
  // BEGIN SOLUTION: c[row, col] = Σ_k a[row, k] · b[k, col], col = blockIdx.x · 32 + threadIdx.x, row from y
  const int col = blockIdx.x * kTile + threadIdx.x;
  const int row = blockIdx.y * kTile + threadIdx.y;
  if (row >= M || col >= N) return;
  const T* arow = a + static_cast<size_t>(row) * K;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += to_float(arow[k]) * to_float(b[static_cast<size_t>(k) * N + col]);
  c[static_cast<size_t>(row) * N + col] = from_float<T>(acc);
  // END SOLUTION
}

template <typename T>
cudaError_t matmul_uncoalesced_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream) {
  const dim3 block(kTile, kTile);  // 32 x 32 threads: the grid's x must cover what threadIdx.x walks
  // BEGIN SOLUTION: grid so that x covers the M rows and y the N columns in steps of kTile; launch on `stream`
  const dim3 grid((M + kTile - 1) / kTile, (N + kTile - 1) / kTile);  // x covers rows here
  matmul_uncoalesced_kernel<T><<<grid, block, 0, stream>>>(a, b, c, M, N, K);
  // END SOLUTION
  return cudaGetLastError();
}

template <typename T>
cudaError_t matmul_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream) {
  const dim3 block(kTile, kTile);
  // BEGIN SOLUTION: grid so that x covers the N columns and y the M rows in steps of kTile; launch on `stream`
  const dim3 grid((N + kTile - 1) / kTile, (M + kTile - 1) / kTile);  // x covers columns
  matmul_naive_kernel<T><<<grid, block, 0, stream>>>(a, b, c, M, N, K);
  // END SOLUTION
  return cudaGetLastError();
}

#define INSTANTIATE(T)                                                                                 \
  template cudaError_t matmul_uncoalesced_forward<T>(const T*, const T*, T*, int, int, int, cudaStream_t); \
  template cudaError_t matmul_forward<T>(const T*, const T*, T*, int, int, int, cudaStream_t);
INSTANTIATE(float)
INSTANTIATE(__half)
INSTANTIATE(__nv_bfloat16)
