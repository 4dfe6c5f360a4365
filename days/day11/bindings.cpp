// Day 11 bindings: provided (see common/matmul_binding.h); the launcher templates are defined in matmul.cu and
// matmul_wgmma.cu, for __half and __nv_bfloat16 only: tensor cores have no fp32 x fp32 instruction, so a float32
// call is refused by the binding with a message instead of reaching a kernel.
#include "matmul_binding.h"

template <typename T>
cudaError_t matmul_wmma_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream);
template <typename T>
cudaError_t matmul_mma_sync_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream);
template <typename T>
cudaError_t matmul_mma_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream);
template <typename T>
cudaError_t matmul_wgmma_async_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream);
template <typename T>
cudaError_t matmul_wgmma_forward(const T* a, const T* b, T* c, int M, int N, int K, cudaStream_t stream);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  COURSE_MATMUL_OP_16BIT(m, "matmul_wmma", matmul_wmma_forward,
                         "c = a @ b on tensor cores through WMMA 16x16x16 fragments (fp16/bf16, fp32 accumulation)");
  COURSE_MATMUL_OP_16BIT(m, "matmul_mma_sync", matmul_mma_sync_forward,
                         "c = a @ b on tensor cores: mma.sync m16n8k16 + ldmatrix from padded shared memory, one "
                         "stage of plain loads (fp16/bf16, fp32 accumulation)");
  COURSE_MATMUL_OP_16BIT(m, "matmul_mma", matmul_mma_forward,
                         "c = a @ b on tensor cores: mma.sync m16n8k16 + ldmatrix, cp.async pipeline, swizzled shared "
                         "memory (fp16/bf16, fp32 accumulation)");
  COURSE_MATMUL_OP_16BIT(m, "matmul_wgmma_async", matmul_wgmma_async_forward,
                         "c = a @ b with Hopper's wgmma fed by cp.async from every thread (sm_90a builds on compute "
                         "capability 9.0; elsewhere it runs matmul_mma)");
  COURSE_MATMUL_OP_16BIT(m, "matmul_wgmma", matmul_wgmma_forward,
                         "c = a @ b with Hopper's wgmma, tiles by TMA and a producer warpgroup (sm_90a builds on "
                         "compute capability 9.0; elsewhere it runs matmul_mma)");
}
