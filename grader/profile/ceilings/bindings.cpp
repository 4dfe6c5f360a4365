// Python side of the FFMA peak microbenchmark (grader/profile/ceilings/ffma_peak.cu). Self-contained: the grader
// does not depend on the course's headers. Three narrow headers instead of <torch/extension.h> keep the cold build
// of this file to a few seconds.
#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#include <torch/csrc/utils/pybind.h>

int ffma_per_thread_iter();
cudaError_t launch_ffma_peak(float* out, float x, float y, int iters, int blocks, int threads, cudaStream_t stream);

namespace {

// One launch of blocks x threads threads on PyTorch's current stream; out needs blocks * threads floats.
void ffma_peak(at::Tensor out, double x, double y, int64_t iters, int64_t blocks, int64_t threads) {
  TORCH_CHECK(out.is_cuda() && out.scalar_type() == at::kFloat && out.is_contiguous(), "out: contiguous CUDA float32");
  TORCH_CHECK(out.numel() >= blocks * threads, "out needs blocks * threads elements");
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  const cudaError_t err = launch_ffma_peak(static_cast<float*>(out.data_ptr()), static_cast<float>(x),
                                           static_cast<float>(y), static_cast<int>(iters), static_cast<int>(blocks),
                                           static_cast<int>(threads), stream);
  TORCH_CHECK(err == cudaSuccess, "ffma_peak_kernel launch failed: ", cudaGetErrorString(err));
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("ffma_peak", &ffma_peak, "FP32 FFMA peak microbenchmark: one launch", py::arg("out"), py::arg("x"),
        py::arg("y"), py::arg("iters"), py::arg("blocks"), py::arg("threads"));
  m.def("ffma_per_thread_iter", &ffma_per_thread_iter, "FMAs per thread per unit of iters");
}
