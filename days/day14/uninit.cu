// Day 14, exercise uninit (find it with initcheck): a softmax for long rows that cuts each row into pieces, one
// block per piece. A first kernel reduces each piece to its (max, sum) state in a workspace; a second merges the
// row's states and writes the piece.
//
// Symptom: right on a fresh process and on every shape alone; wrong after some other shapes ran first.
// Tool:    grader sanitize day14 --exercise uninit --tool initcheck
// Done:    correct in every case, and initcheck reports nothing (grader check day14 runs it for you).

#include <cuda_runtime.h>

#include "softmax_rows.cuh"

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / kWarpSize;
constexpr int kMaxPieces = kWarpSize;  // one warp merges a row's states, a lane each
constexpr int kMinPieceCols = 2048;     // shorter pieces would cost more in launches and merging than they save

// Online-softmax state: m the max of the values seen, s the sum of exp(value - m). Empty: (-inf, 0).
struct State {
  float m, s;
};

__device__ __forceinline__ State merge(State a, State b) {
  const float hi = fmaxf(a.m, b.m);
  if (hi == -INFINITY) return State{-INFINITY, 0.0f};  // both empty (or all -inf): -inf - -inf would be NaN
  return State{hi, a.s * expf(a.m - hi) + b.s * expf(b.m - hi)};
}

__device__ __forceinline__ State warp_merge(State st) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    const State other{__shfl_xor_sync(0xffffffffu, st.m, offset), __shfl_xor_sync(0xffffffffu, st.s, offset)};
    st = merge(st, other);
  }
  return st;
}

// Block (p, r) folds columns [p * piece, (p + 1) * piece) of row r into states[r * kMaxPieces + p].
template <typename T>
__global__ void piece_states_kernel(const T* __restrict__ x, State* __restrict__ states, int cols, int piece) {
  __shared__ State per_warp[kWarps];
  const size_t row = blockIdx.y;
  const int begin = blockIdx.x * piece;
  const int end = min(cols, begin + piece);
  State st{-INFINITY, 0.0f};
  for (int c = begin + threadIdx.x; c < end; c += kThreads) st = merge(st, State{to_float(x[row * cols + c]), 1.0f});
  st = warp_merge(st);
  if (threadIdx.x % kWarpSize == 0) per_warp[threadIdx.x / kWarpSize] = st;
  __syncthreads();
  if (threadIdx.x < kWarpSize) {
    st = threadIdx.x < kWarps ? per_warp[threadIdx.x] : State{-INFINITY, 0.0f};
    st = warp_merge(st);
    if (threadIdx.x == 0) states[row * kMaxPieces + blockIdx.x] = st;
  }
}

// Block (p, r): every warp merges row r's `pieces` states (lane i takes piece i), then the block writes piece p.
template <typename T>
__global__ void write_piece_kernel(const T* __restrict__ x, T* __restrict__ y, const State* __restrict__ states,
                                   int cols, int piece, int pieces) {
  const size_t row = blockIdx.y;
  const int lane = threadIdx.x % kWarpSize;
  State st = states[row * kMaxPieces + lane];
  st = warp_merge(st);
  const float inv_s = 1.0f / st.s;
  const int begin = blockIdx.x * piece;
  const int end = min(cols, begin + piece);
  for (int c = begin + threadIdx.x; c < end; c += kThreads) {
    y[row * cols + c] = from_float<T>(expf(to_float(x[row * cols + c]) - st.m) * inv_s);
  }
}

template <typename T>
cudaError_t softmax_forward(const T* x, T* y, int rows, int cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  if (rows > 65535) return cudaErrorInvalidValue;  // rows are gridDim.y
  const int pieces = min(kMaxPieces, (cols + kMinPieceCols - 1) / kMinPieceCols);
  const int piece = (cols + pieces - 1) / pieces;
  // The workspace is stream-ordered: allocated and freed in the order of the kernels that use it, with no sync.
  State* states = nullptr;
  cudaError_t err = cudaMallocAsync(&states, sizeof(State) * kMaxPieces * rows, stream);
  if (err != cudaSuccess) return err;
  const dim3 grid(pieces, rows);
  piece_states_kernel<T><<<grid, kThreads, 0, stream>>>(x, states, cols, piece);
  write_piece_kernel<T><<<grid, kThreads, 0, stream>>>(x, y, states, cols, piece, pieces);
  err = cudaGetLastError();
  const cudaError_t freed = cudaFreeAsync(states, stream);
  return err != cudaSuccess ? err : freed;
}

INSTANTIATE_SOFTMAX_FORWARD();
