// Day 13, route 1: the kernel CuPy compiles at run time with NVRTC (softmax_cupy.py loads this file).
//
// One block per row, two passes over the row, eight loads in flight per thread:
//   pass 1: each thread keeps an online (max, sum) over its strided elements (an exp per element, and one more
//           per group of eight for the rescale); the block
//           merges the pairs with shuffles and one shared-memory step;
//   pass 2: out = exp(x - max) / sum, reading the row again (from L2 for all but the longest rows).
// The file includes no headers: NVRTC does not search the toolkit's include folder unless told to, so fp16 and
// bf16 are handled as raw 16-bit patterns with one PTX conversion each way (cvt), which is all cuda_fp16.h and
// cuda_bf16.h would do here. extern "C" keeps the kernel names unmangled for RawModule.get_function.

// Without math.h there is no INFINITY macro: -inf from its bit pattern.
__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }

// e^x as 2^(x·log2 e): one multiply and the hardware's exp2, where expf adds range reduction in software. Its
// relative error (a few 1e-7 for the arguments here, x <= 0) is well inside the fp32 tolerance.
__device__ __forceinline__ float exp_fast(float x) { return exp2f(x * 1.4426950408889634f); }

struct Half { unsigned short bits; };
struct BFloat16 { unsigned short bits; };

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(Half v) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.bits));
  return f;
}
__device__ __forceinline__ float to_float(BFloat16 v) { return __uint_as_float(static_cast<unsigned>(v.bits) << 16); }

__device__ __forceinline__ void store(float* p, float f) { *p = f; }
__device__ __forceinline__ void store(Half* p, float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  p->bits = h;
}
__device__ __forceinline__ void store(BFloat16* p, float f) {
  unsigned short h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  p->bits = h;
}

// (m, s) represents s * exp(m) terms: merging two is rescaling the smaller max's sum. A max of -inf means "no
// finite element yet" and contributes nothing (and must not produce -inf - -inf = NaN).
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
  const float mx = fmaxf(m, m2);
  if (mx == neg_inf()) return;
  s = (m == neg_inf() ? 0.0f : s * expf(m - mx)) + (m2 == neg_inf() ? 0.0f : s2 * expf(m2 - mx));
  m = mx;
}

// A group of values into a thread's own (m, s): the group's max first, then one rescale of s and one exp per
// value, with no branch that splits the warp. (Element by element with "if (v > m)", both sides of the branch
// run whenever the lanes disagree, and each has an exp: the kernel ends up limited by instructions, not memory.)
template <int N>
__device__ __forceinline__ void push(float& m, float& s, const float (&v)[N]) {
  float mx = m;
#pragma unroll
  for (int u = 0; u < N; ++u) mx = fmaxf(mx, v[u]);
  if (mx == neg_inf()) return;  // nothing finite yet
  s *= exp_fast(m - mx);        // m = -inf: 2^-inf = 0, and s was 0 anyway
#pragma unroll
  for (int u = 0; u < N; ++u) s += exp_fast(v[u] - mx);
  m = mx;
}

template <typename T>
__device__ void softmax_rows(const T* __restrict__ x, T* __restrict__ out, int cols) {
  const long long row = blockIdx.x;
  const T* xr = x + row * cols;
  T* yr = out + row * cols;
  // Contract: pass 1 fp32 online (m, s) with several loads in flight (push), warp shuffles, one shared step
  // (__shared__ part_m[32], part_s[32]); pass 2 re-reads the row and stores exp(x - m) / s as T.
  // YOUR CODE HERE: yr[:] = softmax(xr[:]); thread t owns columns t, t + blockDim.x, ... (blockDim.x: whole warps)
}

// blockDim.x is a multiple of 32, at most 1024; gridDim.x = rows.
extern "C" __global__ void softmax_rows_f32(const float* x, float* out, int cols) { softmax_rows(x, out, cols); }
extern "C" __global__ void softmax_rows_f16(const Half* x, Half* out, int cols) { softmax_rows(x, out, cols); }
extern "C" __global__ void softmax_rows_bf16(const BFloat16* x, BFloat16* out, int cols) {
  softmax_rows(x, out, cols);
}
