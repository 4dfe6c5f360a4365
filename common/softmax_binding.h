// softmax_binding.h: the PyTorch side of the dtype-templated softmax (days 03 to 05). The op's interface does not
// change when the kernels do: the launcher takes raw pointers, sizes and PyTorch's current stream, so each of those
// days' bindings.cpp is this header plus its PYBIND11_MODULE.
#pragma once

#include "course_glue.h"

// Declared here, defined and explicitly instantiated for float, __half and __nv_bfloat16 in the day's softmax.cu.
// A template produces no code until instantiated: the bindings see only this declaration, the linker finds the
// three versions in softmax.cu's object file.
template <typename T>
cudaError_t softmax_forward(const T* x, T* y, int rows, int cols, cudaStream_t stream);

namespace course {

// out = softmax(x, dim=-1) for float32, float16 and bfloat16. Alignment is the kernel's business: x and out may be
// views with a storage offset (rows not on a 16-byte boundary), so nothing about it is checked here.
inline void softmax_any_float(at::Tensor x, at::Tensor out) {
  check_rowwise_args(x, out);
  const int rows = static_cast<int>(x.size(0));
  const int cols = static_cast<int>(x.size(1));
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  // The lambda receives a value of the element type only to name it: T = float, __half or __nv_bfloat16.
  dispatch_float_types(x.scalar_type(), [&](auto tag) {
    using T = decltype(tag);
    check_launch(softmax_forward<T>(data_as<const T>(x), data_as<T>(out), rows, cols, stream), "softmax_forward");
  });
}

}  // namespace course
