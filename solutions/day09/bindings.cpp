// Day 09 bindings for steps 09c and 09d: provided (see common/matmul_binding.h); the launcher templates are defined
// in matmul.cu. Steps 09a and 09b have their own, bindings_steps.cpp.
#include "matmul_binding.h"

template <typename T>
cudaError_t matmul_pipelined_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream);
template <typename T>
cudaError_t matmul_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  COURSE_MATMUL_OP(m, "matmul_pipelined", matmul_pipelined_forward,
                   "c = a @ b, step 09c: whole tiles, cp.async and a register-staged A in a two-stage pipeline");
  COURSE_MATMUL_OP(m, "matmul", matmul_forward, "c = a @ b, step 09d: 09c plus stream-K for the last wave");
}
