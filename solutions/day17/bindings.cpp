// Day 17 bindings: provided (see common/attention_bwd_binding.h, which checks the tensors, picks the element type,
// allocates the fp32 scratch and launches on PyTorch's current stream); the launchers are defined in
// attention_bwd.cu.
#include "attention_bwd_binding.h"

// delta: fp32 [B, H, N] for D; dq_acc: fp32 [B, H, N, d] for the atomic version's dQ sums (nullptr otherwise).
template <typename T>
cudaError_t attention_bwd_atomic(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* dout,
                                 T* dq, T* dk, T* dv, float* delta, float* dq_acc, int batch, int heads, int n, int d,
                                 bool causal, cudaStream_t stream);
template <typename T>
cudaError_t attention_bwd_twopass(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* dout,
                                  T* dq, T* dk, T* dv, float* delta, float* dq_acc, int batch, int heads, int n, int d,
                                  bool causal, cudaStream_t stream);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  COURSE_ATTENTION_BWD_TILED_OP(m, "attention_bwd_atomic", attention_bwd_atomic, true,
                                "dq, dk, dv in one key-tile walk; dQ summed with fp32 atomicAdd (not deterministic)");
  COURSE_ATTENTION_BWD_TILED_OP(m, "attention_bwd_twopass", attention_bwd_twopass, false,
                                "dq, dk, dv: day 16's walk for dK and dV, a query-tile walk for dQ (deterministic)");
}
