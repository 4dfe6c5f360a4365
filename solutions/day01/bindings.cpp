// Day 01 bindings: make the CUDA launcher in softmax.cu callable from Python as `module.softmax(x, out)`.
//
// This file is compiled by the host C++ compiler, not nvcc: it sees PyTorch's tensor type and pybind11, while
// softmax.cu sees only raw pointers. The two meet at the launcher's plain C++ signature declared below.
// course_glue.h brings in three narrow PyTorch headers and the shared argument checks. Not <torch/extension.h>:
// on the H200 machine that header alone takes about 12 s to compile, the three narrow ones about 4 s.

#include "course_glue.h"

// Defined in softmax.cu; the linker joins the two object files.
cudaError_t softmax_forward(const float* x, float* y, int rows, int cols, cudaStream_t stream);

// The op writes into `out` (allocated by the caller) and returns nothing.
void softmax(at::Tensor x, at::Tensor out) {
  // BEGIN SOLUTION: check x, out (course::check_rowwise_args, float32 only); softmax_forward on the current stream
  // The kernel trusts its pointers completely, so every assumption it makes is checked here, on the host,
  // where a failure becomes a Python exception instead of a corrupted result or a crashed context.
  course::check_rowwise_args(x, out);  // CUDA, same device, 2-D, same shape and dtype, contiguous, int-sized
  TORCH_CHECK(x.scalar_type() == at::kFloat, "day01 softmax supports float32 only, got ", x.scalar_type());

  const int rows = static_cast<int>(x.size(0));
  const int cols = static_cast<int>(x.size(1));
  // PyTorch's current stream, not the default stream: the kernel is then ordered after whatever produced x and
  // before whatever reads out, exactly like a built-in op.
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  course::check_launch(softmax_forward(x.data_ptr<float>(), out.data_ptr<float>(), rows, cols, stream),
                       "softmax_forward");
  // END SOLUTION
}

// TORCH_EXTENSION_NAME is set by the build (torch.utils.cpp_extension) so the module name matches the file
// Python imports.
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("softmax", &softmax, "Row softmax over the last dim of a 2-D float32 CUDA tensor, written into out",
        py::arg("x"), py::arg("out"));
}
