// Day 05: vectorized softmax, in three steps, each its own op and exercise (the lesson: days/day05/README.md).
//
//   05a softmax_vec   day 04's kernel (one 1024-thread block per row, two passes over the row) with 16-byte loads
//                     and stores: 4 floats or 8 halves per instruction, so a warp moves 512 contiguous bytes where
//                     day 04 moved 128 (fp32) or 64 (fp16). Rows that do not start on a 16-byte boundary (a
//                     storage offset, an odd cols) are cut into a scalar head, an aligned vector body and a scalar
//                     tail; if x and y are misaligned differently no cut fits both, and the kernel runs all-scalar.
//                     Timed against day 04's solution.
//   05b softmax_regs  the row kept in registers between the read and the write: x is read ONCE and y written once,
//                     exactly the bytes of a device-to-device copy, the speed limit of this op (05a reads x twice).
//                     Registers are indexed with compile-time constants only, so the kernels are templates on the
//                     values per thread and the launcher picks one from cols: a warp per row for rows of up to
//                     1024 values, a block per row up to 32768, 05a's kernel beyond. Timed against 05a.
//   05c softmax       the instructor's fastest: few but very long rows (64 x 262144) split across blocks (two
//                     kernels and a small workspace), 16-bit rows kept as raw 16-byte vectors with packed max and
//                     ex2.approx exps, warps sized to the row, and the dispatch table that picks among them all.
//                     Timed against 05b.
// Arithmetic is the same in all three: fp32 everywhere, the (m, s) "online" states of day 03 merged in a fixed
// order, so every result is bit-for-bit deterministic.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "device_cache.h"    // per_device_value: an SM count or occupancy asked once per device
#include "float_convert.cuh"  // to_float(v), from_float<T>(v): storage type <-> fp32

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

constexpr int kWarpSize = 32;
constexpr int kMaxThreads = 1024;
// 05a: one block per row, as on day 04.
constexpr int kVecThreads = 1024;
// 05b (and 05c): values per thread in the warp, block and split kernels: 32 fp32 registers of row data.
constexpr int kVals = 32;
static_assert(kVals % 8 == 0, "a thread holds whole 16-byte vectors of 16-bit values");
constexpr int kWarpRowsPerBlock = 4;  // warp kernel: 4 rows (128 threads) per block
constexpr int kWarpMinBlocks = 8;     // ... and <= 64 registers, so 8 blocks (32 warps, 32 rows) fit on an SM
// 05c: 16-bit rows: each thread keeps kPackedVecs raw 16-byte vectors (64 values in 32 registers), see the packed
// kernel.
constexpr int kPackedVecs = 8;
static_assert(kMaxThreads * kPackedVecs * 8 >= 32768, "the packed kernel covers the 32768-column benchmark rows");
constexpr int kSplitThreads = 256;  // split kernels: one chunk = 256 threads x 32 values = 8192 values
constexpr int kChunk = kSplitThreads * kVals;
constexpr int kSplitMinBlocks = 4;  // ask ptxas for <= 64 registers: 4 blocks (1024 threads) per SM
// A chunk is a whole number of 16-byte vectors for every element type, so every chunk of a row starts with the
// same misalignment as the row itself.
static_assert(kChunk % 8 == 0, "chunks must be whole 16-byte vectors of 2-byte types");

// ---------------------------------------------------------------------------------------------------------------
// Provided: element and pair conversions, 16-byte load/store wrappers, online merge and reductions (days 03 and
// 04), the SM count.
// ---------------------------------------------------------------------------------------------------------------

// Elements per 16-byte vector: 4 floats, 8 halves, 8 bfloat16s.
template <typename T>
struct Vec {
  static constexpr int kN = 16 / static_cast<int>(sizeof(T));
};

// Two 16-bit values packed in one 32-bit word <-> float2. The paired types (__half2, __nv_bfloat162) convert both
// halves with one instruction. memcpy is the portable way to reinterpret the word's bits; it compiles to nothing.
__device__ __forceinline__ float2 pair_to_float2(uint32_t w, __half) {
  __half2 h;
  memcpy(&h, &w, sizeof(h));
  return __half22float2(h);
}
__device__ __forceinline__ float2 pair_to_float2(uint32_t w, __nv_bfloat16) {
  __nv_bfloat162 h;
  memcpy(&h, &w, sizeof(h));
  return __bfloat1622float2(h);
}
__device__ __forceinline__ uint32_t float2_to_pair(float a, float b, __half) {
  const __half2 h = __floats2half2_rn(a, b);  // a goes to the low half, the lower address
  uint32_t w;
  memcpy(&w, &h, sizeof(w));
  return w;
}
__device__ __forceinline__ uint32_t float2_to_pair(float a, float b, __nv_bfloat16) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  uint32_t w;
  memcpy(&w, &h, sizeof(w));
  return w;
}

// 16-byte global loads and stores; p must be 16-byte aligned. uint4 is just a 16-byte carrier.
//   kLastUse:    ld.global.cs, "streaming": the line may be evicted first (we will not read it again).
//   otherwise:   ld.global.nc through the read-only path, the line stays in L2 as usual.
//   kEvictFirst: st.global.cs: the output is never read by us, so it should not push inputs out of L2.
//   otherwise:   st.global.wb, an ordinary store.
template <bool kLastUse>
__device__ __forceinline__ uint4 load16(const void* p) {
  if constexpr (kLastUse) {
    return __ldcs(static_cast<const uint4*>(p));
  } else {
    return __ldg(static_cast<const uint4*>(p));
  }
}
template <bool kEvictFirst>
__device__ __forceinline__ void store16(void* p, uint4 q) {
  if constexpr (kEvictFirst) {
    __stcs(static_cast<uint4*>(p), q);
  } else {
    __stwb(static_cast<uint4*>(p), q);  // st.global.wb, the default store; the intrinsic guarantees one 16-byte
  }                                     // instruction (a plain `*p = q` may be split into 32-bit stores)
}

// Online-softmax state merge and its butterfly, unchanged from day 03.
__device__ __forceinline__ void online_merge(float& m, float& s, float m_other, float s_other) {
  const float hi = fmaxf(m, m_other);
  const float scale = (hi == -INFINITY) ? 0.0f : expf(fminf(m, m_other) - hi);
  s = (m >= m_other) ? s + s_other * scale : s * scale + s_other;
  m = hi;
}

__device__ __forceinline__ void warp_reduce_online(float& m, float& s) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    const float m_other = __shfl_xor_sync(0xffffffffu, m, offset);
    const float s_other = __shfl_xor_sync(0xffffffffu, s, offset);
    online_merge(m, s, m_other, s_other);
  }
}

// Block-wide merge from day 04: every thread returns the block's state. blockDim.x must be a multiple of 32 and
// every thread must call it. partials: __shared__ float2[32].
__device__ __forceinline__ void block_reduce_online(float& m, float& s, float2* partials) {
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  warp_reduce_online(m, s);
  if (lane == 0) partials[warp] = make_float2(m, s);
  __syncthreads();  // all partials written before anyone reads them
  float pm = -INFINITY;
  float ps = 0.0f;
  if (lane < static_cast<int>(blockDim.x) / kWarpSize) {
    pm = partials[lane].x;
    ps = partials[lane].y;
  }
  warp_reduce_online(pm, ps);  // every warp does the same merge, so every thread gets the same bits
  m = pm;
  s = ps;
  __syncthreads();  // all reads done before a later call may overwrite partials
}

// SM count of the current device (per_device_value: device_cache.h).
inline cudaError_t current_sm_count(int* sms) {
  static DeviceCache cache;
  return per_device_value(
      cache, [](int dev, int* n) { return cudaDeviceGetAttribute(n, cudaDevAttrMultiProcessorCount, dev); }, sms);
}

// ---------------------------------------------------------------------------------------------------------------
// Step 05a (softmax_vec): 16-byte vectors, heads and tails, day 04's block per row.
// ---------------------------------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------------------------------
// Vectors: 16 bytes <-> kN floats (05a; 05b and 05c use them too).
// ---------------------------------------------------------------------------------------------------------------

// The 16 bytes q hold Vec<T>::kN consecutive elements; write them as floats to v[0 .. kN).
template <typename T>
__device__ __forceinline__ void unpack16(uint4 q, float* v) {
  // YOUR CODE HERE: 05a: v[0 .. kN) = the kN elements in q as floats, in memory order (16-bit: pair_to_float2)
}

// The opposite: kN floats, each multiplied by scale and rounded to T, packed into 16 bytes.
template <typename T>
__device__ __forceinline__ uint4 pack16(const float* v, float scale) {
  uint32_t w[4] = {0u, 0u, 0u, 0u};
  // YOUR CODE HERE: 05a: w[0..4) = v[0 .. kN) · scale rounded to T, in memory order (inverse of unpack16)
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// ---------------------------------------------------------------------------------------------------------------
// Alignment (05a; 05b and 05c cut their rows and chunks the same way): a range of n elements at p, cut at
// 16-byte boundaries into
//     [ head: scalars before the first boundary | body: nvec aligned vectors | tail: the < kN scalars left ]
// The head and tail are the "edge" elements; edge number e (0 <= e < head + tail) is at index edge_index(e).
// ---------------------------------------------------------------------------------------------------------------

struct Span {
  int head;
  int nvec;
  int tail;
};

template <typename T>
__device__ __forceinline__ Span split_span(const T* p, int n) {
  Span sp{n, 0, 0};  // "everything is head": the all-scalar cut, always correct
  // Contract: head + nvec · kN + tail == n; p + head is 16-byte aligned whenever nvec > 0; tail < kN.
  // YOUR CODE HERE: 05a: sp = {head: elements before p's next 16-byte boundary, nvec: whole vectors, tail: rest}
  return sp;
}

template <typename T>
__device__ __forceinline__ int edge_index(const Span& sp, int e) {
  return e < sp.head ? e : e + sp.nvec * Vec<T>::kN;  // skip over the body to reach the tail
}

// exp for the per-element work. 16-bit outputs use the hardware approximation __expf: its error (2 + 1.173|x|
// ulp of fp32, under 2e-6 relative for the |x| < 10 that carry almost all of a row's mass) is hundreds of times
// below the rounding to fp16 (4.9e-4) or bf16 (3.9e-3) that follows, and it is a few instructions where expf is
// a dozen. Measured on an H200: fp16 8192 x 8192 went from 86% to 94% of a copy of the same bytes.
// fp32 outputs keep expf: there the approximation's error would be visible (day 03's lesson).
template <typename T>
__device__ __forceinline__ float exp_elem(float x) {
  if constexpr (sizeof(T) == 2) {
    return __expf(x);
  } else {
    return expf(x);
  }
}

// Replaces this thread's values by exp(v - m) and returns its state (m, s): m = max of its values, s = sum of the
// exps. A thread with nothing but -inf keeps (-inf, 0); it uses 0 as the reference so that exp(-inf - (-inf)),
// a NaN, is never computed (all its exps are exp(-inf) = 0).
template <typename T, int K>
__device__ __forceinline__ void exp_in_place(float (&v)[K], float& m, float& s) {
  // Contract: when m is -inf use 0 as the reference, so no -inf - (-inf) = NaN is ever computed.
  // YOUR CODE HERE: 05a (05b reuses it): m = max of v[0 .. K), v[i] = exp(v[i] - m), s = Σ v[i]; all -inf: (-inf, 0)
}

// 05a: one block per row of any length: day 04's two passes (running state, then write) with 16-byte loads when
// vec is true, and all-scalar when x and y are misaligned differently (vec false). The second read of the row
// usually hits L2: this block read the same bytes moments before. 05b and 05c keep it as their fallback for rows
// too long for registers and for x and y misaligned differently.
template <typename T>
__global__ void __launch_bounds__(kVecThreads, 1)
    softmax_vec_kernel(const T* __restrict__ x, T* __restrict__ y, int cols, bool vec) {
  // Contract: 16-byte loads when vec (head/tail as scalars), all-scalar when !vec; every thread reaches
  // block_reduce_online; out-of-range vector slots are -inf. Pass 1 takes this thread's vectors in groups of 4
  // (j, j + nt, j + 2·nt, j + 3·nt), the group's 4 loads issued before its exp_in_place so that they are in flight
  // together (the lesson's pseudo-code for 05a): one vector at a time keeps a single load in flight per thread,
  // and the step's bar was set with 4.
  // YOUR CODE HERE: 05a: y[blockIdx.x, :] = softmax of a row of any length (running (m, s), block merge, write)
}

// 05a's launcher: one block of kVecThreads per row, 16-byte accesses when x and y share their misalignment. That
// check is made once, on the base pointers: both rows r are r · cols elements past their bases, so if the bases
// agree modulo 16 bytes, every row does.
template <typename T>
cudaError_t softmax_vec_forward(const T* x, T* y, int rows, int cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  // Contract: vec = false (all-scalar) when x and y are misaligned differently; no dynamic shared memory.
  // YOUR CODE HERE: 05a: launch softmax_vec_kernel<T>, one block of kVecThreads per row, vec = (x % 16 == y % 16)
  return cudaGetLastError();
}

// ---------------------------------------------------------------------------------------------------------------
// Step 05b (softmax_regs): the row in registers, one read of x; a warp per row for short rows, a block
// per row for long ones.
// ---------------------------------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------------------------------
// Register tiles (05b; 05c's split kernels use them too): a group of nt threads (a warp or a block) holds a span
// in registers. Thread t owns vectors t, t + nt, t + 2 nt, ... (so each load instruction of a warp covers 32
// consecutive vectors, 512 bytes), and edge element t. Its values: v[0 .. kVals) for the vectors, v[kVals] for the
// edge element. Slots past the end of the span hold -inf, which drops out of both the max and the sum
// (exp(-inf) = 0) without any special case.
// ---------------------------------------------------------------------------------------------------------------

template <typename T, int kValsT, bool kLastUse>
__device__ __forceinline__ void load_tile(const T* p, const Span& sp, int t, int nt, float (&v)[kValsT + 1]) {
  // Contract: all loads issued before any value is used, through load16<kLastUse>; no read past the span.
  // YOUR CODE HERE: 05b: v[k·kN ..) = body vector t + k·nt (-inf past nvec), v[kValsT] = edge element t (or -inf)
}

// Writes y = v * scale for this thread's share of the span (same cut as the load: x and y are equally aligned).
template <typename T, int kValsT, bool kEvictFirst>
__device__ __forceinline__ void store_tile(T* p, const Span& sp, int t, int nt, const float (&v)[kValsT + 1],
                                           float scale) {
  // YOUR CODE HERE: 05b: store v · scale to the same vectors (t, t + nt, ...) and edge element t that load_tile read
}

// The factor that turns this thread's exp(v - m) into exp(v - M) / S, given the group's state (M, S).
__device__ __forceinline__ float output_scale(float m, float M, float S) {
  // m == -inf: the thread saw only -inf (or padding) and its exps are all 0 already. Returning 0 also keeps a row
  // that is entirely -inf (M = -inf, where expf(m - M) would be NaN) from producing NaN.
  // Everyone else: one exp and one IEEE division per thread, not per element.
  return (m == -INFINITY) ? 0.0f : expf(m - M) / S;
}

// 05b: one warp per row, rows of up to 32 * kValsT values (05b launches kValsT = 32: up to 1024 values; 05c
// also 8 and 16, for rows of up to 256 and 512).
// No shared memory and no __syncthreads: the warp's shuffles are the only communication.
template <typename T, int kValsT>
__global__ void __launch_bounds__(kWarpRowsPerBlock* kWarpSize, kWarpMinBlocks)
    softmax_warp_kernel(const T* __restrict__ x, T* __restrict__ y, int rows, int cols) {
  // Contract: one read and one write of the row: load_tile, exp_in_place, warp_reduce_online, then store_tile
  // with output_scale(m, M, S). A warp past the last row returns whole; no shared memory, no barrier.
  // YOUR CODE HERE: 05b: y[row, :] = softmax of x[row, :], row = blockIdx.x · kWarpRowsPerBlock + warp
}

// 05b: one block per row, rows of up to 1024 * kValsT values; blockDim.x is chosen by the launcher (a multiple
// of 32).
// __launch_bounds__(1024) caps the kernel at 64 registers per thread so that a 1024-thread block can launch.
template <typename T, int kValsT>
__global__ void __launch_bounds__(kMaxThreads)
    softmax_block_kernel(const T* __restrict__ x, T* __restrict__ y, int cols) {
  // Contract: as the warp kernel, with block_reduce_online over __shared__ float2[kMaxThreads / 32] for (M, S);
  // every thread calls the reduction, even one whose slots are all padding.
  // YOUR CODE HERE: 05b: y[blockIdx.x, :] = softmax of that row; blockDim.x threads, <= kValsT values each in registers
}

// 05b's launcher, first match wins (05c's dispatch table refines it):
//   x, y misaligned differently   05a's kernel, all-scalar
//   cols <= 1024                  warp per row, 32 values per lane
//   cols <= 32768                 block per row, 32 values per thread, ceil(cols / 32) threads rounded up to a warp
//   otherwise                     05a's kernel, 16-byte accesses, two reads
template <typename T>
cudaError_t softmax_regs_forward(const T* x, T* y, int rows, int cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  // Given: plumbing, not 05b's lesson (that is the register tile and the two kernels above). It launches the table
  // above on `stream`: the warp kernel in blocks of kWarpRowsPerBlock warps (one row each, ceil-divided grid, so
  // the last block may hold warps past the last row), the block kernel with ceil(cols / kVals) threads rounded up
  // to whole warps, and your 05a kernel for x and y misaligned differently (vec false) and for rows too long for
  // registers (vec true). Errors of the launch come back through cudaGetLastError below.
  const bool same_alignment = reinterpret_cast<uintptr_t>(x) % 16 == reinterpret_cast<uintptr_t>(y) % 16;
  if (!same_alignment) {
    softmax_vec_kernel<T><<<rows, kVecThreads, 0, stream>>>(x, y, cols, false);
  } else if (cols <= kWarpSize * kVals) {
    const int blocks = (rows - 1) / kWarpRowsPerBlock + 1;
    softmax_warp_kernel<T, kVals><<<blocks, kWarpRowsPerBlock * kWarpSize, 0, stream>>>(x, y, rows, cols);
  } else if (cols <= kMaxThreads * kVals) {
    // An unaligned row has at most floor(cols / kN) full vectors and fewer than 2 kN edge elements, so
    // ceil(cols / kVals) threads always hold it.
    const int threads = ((cols - 1) / kVals / kWarpSize + 1) * kWarpSize;
    softmax_block_kernel<T, kVals><<<rows, threads, 0, stream>>>(x, y, cols);
  } else {
    softmax_vec_kernel<T><<<rows, kVecThreads, 0, stream>>>(x, y, cols, true);
  }
  return cudaGetLastError();
}

// ---------------------------------------------------------------------------------------------------------------
// Step 05c (softmax): packed 16-bit rows, long rows split across blocks, the dispatch table.
// ---------------------------------------------------------------------------------------------------------------

// 05c: one block per row for 16-bit types, the row kept as raw 16-byte vectors: 8 values in 4 registers, where the
// tile above spends 8 fp32 registers, so a thread holds 64 values and a 4096-wide row needs only 64 threads.
// Nsight Compute on the first version of this kernel (4096 x 4096 fp16, H200): SM throughput 65%, DRAM 41%,
// 8.9 cycles between a warp's instructions: the instruction count, not memory, was the limit. So the max is taken
// on packed pairs (no conversion), and each exp is one FFMA plus one MUFU.EX2 with the output's 1/S folded into
// the FFMA. That took 4096 x 4096 from 84-87% to 96-99% of a copy of the same bytes (the instructors' measured/NOTES.md). It
// costs accuracy that only fp32 outputs could see, which is why fp32 rows take 05b's block kernel.
// exp as one MUFU instruction after one FFMA: e^(v - c) = 2^(v*log2(e) - c*log2(e)), with the hardware's ex2.approx
// (relative error about 2^-22; -inf gives +0). Folding the subtraction and the output's 1/S into the FFMA's
// constant leaves 2 instructions per exp where `__expf(v - m) * inv` takes 4.
constexpr float kLog2e = 1.4426950408889634f;
__device__ __forceinline__ float ex2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
// e^v / 2^c2, for a constant c2 expressed in base 2 (see log2_of_exp).
__device__ __forceinline__ float exp_over_pow2(float v, float c2) { return ex2_approx(fmaf(v, kLog2e, -c2)); }
__device__ __forceinline__ float log2_of_exp(float m) { return m * kLog2e; }  // log2(e^m)

// The larger of two pairs of 16-bit values, compared as packed pairs (one instruction for two values, no
// conversion to fp32: the max is exact in any precision).
__device__ __forceinline__ uint32_t pair_max(uint32_t a, uint32_t b, __half) {
  __half2 x, y;
  memcpy(&x, &a, 4);
  memcpy(&y, &b, 4);
  const __half2 r = __hmax2(x, y);
  uint32_t w;
  memcpy(&w, &r, 4);
  return w;
}
__device__ __forceinline__ uint32_t pair_max(uint32_t a, uint32_t b, __nv_bfloat16) {
  __nv_bfloat162 x, y;
  memcpy(&x, &a, 4);
  memcpy(&y, &b, 4);
  const __nv_bfloat162 r = __hmax2(x, y);
  uint32_t w;
  memcpy(&w, &r, 4);
  return w;
}

// Given: the packed kernel's three phases (load, max and sum, store), read and called by your packed kernel. They are
// 05c's packed-pairs idea written out (the max on pairs, one FFMA and one MUFU.EX2 per exp, 1/S folded in); your part
// is the kernel that calls them around the block reduction. They are also shared with the instructors' one pass of
// split rows (below). Thread t of nt holds the vectors t, t + nt, ... of the span sp of x (a row, or a chunk of one)
// as raw 16-byte vectors, and at most one edge element (has_edge: t < sp.head + sp.tail; as a float, -inf where it
// has none). kLast: x is read and y written for the last time (streaming).
template <typename T, int kVecs, bool kLast>
__device__ __forceinline__ float packed_load(uint4 (&raw)[kVecs], const T* x, const Span& sp, int t, int nt,
                                             bool has_edge) {
  constexpr int kN = Vec<T>::kN;
#pragma unroll
  for (int k = 0; k < kVecs; ++k) {
    const int j = t + k * nt;
    raw[k] = (j < sp.nvec) ? load16<kLast>(x + sp.head + static_cast<size_t>(j) * kN) : make_uint4(0, 0, 0, 0);
  }
  return has_edge ? to_float(x[edge_index<T>(sp, t)]) : -INFINITY;
}

// SOFTMAX_EXP_ONCE (a knob, not yet timed: the instructors' measured/NOTES.md), bf16 rows only: packed_max_sum leaves each of the
// thread's values as 2^15 e^(v - m) in raw, m being the thread's own max, as fp16 pairs (and the edge element's in
// edge, as a float); packed_store multiplies them by 2^-15 e^(m - M) / S where it took a second exp: one MUFU op a
// value instead of two. The 2^15 (the largest power of two whose e^0 fp16 holds) keeps e in fp16's normal range
// down to e = 1.9e-9; there storing it costs fp16's u = 2^-11 relative, an eighth of the bf16 output's own
// rounding; below, 2^-40 absolute. An fp16 row would round twice at its output's own u, up to 2u: a simulation of
// the rounding put the worst case at 0.61 of day 05's fp16 tolerance (0.32 with two exps), so fp16 keeps two.
#ifndef SOFTMAX_EXP_ONCE
#define SOFTMAX_EXP_ONCE 0
#endif
template <typename T>
constexpr bool kExpOnce = SOFTMAX_EXP_ONCE && std::is_same_v<T, __nv_bfloat16>;
constexpr int kKeptShift = 15;  // the kept exps are e^(v - m) · 2^kKeptShift
[[maybe_unused]] constexpr float kKeptLog2 = kKeptShift, kKeptInv = 1.0f / (1 << kKeptShift);

// This thread's max m, on packed pairs (the two halves of the last pair compared in fp32), and s = the sum of
// e^(v - m) = 2^(v log2e - m log2e) over its values. A thread that saw only -inf uses 0 as the reference.
template <typename T, int kVecs>
__device__ __forceinline__ void packed_max_sum(uint4 (&raw)[kVecs], float& edge, const Span& sp, int t, int nt,
                                               float& m, float& s) {
  constexpr int kN = Vec<T>::kN;
  m = edge;
  if (t < sp.nvec) {  // vector k = 0 exists, so pairs can start from it
    uint32_t pm = raw[0].x;
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      if (t + k * nt < sp.nvec) {
        pm = pair_max(pair_max(pm, raw[k].x, T{}), pair_max(raw[k].y, raw[k].z, T{}), T{});
        pm = pair_max(pm, raw[k].w, T{});
      }
    }
    const float2 f = pair_to_float2(pm, T{});
    m = fmaxf(m, fmaxf(f.x, f.y));
  }
  float v[kN];
  // With SOFTMAX_EXP_ONCE the reference is 2^-15 lower (one rounding), so the kept exps are 2^15 e^(v - m)
  const float m2 = (m == -INFINITY) ? (kExpOnce<T> ? -kKeptLog2 : 0.0f)
                                    : (kExpOnce<T> ? fmaf(m, kLog2e, -kKeptLog2) : log2_of_exp(m));
  s = exp_over_pow2(edge, m2);  // edge = -inf (no edge element) gives 0
  if constexpr (kExpOnce<T>) edge = s;
#pragma unroll
  for (int k = 0; k < kVecs; ++k) {
    if (t + k * nt < sp.nvec) {
      unpack16<T>(raw[k], v);
#pragma unroll
      for (int i = 0; i < kN; ++i) {
        v[i] = exp_over_pow2(v[i], m2);
        s += v[i];
      }
      if constexpr (kExpOnce<T>) raw[k] = pack16<__half>(v, 1.0f);
    }
  }
  if constexpr (kExpOnce<T>) s *= kKeptInv;  // exact: the sum relative to m, as without the knob
}

// y = e^(v - M) / S = 2^(v log2e - (M log2e + log2 S)) for the thread's values, with the row's (M, S). A row of
// nothing but -inf gets 0s, as elsewhere. With SOFTMAX_EXP_ONCE, raw and edge hold 2^15 e^(v - m) for the thread's
// max m (packed_max_sum), and y = 2^15 e^(v - m) · 2^-15 e^(m - M) / S.
template <typename T, int kVecs, bool kLast>
__device__ __forceinline__ void packed_store(const uint4 (&raw)[kVecs], float edge, T* y, const Span& sp, int t,
                                             int nt, bool has_edge, float M, float S, [[maybe_unused]] float m) {
  constexpr int kN = Vec<T>::kN;
  const bool empty = (M == -INFINITY);
  // Without the knob y = 2^(v log2e - c); with it y = kept · f (m - M is exact or nearly: both near the row's
  // values; m = -inf, a thread of only -inf, gives f = 0).
  const float c = empty ? 0.0f : log2_of_exp(M) + __log2f(S);
  const float zero_if_empty = empty ? 0.0f : 1.0f;
  [[maybe_unused]] const float f =
      kExpOnce<T> && !empty ? ex2_approx(fmaf(m - M, kLog2e, -(__log2f(S) + kKeptLog2))) : 0.0f;
  float v[kN];
#pragma unroll
  for (int k = 0; k < kVecs; ++k) {
    const int j = t + k * nt;
    if (j < sp.nvec) {
      uint4 out;
      if constexpr (kExpOnce<T>) {
        unpack16<__half>(raw[k], v);
        out = pack16<T>(v, f);
      } else {
        unpack16<T>(raw[k], v);
#pragma unroll
        for (int i = 0; i < kN; ++i) v[i] = exp_over_pow2(v[i], c);
        out = pack16<T>(v, zero_if_empty);
      }
      store16<kLast>(y + sp.head + static_cast<size_t>(j) * kN, out);
    }
  }
  if (has_edge)
    y[edge_index<T>(sp, t)] = from_float<T>(kExpOnce<T> ? edge * f : exp_over_pow2(edge, c) * zero_if_empty);
}

template <typename T, int kVecs>
__global__ void __launch_bounds__(kMaxThreads)
    softmax_block_packed_kernel(const T* __restrict__ x, T* __restrict__ y, int cols) {
  // Contract: 16-bit T only; x read once, y written once; fp32 max, sum and (M, S); exps via exp_over_pow2
  // (ex2.approx) with 1/S folded in; a row of only -inf gives zeros, never NaN.
  // YOUR CODE HERE: 05c: y[blockIdx.x, :] = softmax of that row; thread t keeps kVecs raw uint4 vectors + one edge
}

// 05c, split rows, kernel A: block b handles chunk c = b % nchunks of row b / nchunks (kChunk values, the last one
// shorter), and writes the chunk's state (max, sum of exp(x - max)) to partials[b].
template <typename T, int kValsT>
__global__ void __launch_bounds__(kSplitThreads, kSplitMinBlocks)
    softmax_split_stats_kernel(const T* __restrict__ x, float2* __restrict__ partials, int cols, int nchunks) {
  // Contract: a chunk is kChunk values (the last one shorter); kSplitThreads threads, kValsT values each;
  // thread 0 writes the block's merged state. Default loads, so kernel B's re-read hits L2. `partials` here is
  // global memory, one state per block: block_reduce_online needs a __shared__ float2[32] of its own (passed the
  // global one, it compiles, and every block's warps overwrite other blocks' states).
  // YOUR CODE HERE: 05c: partials[b] = (max, Σ exp(x - max)) of chunk b % nchunks of row b / nchunks, b = blockIdx.x
}

// 05c, split rows, kernel B: merge the row's nchunks partials (in chunk order, so the result is deterministic),
// re-read the chunk, write it. Blocks run in the reverse order of kernel A: the chunks A read last are the ones
// most likely still in L2, so B starts with them.
template <typename T, int kValsT>
__global__ void __launch_bounds__(kSplitThreads, kSplitMinBlocks)
    softmax_split_write_kernel(const T* __restrict__ x, T* __restrict__ y, const float2* __restrict__ partials,
                               int cols, int nchunks) {
  // Contract: merge the row's nchunks partials in chunk order (every warp gets the same bits, deterministic),
  // re-read the chunk (streaming loads, last use) and write exp(x - M) / S with streaming stores.
  // YOUR CODE HERE: 05c: y of chunk b = gridDim.x - 1 - blockIdx.x (reverse order), scaled by the row's (M, S)
}

// 05c: long rows split into chunks of kChunk values: kernel A, then kernel B, with a workspace of one float2 per chunk.
// The workspace is stream-ordered memory (cudaMallocAsync / cudaFreeAsync on the caller's stream): it is valid
// for exactly the kernels queued between the two calls, needs no device-wide synchronization (cudaMalloc and
// cudaFree synchronize the whole device), is safe when two streams run this op at once (a cached static buffer
// would be shared by both), and after the first call it comes from the driver's pool, which is cheap.
template <typename T>
cudaError_t launch_split(const T* x, T* y, int rows, int cols, cudaStream_t stream) {
  cudaError_t err = cudaSuccess;
  // Given: plumbing, not 05c's lesson (that is the two kernels above). A grid of rows · nchunks blocks of
  // kSplitThreads, nchunks = ceil(cols / kChunk), for both kernels; partials is a float2[rows · nchunks] from
  // cudaMallocAsync, written by kernel A (one state per block) and read by kernel B, then cudaFreeAsync'd, even when
  // a launch failed. Everything on `stream`; returns the first error, else cudaSuccess.
  const int nchunks = (cols - 1) / kChunk + 1;
  const int blocks = rows * nchunks;  // only used when rows < SM count, so this is small
  float2* partials = nullptr;
  err = cudaMallocAsync(reinterpret_cast<void**>(&partials), sizeof(float2) * static_cast<size_t>(blocks), stream);
  if (err != cudaSuccess) return err;
  softmax_split_stats_kernel<T, kVals><<<blocks, kSplitThreads, 0, stream>>>(x, partials, cols, nchunks);
  err = cudaGetLastError();
  if (err == cudaSuccess) {
    softmax_split_write_kernel<T, kVals><<<blocks, kSplitThreads, 0, stream>>>(x, y, partials, cols, nchunks);
    err = cudaGetLastError();
  }
  const cudaError_t free_err = cudaFreeAsync(partials, stream);  // freed after B has run, in stream order
  if (err == cudaSuccess) err = free_err;
  return err;
}

// 05c: launches the packed kernel for 16-bit rows that fit (whole warps of threads with kPackedVecs vectors each; the
// same fit argument as 05b's block kernel), and says whether it did. fp32 never does: its values already fill
// registers one to one.
template <typename T>
bool launch_packed(const T* x, T* y, int rows, int cols, cudaStream_t stream) {
  if constexpr (sizeof(T) == 2) {
    if (cols <= kMaxThreads * kPackedVecs * Vec<T>::kN) {
      const int threads = ((cols - 1) / (kPackedVecs * Vec<T>::kN) / kWarpSize + 1) * kWarpSize;
      softmax_block_packed_kernel<T, kPackedVecs><<<rows, threads, 0, stream>>>(x, y, cols);
      return true;
    }
  }
  return false;
}

// 05c's dispatch, first match wins (benchmark shapes that take each path in brackets):
//   x, y misaligned differently     05a's block per row, scalar loads
//   cols <= 256 / 512 / 1024        warp per row, 8 / 16 / 32 values per lane   [16384 x 1024]
//   cols > 8192 and rows < #SMs     split rows: kernels A and B                  [64 x 262144]
//   16-bit T and cols <= 65536      block per row, 64 values per thread kept as raw 16-byte vectors
//                                                                                [4096, 8192 and 32768 columns]
//   cols <= 32768                   block per row, 32 values per thread, blockDim = cols / 32 rounded up to a warp
//                                                                                [4096, 8192 and 32768 columns]
//   otherwise                       05a's block per row, 16-byte loads, two reads
template <typename T>
cudaError_t softmax_forward(const T* x, T* y, int rows, int cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  // Given: plumbing, not 05c's lesson (that is the packed kernel and the split kernels above). It launches the
  // table above on `stream`, first match wins: 05b's warp kernel (8, 16 or 32 values per lane) and block kernel on
  // the grids of 05b's launcher, launch_split when rows are long (cols > kChunk) and too few to fill the GPU (rows
  // < the SM count), launch_packed for the 16-bit rows it fits, and 05a's kernel for x and y misaligned
  // differently (vec false) and for the longest rows (vec true).
  int sms = 0;
  const cudaError_t err = current_sm_count(&sms);
  if (err != cudaSuccess) return err;
  const bool same_alignment = reinterpret_cast<uintptr_t>(x) % 16 == reinterpret_cast<uintptr_t>(y) % 16;
  const int warp_blocks = (rows - 1) / kWarpRowsPerBlock + 1;
  const int warp_threads = kWarpRowsPerBlock * kWarpSize;

  if (!same_alignment) {
    softmax_vec_kernel<T><<<rows, kVecThreads, 0, stream>>>(x, y, cols, false);
  } else if (cols <= kWarpSize * 8) {
    softmax_warp_kernel<T, 8><<<warp_blocks, warp_threads, 0, stream>>>(x, y, rows, cols);
  } else if (cols <= kWarpSize * 16) {
    softmax_warp_kernel<T, 16><<<warp_blocks, warp_threads, 0, stream>>>(x, y, rows, cols);
  } else if (cols <= kWarpSize * 32) {
    softmax_warp_kernel<T, 32><<<warp_blocks, warp_threads, 0, stream>>>(x, y, rows, cols);
  } else if (cols > kChunk && rows < sms) {
    return launch_split<T>(x, y, rows, cols, stream);
  } else if (launch_packed(x, y, rows, cols, stream)) {
    // 16-bit rows of up to 65536 values: done (launch_packed returns false for fp32 or longer rows).
  } else if (cols <= kMaxThreads * kVals) {
    // Enough threads for ceil(cols / 32) values each, rounded up to whole warps. An unaligned row has at most
    // floor(cols / kN) full vectors and fewer than 2 kN edge elements, so it always fits too.
    const int threads = ((cols - 1) / kVals / kWarpSize + 1) * kWarpSize;
    softmax_block_kernel<T, kVals><<<rows, threads, 0, stream>>>(x, y, cols);
  } else {
    softmax_vec_kernel<T><<<rows, kVecThreads, 0, stream>>>(x, y, cols, true);
  }
  return cudaGetLastError();
}

// The bindings only see the templates' declarations, so the versions they call are compiled here: each step's
// launcher for float, __half and __nv_bfloat16.
template cudaError_t softmax_vec_forward<float>(const float*, float*, int, int, cudaStream_t);
template cudaError_t softmax_vec_forward<__half>(const __half*, __half*, int, int, cudaStream_t);
template cudaError_t softmax_vec_forward<__nv_bfloat16>(const __nv_bfloat16*, __nv_bfloat16*, int, int, cudaStream_t);
template cudaError_t softmax_regs_forward<float>(const float*, float*, int, int, cudaStream_t);
template cudaError_t softmax_regs_forward<__half>(const __half*, __half*, int, int, cudaStream_t);
template cudaError_t softmax_regs_forward<__nv_bfloat16>(const __nv_bfloat16*, __nv_bfloat16*, int, int, cudaStream_t);
template cudaError_t softmax_forward<float>(const float*, float*, int, int, cudaStream_t);
template cudaError_t softmax_forward<__half>(const __half*, __half*, int, int, cudaStream_t);
template cudaError_t softmax_forward<__nv_bfloat16>(const __nv_bfloat16*, __nv_bfloat16*, int, int, cudaStream_t);
