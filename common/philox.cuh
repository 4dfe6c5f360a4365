// philox.cuh: the counter-based random numbers of attention dropout (Philox4x32-10, Salmon et al., SC'11), and the
// keep mask built on them. A counter-based generator has no state: element (b, h, i, j) of the mask is a pure
// function of (seed, offset, b·H + h, i, j), so the forward and the backward (and tasks/philox.py's reference) draw
// the same bits in any order, any tiling, on any thread. Host and device: the host build is the CPU test's.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define PHILOX_FN __host__ __device__ __forceinline__
#else
#define PHILOX_FN inline
#endif

namespace philox {

struct U32x4 {
  uint32_t v[4];
};

PHILOX_FN void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}

// Ten rounds of the Philox S-box on a 128-bit counter under a 64-bit key; the key is bumped by the Weyl constants
// between rounds. Random123's known answers hold (the instructors' tests/test_philox.py).
PHILOX_FN U32x4 philox4x32_10(U32x4 ctr, uint32_t k0, uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kM0, ctr.v[0], hi0, lo0);
    mulhilo(kM1, ctr.v[2], hi1, lo1);
    ctr = U32x4{{hi1 ^ ctr.v[1] ^ k0, lo1, hi0 ^ ctr.v[3] ^ k1, lo0}};
    k0 += kW0;
    k1 += kW1;
  }
  return ctr;
}

// The counter of the four mask elements (bh, i, 4·(j/4)) … (bh, i, 4·(j/4) + 3): one Philox call gives a row's four
// neighbouring keys. `offset` moves a whole call's stream (PyTorch keeps a (seed, offset) pair per generator).
PHILOX_FN U32x4 counter(uint64_t offset, uint32_t bh, uint32_t i, uint32_t j) {
  return U32x4{{j >> 2, i, bh, static_cast<uint32_t>(offset)}};
}

// A uniform draw in [0, 1) with 24 bits, exact in fp32: (x >> 8) · 2^-24.
PHILOX_FN float uniform(uint32_t x) { return static_cast<float>(x >> 8) * (1.0f / 16777216.0f); }

// Whether element (bh, i, j) is kept at drop probability p: its draw is below 1 − p. (seed, offset) as PyTorch's.
PHILOX_FN bool keep(uint64_t seed, uint64_t offset, uint32_t bh, uint32_t i, uint32_t j, float p) {
  const U32x4 r = philox4x32_10(counter(offset, bh, i, j), static_cast<uint32_t>(seed),
                                static_cast<uint32_t>(seed >> 32));
  return uniform(r.v[j & 3]) < 1.0f - p;
}

}  // namespace philox
