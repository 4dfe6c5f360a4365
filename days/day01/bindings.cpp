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
  // YOUR CODE HERE: check x, out (course::check_rowwise_args, float32 only); softmax_forward on the current stream
}

// TORCH_EXTENSION_NAME is set by the build (torch.utils.cpp_extension) so the module name matches the file
// Python imports.
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("softmax", &softmax, "Row softmax over the last dim of a 2-D float32 CUDA tensor, written into out",
        py::arg("x"), py::arg("out"));
}
