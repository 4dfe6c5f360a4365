// matmul_binding.h: the PyTorch side of the matmul ops (days 06 to 09 on CUDA cores, day 11 on tensor cores).
// Every matmul op has the same interface, c = a @ b for row-major a[M, K], b[K, N], c[M, N] in float32, float16 or
// bfloat16 (day 11: the 16-bit types only), so each day's bindings.cpp only names its launchers. The launchers live in the day's matmul.cu, which includes only CUDA
// headers and takes raw pointers, sizes and PyTorch's current stream.
#pragma once

#include <c10/cuda/CUDAGuard.h>

#include <type_traits>

#include "course_glue.h"

namespace course {

inline void check_matmul_args(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c) {
  TORCH_CHECK(a.is_cuda() && b.is_cuda() && c.is_cuda(), "a, b and c must be CUDA tensors");
  TORCH_CHECK(a.device() == b.device() && a.device() == c.device(), "a, b and c must be on the same device");
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && c.dim() == 2, "a, b and c must be 2-D");
  TORCH_CHECK(a.size(1) == b.size(0), "inner sizes differ: a is ", a.sizes(), ", b is ", b.sizes());
  TORCH_CHECK(c.size(0) == a.size(0) && c.size(1) == b.size(1), "c must be [", a.size(0), ", ", b.size(1),
              "], got ", c.sizes());
  TORCH_CHECK(a.scalar_type() == b.scalar_type() && a.scalar_type() == c.scalar_type(),
              "a, b and c must have the same dtype");
  TORCH_CHECK(a.is_contiguous() && b.is_contiguous() && c.is_contiguous(), "a, b and c must be contiguous");
  TORCH_CHECK(a.size(0) <= INT_MAX && a.size(1) <= INT_MAX && b.size(1) <= INT_MAX, "sizes must fit in int");
}

// Checks the tensors, picks T from the dtype and calls launch(const T* a, const T* b, T* c, M, N, K, stream).
// `launch` is a generic lambda around one of the day's launcher templates, e.g.
//   [](auto... args) { return matmul_forward(args...); }
// so T is deduced from the pointers and one header serves every op of every day.
template <typename Launch>
void matmul_any_float(const at::Tensor& a, const at::Tensor& b, at::Tensor& c, Launch launch, const char* what) {
  check_matmul_args(a, b, c);
  const c10::cuda::CUDAGuard guard(a.device());  // the current stream below is the tensors' device's
  const int M = static_cast<int>(a.size(0)), K = static_cast<int>(a.size(1)), N = static_cast<int>(b.size(1));
  if (M == 0 || N == 0) return;  // nothing to write (and a grid of no blocks is a launch error)
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  dispatch_float_types(a.scalar_type(), [&](auto tag) {
    using T = decltype(tag);
    check_launch(launch(data_as<const T>(a), data_as<const T>(b), data_as<T>(c), M, N, K, stream), what);
  });
}

// The same for ops that exist only in 16 bits (the tensor-core days): float32 is refused here with a message naming
// the op, and no float launcher is instantiated, so the day's .cu defines its launchers for __half and
// __nv_bfloat16 only.
template <typename Launch>
void matmul_16bit(const at::Tensor& a, const at::Tensor& b, at::Tensor& c, Launch launch, const char* what) {
  TORCH_CHECK(a.scalar_type() == at::kHalf || a.scalar_type() == at::kBFloat16, what,
              " runs on tensor cores and supports float16 and bfloat16 only, got ", a.scalar_type());
  matmul_any_float(a, b, c, [&](const auto* pa, auto... rest) -> cudaError_t {
    if constexpr (std::is_same_v<std::remove_const_t<std::remove_pointer_t<decltype(pa)>>, float>)
      return cudaErrorInvalidValue;  // refused above
    else
      return launch(pa, rest...);
  }, what);
}

}  // namespace course

// Defines a Python op `name` that runs the launcher template `launcher` for every float dtype.
#define COURSE_MATMUL_OP(m, name, launcher, doc)                                                   \
  m.def(                                                                                           \
      name,                                                                                        \
      [](const at::Tensor& a, const at::Tensor& b, at::Tensor& c) {                                \
        course::matmul_any_float(a, b, c, [](auto... args) { return launcher(args...); }, #launcher); \
      },                                                                                           \
      doc, py::arg("a"), py::arg("b"), py::arg("c"))

// The same for a 16-bit-only launcher (float16 and bfloat16; float32 is refused with a clear message).
#define COURSE_MATMUL_OP_16BIT(m, name, launcher, doc)                                             \
  m.def(                                                                                           \
      name,                                                                                        \
      [](const at::Tensor& a, const at::Tensor& b, at::Tensor& c) {                                \
        course::matmul_16bit(a, b, c, [](auto... args) { return launcher(args...); }, name);       \
      },                                                                                           \
      doc, py::arg("a"), py::arg("b"), py::arg("c"))
