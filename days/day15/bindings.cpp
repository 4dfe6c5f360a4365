// Day 15 bindings: provided (see common/attention_bwd_binding.h, which checks the tensors, picks the element type,
// allocates the fp32 scratch and launches on PyTorch's current stream); the launcher template is defined in
// attention_bwd.cu.
#include "attention_bwd_binding.h"

// scratch: fp32 [B, H, N, N] for P and then dS; delta: fp32 [B, H, N] for D = rowsum(dO ∘ O).
template <typename T>
cudaError_t attention_bwd_naive(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* dout,
                                T* dq, T* dk, T* dv, float* scratch, float* delta, int batch, int heads, int n, int d,
                                bool causal, cudaStream_t stream);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  COURSE_ATTENTION_BWD_SCRATCH_OP(m, "attention_bwd_naive", attention_bwd_naive,
                                  "dq, dk, dv of o = softmax(q kᵀ / sqrt(d)) v, given o, lse and dout, with P and dS "
                                  "materialized in an fp32 [B, H, N, N] scratch");
}
