"""Attention dropout's random numbers: tasks/philox.py (the reference's mask) against Random123's known answers for
Philox4x32-10, and common/philox.cuh (the kernels' mask), built for the host here, against tasks/philox.py bit for
bit: the kernels and the reference draw the same mask."""
import shutil
import subprocess

import pytest
import torch

from tasks.philox import keep_mask, philox4x32_10
from tests.conftest import ROOT

KAT = [((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
       ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
       ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]


@pytest.mark.parametrize("ctr, key, want", KAT)
def test_the_reference_philox_gives_random123s_known_answers(ctr, key, want):
    assert philox4x32_10(*ctr, *key) == want
    as_tensors = philox4x32_10(*(torch.tensor([c], dtype=torch.int64) for c in ctr), *key)
    assert tuple(int(t) for t in as_tensors) == want


def test_the_mask_keeps_about_one_minus_p_and_depends_on_seed_offset_and_position():
    m = keep_mask(seed=7, offset=0, b=2, h=3, n_q=64, n_k=96, p=0.25)
    assert m.shape == (2, 3, 64, 96) and abs(m.float().mean().item() - 0.75) < 0.01
    assert not torch.equal(m, keep_mask(8, 0, 2, 3, 64, 96, 0.25))
    assert not torch.equal(m, keep_mask(7, 1, 2, 3, 64, 96, 0.25))
    assert not torch.equal(m[0, 0], m[0, 1]) and not torch.equal(m[0, 0, 0], m[0, 0, 1])
    assert keep_mask(7, 0, 2, 3, 64, 96, 0.0).all() and not keep_mask(7, 0, 2, 3, 64, 96, 1.0).any()


HOST = r"""
#include <cstdio>
#include "philox.cuh"
int main() {
  const philox::U32x4 r = philox::philox4x32_10(philox::U32x4{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}},
                                                0xa4093822u, 0x299f31d0u);
  std::printf("%08x %08x %08x %08x\n", r.v[0], r.v[1], r.v[2], r.v[3]);
  for (unsigned bh = 0; bh < 6; ++bh)
    for (unsigned i = 0; i < 37; ++i) {
      for (unsigned j = 0; j < 41; ++j) std::putchar(philox::keep(0x123456789abcull, 5, bh, i, j, 0.3f) ? '1' : '0');
      std::putchar('\n');
    }
}
"""


def test_the_kernels_philox_built_for_the_host_draws_the_references_mask(tmp_path):
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    (tmp_path / "host.cpp").write_text(HOST)
    exe = tmp_path / "host"
    subprocess.run([cxx, "-std=c++17", "-O2", "-I", str(ROOT / "common"), str(tmp_path / "host.cpp"), "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    lines = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines()
    assert lines[0] == "d16cfe09 94fdcceb 5001e420 24126ea1"
    got = torch.tensor([[c == "1" for c in line] for line in lines[1:]]).view(2, 3, 37, 41)
    assert torch.equal(got, keep_mask(0x123456789ABC, 5, 2, 3, 37, 41, 0.3))
