// Day 16 bindings: provided (see common/attention_bwd_binding.h, which checks the tensors, picks the element type,
// allocates the fp32 [B, H, N] scratch for D and launches on PyTorch's current stream); the launcher template is
// defined in attention_bwd_kv.cu.
#include "attention_bwd_binding.h"

template <typename T>
cudaError_t attention_bwd_dkdv(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* dout,
                               T* dk, T* dv, float* delta, int batch, int heads, int n, int d, bool causal,
                               cudaStream_t stream);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  COURSE_ATTENTION_BWD_DKDV_OP(m, "attention_bwd_dkdv", attention_bwd_dkdv,
                               "dk, dv of o = softmax(q kᵀ / sqrt(d)) v, given o, lse and dout, with no N x N "
                               "matrix in memory (an fp32 [B, H, N] scratch for D = rowsum(dout ∘ o))");
}
