// Day 19: ring attention on one GPU. The sequence is cut into R shards of `shard` rows (a multiple of the 64-row
// tile). Rank r, a group of `workers` resident thread blocks, owns query shard r and starts with key/value shard r.
// At step s it holds key/value shard j = (r - s) mod R: it forwards that shard to rank r + 1 (mod R) through a
// buffer in global memory, computes its queries against it, and merges the partial result into its running one.
// After R steps every rank has seen every shard, and no rank ever held more than two shards at once.
//
// What is given and what the day is about:
//   - The compute (attend_tile): day 10's FlashAttention-2 tile on CUDA cores, one 64-row query tile against the
//     rows of one key/value shard, returning the tile's partial output and logsumexp.
//   - The merge (merge_rows): day 10's online-softmax rule between shards: each query row's running max, sum and
//     unnormalized output live in an fp32 workspace between steps, and each step's partial folds into them.
//   - The protocol (the exercises): counters in global memory, a `full` and a `done` per rank and step. Each of
//     the producer's workers writes its slice of the shard into the consumer's slot, then counts one arrival on
//     the consumer's `full` of that step; the consumer waits for all `workers` arrivals before it reads. Each
//     worker of the consumer counts one arrival on its own `done` of the step when it has finished with the shard;
//     the producer waits for all of them before it overwrites that slot. Two slots per rank (double buffering) let
//     the producer write step s + 1 while its consumer still computes step s. One counter per step, not one
//     running count per rank: workers drift apart, and a running count of `workers · s` can be reached by fast
//     workers' step s + 1 arrivals while a slow worker's slice of step s is still being written (the stress mode
//     caught exactly that, the instructors' measured/NOTES.md).
//     Exercise 1 (ring_attention): the ring step, and the counters with __threadfence() and volatile reads.
//     Exercise 2 (ring_attention_acqrel): the counters with cuda::atomic_ref release/acquire at device scope.
//   - Co-residency: a rank spins until another rank has written, so every block of the grid must be resident at
//     once, or a spinning block can hold the SM its producer needs. The launch is cooperative
//     (cudaLaunchCooperativeKernel), which fails instead of starting a grid that cannot be co-resident, and the
//     number of workers comes from the occupancy calculator.
//   - Stress (the grader's): a nonzero `jitter` seed adds pseudo-random sleeps at the protocol's points and
//     reorders which blocks play which rank, so a race that a quiet GPU hides shows as wrong values.
// Shapes: q, k, v, o contiguous [B, H, N, d] (fp32, fp16 or bf16), lse fp32 [B, H, N], d = 64 or 128.

#include <cuda/atomic>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <type_traits>

#include "device_cache.h"    // allow_smem: cudaFuncSetAttribute for over 48 KiB of shared memory
#include "float_convert.cuh"  // to_float(v), from_float<T>(v)

namespace ring {

constexpr int kBr = 64;  // query rows per tile
constexpr int kBc = 64;  // key rows per tile; shards are a whole number of tiles
constexpr int kThreads = 256;
constexpr int kRowsPerThread = 4;
constexpr int kColsPerThread = 4;
constexpr int kPad = 4;
constexpr int kPStride = kBc + kPad;
constexpr int kChunk = 32;  // dot-product terms per partial sum (day 10's header says why)
static_assert(kThreads == 16 * 16 && kBr == 16 * kRowsPerThread && kBc == 16 * kColsPerThread, "16 x 16 threads");

template <int D>
struct Smem {
  static constexpr int kStride = D + kPad;
  static constexpr int kQ = 0;
  static constexpr int kKV = kQ + kBr * kStride;
  static constexpr int kP = kKV + kBc * kStride;
  static constexpr size_t kBytes = sizeof(float) * (kP + kBr * kPStride);
  static_assert(kBytes <= 99 * 1024, "over the 99 KiB a block of sm_86, sm_89 and sm_120 (grader/gpu_support.py)");
};

// -- one launch ---------------------------------------------------------------------------------------------------
// A shard as a rank sees it: K and V rows of every head, `rows` valid rows starting at global key `first`.
template <typename T>
struct Shard {
  const T* k;
  const T* v;
  size_t head_stride;  // elements between heads: n·D in q/k/v, shard·D in a slot
  int rows;
  int first;
};

template <typename T>
struct Args {
  const T* q;
  const T* k;
  const T* v;
  T* o;
  float* lse;
  float* o_acc;    // fp32 [bh][n][D]: the running unnormalized output O~ of every query row
  float* ml_acc;   // fp32 [bh][n][2]: its running max m (log2 units) and sum l
  T* slots;        // [ranks][2 slots][K, V][bh][shard][D]
  unsigned* full;  // [ranks][ranks]: full[r][s], arrivals of r's predecessor's workers that forwarded r's step s
  unsigned* done;  // [ranks][ranks]: done[r][s], arrivals of r's own workers that finished step s
  int bh, n, shard, ranks, workers;
  bool causal;
  unsigned jitter;  // 0: none; else the seed of the stress mode's sleeps and block order
  float qscale;     // log2(e) / sqrt(D)
};

// Which rank and worker this block plays. Without jitter, block b is rank b / workers: ranks in order, the way a
// naive grid would be scheduled. With jitter, the ranks are rotated so a different rank is dispatched first.
struct Role {
  int rank, worker;
};
template <typename T>
__device__ __forceinline__ Role role(const Args<T>& a) {
  const int rank = static_cast<int>(blockIdx.x) / a.workers;
  const int rotate = a.jitter ? static_cast<int>(a.jitter % static_cast<unsigned>(a.ranks)) : 0;
  return {(rank + rotate) % a.ranks, static_cast<int>(blockIdx.x) % a.workers};
}

template <typename T>
__device__ __forceinline__ int shard_rows(const Args<T>& a, int j) {
  return max(0, min(a.shard, a.n - j * a.shard));
}

// Shard j where it starts: in k and v themselves.
template <int D, typename T>
__device__ __forceinline__ Shard<T> home_shard(const Args<T>& a, int j) {
  const size_t row0 = static_cast<size_t>(j) * a.shard * D;
  return {a.k + row0, a.v + row0, static_cast<size_t>(a.n) * D, shard_rows(a, j), j * a.shard};
}

// Rank r's slot p (0 or 1), holding shard j.
template <int D, typename T>
__device__ __forceinline__ T* slot_base(const Args<T>& a, int r, int p) {
  const size_t elems = static_cast<size_t>(a.bh) * a.shard * D;  // one of K or V
  return a.slots + (static_cast<size_t>(r) * 2 + p) * 2 * elems;
}
template <int D, typename T>
__device__ __forceinline__ Shard<T> slot_shard(const Args<T>& a, int r, int p, int j) {
  T* base = slot_base<D>(a, r, p);
  return {base, base + static_cast<size_t>(a.bh) * a.shard * D, static_cast<size_t>(a.shard) * D, shard_rows(a, j),
          j * a.shard};
}

// -- the stress mode and the watchdog (given) ---------------------------------------------------------------------
__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// With a jitter seed, a pseudo-random sleep of 0 to 16 us at half of the protocol's points: producers publish
// late, consumers release late, ranks drift apart, so a step that reads or writes too early meets the wrong data.
__device__ __forceinline__ void stall(unsigned seed, Role me, int step, int where) {
  if (seed == 0) return;
  unsigned h = seed * 0x9E3779B1u ^ (me.rank * 0x85EBCA77u + me.worker * 0xC2B2AE3Du + step * 0x27D4EB2Fu + where);
  h ^= h >> 15;
  h *= 0x2C1B3C6Du;
  h ^= h >> 12;
  if (h & 1u) __nanosleep((h >> 1) % 16384u);
}

// A spin that sleeps between reads and gives up after kWatchdogNs: a grid whose blocks cannot all be resident, or
// a producer that never arrives, traps (an error the caller sees) instead of a GPU that never finishes.
constexpr unsigned long long kWatchdogNs = 10ull * 1000 * 1000 * 1000;
struct Backoff {
  unsigned long long start = 0;
  __device__ void pause() {
    __nanosleep(64);
    const unsigned long long now = global_ns();
    if (start == 0) {
      start = now;
    } else if (now - start > kWatchdogNs) {
      __trap();
    }
  }
};

// -- the protocol: exercise 1 (fences) and exercise 2 (acquire/release) -------------------------------------------
// Both are called by one thread of the block (block_arrive / block_wait below): `arrive` after a __syncthreads()
// that follows the block's last write (or read) of the shard, `wait` before a __syncthreads() that precedes the
// block's first read (or write) of it.
struct FenceFlags {
  // Count one arrival on *counter, after every write the block made before the barrier is visible to the GPU.
  __device__ static void arrive(unsigned* counter) {
    // YOUR CODE HERE: a fence, then the arrival
  }
  // Return once *counter >= target, with everything published before those arrivals visible to this block's reads.
  __device__ static void wait(unsigned* counter, unsigned target) {
    // YOUR CODE HERE: spin on a volatile read (backoff.pause() between reads), then a fence
  }
};

struct AcqRelFlags {
  __device__ static void arrive(unsigned* counter) {
    // YOUR CODE HERE: one release read-modify-write at device scope
  }
  __device__ static void wait(unsigned* counter, unsigned target) {
    // YOUR CODE HERE: spin on an acquire load at device scope
  }
};

// The block's side of the protocol (given): one thread talks to the counter, the barrier orders the others.
// `where` only seeds the stress mode's sleeps (stall): pass a different small constant at each call site.
template <class Flags, typename T>
__device__ __forceinline__ void block_wait(const Args<T>& a, unsigned* counter, unsigned target, Role me, int step,
                                           int where) {
  if (threadIdx.x == 0) {
    stall(a.jitter, me, step, where);
    Flags::wait(counter, target);
  }
  __syncthreads();
}
template <class Flags, typename T>
__device__ __forceinline__ void block_arrive(const Args<T>& a, unsigned* counter, Role me, int step, int where) {
  __syncthreads();
  if (threadIdx.x == 0) {
    stall(a.jitter, me, step, where);
    Flags::arrive(counter);
  }
}

// -- moving data (given) ------------------------------------------------------------------------------------------
// Plain loads, never __ldg: a slot is written during the kernel by other blocks, and the read-only (non-coherent)
// path may serve bytes older than the acquire that made the new ones visible.
template <typename T>
__device__ __forceinline__ float4 load4(const T* p, bool vec) {
  if constexpr (std::is_same_v<T, float>) {
    if (vec) return *reinterpret_cast<const float4*>(p);
  } else {
    if (vec) {
      const uint2 w = *reinterpret_cast<const uint2*>(p);
      T e[4];
      memcpy(e, &w, sizeof(w));
      return make_float4(to_float(e[0]), to_float(e[1]), to_float(e[2]), to_float(e[3]));
    }
  }
  return make_float4(to_float(p[0]), to_float(p[1]), to_float(p[2]), to_float(p[3]));
}

template <typename T>
__device__ __forceinline__ void store4(T* p, float4 x, bool vec) {
  if constexpr (std::is_same_v<T, float>) {
    if (vec) {
      *reinterpret_cast<float4*>(p) = x;
      return;
    }
  } else {
    if (vec) {
      const T e[4] = {from_float<T>(x.x), from_float<T>(x.y), from_float<T>(x.z), from_float<T>(x.w)};
      uint2 w;
      memcpy(&w, e, sizeof(w));
      *reinterpret_cast<uint2*>(p) = w;
      return;
    }
  }
  p[0] = from_float<T>(x.x);
  p[1] = from_float<T>(x.y);
  p[2] = from_float<T>(x.z);
  p[3] = from_float<T>(x.w);
}

// The rank's workers copy shard `src` (every head's valid rows of K and V) into `dst`, four elements per access,
// the rank's threads striding over it together.
template <int D, typename T>
__device__ __forceinline__ void forward(const Args<T>& a, const Shard<T>& src, const Shard<T>& dst, Role me, bool vec) {
  const size_t per_head = static_cast<size_t>(src.rows) * D / 4;  // groups of four
  const size_t groups = per_head * a.bh;
  const size_t stride = static_cast<size_t>(a.workers) * kThreads;
  T* dk = const_cast<T*>(dst.k);
  T* dv = const_cast<T*>(dst.v);
  for (size_t g = static_cast<size_t>(me.worker) * kThreads + threadIdx.x; g < groups; g += stride) {
    const size_t h = g / per_head, e = (g % per_head) * 4;
    const size_t from = h * src.head_stride + e, to = h * dst.head_stride + e;
    if constexpr (std::is_same_v<T, float>) {
      if (vec) {
        *reinterpret_cast<float4*>(dk + to) = *reinterpret_cast<const float4*>(src.k + from);
        *reinterpret_cast<float4*>(dv + to) = *reinterpret_cast<const float4*>(src.v + from);
        continue;
      }
    } else {
      if (vec) {
        *reinterpret_cast<uint2*>(dk + to) = *reinterpret_cast<const uint2*>(src.k + from);
        *reinterpret_cast<uint2*>(dv + to) = *reinterpret_cast<const uint2*>(src.v + from);
        continue;
      }
    }
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      dk[to + c] = src.k[from + c];
      dv[to + c] = src.v[from + c];
    }
  }
}

// -- the compute (given: day 10's tile) ---------------------------------------------------------------------------
template <int D>
struct TileIo {
  static constexpr int kGroups = kBc * D / 4 / kThreads;
};

template <typename T, int D>
__device__ __forceinline__ void fetch_tile(const T* src, int rows, float4 (&r)[TileIo<D>::kGroups], bool vec) {
#pragma unroll
  for (int g = 0; g < TileIo<D>::kGroups; ++g) {
    const int e = (threadIdx.x + g * kThreads) * 4;
    r[g] = (e / D < rows) ? load4(src + e, vec) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }
}

template <int D>
__device__ __forceinline__ void stash_tile(float* tile, const float4 (&r)[TileIo<D>::kGroups], float mul) {
#pragma unroll
  for (int g = 0; g < TileIo<D>::kGroups; ++g) {
    const int e = (threadIdx.x + g * kThreads) * 4;
    *reinterpret_cast<float4*>(tile + (e / D) * Smem<D>::kStride + e % D) =
        make_float4(r[g].x * mul, r[g].y * mul, r[g].z * mul, r[g].w * mul);
  }
}

__device__ __forceinline__ float component(const float4& v, int c) {
  return c == 0 ? v.x : c == 1 ? v.y : c == 2 ? v.z : v.w;
}
__device__ __forceinline__ float row_max(float x) {
#pragma unroll
  for (int offset = 8; offset > 0; offset /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  return x;
}
__device__ __forceinline__ float row_sum(float x) {
#pragma unroll
  for (int offset = 8; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

// Query rows q0 .. q0+63 of head h against the first `keys` rows of shard `src`: the unnormalized output acc,
// the running max m (log2 units) and this thread's share of the sum l, as day 10's loop leaves them.
template <typename T, int D>
__device__ __forceinline__ void attend_tile(const Args<T>& a, int h, int q0, const Shard<T>& src, int keys,
                                            float* smem, bool vec,
                            float (&acc)[kRowsPerThread][D / 16], float (&m)[kRowsPerThread],
                            float (&l)[kRowsPerThread]) {
  constexpr int kStride = Smem<D>::kStride;
  constexpr int kOCols = D / 16;
  float* Qs = smem + Smem<D>::kQ;
  float* KVs = smem + Smem<D>::kKV;
  float* Ps = smem + Smem<D>::kP;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int r0 = ty * kRowsPerThread;

  float4 staged[TileIo<D>::kGroups];
  fetch_tile<T, D>(a.q + (static_cast<size_t>(h) * a.n + q0) * D, a.n - q0, staged, vec);
  stash_tile<D>(Qs, staged, a.qscale);
#pragma unroll
  for (int r = 0; r < kRowsPerThread; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
#pragma unroll
    for (int c = 0; c < kOCols; ++c) acc[r][c] = 0.0f;
  }
  const T* kh = src.k + static_cast<size_t>(h) * src.head_stride;
  const T* vh = src.v + static_cast<size_t>(h) * src.head_stride;
#pragma unroll 1
  for (int kv0 = 0; kv0 < keys; kv0 += kBc) {
    fetch_tile<T, D>(kh + static_cast<size_t>(kv0) * D, keys - kv0, staged, vec);
    stash_tile<D>(KVs, staged, 1.0f);
    __syncthreads();
    float s[kRowsPerThread][kColsPerThread];
#pragma unroll
    for (int r = 0; r < kRowsPerThread; ++r)
#pragma unroll
      for (int b = 0; b < kColsPerThread; ++b) s[r][b] = 0.0f;
#pragma unroll 1
    for (int x0 = 0; x0 < D; x0 += kChunk) {
      float part[kRowsPerThread][kColsPerThread];
#pragma unroll
      for (int r = 0; r < kRowsPerThread; ++r)
#pragma unroll
        for (int b = 0; b < kColsPerThread; ++b) part[r][b] = 0.0f;
#pragma unroll
      for (int x = x0; x < x0 + kChunk; x += 4) {
        float4 kf[kColsPerThread];
#pragma unroll
        for (int b = 0; b < kColsPerThread; ++b)
          kf[b] = *reinterpret_cast<const float4*>(KVs + (tx + 16 * b) * kStride + x);
#pragma unroll
        for (int r = 0; r < kRowsPerThread; ++r) {
          const float4 qf = *reinterpret_cast<const float4*>(Qs + (r0 + r) * kStride + x);
#pragma unroll
          for (int b = 0; b < kColsPerThread; ++b) {
            part[r][b] = fmaf(qf.x, kf[b].x, part[r][b]);
            part[r][b] = fmaf(qf.y, kf[b].y, part[r][b]);
            part[r][b] = fmaf(qf.z, kf[b].z, part[r][b]);
            part[r][b] = fmaf(qf.w, kf[b].w, part[r][b]);
          }
        }
      }
#pragma unroll
      for (int r = 0; r < kRowsPerThread; ++r)
#pragma unroll
        for (int b = 0; b < kColsPerThread; ++b) s[r][b] += part[r][b];
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < kRowsPerThread; ++r) {
      const int i = q0 + r0 + r;
      float tile_max = -INFINITY;
#pragma unroll
      for (int b = 0; b < kColsPerThread; ++b) {
        const int jl = kv0 + tx + 16 * b;  // row in the shard
        if (jl >= keys || (a.causal && src.first + jl > i)) s[r][b] = -INFINITY;
        tile_max = fmaxf(tile_max, s[r][b]);
      }
      const float m_new = fmaxf(m[r], row_max(tile_max));
      const float ref = (m_new == -INFINITY) ? 0.0f : m_new;
      const float alpha = exp2f(m[r] - ref);
      m[r] = m_new;
      float sum = 0.0f;
#pragma unroll
      for (int b = 0; b < kColsPerThread; ++b) {
        const float p = exp2f(s[r][b] - ref);
        sum += p;
        Ps[(r0 + r) * kPStride + tx + 16 * b] = p;
      }
      l[r] = fmaf(l[r], alpha, sum);
#pragma unroll
      for (int c = 0; c < kOCols; ++c) acc[r][c] *= alpha;
    }
    // V is loaded after the softmax, not before it as in day 10: holding it in registers across the softmax
    // would take the ring's bookkeeping past 128 registers, and a second resident block hides the latency.
    fetch_tile<T, D>(vh + static_cast<size_t>(kv0) * D, keys - kv0, staged, vec);
    stash_tile<D>(KVs, staged, 1.0f);
    __syncthreads();
#pragma unroll 4
    for (int jj0 = 0; jj0 < kBc; jj0 += 4) {
      float4 pf[kRowsPerThread];
#pragma unroll
      for (int r = 0; r < kRowsPerThread; ++r) pf[r] = *reinterpret_cast<const float4*>(Ps + (r0 + r) * kPStride + jj0);
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) {
#pragma unroll
        for (int hh = 0; hh < D / 64; ++hh) {
          const float4 vf = *reinterpret_cast<const float4*>(KVs + (jj0 + jj) * kStride + 64 * hh + 4 * tx);
#pragma unroll
          for (int r = 0; r < kRowsPerThread; ++r) {
            const float p = component(pf[r], jj);
            acc[r][4 * hh + 0] = fmaf(p, vf.x, acc[r][4 * hh + 0]);
            acc[r][4 * hh + 1] = fmaf(p, vf.y, acc[r][4 * hh + 1]);
            acc[r][4 * hh + 2] = fmaf(p, vf.z, acc[r][4 * hh + 2]);
            acc[r][4 * hh + 3] = fmaf(p, vf.w, acc[r][4 * hh + 3]);
          }
        }
      }
    }
    __syncthreads();
  }
}

// -- the merge (given) --------------------------------------------------------------------------------------------
// Day 10's online-softmax rule, between shards instead of between key tiles: a row's running state is its max m
// (log2 units), its sum l and its unnormalized output O~, kept in the fp32 workspace between steps. The tile's
// partial (m_b, l_b, O~_b) merges as m = max(m_a, m_b), l = l_a·2^(m_a - m) + l_b·2^(m_b - m), and the same factors
// for O~. The first step of a row starts the state, the last writes o = O~ / l and lse = m·ln 2 + ln l.
// Why not keep (o, lse), normalized, as some ring implementations do: lse = m + log l is rounded to fp32 at every
// step, and with scores of standard deviation 30 (|lse| near 150, the grader's sharp probe) that rounding, about
// 1e-5, moves the mixing weights by as much; an fp32 case failed its 2e-5 tolerance by it (the instructors' measured/NOTES.md).
// Differences of m are exact or nearly, so the factors 2^(m_a - m) carry only exp2's own error.
template <typename T, int D>
__device__ __forceinline__ void merge_rows(const Args<T>& a, int h, int q0, bool first, bool last, bool vec,
                                           const float (&acc)[kRowsPerThread][D / 16], const float (&m)[kRowsPerThread],
                                           const float (&l)[kRowsPerThread]) {
  const int tx = threadIdx.x % 16, r0 = (threadIdx.x / 16) * kRowsPerThread;
  float2 ml_a[kRowsPerThread];  // (m, l) of the running state
#pragma unroll
  for (int r = 0; r < kRowsPerThread; ++r) {
    const int i = q0 + r0 + r;
    ml_a[r] = (first || i >= a.n) ? make_float2(-INFINITY, 0.0f)
                                  : reinterpret_cast<const float2*>(a.ml_acc)[static_cast<size_t>(h) * a.n + i];
  }
  __syncwarp();  // the row's 16 lanes have read its state before its lane 0 overwrites it
#pragma unroll
  for (int r = 0; r < kRowsPerThread; ++r) {
    const float l_b = row_sum(l[r]);  // every lane of the row takes part
    const int i = q0 + r0 + r;
    if (i >= a.n) continue;
    const float m_new = fmaxf(ml_a[r].x, m[r]);
    const float ref = (m_new == -INFINITY) ? 0.0f : m_new;  // no key seen yet: both factors 0
    const float fa = exp2f(ml_a[r].x - ref), fb = exp2f(m[r] - ref);
    const float l_new = fmaf(ml_a[r].y, fa, l_b * fb);
    const float out = last ? 1.0f / l_new : 1.0f;
    const size_t row = static_cast<size_t>(h) * a.n + i;
#pragma unroll
    for (int hh = 0; hh < D / 64; ++hh) {
      const int col = 64 * hh + 4 * tx;
      float4 x = make_float4(fb * acc[r][4 * hh], fb * acc[r][4 * hh + 1], fb * acc[r][4 * hh + 2],
                             fb * acc[r][4 * hh + 3]);
      float* acc_row = a.o_acc + row * D + col;
      if (!first) {
        const float4 old = *reinterpret_cast<const float4*>(acc_row);
        x = make_float4(fmaf(fa, old.x, x.x), fmaf(fa, old.y, x.y), fmaf(fa, old.z, x.z), fmaf(fa, old.w, x.w));
      }
      if (last) {
        store4(a.o + row * D + col, make_float4(x.x * out, x.y * out, x.z * out, x.w * out), vec);
      } else {
        *reinterpret_cast<float4*>(acc_row) = x;
      }
    }
    if (tx == 0) {
      if (last) {
        a.lse[row] = m_new * 0.69314718055994531f + logf(l_new);
      } else {
        reinterpret_cast<float2*>(a.ml_acc)[row] = make_float2(m_new, l_new);
      }
    }
  }
}

// Rank me.rank's share of step s: every (head, query tile) of its shard against shard j, worker w taking items
// w, w + workers, ... (the same items every step, so a row's running result is only ever touched by one block).
template <typename T, int D>
__device__ __forceinline__ void attend_shard(const Args<T>& a, Role me, const Shard<T>& src, int j, int s,
                                             float* smem, bool vec) {
  if (a.causal && j > me.rank) return;  // every key of shard j comes after every query of this shard
  const int q_first = me.rank * a.shard;
  const int tiles = (shard_rows(a, me.rank) + kBr - 1) / kBr;
  const bool first = s == 0, last = s == (a.causal ? me.rank : a.ranks - 1);
  for (int it = me.worker; it < a.bh * tiles; it += a.workers) {
    const int h = it / tiles, q0 = q_first + (it % tiles) * kBr;
    // Causal: no key past the tile's last query. Only shard j = rank (step 0) is cut; earlier shards are whole.
    const int keys = a.causal ? min(src.rows, q0 + kBr - src.first) : src.rows;
    float acc[kRowsPerThread][D / 16], m[kRowsPerThread], l[kRowsPerThread];
    attend_tile<T, D>(a, h, q0, src, keys, smem, vec, acc, m, l);
    merge_rows<T, D>(a, h, q0, first, last, vec, acc, m, l);
  }
}

// -- the kernels --------------------------------------------------------------------------------------------------
// Exercise 1 writes the ring; exercise 2 runs the same kernel with its own Flags.
// kVec: every tensor takes 4-element accesses (aligned base pointers); otherwise one element at a time. No
// register cap: day 10's tile alone fills 128 registers, and the ring's bookkeeping on top of it spilled under that
// cap, so one block of 8 warps runs per SM (the instructors' measured/NOTES.md).
template <typename T, int D, bool kVec, class Flags>
__global__ void __launch_bounds__(kThreads, 1) ring_kernel(const Args<T> a) {
  // YOUR CODE HERE: the ring: R steps of wait, forward, attend, release
}

// The same schedule and compute with every shard read where it lies: no slots, no counters. The overlap
// measurement's reference (the ring's time if communication were free).
template <typename T, int D, bool kVec>
__global__ void __launch_bounds__(kThreads, 1) local_kernel(const Args<T> a) {
  extern __shared__ float4 smem_raw[];
  const Role me = role(a);
  for (int s = 0; s < a.ranks; ++s) {
    const int j = (me.rank - s + a.ranks) % a.ranks;
    attend_shard<T, D>(a, me, home_shard<D>(a, j), j, s, reinterpret_cast<float*>(smem_raw), kVec);
  }
}

// -- launching (given) --------------------------------------------------------------------------------------------
struct Local {};  // the Flags argument that picks local_kernel

template <typename T, int D, bool kVec, class Flags>
constexpr auto kernel_for() {
  if constexpr (std::is_same_v<Flags, Local>) {
    return local_kernel<T, D, kVec>;
  } else {
    return ring_kernel<T, D, kVec, Flags>;
  }
}

template <typename T, int D, class Flags>
cudaError_t launch(Args<T> a, cudaStream_t stream) {
  constexpr size_t kSmem = Smem<D>::kBytes;
  // Four elements per access needs every base pointer aligned to four elements (rows are whole multiples of 4).
  const uintptr_t align = 4 * sizeof(T);
  const bool vec = ((reinterpret_cast<uintptr_t>(a.q) | reinterpret_cast<uintptr_t>(a.k) |
                     reinterpret_cast<uintptr_t>(a.v) | reinterpret_cast<uintptr_t>(a.o)) % align) == 0;
  void (*kernel)(const Args<T>) = vec ? kernel_for<T, D, true, Flags>() : kernel_for<T, D, false, Flags>();
  cudaError_t err = allow_smem(kernel, kSmem);
  if (err != cudaSuccess) return err;
  int device = 0, sms = 0, per_sm = 0;
  if ((err = cudaGetDevice(&device)) != cudaSuccess) return err;
  if ((err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device)) != cudaSuccess) return err;
  if ((err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, kSmem)) != cudaSuccess)
    return err;
  // Every block resident at once: at most per_sm · sms blocks, `workers` per rank; no more workers than items.
  const int resident = per_sm * sms;
  if (resident < a.ranks) return cudaErrorCooperativeLaunchTooLarge;
  const int items = a.bh * ((a.shard + kBr - 1) / kBr);
  a.workers = max(1, min(resident / a.ranks, items));
  void* params[] = {&a};
  return cudaLaunchCooperativeKernel(reinterpret_cast<void*>(kernel), dim3(a.ranks * a.workers), dim3(kThreads),
                                     params, kSmem, stream);
}

// Rows per shard for n rows over `ranks` ranks: ceil(n / ranks), rounded up to whole 64-row tiles.
inline int shard_rows_for(int n, int ranks) { return ((n + ranks - 1) / ranks + kBr - 1) / kBr * kBr; }

template <typename T, class Flags>
cudaError_t dispatch(const T* q, const T* k, const T* v, T* o, float* lse, float* o_acc, float* ml_acc, T* slots,
                     unsigned* counters, int bh, int n, int d, bool causal, int ranks, unsigned jitter,
                     cudaStream_t stream) {
  Args<T> a{q, k, v, o, lse, o_acc, ml_acc, slots, counters, counters + ranks * ranks, bh, n, 0,
            ranks, 1, causal, jitter, 0.0f};
  a.shard = shard_rows_for(n, ranks);
  a.qscale = 1.4426950408889634f / sqrtf(static_cast<float>(d));
  if (d == 64) return launch<T, 64, Flags>(a, stream);
  if (d == 128) return launch<T, 128, Flags>(a, stream);
  return cudaErrorInvalidValue;
}

}  // namespace ring

// The bindings size the slots by it.
int ring_attention_shard_rows(int n, int ranks) { return ring::shard_rows_for(n, ranks); }

// Exercise 1: the ring with FenceFlags.
template <typename T>
cudaError_t ring_attention_forward(const T* q, const T* k, const T* v, T* o, float* lse, float* o_acc,
                                   float* ml_acc, T* slots, unsigned* counters, int bh, int n, int d, bool causal,
                                   int ranks, unsigned jitter, cudaStream_t stream) {
  return ring::dispatch<T, ring::FenceFlags>(q, k, v, o, lse, o_acc, ml_acc, slots, counters, bh, n, d, causal,
                                             ranks, jitter, stream);
}

// Exercise 2: the same ring with AcqRelFlags.
template <typename T>
cudaError_t ring_attention_acqrel_forward(const T* q, const T* k, const T* v, T* o, float* lse, float* o_acc,
                                          float* ml_acc, T* slots, unsigned* counters, int bh, int n, int d,
                                          bool causal, int ranks, unsigned jitter, cudaStream_t stream) {
  cudaError_t err = cudaSuccess;
  // YOUR CODE HERE: launch the ring with AcqRelFlags (ring::dispatch)
  return err;
}

// The overlap reference: the same schedule with the shards already local.
template <typename T>
cudaError_t ring_attention_local_forward(const T* q, const T* k, const T* v, T* o, float* lse, float* o_acc,
                                         float* ml_acc, T* slots, unsigned* counters, int bh, int n, int d,
                                         bool causal, int ranks, unsigned jitter, cudaStream_t stream) {
  return ring::dispatch<T, ring::Local>(q, k, v, o, lse, o_acc, ml_acc, slots, counters, bh, n, d, causal, ranks,
                                        jitter, stream);
}

#define RING_INSTANTIATE(fn, T)                                                                                    \
  template cudaError_t fn<T>(const T*, const T*, const T*, T*, float*, float*, float*, T*, unsigned*, int, int, int, \
                             bool, int, unsigned, cudaStream_t);
RING_INSTANTIATE(ring_attention_forward, float)
RING_INSTANTIATE(ring_attention_forward, __half)
RING_INSTANTIATE(ring_attention_forward, __nv_bfloat16)
RING_INSTANTIATE(ring_attention_acqrel_forward, float)
RING_INSTANTIATE(ring_attention_acqrel_forward, __half)
RING_INSTANTIATE(ring_attention_acqrel_forward, __nv_bfloat16)
RING_INSTANTIATE(ring_attention_local_forward, float)
RING_INSTANTIATE(ring_attention_local_forward, __half)
RING_INSTANTIATE(ring_attention_local_forward, __nv_bfloat16)
