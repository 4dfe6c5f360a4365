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
//   - The walk's tiles are chosen by the GPU's shared memory (smem_optin_bytes): where 161 KiB a block is not there
//     (d = 128 on sm_86, sm_89, sm_120), 64 keys on 4 warps with one buffer of Q and dO (80.5 KiB; three barriers
//     per step, the next tile fetched only once every warp is done with this one).
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

#include "device_cache.h"  // smem_optin_bytes (the launcher's tiles by the GPU's shared memory), allow_smem
#include "float_convert.cuh"  // to_float(v), from_float<T>(v)
#include "head_strides.h"  // course::AttentionStrides: where each tensor's rows lie (the op takes views)
#include "hopper.cuh"  // wgmma, TMA, mbarriers and the sm_90a probe (day 12's forward uses the same)
#include "ptx.cuh"
#include "swizzle.cuh"  // ptx::swz, day 12's swizzle

namespace fa2_tc {

using ptx::swz;

// The key-tile walk: kBc keys per block, query tiles of kBr rows. Each product gives every warp a 2-D tile of its
// output (32 x 32 of Sᵀ and dPᵀ, 32 keys x D/2 of dK and dV, 32 queries x D/4 of dQ), so the operands a warp reads
// from shared memory are shared by twice as many mma as with a 16-row strip per warp. The launcher picks the
// configuration by the GPU's shared memory: 128 keys on 8 warps, Q and dO double-buffered (97 KiB at d = 64, 161
// KiB at d = 128: an A100 or a Hopper part), else (kSmall: sm_86, sm_89, sm_120 at d = 128, 99 KiB a block) 64
// keys on 4 warps with one buffer of Q and dO (80.5 KiB), the same warp tiles.
template <int D, bool kSmall = false>
struct KvCfg {
  static constexpr int kWarps = kSmall ? 4 : 8;
  static constexpr int kBc = kSmall ? 64 : 128;
  static constexpr int kBr = 64;
  static constexpr int kStages = kSmall ? 1 : 2;  // buffers of Q, dO, lse and D
  static constexpr int kThreads = 32 * kWarps;
  // Shared memory (16-bit elements, then floats): K, V [kBc][D]; Q, dO [kStages][kBr][D]; Pᵀ, dSᵀ [kBc][kBr]; then
  // lse·log2 e and D [kStages][kBr] each.
  static constexpr int kK = 0, kV = kK + kBc * D, kQ = kV + kBc * D, kDO = kQ + kStages * kBr * D;
  static constexpr int kP = kDO + kStages * kBr * D;
  static constexpr int kDS = kP + kBc * kBr;
  static constexpr int kHalfs = kDS + kBc * kBr;
  static constexpr size_t kBytes = 2 * static_cast<size_t>(kHalfs) + 2 * kStages * sizeof(float) * kBr;
};
// The small walk fits the smallest opt-in of a GPU the course grades on (99 KiB a block: sm_86, sm_89, sm_120).
static_assert(KvCfg<64, true>::kBytes <= 99 * 1024 && KvCfg<128, true>::kBytes <= 99 * 1024, "small walk over 99 KiB");

// The query-tile walk for dQ: kWarps warps x 16 queries, key tiles of kBc rows, double-buffered.
template <int D>
struct QCfg {
  static constexpr int kWarps = 4;
  static constexpr int kBr = 16 * kWarps;
  static constexpr int kBc = 64;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kQ = 0, kDO = kQ + kBr * D, kK = kDO + kBr * D, kV = kK + 2 * kBc * D;
  static constexpr size_t kBytes = 2 * static_cast<size_t>(kV + 2 * kBc * D);
  static_assert(kBytes <= 99 * 1024, "over the 99 KiB a block of sm_86, sm_89 and sm_120 (grader/gpu_support.py)");
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
  // BEGIN SOLUTION: (step 20d) per 16 rows of B and 16 columns, ldmatrix.trans of B, two mma
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int kk = 0; kk < kK / 16; ++kk)
#pragma unroll
    for (int dp = 0; dp < kCols / 16; ++dp) {
      uint32_t bf[4];
      ptx::ldmatrix_x4_trans(bf, ptx::smem_addr(b + swz<D>(16 * kk + lane % 8 + 8 * ((lane / 8) % 2),
                                                           c0 / 8 + 2 * dp + lane / 16)));
      ptx::mma16816<T>(acc + 8 * dp, a + 4 * kk, bf[0], bf[1]);
      ptx::mma16816<T>(acc + 8 * dp + 4, a + 4 * kk, bf[2], bf[3]);
    }
  // END SOLUTION
}

template <typename T, int kCols>
__device__ __forceinline__ void pack(uint32_t (&out)[kCols / 4], const float (&acc)[kCols / 2]) {
  // BEGIN SOLUTION: (step 20d) out[i] = acc[2i], acc[2i+1] as two 16-bit values
#pragma unroll
  for (int i = 0; i < kCols / 4; ++i) out[i] = ptx::pack2<T>(acc[2 * i], acc[2 * i + 1]);
  // END SOLUTION
}

// D = rowsum(dO ∘ O), one warp per row (row = bh · n + i; delta and dq_acc are contiguous, o and dout where
// st.o and st.dout say); the atomic version's workspace row is zeroed here too (dq_acc may be null).
template <typename T, int D>
__global__ void __launch_bounds__(256) prep_kernel(const T* __restrict__ o, const T* __restrict__ dout,
                                                   float* __restrict__ delta, float* __restrict__ dq_acc, int n,
                                                   int heads, course::AttentionStrides st, int rows) {
  // BEGIN SOLUTION: (step 20b) D[row] = Σ_c dout·o in fp32 (one warp per row; o and dout may not be 16-byte aligned: 2-byte loads); zero dq_acc's row when it is not null
  const int row = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  const int bh = row / n, i = row % n;
  const T* orow = o + st.o.start(bh, heads) + i * st.o.row;
  const T* grow = dout + st.dout.start(bh, heads) + i * st.dout.row;
  float acc = 0.0f;
#pragma unroll
  for (int c = lane; c < D; c += 32) acc = fmaf(to_float(grow[c]), to_float(orow[c]), acc);
  acc += __shfl_xor_sync(0xffffffffu, acc, 16);
  acc += __shfl_xor_sync(0xffffffffu, acc, 8);
  acc += __shfl_xor_sync(0xffffffffu, acc, 4);
  acc += __shfl_xor_sync(0xffffffffu, acc, 2);
  acc += __shfl_xor_sync(0xffffffffu, acc, 1);
  if (lane == 0) delta[row] = acc;
  if (dq_acc != nullptr)
#pragma unroll
    for (int c = lane; c < D; c += 32) dq_acc[static_cast<size_t>(row) * D + c] = 0.0f;
  // END SOLUTION
}

// Step 20c: the atomic version's piece of dQ from one query tile of the walk, dQ_tile = dS K, added into dq_acc
// (fp32, [B·H, N, D]) with atomics: several key tiles add into the same rows. dSᵀ is in shared memory (swizzled,
// kBc keys x kBr queries), K as the walk loaded it. Warp (wq2, wd2) owns queries 32·wq2 .. of the tile and columns
// wd2·D/4 ..; head: the offset of this head's rows in dq_acc.
// Contract: per 16 queries (mt = 0, 1), warp_mma's m16n8 accumulators as the walk's dK and dV are laid out: this
// lane's dq[4·nt + e] is query q0 + 32·wq2 + 16·mt + lane / 4 + 8·(e / 2), column wd2·D/4 + 8·nt + 2·(lane % 4)
// + e % 2; rows >= n are not added; every element is one atomic add (or half of a float2 one) into dq_acc.
template <typename T, int D, bool kSmall>
__device__ __forceinline__ void add_dq_tile(const T* DSs, const T* Ks, float* dq_acc, size_t head, int q0, int n,
                                            int wq2, int wd2, int lane) {
  constexpr int kBc = KvCfg<D, kSmall>::kBc, kBr = KvCfg<D, kSmall>::kBr;
  // BEGIN SOLUTION: (step 20c) 16 queries at a time: dq = dS K by warp_mma (dS read from dSᵀ, A stored [k][m]), then float2 atomics under `#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900`, two scalar ones otherwise (course.yaml also builds sm_80, where a float2 atomicAdd does not compile)
  // 32 queries x D/4 per warp, 16 at a time (the walk's dK and dV accumulators hold half the registers); dS is
  // read from dSᵀ (A stored [k][m]), K as [k][n].
  constexpr int kNTq = D / 4 / 8;
#pragma unroll
  for (int mt = 0; mt < 2; ++mt) {
    float dq[kNTq * 4] = {};
    warp_mma<T, 1, kNTq, kBc, true, kBr, true, D>(dq, DSs, 32 * wq2 + 16 * mt, Ks, wd2 * D / 4, 0);
#pragma unroll
    for (int nt = 0; nt < kNTq; ++nt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int rr = q0 + 32 * wq2 + 16 * mt + lane / 4 + 8 * h;
        if (rr >= n) continue;
        const float* src = dq + nt * 4 + 2 * h;
        float* dst = dq_acc + head + static_cast<size_t>(rr) * D + wd2 * D / 4 + 8 * nt + 2 * (lane % 4);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
        atomicAdd(reinterpret_cast<float2*>(dst), make_float2(src[0], src[1]));
#else
        atomicAdd(dst, src[0]);
        atomicAdd(dst + 1, src[1]);
#endif
      }
  }
  // END SOLUTION
}

// The key-tile walk. One block per (batch·head, tile of kBc keys): blockIdx.x = bh · k_tiles + tile (tile 0 first:
// with a causal mask it sees the most query tiles). kAtomic: also adds dQ's pieces into dq_acc. Head bh = b · heads
// + h of q starts at q + st.q.start(bh, heads), its rows st.q.row apart (k, v, dout likewise); lse, delta, dk, dv
// and dq_acc are contiguous (head bh at bh · n rows).
template <typename T, int D, bool kVec, bool kAtomic, bool kSmall>
__global__ void __launch_bounds__(KvCfg<D, kSmall>::kThreads, 1)
    dkdv_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                const float* __restrict__ lse, const T* __restrict__ dout, const float* __restrict__ delta,
                T* __restrict__ dk, T* __restrict__ dv, float* __restrict__ dq_acc, int n, int heads,
                course::AttentionStrides st, int k_tiles, bool causal, float c, float scale) {
  // Given: the walk of days 16-17, on 16-bit tiles (K and V once; Q, dO, lse and D of the next query tile fetched
  // while this one is computed). Yours: the products and the elementwise steps inside it, and the stores.
  using Cfg = KvCfg<D, kSmall>;
  constexpr int kBc = Cfg::kBc, kBr = Cfg::kBr, kThreads = Cfg::kThreads, kStages = Cfg::kStages;
  extern __shared__ uint4 smem_raw[];
  T* const Ks = reinterpret_cast<T*>(smem_raw) + Cfg::kK;
  T* const Vs = reinterpret_cast<T*>(smem_raw) + Cfg::kV;
  T* const Qs = reinterpret_cast<T*>(smem_raw) + Cfg::kQ;
  T* const DOs = reinterpret_cast<T*>(smem_raw) + Cfg::kDO;
  T* const Ps = reinterpret_cast<T*>(smem_raw) + Cfg::kP;
  T* const DSs = reinterpret_cast<T*>(smem_raw) + Cfg::kDS;
  float* const Ls = reinterpret_cast<float*>(reinterpret_cast<T*>(smem_raw) + Cfg::kHalfs);  // [kStages][kBr]
  float* const Ds = Ls + kStages * kBr;                                                       // [kStages][kBr]

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
  // dQ queries 32·wq2 .. x columns wd2·D/4 .. (4 warps: each takes two column quarters, wd2 and wd2 + 2).
  constexpr int kKeyGroups = kBc / 32;
  const int ws = warp % kKeyGroups, wq = warp / kKeyGroups, wd = warp / kKeyGroups, wq2 = warp % 2, wd2 = warp / 2;

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
    const int buf = kStages == 2 ? (i - i_begin) & 1 : 0;
    const int q0 = i * kBr;
    if (kStages == 1 && i > i_begin) {  // one buffer: tile i comes in once every warp is done with tile i-1
      __syncthreads();
      fetch(i, 0);
      ptx::cp_async_commit();
    }
    ptx::cp_async_wait<0>();
    __syncthreads();  // tile i is in for every thread; every warp is done with tile i-1, its Pᵀ and dSᵀ
    if (kStages == 2 && i + 1 < i_end) fetch(i + 1, buf ^ 1);
    ptx::cp_async_commit();
    const T* const Qt = Qs + buf * kBr * D;
    const T* const DOt = DOs + buf * kBr * D;
    const float* const Lt = Ls + buf * kBr;
    const float* const Dt = Ds + buf * kBr;

    {
    // This warp's 32 keys x 32 queries of Sᵀ and dPᵀ, in the accumulator layout: element e of tile (mt, nt) is key
    // kw + 16·mt + lane/4 + 8·(e/2), query q0 + 32·wq + 8·nt + 2·(lane%4) + e%2.
    float s[32] = {}, dp[32] = {};
    // BEGIN SOLUTION: (step 20a) Sᵀ = K Qᵀ into s: warp_mma over D, K's rows 32·ws .., Q's rows 32·wq ..
    warp_mma<T, 2, 4, D, false, D, false, D>(s, Ks, 32 * ws, Qt, 32 * wq, 0);
    // END SOLUTION
    // BEGIN SOLUTION: (step 20b) dPᵀ = V dOᵀ into dp, as Sᵀ
    warp_mma<T, 2, 4, D, false, D, false, D>(dp, Vs, 32 * ws, DOt, 32 * wq, 0);
    // END SOLUTION
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
          // BEGIN SOLUTION: (step 20a) sp[e] = P = 2^(s·c − Lt[col]) (Lt already holds lse·log2 e), 0 past N and above the diagonal (where edge)
          float p = ptx::ex2(fmaf(sp[e], c, -Lt[col]));
          if (edge) {
            const int kr = kw + 16 * mt + lane / 4 + 8 * (e >> 1);
            if (kr >= n || (causal && kr > q0 + col)) p = 0.0f;
          }
          sp[e] = p;
          // END SOLUTION
          // BEGIN SOLUTION: (step 20b) dt[e] = dS = P ∘ (dP − D), with P the fp32 sp[e] above (rounded only where it enters a product)
          dt[e] = sp[e] * (dt[e] - Dt[col]);
          // END SOLUTION
        }
        const int r = 32 * ws + 16 * mt + lane / 4, chunk = 4 * wq + nt, at = 2 * (lane % 4);
        // BEGIN SOLUTION: (step 20a) Pᵀ's rows r and r + 8 of this tile to Ps (swz<kBr>, pack2)
        *reinterpret_cast<uint32_t*>(Ps + swz<kBr>(r, chunk) + at) = ptx::pack2<T>(sp[0], sp[1]);
        *reinterpret_cast<uint32_t*>(Ps + swz<kBr>(r + 8, chunk) + at) = ptx::pack2<T>(sp[2], sp[3]);
        // END SOLUTION
        // BEGIN SOLUTION: (step 20b) dSᵀ's to DSs, as Pᵀ's
        *reinterpret_cast<uint32_t*>(DSs + swz<kBr>(r, chunk) + at) = ptx::pack2<T>(dt[0], dt[1]);
        *reinterpret_cast<uint32_t*>(DSs + swz<kBr>(r + 8, chunk) + at) = ptx::pack2<T>(dt[2], dt[3]);
        // END SOLUTION
      }
    }
    __syncthreads();  // Pᵀ and dSᵀ complete

    // Step 20c: this tile's dQ pieces first (on 4 warps each warp takes two warps' columns). Before dV and dK rather
    // than after: at d = 128 the accumulators hold nearly every register, and this order spills nowhere.
    if constexpr (kAtomic)
      for (int part = 0; part < 8 / Cfg::kWarps; ++part)
        add_dq_tile<T, D, kSmall>(DSs, Ks, dq_acc, head, q0, n, wq2, wd2 + part * Cfg::kWarps / 2, lane);
    // 32 keys x D/2 per warp (rows 32·ws .., columns wd·D/2 ..), the reduction over the tile's queries.
    // BEGIN SOLUTION: (step 20a) dV += Pᵀ dO (warp_mma, Pᵀ from Ps, dO stored [query][column])
    warp_mma<T, 2, kNTd, kBr, false, kBr, true, D>(dv_acc, Ps, 32 * ws, DOt, wd * D / 2, 0);
    // END SOLUTION
    // BEGIN SOLUTION: (step 20b) dK += dSᵀ Q, as dV
    warp_mma<T, 2, kNTd, kBr, false, kBr, true, D>(dk_acc, DSs, 32 * ws, Qt, wd * D / 2, 0);
    // END SOLUTION
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
        // BEGIN SOLUTION: (step 20a) dV's pair, with store_pair
        store_pair<T, kVec>(dv + at, dv_acc[x], dv_acc[x + 1]);
        // END SOLUTION
        // BEGIN SOLUTION: (step 20b) dK's pair, times scale
        store_pair<T, kVec>(dk + at, scale * dk_acc[x], scale * dk_acc[x + 1]);
        // END SOLUTION
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
  // BEGIN SOLUTION: (step 20d) per key tile (double-buffered): S = Q_w Kᵀ, dP = dO_w Vᵀ, dS (masked), dQ_w += dS K; then dq = scale · dQ_w
  using Cfg = QCfg<D>;
  constexpr int kBc = Cfg::kBc, kBr = Cfg::kBr, kThreads = Cfg::kThreads;
  extern __shared__ uint4 smem_raw[];
  T* const Qs = reinterpret_cast<T*>(smem_raw) + Cfg::kQ;
  T* const DOs = reinterpret_cast<T*>(smem_raw) + Cfg::kDO;
  T* const Ks = reinterpret_cast<T*>(smem_raw) + Cfg::kK;
  T* const Vs = reinterpret_cast<T*>(smem_raw) + Cfg::kV;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int bh = blockIdx.x / q_tiles;
  const int q0 = (q_tiles - 1 - blockIdx.x % q_tiles) * kBr;
  const size_t head = static_cast<size_t>(bh) * n * D;  // dq is contiguous
  const T* const kh = k + st.k.start(bh, heads);
  const T* const vh = v + st.v.start(bh, heads);
  const int wrow = q0 + 16 * warp;
  const int row = wrow + lane / 4;  // this thread's queries: row and row + 8
  const int kv_end = causal ? min(n, q0 + kBr) : n;
  const int tiles = (kv_end + kBc - 1) / kBc;

  load_tile<T, D, kBr, kThreads, kVec>(Qs, q + st.q.start(bh, heads) + q0 * st.q.row, st.q.row, n - q0);
  load_tile<T, D, kBr, kThreads, kVec>(DOs, dout + st.dout.start(bh, heads) + q0 * st.dout.row, st.dout.row, n - q0);
  load_tile<T, D, kBc, kThreads, kVec>(Ks, kh, st.k.row, n);
  load_tile<T, D, kBc, kThreads, kVec>(Vs, vh, st.v.row, n);
  ptx::cp_async_commit();

  float l2[2], dlt[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = row + 8 * h;
    l2[h] = r < n ? lse[static_cast<size_t>(bh) * n + r] * kLog2e : INFINITY;
    dlt[h] = r < n ? delta[static_cast<size_t>(bh) * n + r] : 0.0f;
  }
  float acc[D / 2];
#pragma unroll
  for (int i = 0; i < D / 2; ++i) acc[i] = 0.0f;

  for (int t = 0; t < tiles; ++t) {
    const int kv0 = t * kBc;
    ptx::cp_async_wait<0>();
    __syncthreads();
    if (t + 1 < tiles) {
      load_tile<T, D, kBc, kThreads, kVec>(Ks + ((t + 1) & 1) * kBc * D, kh + (kv0 + kBc) * st.k.row, st.k.row,
                                           n - kv0 - kBc);
      load_tile<T, D, kBc, kThreads, kVec>(Vs + ((t + 1) & 1) * kBc * D, vh + (kv0 + kBc) * st.v.row, st.v.row,
                                           n - kv0 - kBc);
    }
    ptx::cp_async_commit();
    if (causal && kv0 > wrow + 15) continue;  // every key of the tile is above this warp's rows
    const T* const Kt = Ks + (t & 1) * kBc * D;
    const T* const Vt = Vs + (t & 1) * kBc * D;

    float s[kBc / 2] = {}, dp[kBc / 2] = {};
    warp_mma<T, 1, kBc / 8, D, false, D, false, D>(s, Qs, 16 * warp, Kt, 0, 0);
    warp_mma<T, 1, kBc / 8, D, false, D, false, D>(dp, DOs, 16 * warp, Vt, 0, 0);
    const bool edge = kv0 + kBc > n || (causal && kv0 + kBc - 1 > wrow);
#pragma unroll
    for (int j = 0; j < kBc / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int h = e >> 1;
        float p = ptx::ex2(fmaf(s[4 * j + e], c, -l2[h]));
        if (edge) {
          const int col = kv0 + 8 * j + 2 * (lane % 4) + (e & 1);
          if (col >= n || (causal && col > row + 8 * h)) p = 0.0f;
        }
        dp[4 * j + e] = p * (dp[4 * j + e] - dlt[h]);
      }
    uint32_t dsa[kBc / 4];
    pack<T, kBc>(dsa, dp);
    warp_ab<T, D, kBc, D>(acc, dsa, Kt, 0);  // dQ_w += dS K
  }
  ptx::cp_async_wait<0>();

  T* const dqh = dq + head;
#pragma unroll
  for (int j = 0; j < D / 8; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = row + 8 * h;
      if (r < n)
        store_pair<T, kVec>(dqh + static_cast<size_t>(r) * D + 8 * j + 2 * (lane % 4), scale * acc[4 * j + 2 * h],
                            scale * acc[4 * j + 2 * h + 1]);
    }
  // END SOLUTION
}

// dq = scale · dq_acc, rounded to T.
template <typename T>
__global__ void __launch_bounds__(256) round_kernel(const float* __restrict__ src, T* __restrict__ dst, size_t count,
                                                    float scale) {
  // BEGIN SOLUTION: (step 20c) dst[i] = scale · src[i] rounded to T, grid-stride
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    dst[i] = from_float<T>(scale * src[i]);
  // END SOLUTION
}

// The optional Hopper walk's schedule (given code reads them; the defaults are the instructors' schedule, each knob
// turns one of its steps off).
#ifndef FA20_WG_DQ_BULK
#define FA20_WG_DQ_BULK 1  // 0: the wgmma walk's dQ by each thread's float2 atomics instead of one bulk reduce-add a tile
#endif
#ifndef FA20_WG_PRODUCER
#define FA20_WG_PRODUCER 1  // 0: thread 0 of the consumers issues the wgmma walk's copies and all threads load lse and D
#endif
#ifndef FA20_WG_KV_REGS
#define FA20_WG_KV_REGS 1  // 0: Sᵀ and dPᵀ read K and V from shared memory at d = 64 too, as at d = 128
#endif
#ifndef FA20_WG_DQ_STORER
#define FA20_WG_DQ_STORER 1  // 0: at d = 128 too the consumers issue the bulk dQ reduce and meet twice a step
#endif

// ---------------------------------------------------------------------------------------------------------------
// Hopper (sm_90a): the key-tile walk on wgmma, chosen at run time as day 12 chooses its forward (a 9.0 GPU running
// the sm_90a image, 16-byte aligned tensors, a driver with TMA); everything else takes the mma.sync walk above.
// ---------------------------------------------------------------------------------------------------------------
// Optional (0 points): dK, dV and the atomic version's dQ as dkdv_kernel makes them, every product on wgmma. Given:
// the constants and the instructors' schedule behind the FA20_WG_* knobs (a producer warpgroup, K and V from
// registers at d = 64, dQ by bulk reduce-adds and a storer warp at d = 128), the shared memory, the kernel's
// signature and set-up (TMA copies counted in by mbarriers, as day 12's wgmma kernel), the stores of dK and dV,
// launch<T, D> and the sm_90a guard. Yours, in three holes: the wgmma products (issue_scores, issue_scores_rs,
// issue_grad), the walk over query tiles, and the call of hopper_bwd::launch in backward().
namespace hopper_bwd {

using namespace hopper;  // common/hopper.cuh

// Producer warpgroup (FA20_WG_PRODUCER), as day 12's forward: a third warpgroup, last, issues every TMA copy and
// loads lse and D, each stage once the consumers' "empty" mbarrier says their products are done with it, so neither
// rides on a consumer's step. It keeps 24 registers and gives the rest to the two consumer warpgroups (240 each:
// enough with the bulk dQ; the atomics' d = 128 walk, FA20_WG_DQ_BULK=0, needs more and ptxas spills it).
constexpr bool kProducer = FA20_WG_PRODUCER;
constexpr int kConsumers = 256;  // two warpgroups, each owning 64 of the block's keys
constexpr int kThreads = kConsumers + (kProducer ? 128 : 0);
constexpr int kProducerRegs = 24, kConsumerRegs = 240;  // setmaxnreg: multiples of 8
static_assert(!kProducer || 128 * kProducerRegs + kConsumers * kConsumerRegs <= hopper::launch_registers(kThreads),
              "the block's launch registers hold them");
// The atomic version's dQ: each thread's float2 atomics (0), or the tile staged in shared memory and added into
// dq_acc by one bulk reduce-add per query tile, issued by thread 0 and waited for only before its buffer is reused.
constexpr bool kDqBulk = FA20_WG_DQ_BULK;
constexpr int kBc = 128;
constexpr int kBr = 64;

// FA20_WG_KV_REGS (d = 64): Sᵀ = K Qᵀ and dPᵀ = V dOᵀ take K and V, fixed for the whole walk, from registers (each
// warp's 16 rows, loaded once by ldmatrix) instead of shared memory. The walk's wgmma read their operands from shared
// memory at about the rate it delivers them (Sᵀ, dPᵀ and dQ have both operands there, every product at n = 64), so
// the two A operands are a sixth of the step's shared-memory traffic; at d = 128 the 64 registers they need are not
// there.
template <int D>
constexpr bool kKvRegs = FA20_WG_KV_REGS && D == 64;

// FA20_WG_DQ_STORER (with the producer and the bulk dQ), as FlashAttention-3's storer warp: the consumers write a
// step's dQ tile into its staging buffer and arrive on that buffer's "full" mbarrier; a warp of the producer
// warpgroup waits on it, issues the bulk reduce-add, and once the engine has read the buffer arrives on its
// "empty" mbarrier, which the consumers wait on two steps later, before writing it again. dSᵀ gets two buffers, so
// the barrier that says both warpgroups' dSᵀ are in (sync 1) also says both are done with the other buffer's dQ
// product of the step before: the end-of-step barrier (sync 2), where both warpgroups met every step, goes.
// d = 128 only: there it measured 1-3% faster, at d = 64 0-2% slower (H200, the instructors' measured/NOTES.md).
template <int D>
constexpr bool kDqStorer = FA20_WG_DQ_STORER && D == 128 && kProducer && kDqBulk;

// Shared memory, bytes from a 1024-aligned base, every tile in the 128-byte-swizzled column-block layout
// (hopper.cuh): K, V [kBc][D]; Q, dO [2][kBr][D]; dSᵀ [kBc][kBr] (one column block; two with FA20_WG_DQ_STORER);
// lse·log2 e and D [2][kBr] floats each; mbarriers for K, V, Q[2], dO[2], with the producer the stages' "empty" [2],
// and with the storer dQ's "full" [2] and "empty" [2].
template <int D>
struct Smem {
  static constexpr int kK = 0;
  static constexpr int kV = kK + kBc * D * 2;
  static constexpr int kQTile = kBr * D * 2;
  static constexpr int kQ = kV + kBc * D * 2;
  static constexpr int kDO = kQ + 2 * kQTile;
  static constexpr int kDS = kDO + 2 * kQTile;
  static constexpr int kDSTile = kBc * kBr * 2;
  static constexpr int kL = kDS + kDSTile * (kDqStorer<D> ? 2 : 1);
  static constexpr int kDl = kL + 2 * kBr * 4;
  // FA20_WG_DQ_BULK: two fp32 [kBr][D] dQ tiles, row-major as dq_acc is, so one bulk reduce adds a whole tile.
  static constexpr int kDQ = kDl + 2 * kBr * 4;
  static constexpr int kDQTile = kBr * D * 4;
  static constexpr int kBar = kDQ + (kDqBulk ? 2 * kDQTile : 0);
  static constexpr int kBars = 6 + (kProducer ? 2 : 0) + (kDqStorer<D> ? 4 : 0);  // + dQ's full [2] and empty [2]
  static constexpr size_t kBytes = kBar + 8 * kBars + 1024;  // + room to align: 210 KiB (d = 128), 114 KiB (d = 64)
  static_assert(kBytes <= 227 * 1024, "the tiles must fit in an H100/H200 SM's shared memory");
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// Contract: each issues its wgmma without committing or waiting (the caller fences, commits and waits).
// issue_scores and issue_scores_rs write d[64 keys x 64 queries] = A Bᵀ over D (the first k-step overwrites d), A
// this warpgroup's 64 rows of K or V, from shared memory or from registers; issue_grad adds a 64-key x D tile into
// acc, its A (Pᵀ or dSᵀ) packed in registers, its B the query tile of dO or Q. Tiles are in the 128-byte-swizzled
// column-block layout above: [rows][64] blocks of 128-byte rows, K's and V's blocks kBc·128 bytes apart, Q's and
// dO's kBr·128. desc_sw128, wgmma_ss and wgmma_rs are hopper.cuh's (day 11).
// BEGIN SOLUTION: optional, for Hopper: the wgmma products (issue_scores, issue_scores_rs, issue_grad)
// The 64 x 64 score tile of this warpgroup, d[64 keys x 64 queries] = A B over D, both operands K-major: A = its 64
// rows of K (or V), B = the query tile of Q (or dO).
template <typename T, int D>
__device__ __forceinline__ void issue_scores(float (&d)[32], uint32_t a_base, uint32_t b_base) {
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const uint64_t da = desc_sw128(a_base + (kk / 4) * (kBc * 128) + (kk % 4) * 32, 16, 1024);
    const uint64_t db = desc_sw128(b_base + (kk / 4) * (kBr * 128) + (kk % 4) * 32, 16, 1024);
    if (kk == 0)
      wgmma_ss<T, 64, false, 0, 0>(d, da, db);
    else
      wgmma_ss<T, 64, true, 0, 0>(d, da, db);
  }
}

// The same tile with A (its 64 rows of K or V) from registers: kf[kk] is this warp's A fragment for columns
// 16 kk .. 16 kk + 15 (D = 64).
template <typename T, int D>
__device__ __forceinline__ void issue_scores_rs(float (&d)[32], const uint32_t (&kf)[D / 16][4], uint32_t b_base) {
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const uint64_t db = desc_sw128(b_base + (kk / 4) * (kBr * 128) + (kk % 4) * 32, 16, 1024);
    if (kk == 0)
      wgmma_rs<T, 64, 0, false>(d, kf[kk], db);
    else
      wgmma_rs<T, 64, 0, true>(d, kf[kk], db);
  }
}

// acc[64 keys x D] += Aᵀ-tile (registers: Pᵀ or dSᵀ packed) times the query tile B [kBr][D] (dO or Q), read
// N-major: each k-step is 16 query rows further, the column blocks kBr·128 bytes apart.
template <typename T, int D>
__device__ __forceinline__ void issue_grad(float (&acc)[D / 2], const uint32_t (&a)[16], uint32_t b_base) {
#pragma unroll
  for (int j = 0; j < kBr / 16; ++j) wgmma_rs<T, D>(acc, a + 4 * j, desc_sw128(b_base + j * 16 * 128, kBr * 128, 1024));
}
// END SOLUTION
#endif

// Given: the kernel's signature, set-up and prologue (the TMA copies of K, V and the first query tiles).
// One block per (batch·head, tile of kBc keys); warpgroup wg owns keys k0 + 64·wg ... Per query tile: Sᵀ and dPᵀ on
// wgmma (both operands from shared memory), P and dS on the CUDA cores, dV += Pᵀ dO and dK += dSᵀ Q on wgmma with
// Pᵀ, dSᵀ from registers; kAtomic: dSᵀ also to shared memory, and dQ_tile = dS K (both operands MN-major) added
// into dq_acc with float2 atomics. Tiles arrive by TMA, Q and dO two query tiles ahead (issued by thread 0, or with
// FA20_WG_PRODUCER by a third warpgroup, which also loads lse and D: 384 threads).
template <typename T, int D, bool kAtomic>
__global__ void __launch_bounds__(kThreads, 1)
    dkdv_wgmma_kernel(const float* __restrict__ lse, const float* __restrict__ delta, T* __restrict__ dk,
                      T* __restrict__ dv, float* __restrict__ dq_acc, int n, int heads, int k_tiles, bool causal,
                      float c, float scale, const __grid_constant__ CUtensorMap tm_q,
                      const __grid_constant__ CUtensorMap tm_k, const __grid_constant__ CUtensorMap tm_v,
                      const __grid_constant__ CUtensorMap tm_do) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using S = Smem<D>;
  extern __shared__ uint4 smem_raw[];
  const uint32_t raw = ptx::smem_addr(smem_raw);
  const uint32_t base = (raw + 1023) & ~1023u;
  unsigned char* const sbase = reinterpret_cast<unsigned char*>(smem_raw) + (base - raw);
  float* const Ls = reinterpret_cast<float*>(sbase + S::kL);
  float* const Dls = reinterpret_cast<float*>(sbase + S::kDl);

  const int wg = threadIdx.x / 128, warp = (threadIdx.x / 32) % 4, lane = ptx::lane_id();
  const int bh = blockIdx.x / k_tiles;
  const Head hd{bh % heads, bh / heads};  // TMA's coordinates of this head
  const int k0 = (blockIdx.x % k_tiles) * kBc;
  const int kw = k0 + 64 * wg;  // this warpgroup's first key
  const int i_begin = causal ? k0 / kBr : 0;
  const int i_end = (n + kBr - 1) / kBr;
  const float* const lseh = lse + static_cast<size_t>(bh) * n;
  const float* const deltah = delta + static_cast<size_t>(bh) * n;
  const uint32_t bar_k = base + S::kBar, bar_v = bar_k + 8;
  auto bar_q = [&](int st) { return bar_k + 16 + 8 * st; };
  auto bar_do = [&](int st) { return bar_k + 32 + 8 * st; };
  auto q_at = [&](int st) { return base + S::kQ + st * S::kQTile; };
  auto do_at = [&](int st) { return base + S::kDO + st * S::kQTile; };
  auto ds_at = [&](int st) { return S::kDS + (kDqStorer<D> ? st * S::kDSTile : 0); };  // bytes from base
  auto fetch_q = [&](int i) {  // thread 0 (or the producer's): Q and dO of query tile i into stage (i - i_begin) % 2
    const int st = (i - i_begin) & 1;
    tma_tile<D, kBr>(q_at(st), &tm_q, i * kBr, hd, bar_q(st));
    tma_tile<D, kBr>(do_at(st), &tm_do, i * kBr, hd, bar_do(st));
  };
  // lse·log2 e and D of query tile i (+inf and 0 past N), by the threads whose r = 0 .. kBr-1 (threadIdx.x, or
  // the producer's first 64).
  auto fetch_ld = [&](int i, int r) {
    const int st = (i - i_begin) & 1, q = i * kBr + r;
    if (r < kBr) {
      Ls[st * kBr + r] = q < n ? lseh[q] * kLog2e : INFINITY;
      Dls[st * kBr + r] = q < n ? deltah[q] : 0.0f;
    }
  };
  // Producer: stage st is free again once the 256 consumer threads have arrived on its "empty" barrier, after the
  // products of the step that read it; the producer waits for the phase of the stage's previous use u - 1.
  [[maybe_unused]] auto bar_empty = [&](int st) { return bar_k + 48 + 8 * st; };
  [[maybe_unused]] auto bar_dq_full = [&](int st) { return bar_k + 64 + 8 * st; };  // FA20_WG_DQ_STORER
  [[maybe_unused]] auto bar_dq_empty = [&](int st) { return bar_k + 80 + 8 * st; };
  // The consumers' barriers over the walk's shared tiles: the whole block, or with the producer (gone by then)
  // named barrier id over the 256 consumer threads: 1 (dSᵀ in), 2 (end of a step).
  auto consumers_sync = [&](int id) {
    if constexpr (kProducer)
      named_sync(id, kConsumers);
    else
      __syncthreads();
  };

  if constexpr (kProducer) {
    // Q's full barrier also counts the 64 plain arrivals of the lse/D writers (release: their stores are seen by
    // the consumers' wait), besides the TMA thread's arrive.expect_tx (that thread, r = 0, arrives twice).
    if (threadIdx.x == 0) {
      for (int b = 0; b < S::kBars; ++b)
        mbar_init(bar_k + 8 * b, b >= 10 ? 1 : b >= 6 ? kConsumers : (b == 2 || b == 3) ? 1 + kBr : 1);
      mbar_init_fence();
    }
    __syncthreads();  // barriers initialised before anyone waits on them: the block's last barrier
    if (threadIdx.x >= kConsumers) {
      setmaxnreg_dec<kProducerRegs>();
      const int r = threadIdx.x - kConsumers;
      if (r < kBr) {  // K and V once, then each query tile's Q, dO (thread r = 0), lse and D, stage by stage
        if (r == 0) {
          tma_tile<D, kBc>(base + S::kK, &tm_k, k0, hd, bar_k);
          tma_tile<D, kBc>(base + S::kV, &tm_v, k0, hd, bar_v);
        }
        for (int i = i_begin; i < i_end; ++i) {
          const int st = (i - i_begin) & 1, u = (i - i_begin) >> 1;
          if (u >= 1) mbar_wait(bar_empty(st), (u + 1) & 1);  // lse and D are overwritten too: every writer waits
          if (r == 0) fetch_q(i);
          fetch_ld(i, r);
          mbar_arrive(bar_q(st));
        }
      } else if (kDqStorer<D> && kAtomic && r == kBr) {  // the storer: each step's dQ tile into dq_acc, in step order
        for (int i = i_begin; i < i_end; ++i) {
          const int st = (i - i_begin) & 1, u = (i - i_begin) >> 1, q0 = i * kBr;
          mbar_wait(bar_dq_full(st), u & 1);
          bulk_reduce_add_f32(dq_acc + (static_cast<size_t>(bh) * n + q0) * D, base + S::kDQ + st * S::kDQTile,
                              static_cast<uint32_t>(min(kBr, n - q0) * D * 4));
          bulk_wait_read<0>();  // read out: the consumers may write the buffer again
          mbar_arrive(bar_dq_empty(st));
        }
        bulk_wait<0>();  // the last tiles are added before the block ends
      }
      return;  // nothing below waits for this warpgroup
    }
    setmaxnreg_inc<kConsumerRegs>();
  } else {
    if (threadIdx.x == 0) {
      for (int b = 0; b < 6; ++b) mbar_init(bar_k + 8 * b, 1);
      mbar_init_fence();
    }
    if (i_begin < i_end) fetch_ld(i_begin, threadIdx.x);
    __syncthreads();  // barriers initialised, tile i_begin's lse and D stored
    if (threadIdx.x == 0) {
      tma_tile<D, kBc>(base + S::kK, &tm_k, k0, hd, bar_k);
      tma_tile<D, kBc>(base + S::kV, &tm_v, k0, hd, bar_v);
      if (i_begin < i_end) fetch_q(i_begin);
      if (i_begin + 1 < i_end) fetch_q(i_begin + 1);
    }
  }
  mbar_wait(bar_k, 0);
  mbar_wait(bar_v, 0);

  float dk_acc[D / 2], dv_acc[D / 2];
#pragma unroll
  for (int x = 0; x < D / 2; ++x) dk_acc[x] = dv_acc[x] = 0.0f;
  const int key_lo = kw + 16 * warp + lane / 4;  // this thread's keys: key_lo and key_lo + 8
  const uint32_t k_wg = base + S::kK + wg * 64 * 128, v_wg = base + S::kV + wg * 64 * 128;
  // kKvRegs: this warp's 16 rows of K and V as A fragments (row-major tiles, 128-byte swizzle: chunk c of row r at
  // c ^ (r % 8)); lanes 0-15 address rows 0-15 at chunk 2 kk, lanes 16-31 the same rows at chunk 2 kk + 1.
  [[maybe_unused]] uint32_t kf[kKvRegs<D> ? D / 16 : 1][4], vf[kKvRegs<D> ? D / 16 : 1][4];
  if constexpr (kKvRegs<D>) {
    const int row = 16 * warp + lane % 16;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      const uint32_t at = row * 128 + (((2 * kk + lane / 16) ^ (row & 7)) << 4);
      ptx::ldmatrix_x4(kf[kk], k_wg + at);
      ptx::ldmatrix_x4(vf[kk], v_wg + at);
    }
  }

  // The walk, for each consumer warpgroup (its 64 keys; thread keys key_lo and key_lo + 8). Given above: K and V
  // have landed (k_wg, v_wg: this warpgroup's rows; kf, vf with kKvRegs<D>); query tile i's Q and dO arrive in
  // stage st = (i - i_begin) % 2 (q_at(st), do_at(st); wait on bar_q(st), bar_do(st), phase ((i - i_begin) / 2) % 2),
  // its lse·log2 e and D in Ls, Dls + st·kBr. Without the producer, the consumers fetch: fetch_ld(i + 1) before the
  // waits, fetch_q(i + 2) by thread 0 after the step's last barrier. With the producer: every consumer thread
  // mbar_arrive(bar_empty(st)) once the step's products are done with the stage (a stage never released leaves the
  // producer, and the block, waiting for ever). kAtomic: dSᵀ into ds_at(st), the dS K product after
  // consumers_sync(1), its tile by float2 atomics or (kDqBulk) staged at S::kDQ for bulk_reduce_add_f32 (issued by
  // thread 0 after consumers_sync(2), or by the storer: bar_dq_full, bar_dq_empty). fence_regs(x) (hopper.cuh)
  // before registers a pending wgmma writes or reads are touched.
  // BEGIN SOLUTION: hopper_bwd, continued: the walk over query tiles (Sᵀ, dPᵀ, P, dS; dV, dK, and dQ when kAtomic)
  for (int i = i_begin; i < i_end; ++i) {
    const int st = (i - i_begin) & 1, q0 = i * kBr;
    if (!kProducer && i + 1 < i_end)
      fetch_ld(i + 1, threadIdx.x);  // its stage was last read in step i - 1, which every thread has left
    mbar_wait(bar_q(st), ((i - i_begin) >> 1) & 1);
    mbar_wait(bar_do(st), ((i - i_begin) >> 1) & 1);

    float s[32], dp[32];
    wgmma_fence();
    if constexpr (kKvRegs<D>) {
      issue_scores_rs<T, D>(s, kf, q_at(st));
      wgmma_commit();
      issue_scores_rs<T, D>(dp, vf, do_at(st));
    } else {
      issue_scores<T, D>(s, k_wg, q_at(st));
      wgmma_commit();
      issue_scores<T, D>(dp, v_wg, do_at(st));
    }
    wgmma_commit();
    wgmma_wait<1>();
    fence_regs(s);
    const float* const Lt = Ls + st * kBr;
    const float* const Dt = Dls + st * kBr;
    const bool edge = kw + 63 >= n || (causal && kw + 63 > q0);
#pragma unroll
    for (int t = 0; t < 8; ++t)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int col = 8 * t + 2 * (lane % 4) + (e & 1);
        float p = ptx::ex2(fmaf(s[4 * t + e], c, -Lt[col]));
        if (edge) {
          const int key = key_lo + 8 * (e >> 1);
          if (key >= n || (causal && key > q0 + col)) p = 0.0f;
        }
        s[4 * t + e] = p;
      }
    wgmma_wait<0>();
    fence_regs(dp);
#pragma unroll
    for (int t = 0; t < 8; ++t)
#pragma unroll
      for (int e = 0; e < 4; ++e) dp[4 * t + e] = s[4 * t + e] * (dp[4 * t + e] - Dt[8 * t + 2 * (lane % 4) + (e & 1)]);
    uint32_t pa[16], da[16];
    pack<T, 64>(pa, s);
    pack<T, 64>(da, dp);
    if constexpr (kAtomic) {
      // dSᵀ rows of this thread into the [kBc][kBr] tile (one 128-byte row per key, chunk t ^ (row % 8)).
      unsigned char* const ds = sbase + ds_at(st);
      const int r = 64 * wg + 16 * warp + lane / 4;
#pragma unroll
      for (int t = 0; t < 8; ++t) {
        *reinterpret_cast<uint32_t*>(ds + r * 128 + ((t ^ (r & 7)) << 4) + 4 * (lane % 4)) = da[2 * t];
        *reinterpret_cast<uint32_t*>(ds + (r + 8) * 128 + ((t ^ ((r + 8) & 7)) << 4) + 4 * (lane % 4)) = da[2 * t + 1];
      }
    }
    fence_regs(dv_acc);
    fence_regs(dk_acc);
    wgmma_fence();
    issue_grad<T, D>(dv_acc, pa, do_at(st));
    issue_grad<T, D>(dk_acc, da, q_at(st));
    wgmma_commit();
    if constexpr (kAtomic) {
      fence_proxy_async();  // dSᵀ's st.shared -> wgmma's reads
      // Bulk dQ: the reduce issued from this step's buffer two steps ago must be done reading it.
      if (kDqBulk && !kDqStorer<D> && threadIdx.x == 0) bulk_wait_read<1>();
      consumers_sync(1);    // both warpgroups' dSᵀ rows are in
      // dQ_tile[64 queries x D] = dS K over all kBc keys, the columns split between the warpgroups: d = 128, a
      // column block of 64 each; d = 64, 32 columns each (half of the block's 128-byte rows: the descriptor starts
      // 64 bytes in, and the swizzle, applied to the address, still finds each element).
      constexpr int kN = D / 2;
      const int col0 = kN * wg;
      const uint32_t b_col = D == 128 ? wg * (kBc * 128) : wg * 64;
      float dq[kN / 2];
#pragma unroll
      for (int j = 0; j < kBc / 16; ++j) {
        const uint64_t dA = desc_sw128(base + ds_at(st) + 16 * j * 128, 8192, 1024);
        const uint64_t dB = desc_sw128(base + S::kK + b_col + 16 * j * 128, kBc * 128, 1024);
        if (j == 0)
          wgmma_ss<T, kN, false, 1, 1>(dq, dA, dB);
        else
          wgmma_ss<T, kN, true, 1, 1>(dq, dA, dB);
      }
      wgmma_commit();
      wgmma_wait<0>();
      fence_regs(dq);
      if constexpr (kDqBulk) {
        // This warpgroup's columns of the tile, row-major [kBr][D] (rows past N too: the reduce stops at N).
        // FA20_WG_DQ_STORER: the storer has had this buffer read out (its use two steps ago).
        if (kDqStorer<D> && i - i_begin >= 2) mbar_wait(bar_dq_empty(st), (((i - i_begin) >> 1) + 1) & 1);
        float* const dqs = reinterpret_cast<float*>(sbase + S::kDQ + st * S::kDQTile) + col0;
        const int r = 16 * warp + lane / 4;
#pragma unroll
        for (int t = 0; t < kN / 8; ++t)
#pragma unroll
          for (int h = 0; h < 2; ++h)
            *reinterpret_cast<float2*>(dqs + (r + 8 * h) * D + 8 * t + 2 * (lane % 4)) =
                make_float2(dq[4 * t + 2 * h], dq[4 * t + 2 * h + 1]);
        fence_proxy_async();  // st.shared -> the bulk engine's reads, after the barrier below (or the storer's wait)
        if constexpr (kDqStorer<D>) mbar_arrive(bar_dq_full(st));
      } else {
        float* const dqh = dq_acc + (static_cast<size_t>(bh) * n) * D + col0;
        const int qr = q0 + 16 * warp + lane / 4;
#pragma unroll
        for (int t = 0; t < kN / 8; ++t)
#pragma unroll
          for (int h = 0; h < 2; ++h)
            if (qr + 8 * h < n)
              atomicAdd(reinterpret_cast<float2*>(dqh + static_cast<size_t>(qr + 8 * h) * D + 8 * t + 2 * (lane % 4)),
                        make_float2(dq[4 * t + 2 * h], dq[4 * t + 2 * h + 1]));
      }
    } else {
      wgmma_wait<0>();
    }
    // Producer: this thread's products of step i are done with Q, dO (dQ's reads dSᵀ and K), and it has read lse, D.
    // Every consumer thread arrives: one lane's arrive would release only its own reads of lse and D.
    if (kProducer) mbar_arrive(bar_empty(st));
    fence_regs(dv_acc);
    fence_regs(dk_acc);
    fence_regs(pa);
    fence_regs(da);
    // Every product of step i has read Q, dO, dSᵀ: the stage may be refilled, dSᵀ rewritten. With the producer the
    // stage is the empty barrier's business, so without kAtomic nothing is left to wait for: the warpgroups may
    // drift apart (by less than two steps: the producer refills a stage only once all 256 threads are done with it).
    if (!kProducer || (kAtomic && !kDqStorer<D>)) consumers_sync(2);
    if (!kProducer && threadIdx.x == 0 && i + 2 < i_end) fetch_q(i + 2);
    if (kAtomic && kDqBulk && !kDqStorer<D> && threadIdx.x == 0)  // (bulk dQ: every thread's part of the tile is in)
      bulk_reduce_add_f32(dq_acc + (static_cast<size_t>(bh) * n + q0) * D, base + S::kDQ + st * S::kDQTile,
                          static_cast<uint32_t>(min(kBr, n - q0) * D * 4));
  }
  // END SOLUTION
  if (kAtomic && kDqBulk && !kDqStorer<D> && threadIdx.x == 0) bulk_wait<0>();  // the last tiles are added before the end

  // Given: dK = scale · Σ dSᵀ Q and dV; keys past N are not stored.
#pragma unroll
  for (int t = 0; t < D / 8; ++t)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int key = key_lo + 8 * h;
      if (key >= n) continue;
      const size_t at = (static_cast<size_t>(bh) * n + key) * D + 8 * t + 2 * (lane % 4);
      store_pair<T, true>(dk + at, scale * dk_acc[4 * t + 2 * h], scale * dk_acc[4 * t + 2 * h + 1]);
      store_pair<T, true>(dv + at, dv_acc[4 * t + 2 * h], dv_acc[4 * t + 2 * h + 1]);
    }
#else
  __trap();  // only the sm_90a image has this kernel; the launcher never picks it elsewhere
#endif
}

// Given: the walk on wgmma when this GPU and these tensors allow it (dkdv_wgmma_kernel<T, D, atomic> on
// bh · ⌈n / kBc⌉ blocks of kThreads with Smem<D>::kBytes, four TMA maps from the tensors' strides); false (nothing
// launched) otherwise; *err: the launch's error.
template <typename T, int D>
bool launch(const T* q, const T* k, const T* v, const T* dout, const float* lse, const float* delta, T* dk, T* dv,
            float* dq_acc, int batch, int heads, int n, const course::AttentionStrides& st, bool causal, bool atomic,
            float c, float scale, cudaStream_t stream, cudaError_t* err) {
  int optin = 0;  // the walk's shared memory, by the GPU's limit (GRADER_SMEM_OPTIN_KIB may lower it: device_cache.h)
  if (!available() || smem_optin_bytes(&optin) != cudaSuccess || static_cast<size_t>(optin) < Smem<D>::kBytes)
    return false;
  CUtensorMap tm_q{}, tm_k{}, tm_v{}, tm_do{};
  if (!(make_map(&tm_q, q, st.q, batch, heads, n, D, kBr) && make_map(&tm_do, dout, st.dout, batch, heads, n, D, kBr) &&
        make_map(&tm_k, k, st.k, batch, heads, n, D, kBc) && make_map(&tm_v, v, st.v, batch, heads, n, D, kBc)))
    return false;
  const int bh = batch * heads;
  const int k_tiles = (n + kBc - 1) / kBc;
  auto kernel = atomic ? dkdv_wgmma_kernel<T, D, true> : dkdv_wgmma_kernel<T, D, false>;
  *err = allow_smem(kernel, Smem<D>::kBytes);
  if (*err == cudaSuccess) {
    kernel<<<bh * k_tiles, kThreads, Smem<D>::kBytes, stream>>>(lse, delta, dk, dv, dq_acc, n, heads, k_tiles, causal,
                                                                c, scale, tm_q, tm_k, tm_v, tm_do);
    *err = cudaGetLastError();
  }
  return true;
}

}  // namespace hopper_bwd

// The key-tile walk on mma.sync in configuration KvCfg<D, kSmall> (backward() picks it by the GPU's shared memory).
template <typename T, int D, bool kVec, bool kSmall>
cudaError_t launch_walk(const T* q, const T* k, const T* v, const float* lse, const T* dout, const float* delta, T* dk,
                        T* dv, float* dq_acc, int bh, int heads, int n, const course::AttentionStrides& st,
                        bool causal, bool atomic, float c, float scale, cudaStream_t stream) {
  using Cfg = KvCfg<D, kSmall>;
  [[maybe_unused]] cudaError_t err = cudaSuccess;
  // BEGIN SOLUTION: (step 20a) dkdv_kernel<T, D, kVec, kAtomic, kSmall> (kAtomic: the runtime `atomic`, as a choice of two kernels) on bh · ⌈n / Cfg::kBc⌉ blocks of Cfg::kThreads with Cfg::kBytes of shared memory (allow_smem first; return its error), dq_acc passed only when atomic
  const int k_tiles = (n + Cfg::kBc - 1) / Cfg::kBc;
  auto kernel = atomic ? dkdv_kernel<T, D, kVec, true, kSmall> : dkdv_kernel<T, D, kVec, false, kSmall>;
  if ((err = allow_smem(kernel, Cfg::kBytes)) != cudaSuccess) return err;
  kernel<<<bh * k_tiles, Cfg::kThreads, Cfg::kBytes, stream>>>(q, k, v, lse, dout, delta, dk, dv,
                                                               atomic ? dq_acc : nullptr, n, heads, st, k_tiles,
                                                               causal, c, scale);
  // END SOLUTION
  return cudaGetLastError();
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
  // BEGIN SOLUTION: (step 20a) prep_kernel on ⌈rows / 8⌉ blocks of 256 (its body is 20b's: until then D is unset, which dV never reads), dq_acc to zero only when atomic; return its launch error
  prep_kernel<T, D><<<(rows + 7) / 8, 256, 0, stream>>>(o, dout, delta, atomic ? dq_acc : nullptr, n, heads, st, rows);
  if ((err = cudaGetLastError()) != cudaSuccess) return err;
  // END SOLUTION

  // The key-tile walk: on wgmma where the GPU, the image and the tensors allow it (the optional Hopper holes), else
  // on mma.sync.
  bool wgmma = false;
  // BEGIN SOLUTION: hopper_bwd, continued: try the wgmma walk first, when kVec and only once your walk is written (an empty walk leaves the given producer waiting for ever): wgmma = hopper_bwd::launch<T, D>(…), false (nothing launched) where it cannot run; return any error it sets
#ifndef FA20_HOPPER  // the instructors' switch for the timings: 0 never takes the wgmma walk (the mma.sync walk on Hopper)
#define FA20_HOPPER 1
#endif
  wgmma = kVec && FA20_HOPPER &&
          hopper_bwd::launch<T, D>(q, k, v, dout, lse, delta, dk, dv, dq_acc, batch, heads, n, st, causal, atomic, c,
                                   scale, stream, &err);
  if (err != cudaSuccess) return err;
  // END SOLUTION
  if (!wgmma) {  // 128 keys a block where the GPU's shared memory holds that walk, else 64 (KvCfg)
    int optin = 0;
    if ((err = smem_optin_bytes(&optin)) != cudaSuccess) return err;
    err = static_cast<size_t>(optin) >= KvCfg<D>::kBytes
              ? launch_walk<T, D, kVec, false>(q, k, v, lse, dout, delta, dk, dv, dq_acc, bh, heads, n, st, causal,
                                               atomic, c, scale, stream)
              : launch_walk<T, D, kVec, true>(q, k, v, lse, dout, delta, dk, dv, dq_acc, bh, heads, n, st, causal,
                                              atomic, c, scale, stream);
    if (err != cudaSuccess) return err;
  }
  if (dq_by == DqBy::kAtomics) {
    // BEGIN SOLUTION: (step 20c) round_kernel over the rows · D sums of dq_acc into dq (times scale), 256 threads a block, at most 65535 · 8 blocks (it strides)
    const size_t count = static_cast<size_t>(rows) * D;
    const unsigned blocks = static_cast<unsigned>(std::min<size_t>((count + 255) / 256, 65535u * 8));
    round_kernel<T><<<blocks, 256, 0, stream>>>(dq_acc, dq, count, scale);
    // END SOLUTION
  }
  if (dq_by == DqBy::kQueryWalk) {
    // BEGIN SOLUTION: (step 20d, optional) dq_kernel<T, D, kVec> on bh · ⌈n / QCfg<D>::kBr⌉ blocks of QCfg<D>::kThreads with QCfg<D>::kBytes (allow_smem first)
    auto qkernel = dq_kernel<T, D, kVec>;
    if ((err = allow_smem(qkernel, QCfg<D>::kBytes)) != cudaSuccess) return err;
    const int q_tiles = (n + QCfg<D>::kBr - 1) / QCfg<D>::kBr;
    qkernel<<<bh * q_tiles, QCfg<D>::kThreads, QCfg<D>::kBytes, stream>>>(q, k, v, lse, dout, delta, dq, n, heads,
                                                                         st, q_tiles, causal, c, scale);
    // END SOLUTION
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
