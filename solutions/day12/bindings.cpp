// Day 12 bindings: provided (see common/attention_binding.h, which checks the tensors, picks the element type and
// launches on PyTorch's current stream); the launcher template is defined in attention.cu. Tensor cores take the
// 16-bit dtypes only, so fp32 stops here with a message (day 10's flash_attention is the fp32 kernel).
#include "attention_binding.h"

// Step 12b takes views (any batch, head and row strides, columns contiguous): the strides come in `st`.
template <typename T>
cudaError_t flash_attention_mma_forward(const T* q, const T* k, const T* v, T* o, float* lse, int batch, int heads,
                                        int n, int d, course::AttentionStrides st, bool causal, cudaStream_t stream);

template <typename T>
cudaError_t flash_attention_mma_simple_forward(const T* q, const T* k, const T* v, T* o, float* lse, int batch,
                                               int heads, int n, int d, bool causal, cudaStream_t stream);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def(
      "flash_attention_mma_simple",
      [](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, at::Tensor& o, at::Tensor& lse,
         bool causal) {
        TORCH_CHECK(q.scalar_type() == at::kHalf || q.scalar_type() == at::kBFloat16,
                    "flash_attention_mma_simple runs on tensor cores and takes float16 or bfloat16, got ",
                    q.scalar_type(), " (day 10's flash_attention is the fp32 kernel)");
        course::attention_any_float(
            q, k, v, o, lse, causal, [](auto... args) { return flash_attention_mma_simple_forward(args...); },
            "flash_attention_mma_simple_forward");
      },
      "o = softmax(q kᵀ / sqrt(d)) v and lse = logsumexp per row, FlashAttention-2 forward on tensor cores "
      "(mma.sync, plain loads into padded tiles), fp16/bf16 with fp32 accumulation",
      COURSE_ATTENTION_ARGS);
  m.def(
      "flash_attention_mma",
      [](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, at::Tensor& o, at::Tensor& lse,
         bool causal) {
        TORCH_CHECK(q.scalar_type() == at::kHalf || q.scalar_type() == at::kBFloat16,
                    "flash_attention_mma runs on tensor cores and takes float16 or bfloat16, got ", q.scalar_type(),
                    " (day 10's flash_attention is the fp32 kernel)");
        course::attention_views_any_float(
            q, k, v, o, lse, causal, [](auto... args) { return flash_attention_mma_forward(args...); },
            "flash_attention_mma_forward");
      },
      "o = softmax(q kᵀ / sqrt(d)) v and lse = logsumexp per row, FlashAttention-2 forward on tensor cores "
      "(mma.sync; wgmma on sm_90a), fp16/bf16 with fp32 accumulation; q, k, v, o may be views (columns contiguous)",
      COURSE_ATTENTION_ARGS);
}
