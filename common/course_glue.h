// course_glue.h: the small amount of PyTorch glue every day's bindings share.
//
// Kernel files (*.cu) never include torch headers: they expose a launcher that takes raw pointers, sizes and a
// stream, so they compile in seconds with plain nvcc (and on machines without a GPU). The bindings file includes
// this header, checks the tensors, and calls the launcher on PyTorch's *current* stream.
//
// We include three narrow headers instead of <torch/extension.h>: on an H200 host that cuts the bindings' cold
// compile from about 12 s to about 4 s, and the bindings are the slowest file of every build.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/utils/pybind.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <climits>

namespace course {

// A row-wise op reads x[rows, cols] and writes out[rows, cols]; the grader allocates `out` (and poisons it).
inline void check_rowwise_args(const at::Tensor& x, const at::Tensor& out) {
  TORCH_CHECK(x.is_cuda() && out.is_cuda(), "x and out must be CUDA tensors");
  TORCH_CHECK(x.device() == out.device(), "x and out must be on the same device");
  TORCH_CHECK(x.dim() == 2, "x must be 2-D [rows, cols], got ", x.dim(), " dims");
  TORCH_CHECK(out.sizes() == x.sizes(), "out must have x's shape ", x.sizes(), ", got ", out.sizes());
  TORCH_CHECK(out.scalar_type() == x.scalar_type(), "out must have x's dtype");
  TORCH_CHECK(x.is_contiguous() && out.is_contiguous(), "x and out must be contiguous");
  TORCH_CHECK(x.size(0) <= INT_MAX && x.size(1) <= INT_MAX, "rows and cols must fit in int");
}

// Every launch is followed by a check: a bad launch configuration is reported here, not at the next sync.
inline void check_launch(cudaError_t err, const char* what) {
  TORCH_CHECK(err == cudaSuccess, what, " failed: ", cudaGetErrorString(err));
}

// Calls fn(T{}) with T the CUDA element type matching x's dtype (float, __half or __nv_bfloat16).
template <typename Fn>
void dispatch_float_types(at::ScalarType dtype, Fn&& fn) {
  switch (dtype) {
    case at::kFloat: fn(float{}); break;
    case at::kHalf: fn(__half{}); break;
    case at::kBFloat16: fn(__nv_bfloat16{}); break;
    default: TORCH_CHECK(false, "unsupported dtype ", dtype, " (expected float32, float16 or bfloat16)");
  }
}

// at::Tensor::data_ptr<T>() only knows ATen's types; the kernels use CUDA's. Same bits, so a cast is exact.
template <typename T>
T* data_as(const at::Tensor& t) {
  return reinterpret_cast<T*>(t.data_ptr());
}

}  // namespace course
