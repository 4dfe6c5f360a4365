// Day 06 bindings: provided. Both ops share one interface (common/matmul_binding.h checks the tensors, picks the
// element type and launches on PyTorch's current stream); the launchers are templates defined in matmul.cu.
#include "matmul_binding.h"

template <typename T>
cudaError_t matmul_uncoalesced_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream);
template <typename T>
cudaError_t matmul_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  COURSE_MATMUL_OP(m, "matmul_uncoalesced", matmul_uncoalesced_forward,
                   "c = a @ b, one thread per output, threadIdx.x down a column of c");
  COURSE_MATMUL_OP(m, "matmul", matmul_forward, "c = a @ b, one thread per output, threadIdx.x along a row of c");
}
