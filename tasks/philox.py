"""Attention dropout's keep mask, as common/philox.cuh draws it: Philox4x32-10 on the counter
(j // 4, i, b·H + h, offset) under the key (seed's low and high 32 bits), word j % 4 of the result, kept where
(word >> 8) · 2^-24 < 1 − p. The reference computes it here, in int64 torch arithmetic (any device), so that a
kernel's mask can be compared bit for bit.
"""
from __future__ import annotations

import torch

M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85
MASK32 = 0xFFFFFFFF


def philox4x32_10(c0, c1, c2, c3, k0: int, k1: int):
    """Ten rounds on int64 tensors (or ints) holding 32-bit words; returns the four output words."""
    for _ in range(10):
        hi0, lo0 = _mulhilo(M0, c0)  # m·x reaches 2^64: int64 would overflow, so the product is split
        hi1, lo1 = _mulhilo(M1, c2)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
        k0, k1 = (k0 + W0) & MASK32, (k1 + W1) & MASK32
    return c0, c1, c2, c3


def _mulhilo(m: int, x):
    """(high, low) 32-bit words of m·x for 32-bit m and x, without 64-bit overflow: x split into 16-bit halves."""
    xl, xh = x & 0xFFFF, x >> 16
    lo_part = m * xl  # < 2^48
    hi_part = m * xh  # < 2^48
    low = (lo_part + ((hi_part & 0xFFFF) << 16)) & MASK32
    high = (hi_part >> 16) + ((lo_part + ((hi_part & 0xFFFF) << 16)) >> 32)
    return high & MASK32, low


def keep_mask(seed: int, offset: int, b: int, h: int, n_q: int, n_k: int, p: float, device="cpu") -> torch.Tensor:
    """The kept elements, bool [B, H, N_q, N_k]."""
    bh = torch.arange(b * h, device=device, dtype=torch.int64).view(-1, 1, 1)
    i = torch.arange(n_q, device=device, dtype=torch.int64).view(1, -1, 1)
    j = torch.arange(n_k, device=device, dtype=torch.int64).view(1, 1, -1)
    shape = (b * h, n_q, n_k)
    c0 = (j >> 2).expand(shape)
    c1 = i.expand(shape)
    c2 = bh.expand(shape)
    c3 = torch.full(shape, offset & MASK32, device=device, dtype=torch.int64)
    words = philox4x32_10(c0, c1, c2, c3, seed & MASK32, (seed >> 32) & MASK32)
    lane = (j & 3).expand(shape)
    word = torch.where(lane == 0, words[0], torch.where(lane == 1, words[1], torch.where(lane == 2, words[2],
                                                                                          words[3])))
    u = (word >> 8).to(torch.float32) * (1.0 / 16777216.0)  # exact: 24 bits
    # 1 − p in fp32 arithmetic, as the kernel computes it (1.0f - p)
    bar = torch.tensor(1.0, dtype=torch.float32) - torch.tensor(p, dtype=torch.float32)
    return (u < bar.to(device)).view(b, h, n_q, n_k)
