// Day 10 bindings: provided (see common/attention_binding.h, which checks the tensors, picks the element type and
// launches on PyTorch's current stream); the launcher templates are defined in attention.cu.
#include "attention_binding.h"

// scores: fp32 scratch of batch·heads·n·n values for S and then P, allocated by the bindings.
template <typename T>
cudaError_t attention_naive_forward(const T* q, const T* k, const T* v, T* o, float* lse, float* scores, int batch,
                                    int heads, int n, int d, bool causal, cudaStream_t stream);
template <typename T>
cudaError_t flash_attention_online_forward(const T* q, const T* k, const T* v, T* o, float* lse, int batch,
                                           int heads, int n, int d, bool causal, cudaStream_t stream);
template <typename T>
cudaError_t flash_attention_forward(const T* q, const T* k, const T* v, T* o, float* lse, int batch, int heads,
                                    int n, int d, bool causal, cudaStream_t stream);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  COURSE_ATTENTION_SCORES_OP(m, "attention_naive", attention_naive_forward,
                             "o = softmax(q kᵀ / sqrt(d)) v and lse = logsumexp per row, with S and P materialized "
                             "in an fp32 [B, H, N, N] scratch");
  COURSE_ATTENTION_OP(m, "flash_attention_online", flash_attention_online_forward,
                      "the same, FlashAttention-2's loop with the softmax through shared memory (10b)");
  COURSE_ATTENTION_OP(m, "flash_attention", flash_attention_forward,
                      "o = softmax(q kᵀ / sqrt(d)) v and lse = logsumexp per row, FlashAttention-2 forward on CUDA "
                      "cores: S and P never leave the chip");
}
