// Day 09 bindings for steps 09a and 09b: provided (see common/matmul_binding.h); the launcher templates are defined
// in matmul_steps.cu. Steps 09c and 09d (the ops `matmul_pipelined` and `matmul`) have their own, bindings.cpp.
#include "matmul_binding.h"

template <typename T>
cudaError_t matmul_vec_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream);
template <typename T>
cudaError_t matmul_warptile_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  COURSE_MATMUL_OP(m, "matmul_vec", matmul_vec_forward,
                   "c = a @ b, step 09a: 16-byte global loads, A transposed and padded in shared memory");
  COURSE_MATMUL_OP(m, "matmul_warptile", matmul_warptile_forward,
                   "c = a @ b, step 09b: 09a plus warptiling and double-buffered shared memory");
}
