// Day 20: the fused FlashAttention-2 backward on tensor cores. The op of days 15-17 (from q, k, v, the forward's o
// and fp32 lse, and dout: dq, dk, dv; [B, H, N, d], the inputs possibly views (head_strides.h), the gradients
// contiguous, scale = 1/sqrt(d), d = 64 or 128, causal: query i sees keys j <= i), for __half and __nv_bfloat16:
// every product on mma.sync with fp32 accumulation, P and dS rounded to 16 bits where they enter a product (as
// FlashAttention-2 does). fp32 is day 17's.
//
// Changes vs day 17 (CUDA cores, fp32 tiles):
//   - The key-tile walk computes the TRANSPOSED score tiles, Sᵀ = K Qᵀ and dPᵀ = V dOᵀ (keys as rows), so that
//     Pᵀ and dSᵀ come out in the orientation of the A operands of dV += Pᵀ dO and dK += dSᵀ Q.
//   - Every product is split over the 8 warps as a 2-D grid of warp tiles (Sᵀ, dPᵀ: 32 keys x 32 queries; dK, dV:
//     32 keys x d/2; dQ: 32 queries x d/4), all through one helper, warp_mma, whose operands are swizzled shared-
//     memory tiles read with ldmatrix or ldmatrix.trans. Pᵀ and dSᵀ go to shared memory in 16 bits (one barrier),
//     and each warp's rows of dK and dV stay in its registers for the whole walk: no reduction across warps.
//   - dSᵀ = Pᵀ ∘ (dPᵀ − D), with the query's lse (as lse·log2 e, +inf past N) and D read from shared memory per
//     column.
//   - dQ (atomic version): dQ_tile = dS K from the dSᵀ already in shared memory, added into an fp32 workspace with
//     atomics: float2 atomics on sm_90 (one instruction per pair of columns), two scalar ones before. The pre-pass
//     that computes D also zeroes the workspace, and a last kernel scales and rounds it into dq.
//   - dQ (deterministic version): the key-tile walk without dQ, then a query-tile walk (the forward's loop
//     structure: each warp owns 16 queries, K and V tiles double-buffered) that recomputes S, P, dP and dS and
//     accumulates dQ = dS K in registers (dS packed is the A fragment). Two more N²·d products (7 instead of 5).
//   - Q, dO, lse and D of query tile i+1 are fetched (cp.async) while tile i is computed; two barriers per step.
//
// Changes for Hopper (optional, sm_90a; chosen at run time for aligned 16-bit tensors, else the walk above runs):
//   - The key-tile walk on wgmma: two warpgroups, 64 keys each, a block of 128 keys; K and V loaded once by TMA,
//     Q and dO tiles of 64 rows by TMA two stages ahead, waited on through mbarriers (no cp.async, no ldmatrix).
//   - Sᵀ and dPᵀ come out of wgmma (64 keys x 64 queries per warpgroup) straight into registers, where Pᵀ and dSᵀ
//     are computed and packed to 16 bits: they are the A operand of register-sourced wgmma for dV += Pᵀ dO and
//     dK += dSᵀ Q, so neither touches shared memory. Only the atomic version stores dSᵀ (swizzled) for dQ = dS K;
//     the deterministic version keeps its mma.sync query-tile walk for dQ.
//   - At d = 64 each warp keeps its 16 rows of K and V in registers for the whole walk (ldmatrix once), the A
//     operands of Sᵀ and dPᵀ: the walk is bound by its shared-memory reads (at d = 128 the registers are not there).
//   - At d = 128 a warp of the producer warpgroup (the storer) issues each step's bulk dQ reduce, and dSᵀ has two
//     buffers, so the two consumer warpgroups meet once a step instead of twice.
// Shared device helpers come from common/: ptx.cuh (ldmatrix, mma, cp.async), swizzle.cuh (the swizzle) and
// hopper.cuh (wgmma, TMA, mbarriers, the sm_90a probe), the same ones day 12's forward uses.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "float_convert.cuh"  // to_float(v), from_float<T>(v)
#include "head_strides.h"  // course::AttentionStrides: where each tensor's rows lie (the op takes views)
#include "hopper.cuh"  // wgmma, TMA, mbarriers and the sm_90a probe (day 12's forward uses the same)
#include "ptx.cuh"
#include "swizzle.cuh"  // ptx::swz, day 12's swizzle

namespace fa2_tc {

using ptx::swz;

// The key-tile walk: kBc keys per block, query tiles of kBr rows, 8 warps. Each product gives every warp a 2-D
// tile of its output (32 x 32 of Sᵀ and dPᵀ, 32 keys x D/2 of dK and dV, 32 queries x D/4 of dQ), so the operands
// a warp reads from shared memory are shared by twice as many mma as with a 16-row strip per warp.
template <int D>
struct KvCfg {
  static constexpr int kWarps = 8;
  static constexpr int kBc = 128;
  static constexpr int kBr = 64;
  static constexpr int kThreads = 32 * kWarps;
  // Shared memory (16-bit elements, then floats): K, V [kBc][D]; Q, dO [2][kBr][D]; Pᵀ, dSᵀ [kBc][kBr]; then
  // lse·log2 e and D [2][kBr] each.
  static constexpr int kK = 0, kV = kK + kBc * D, kQ = kV + kBc * D, kDO = kQ + 2 * kBr * D, kP = kDO + 2 * kBr * D;
  static constexpr int kDS = kP + kBc * kBr;
  static constexpr int kHalfs = kDS + kBc * kBr;
  static constexpr size_t kBytes = 2 * static_cast<size_t>(kHalfs) + 4 * sizeof(float) * kBr;
};

// The query-tile walk for dQ: kWarps warps x 16 queries, key tiles of kBc rows, double-buffered.
template <int D>
struct QCfg {
  static constexpr int kWarps = 4;
  static constexpr int kBr = 16 * kWarps;
  static constexpr int kBc = 64;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kQ = 0, kDO = kQ + kBr * D, kK = kDO + kBr * D, kV = kK + 2 * kBc * D;
  static constexpr size_t kBytes = 2 * static_cast<size_t>(kV + 2 * kBc * D);
};

constexpr float kLog2e = 1.4426950408889634f;  // log2(e): exponentials as ex2 (the given fetch scales lse by it)

// Given (day 12's tile loader, for the transposed walk's tiles): a kRows x D tile of a head (src = its first row,
// rows ld elements apart; rows >= rows_valid become zeros) into swizzled shared memory by kThreads threads. kVec:
// cp.async, 16 bytes per copy; otherwise 2-byte loads (tensors or rows not 16-byte aligned), stored before return
// (other threads still read the tile only after the walk's __syncthreads()).
template <typename T, int D, int kRows, int kThreads, bool kVec>
__device__ __forceinline__ void load_tile(T* dst, const T* src, long long ld, int rows_valid) {
  // cp.async with src-size 0 reads nothing but still takes a valid address: src. Chunk c of row r at swz<D>(r, c).
  constexpr int kChunks = kRows * D / 8;
  static_assert(kChunks % kThreads == 0, "whole steps");
  if constexpr (kVec) {
#pragma unroll
    for (int e = threadIdx.x; e < kChunks; e += kThreads) {
      const int r = e / (D / 8), c = e % (D / 8);
      const bool ok = r < rows_valid;
      ptx::cp_async16(ptx::smem_addr(dst + swz<D>(r, c)), ok ? src + r * ld + c * 8 : src, ok);
    }
  } else {
    // Not unrolled: this path runs while the walk's accumulators hold nearly every register.
#pragma unroll 1
    for (int e = threadIdx.x; e < kChunks; e += kThreads) {
      const int r = e / (D / 8), c = e % (D / 8);
      const bool ok = r < rows_valid;
      const uint16_t* s16 = reinterpret_cast<const uint16_t*>(src) + r * ld + c * 8;
      uint32_t* d32 = reinterpret_cast<uint32_t*>(dst + swz<D>(r, c));
#pragma unroll 1
      for (int x = 0; x < 4; ++x) d32[x] = ok ? s16[2 * x] | static_cast<uint32_t>(s16[2 * x + 1]) << 16 : 0u;
    }
  }
}

// Given: two adjacent 16-bit outputs (row, col), (row, col + 1) from fp32; 4-byte stores when the tensor is aligned.
template <typename T, bool kVec>
__device__ __forceinline__ void store_pair(T* dst, float lo, float hi) {
  if constexpr (kVec) {
    *reinterpret_cast<uint32_t*>(dst) = ptx::pack2<T>(lo, hi);
  } else {
    const uint32_t w = ptx::pack2<T>(lo, hi);
    reinterpret_cast<uint16_t*>(dst)[0] = static_cast<uint16_t>(w);
    reinterpret_cast<uint16_t*>(dst)[1] = static_cast<uint16_t>(w >> 16);
  }
}

// acc += A B for one warp, both operands in swizzled shared-memory tiles. The product is kMT m16 tiles x kNT n8
// tiles, acc[(mt · kNT + nt) · 4 + e] in the accumulator layout; the reduction runs over kK elements from k0.
// A's rows m0 .. m0 + 16·kMT are stored [m][k] (kATrans = false) or [k][m] (true) in a tile of row width WA; B's
// columns n0 .. n0 + 8·kNT are stored [n][k] (kBTrans = false) or [k][n] (true), row width WB. The stored
// orientation only changes the ldmatrix (.trans or not) and its addresses: one helper for all five products.
// Given: day 12's ldmatrix address patterns, with a fourth (A stored [k][m], .trans: dQ = dS K reads dS from dSᵀ).
template <typename T, int kMT, int kNT, int kK, bool kATrans, int WA, bool kBTrans, int WB>
__device__ __forceinline__ void warp_mma(float* acc, const T* a, int m0, const T* b, int n0, int k0) {
  static_assert(kNT % 2 == 0, "B fragments come in pairs of n8 tiles");
  const int lane = ptx::lane_id();  // not threadIdx.x % 32: see ptx.cuh
#pragma unroll
  for (int kk = 0; kk < kK / 16; ++kk) {
    const int kb = k0 + 16 * kk;
    uint32_t af[kMT][4];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      const int mb = m0 + 16 * mt;
      if constexpr (kATrans)
        ptx::ldmatrix_x4_trans(af[mt], ptx::smem_addr(a + swz<WA>(kb + lane % 8 + 8 * (lane / 16), mb / 8 + (lane / 8) % 2)));
      else
        ptx::ldmatrix_x4(af[mt], ptx::smem_addr(a + swz<WA>(mb + lane % 16, kb / 8 + lane / 16)));
    }
#pragma unroll
    for (int np = 0; np < kNT / 2; ++np) {
      const int nb = n0 + 16 * np;
      uint32_t bf[4];
      if constexpr (kBTrans)
        ptx::ldmatrix_x4_trans(bf, ptx::smem_addr(b + swz<WB>(kb + lane % 8 + 8 * ((lane / 8) % 2), nb / 8 + lane / 16)));
      else
        ptx::ldmatrix_x4(bf, ptx::smem_addr(b + swz<WB>(nb + lane % 8 + 8 * (lane / 16), kb / 8 + (lane / 8) % 2)));
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        ptx::mma16816<T>(acc + (mt * kNT + 2 * np) * 4, af[mt], bf[0], bf[1]);
        ptx::mma16816<T>(acc + (mt * kNT + 2 * np + 1) * 4, af[mt], bf[2], bf[3]);
      }
    }
  }
}

// acc[16][kCols] += A (16 x kK, packed 16-bit A fragments: regs 4kk .. 4kk+3 for k-step kk) times B, where B is
// rows k0 .. k0 + kK of a swizzled [.][D] tile in shared memory and the product's columns are B's columns
// c0 .. c0 + kCols (ldmatrix.trans: B's rows run along the reduction).
template <typename T, int D, int kK, int kCols>
__device__ __forceinline__ void warp_ab(float (&acc)[kCols / 2], const uint32_t (&a)[kK / 4], const T* b, int c0) {
  // YOUR CODE HERE: (step 20d) per 16 rows of B and 16 columns, ldmatrix.trans of B, two mma
}

template <typename T, int kCols>
__device__ __forceinline__ void pack(uint32_t (&out)[kCols / 4], const float (&acc)[kCols / 2]) {
  // YOUR CODE HERE: (step 20d) out[i] = acc[2i], acc[2i+1] as two 16-bit values
}

// D = rowsum(dO ∘ O), one warp per row (row = bh · n + i; delta and dq_acc are contiguous, o and dout where
// st.o and st.dout say); the atomic version's workspace row is zeroed here too (dq_acc may be null).
template <typename T, int D>
__global__ void __launch_bounds__(256) prep_kernel(const T* __restrict__ o, const T* __restrict__ dout,
                                                   float* __restrict__ delta, float* __restrict__ dq_acc, int n,
                                                   int heads, course::AttentionStrides st, int rows) {
  // YOUR CODE HERE: (step 20b) D[row] = Σ_c dout·o in fp32 (one warp per row; o and dout may not be 16-byte aligned: 2-byte loads); zero dq_acc's row when it is not null
}

// Step 20c: the atomic version's piece of dQ from one query tile of the walk, dQ_tile = dS K, added into dq_acc
// (fp32, [B·H, N, D]) with atomics: several key tiles add into the same rows. dSᵀ is in shared memory (swizzled,
// kBc keys x kBr queries), K as the walk loaded it. Warp (wq2, wd2) owns queries 32·wq2 .. of the tile and columns
// wd2·D/4 ..; head: the offset of this head's rows in dq_acc.
template <typename T, int D>
__device__ __forceinline__ void add_dq_tile(const T* DSs, const T* Ks, float* dq_acc, size_t head, int q0, int n,
                                            int wq2, int wd2, int lane) {
  // YOUR CODE HERE: (step 20c) 16 queries at a time: dq = dS K by warp_mma (dS read from dSᵀ, A stored [k][m]), then float2 atomics under `#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900`, two scalar ones otherwise (course.yaml also builds sm_80, where a float2 atomicAdd does not compile)
}

// The key-tile walk. One block per (batch·head, tile of kBc keys): blockIdx.x = bh · k_tiles + tile (tile 0 first:
// with a causal mask it sees the most query tiles). kAtomic: also adds dQ's pieces into dq_acc. Head bh = b · heads
// + h of q starts at q + st.q.start(bh, heads), its rows st.q.row apart (k, v, dout likewise); lse, delta, dk, dv
// and dq_acc are contiguous (head bh at bh · n rows).
template <typename T, int D, bool kVec, bool kAtomic>
__global__ void __launch_bounds__(KvCfg<D>::kThreads, 1)
    dkdv_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                const float* __restrict__ lse, const T* __restrict__ dout, const float* __restrict__ delta,
                T* __restrict__ dk, T* __restrict__ dv, float* __restrict__ dq_acc, int n, int heads,
                course::AttentionStrides st, int k_tiles, bool causal, float c, float scale) {
  // Given: the walk of days 16-17, on 16-bit tiles (K and V once; Q, dO, lse and D of the next query tile fetched
  // while this one is computed). Yours: the products and the elementwise steps inside it, and the stores.
  using Cfg = KvCfg<D>;
  constexpr int kBc = Cfg::kBc, kBr = Cfg::kBr, kThreads = Cfg::kThreads;
  extern __shared__ uint4 smem_raw[];
  T* const Ks = reinterpret_cast<T*>(smem_raw) + Cfg::kK;
  T* const Vs = reinterpret_cast<T*>(smem_raw) + Cfg::kV;
  T* const Qs = reinterpret_cast<T*>(smem_raw) + Cfg::kQ;
  T* const DOs = reinterpret_cast<T*>(smem_raw) + Cfg::kDO;
  T* const Ps = reinterpret_cast<T*>(smem_raw) + Cfg::kP;
  T* const DSs = reinterpret_cast<T*>(smem_raw) + Cfg::kDS;
  float* const Ls = reinterpret_cast<float*>(reinterpret_cast<T*>(smem_raw) + Cfg::kHalfs);  // [2][kBr]
  float* const Ds = Ls + 2 * kBr;                                                             // [2][kBr]

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int bh = blockIdx.x / k_tiles;
  const int k0 = (blockIdx.x % k_tiles) * kBc;
  const size_t head = static_cast<size_t>(bh) * n * D;  // dk, dv and dq_acc are contiguous
  const T* const qh = q + st.q.start(bh, heads);
  const T* const doh = dout + st.dout.start(bh, heads);
  const float* const lseh = lse + static_cast<size_t>(bh) * n;
  const float* const deltah = delta + static_cast<size_t>(bh) * n;
  const int i_begin = causal ? k0 / kBr : 0;  // query tiles before this one see none of the block's keys
  const int i_end = (n + kBr - 1) / kBr;
  // Warp tiles: Sᵀ/dPᵀ keys 32·ws .. (of the block's) x queries 32·wq ..; dK/dV keys 32·ws .. x columns wd·D/2 ..;
  // dQ queries 32·wq2 .. x columns wd2·D/4 ...
  const int ws = warp % 4, wq = warp / 4, wd = warp / 4, wq2 = warp % 2, wd2 = warp / 2;

  auto fetch = [&](int i, int buf) {  // Q, dO, lse·log2 e, D of query tile i into buffer buf
    const int q0 = i * kBr;
    load_tile<T, D, kBr, kThreads, kVec>(Qs + buf * kBr * D, qh + q0 * st.q.row, st.q.row, n - q0);
    load_tile<T, D, kBr, kThreads, kVec>(DOs + buf * kBr * D, doh + q0 * st.dout.row, st.dout.row, n - q0);
    for (int r = threadIdx.x; r < kBr; r += kThreads) {
      const bool ok = q0 + r < n;
      Ls[buf * kBr + r] = ok ? lseh[q0 + r] * kLog2e : INFINITY;  // p = 2^(s·c − lse·log2 e): 0 past N
      Ds[buf * kBr + r] = ok ? deltah[q0 + r] : 0.0f;
    }
  };

  load_tile<T, D, kBc, kThreads, kVec>(Ks, k + st.k.start(bh, heads) + k0 * st.k.row, st.k.row, n - k0);
  load_tile<T, D, kBc, kThreads, kVec>(Vs, v + st.v.start(bh, heads) + k0 * st.v.row, st.v.row, n - k0);
  if (i_begin < i_end) fetch(i_begin, 0);
  ptx::cp_async_commit();

  constexpr int kNTd = D / 2 / 8;          // n8 tiles of a warp's dK/dV columns
  float dk_acc[2 * kNTd * 4] = {}, dv_acc[2 * kNTd * 4] = {};  // 32 keys x D/2, accumulator layout

  for (int i = i_begin; i < i_end; ++i) {
    const int buf = (i - i_begin) & 1;
    const int q0 = i * kBr;
    ptx::cp_async_wait<0>();
    __syncthreads();  // tile i is in for every thread; every warp is done with tile i-1, its Pᵀ and dSᵀ
    if (i + 1 < i_end) fetch(i + 1, buf ^ 1);
    ptx::cp_async_commit();
    const T* const Qt = Qs + buf * kBr * D;
    const T* const DOt = DOs + buf * kBr * D;
    const float* const Lt = Ls + buf * kBr;
    const float* const Dt = Ds + buf * kBr;

    {
    // This warp's 32 keys x 32 queries of Sᵀ and dPᵀ, in the accumulator layout: element e of tile (mt, nt) is key
    // kw + 16·mt + lane/4 + 8·(e/2), query q0 + 32·wq + 8·nt + 2·(lane%4) + e%2.
    float s[32] = {}, dp[32] = {};
    // YOUR CODE HERE: (step 20a) Sᵀ = K Qᵀ into s: warp_mma over D, K's rows 32·ws .., Q's rows 32·wq ..
    // YOUR CODE HERE: (step 20b) dPᵀ = V dOᵀ into dp, as Sᵀ
    // P and dS, elementwise, then Pᵀ and dSᵀ to shared memory in 16 bits, 4 bytes per store.
    const int kw = k0 + 32 * ws;
    const bool edge = kw + 31 >= n || (causal && kw + 31 > q0 + 32 * wq);  // some key past N or above the diagonal
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        float* sp = s + (mt * 4 + nt) * 4;
        float* dt = dp + (mt * 4 + nt) * 4;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int col = 32 * wq + 8 * nt + 2 * (lane % 4) + (e & 1);
          // YOUR CODE HERE: (step 20a) sp[e] = P = 2^(s·c − Lt[col]) (Lt already holds lse·log2 e), 0 past N and above the diagonal (where edge)
          // YOUR CODE HERE: (step 20b) dt[e] = dS = P ∘ (dP − D), with P the fp32 sp[e] above (rounded only where it enters a product)
        }
        const int r = 32 * ws + 16 * mt + lane / 4, chunk = 4 * wq + nt, at = 2 * (lane % 4);
        // YOUR CODE HERE: (step 20a) Pᵀ's rows r and r + 8 of this tile to Ps (swz<kBr>, pack2)
        // YOUR CODE HERE: (step 20b) dSᵀ's to DSs, as Pᵀ's
      }
    }
    __syncthreads();  // Pᵀ and dSᵀ complete

    // 32 keys x D/2 per warp (rows 32·ws .., columns wd·D/2 ..), the reduction over the tile's queries.
    // YOUR CODE HERE: (step 20a) dV += Pᵀ dO (warp_mma, Pᵀ from Ps, dO stored [query][column])
    // YOUR CODE HERE: (step 20b) dK += dSᵀ Q, as dV
    if constexpr (kAtomic) add_dq_tile<T, D>(DSs, Ks, dq_acc, head, q0, n, wq2, wd2, lane);  // step 20c
  }
  ptx::cp_async_wait<0>();

  // This warp's rows of dK and dV; rows past N are not stored. Element x of tile (mt, nt) holds key kr, columns at
  // and at + 1 of the head.
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int nt = 0; nt < kNTd; ++nt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int kr = k0 + 32 * ws + 16 * mt + lane / 4 + 8 * h;
        if (kr >= n) continue;
        const int x = (mt * kNTd + nt) * 4 + 2 * h;
        const size_t at = head + static_cast<size_t>(kr) * D + wd * D / 2 + 8 * nt + 2 * (lane % 4);
        // YOUR CODE HERE: (step 20a) dV's pair, with store_pair
        // YOUR CODE HERE: (step 20b) dK's pair, times scale
      }
}

// The deterministic dQ: one block per (batch·head, tile of kBr queries), walking the key tiles; each warp owns 16
// queries and accumulates their dQ rows in registers. blockIdx.x = bh · q_tiles + (q_tiles - 1 - tile): with a
// causal mask the last query tiles see the most keys and run first. q, k, v, dout through st as in dkdv_kernel; dq
// contiguous.
template <typename T, int D, bool kVec>
__global__ void __launch_bounds__(QCfg<D>::kThreads)
    dq_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v, const float* __restrict__ lse,
              const T* __restrict__ dout, const float* __restrict__ delta, T* __restrict__ dq, int n, int heads,
              course::AttentionStrides st, int q_tiles, bool causal, float c, float scale) {
  // YOUR CODE HERE: (step 20d) per key tile (double-buffered): S = Q_w Kᵀ, dP = dO_w Vᵀ, dS (masked), dQ_w += dS K; then dq = scale · dQ_w
}

// dq = scale · dq_acc, rounded to T.
template <typename T>
__global__ void __launch_bounds__(256) round_kernel(const float* __restrict__ src, T* __restrict__ dst, size_t count,
                                                    float scale) {
  // YOUR CODE HERE: (step 20c) dst[i] = scale · src[i] rounded to T, grid-stride
}

// YOUR CODE HERE: optional, for Hopper: the key-tile walk on wgmma, tried first by your launcher: constants, Smem, issue_*
// YOUR CODE HERE: hopper_bwd, continued: the wgmma kernel's signature, set-up and prologue (TMA of K, V, the first tiles)
  // YOUR CODE HERE: hopper_bwd, continued: the walk over query tiles (Sᵀ, dPᵀ, P, dS; dV, dK, and dQ when kAtomic)
  // YOUR CODE HERE: hopper_bwd, continued: the stores of dK and dV, and launch<T, D> (false where the walk cannot run)

template <typename Kernel>
cudaError_t allow_smem(Kernel kernel, size_t bytes) {
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
}

// How dq is made: not at all (steps 20a and 20b: dV, then dK), by the walk's atomics then rounded (20c), or by
// the query-tile walk (20d).
enum class DqBy { kNone, kAtomics, kQueryWalk };

template <typename T, int D, bool kVec>
cudaError_t backward(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* dout, T* dq, T* dk,
                     T* dv, float* delta, float* dq_acc, int batch, int heads, int n,
                     const course::AttentionStrides& st, bool causal, DqBy dq_by, cudaStream_t stream) {
  [[maybe_unused]] const bool atomic = dq_by == DqBy::kAtomics;  // step 20c: the key-tile walk also adds dQ by atomics
  [[maybe_unused]] const float scale = 1.0f / sqrtf(static_cast<float>(D));
  [[maybe_unused]] const float c = kLog2e * scale;  // scores to log2 units: P = 2^(s·c − lse·log2 e)
  [[maybe_unused]] const int bh = batch * heads, rows = bh * n;
  [[maybe_unused]] cudaError_t err = cudaSuccess;
  // YOUR CODE HERE: (step 20a) prep_kernel on ⌈rows / 8⌉ blocks of 256 (its body is 20b's: until then D is unset, which dV never reads), dq_acc to zero only when atomic; return its launch error

  // The key-tile walk: on wgmma where the GPU, the image and the tensors allow it (the optional Hopper holes), else
  // on mma.sync.
  bool wgmma = false;
  // YOUR CODE HERE: hopper_bwd, continued: try the wgmma walk first, when kVec and FA20_HOPPER: wgmma = hopper_bwd::launch<T, D>(…), false (nothing launched) where it cannot run; return any error it sets
  if (!wgmma) {
    // YOUR CODE HERE: (step 20a) dkdv_kernel<T, D, kVec, atomic> on bh · ⌈n / kBc⌉ blocks of KvCfg<D>::kThreads with KvCfg<D>::kBytes of shared memory (allow_smem first), dq_acc passed only when atomic; return any error
  }
  if (dq_by == DqBy::kAtomics) {
    // YOUR CODE HERE: (step 20c) round_kernel over the rows · D sums of dq_acc into dq (times scale), 256 threads a block, at most 65535 · 8 blocks (it strides)
  }
  if (dq_by == DqBy::kQueryWalk) {
    // YOUR CODE HERE: (step 20d, optional) dq_kernel<T, D, kVec> on bh · ⌈n / QCfg<D>::kBr⌉ blocks of QCfg<D>::kThreads with QCfg<D>::kBytes (allow_smem first)
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t attention_bwd(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* dout, T* dq,
                          T* dk, T* dv, float* delta, float* dq_acc, int batch, int heads, int n, int d,
                          const course::AttentionStrides& st, bool causal, DqBy dq_by, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, float>) {
    return cudaErrorInvalidValue;  // the bindings send fp32 elsewhere (tensor cores take 16-bit inputs)
  } else {
    if (batch == 0 || heads == 0 || n == 0) return cudaSuccess;
    // 16-byte aligned rows in every tensor (start pointers and strides) let the tiles travel by cp.async;
    // otherwise 2-byte copies.
    const bool vec = ((reinterpret_cast<uintptr_t>(q) | reinterpret_cast<uintptr_t>(k) |
                       reinterpret_cast<uintptr_t>(v) | reinterpret_cast<uintptr_t>(dout) |
                       reinterpret_cast<uintptr_t>(dq) | reinterpret_cast<uintptr_t>(dk) |
                       reinterpret_cast<uintptr_t>(dv)) % 16) == 0 &&
                     st.rows16(sizeof(T));
    if (d == 64)
      return vec ? backward<T, 64, true>(q, k, v, o, lse, dout, dq, dk, dv, delta, dq_acc, batch, heads, n, st,
                                         causal, dq_by, stream)
                 : backward<T, 64, false>(q, k, v, o, lse, dout, dq, dk, dv, delta, dq_acc, batch, heads, n, st,
                                          causal, dq_by, stream);
    if (d == 128)
      return vec ? backward<T, 128, true>(q, k, v, o, lse, dout, dq, dk, dv, delta, dq_acc, batch, heads, n, st,
                                          causal, dq_by, stream)
                 : backward<T, 128, false>(q, k, v, o, lse, dout, dq, dk, dv, delta, dq_acc, batch, heads, n, st,
                                           causal, dq_by, stream);
    return cudaErrorInvalidValue;  // the bindings accept d = 64 and 128 only
  }
}

}  // namespace fa2_tc

// The launchers the bindings call (common/attention_bwd_binding.h): q, k, v, o and dout are [B, H, N, d] with the
// head strides in `st` (views are fine; columns contiguous), dq, dk, dv contiguous; delta is an fp32 [B, H, N]
// scratch for D, dq_acc an fp32 [B, H, N, d] one for the atomic version's dQ sums (nullptr for the others). Steps
// 20a and 20b leave dq as they found it.
template <typename T>
cudaError_t attention_bwd_tc_dkdv(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* dout,
                                  T* dq, T* dk, T* dv, float* delta, float* dq_acc, int batch, int heads, int n, int d,
                                  course::AttentionStrides st, bool causal, cudaStream_t stream) {
  return fa2_tc::attention_bwd(q, k, v, o, lse, dout, dq, dk, dv, delta, dq_acc, batch, heads, n, d, st, causal,
                               fa2_tc::DqBy::kNone, stream);
}

template <typename T>
cudaError_t attention_bwd_tc_atomic(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* dout,
                                    T* dq, T* dk, T* dv, float* delta, float* dq_acc, int batch, int heads, int n,
                                    int d, course::AttentionStrides st, bool causal, cudaStream_t stream) {
  return fa2_tc::attention_bwd(q, k, v, o, lse, dout, dq, dk, dv, delta, dq_acc, batch, heads, n, d, st, causal,
                               fa2_tc::DqBy::kAtomics, stream);
}

template <typename T>
cudaError_t attention_bwd_tc_deterministic(const T* q, const T* k, const T* v, const T* o, const float* lse,
                                           const T* dout, T* dq, T* dk, T* dv, float* delta, float* dq_acc, int batch,
                                           int heads, int n, int d, course::AttentionStrides st, bool causal,
                                           cudaStream_t stream) {
  return fa2_tc::attention_bwd(q, k, v, o, lse, dout, dq, dk, dv, delta, dq_acc, batch, heads, n, d, st, causal,
                               fa2_tc::DqBy::kQueryWalk, stream);
}

#define INSTANTIATE(T)                                                                                              \
  template cudaError_t attention_bwd_tc_dkdv<T>(const T*, const T*, const T*, const T*, const float*, const T*, T*,  \
                                                T*, T*, float*, float*, int, int, int, int, course::AttentionStrides, \
                                                bool, cudaStream_t);                                                 \
  template cudaError_t attention_bwd_tc_atomic<T>(const T*, const T*, const T*, const T*, const float*, const T*,  \
                                                  T*, T*, T*, float*, float*, int, int, int, int,                  \
                                                  course::AttentionStrides, bool, cudaStream_t);                   \
  template cudaError_t attention_bwd_tc_deterministic<T>(const T*, const T*, const T*, const T*, const float*,     \
                                                         const T*, T*, T*, T*, float*, float*, int, int, int, int, \
                                                         course::AttentionStrides, bool, cudaStream_t)
INSTANTIATE(float);
INSTANTIATE(__half);
INSTANTIATE(__nv_bfloat16);
