// Day 05 bindings: provided, nothing to fill in. One op per step of the day, all with day 03's interface
// (out = softmax(x, dim=-1)): softmax_vec (05a), softmax_regs (05b) and softmax (05c). The dtype dispatch and the
// launch on PyTorch's current stream are common/softmax_binding.h's, shared by days 03 to 05; this file names the
// ops for Python.

#include "softmax_binding.h"

// Declared here like softmax_forward (softmax_binding.h), defined and instantiated in softmax.cu.
template <typename T>
cudaError_t softmax_vec_forward(const T* x, T* y, int rows, int cols, cudaStream_t stream);
template <typename T>
cudaError_t softmax_regs_forward(const T* x, T* y, int rows, int cols, cudaStream_t stream);

namespace {

// course::softmax_any_float for another of softmax.cu's launchers: `launch` is a generic lambda around the
// launcher template, so T is deduced from the pointers.
template <typename Launch>
void softmax_with(at::Tensor x, at::Tensor out, Launch launch, const char* what) {
  course::check_rowwise_args(x, out);
  const int rows = static_cast<int>(x.size(0));
  const int cols = static_cast<int>(x.size(1));
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  course::dispatch_float_types(x.scalar_type(), [&](auto tag) {
    using T = decltype(tag);
    course::check_launch(launch(course::data_as<const T>(x), course::data_as<T>(out), rows, cols, stream), what);
  });
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def(
      "softmax_vec",
      [](at::Tensor x, at::Tensor out) {
        softmax_with(x, out, [](auto... args) { return softmax_vec_forward(args...); }, "softmax_vec_forward");
      },
      "Step 05a: row softmax with 16-byte loads and stores, one block per row, two passes over the row",
      py::arg("x"), py::arg("out"));
  m.def(
      "softmax_regs",
      [](at::Tensor x, at::Tensor out) {
        softmax_with(x, out, [](auto... args) { return softmax_regs_forward(args...); }, "softmax_regs_forward");
      },
      "Step 05b: row softmax with the row in registers (one read of x); a warp per short row, a block per long one",
      py::arg("x"), py::arg("out"));
  m.def("softmax", &course::softmax_any_float,
        "Row softmax over the last dim of a 2-D float32/float16/bfloat16 CUDA tensor, written into out",
        py::arg("x"), py::arg("out"));
}
