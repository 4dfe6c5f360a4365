"""GPU test: common/device_cache.h's allow_smem refuses, as the smaller GPU would, a dynamic shared-memory request
over the opt-in that GRADER_SMEM_OPTIN_KIB simulates (the GPU suite's 99 KiB and A100 classes on an H100), and grants
one within it, and the H100's own opt-in when nothing is simulated. Every launcher of days 10-20 asks through it."""
import os
import subprocess

import pytest

from grader.check.compile_check import nvcc_path
from tests.conftest import ROOT

pytestmark = pytest.mark.gpu

PROGRAM = r"""
#include <cstdio>
#include <cstdlib>
#include "device_cache.h"

__global__ void fill(int* out, int words) {
  extern __shared__ int tile[];
  for (int i = threadIdx.x; i < words; i += blockDim.x) tile[i] = i;
  __syncthreads();
  if (threadIdx.x == 0) *out = tile[words - 1];
}

// argv[1]: KiB asked for. Prints the error's name and, when granted, whether a launch with that much worked.
int main(int argc, char** argv) {
  const size_t bytes = static_cast<size_t>(std::atoi(argv[1])) * 1024;
  int* out = nullptr;
  cudaMalloc(&out, sizeof(int));
  const cudaError_t err = allow_smem(fill, bytes);
  std::printf("%s", cudaGetErrorName(err));
  if (err == cudaSuccess) {
    const int words = static_cast<int>(bytes / sizeof(int));
    fill<<<1, 256, bytes>>>(out, words);
    int got = -1;
    const cudaError_t launched = cudaMemcpy(&got, out, sizeof(int), cudaMemcpyDeviceToHost);
    std::printf(" %s", launched == cudaSuccess && got == words - 1 ? "launched" : cudaGetErrorName(launched));
  }
  std::printf("\n");
  return 0;
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    d = tmp_path_factory.mktemp("allow-smem")
    (d / "p.cu").write_text(PROGRAM)
    subprocess.run([nvcc_path(), "-std=c++17", "-arch=native", "-I", str(ROOT / "common"), "p.cu", "-o", "p"],
                   cwd=d, check=True, capture_output=True, text=True)
    return d / "p"


def ask(program, kib: int, optin_kib: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "GRADER_SMEM_OPTIN_KIB"}
    if optin_kib is not None:
        env["GRADER_SMEM_OPTIN_KIB"] = optin_kib
    return subprocess.run([str(program), str(kib)], env=env, capture_output=True, text=True, check=True).stdout.strip()


def test_a_request_over_the_simulated_opt_in_is_refused_as_that_gpu_refuses_it(program):
    assert ask(program, 100, "99") == "cudaErrorInvalidValue"
    assert ask(program, 164, "163") == "cudaErrorInvalidValue"


def test_a_request_within_the_simulated_opt_in_is_granted_and_launches(program):
    assert ask(program, 99, "99") == "cudaSuccess launched"
    assert ask(program, 60, "99") == "cudaSuccess launched"


def test_without_a_simulated_gpu_the_gpus_own_opt_in_decides(program):
    import torch

    optin_kib = torch.cuda.get_device_properties(0).shared_memory_per_block_optin // 1024
    assert ask(program, optin_kib, None) == "cudaSuccess launched"
    assert ask(program, optin_kib + 1, None) == "cudaErrorInvalidValue"
