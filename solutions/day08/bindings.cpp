// Day 08 bindings: provided (see common/matmul_binding.h); the launcher templates are defined in matmul.cu.
#include "matmul_binding.h"

template <typename T>
cudaError_t matmul_1d_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream);
template <typename T>
cudaError_t matmul_2d_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  COURSE_MATMUL_OP(m, "matmul_1d", matmul_1d_forward, "c = a @ b, each thread a column of 8 outputs");
  COURSE_MATMUL_OP(m, "matmul_2d", matmul_2d_forward, "c = a @ b, each thread an 8 x 8 block of outputs");
}
