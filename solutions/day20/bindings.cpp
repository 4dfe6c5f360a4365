// Day 20 bindings: provided (see common/attention_bwd_binding.h, which checks the tensors, picks the element type,
// allocates the fp32 scratch and launches on PyTorch's current stream); the launchers are defined in
// attention_bwd_tc.cu. Tensor cores take the 16-bit dtypes: fp32 stops here with a message (day 17's kernels are the
// fp32 backward, and day 20's op sends fp32 there).
#include "attention_bwd_binding.h"

// q, k, v, o, dout may be views (their strides in st, columns contiguous); dq, dk, dv are contiguous.
// delta: fp32 [B, H, N] for D; dq_acc: fp32 [B, H, N, d] for the atomic version's dQ sums (nullptr otherwise).
template <typename T>
cudaError_t attention_bwd_tc_dkdv(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* dout,
                                  T* dq, T* dk, T* dv, float* delta, float* dq_acc, int batch, int heads, int n, int d,
                                  course::AttentionStrides st, bool causal, cudaStream_t stream);
template <typename T>
cudaError_t attention_bwd_tc_atomic(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* dout,
                                    T* dq, T* dk, T* dv, float* delta, float* dq_acc, int batch, int heads, int n,
                                    int d, course::AttentionStrides st, bool causal, cudaStream_t stream);
template <typename T>
cudaError_t attention_bwd_tc_deterministic(const T* q, const T* k, const T* v, const T* o, const float* lse,
                                           const T* dout, T* dq, T* dk, T* dv, float* delta, float* dq_acc, int batch,
                                           int heads, int n, int d, course::AttentionStrides st, bool causal,
                                           cudaStream_t stream);

namespace {
void require_16bit(const at::Tensor& q, const char* op) {
  TORCH_CHECK(q.scalar_type() == at::kHalf || q.scalar_type() == at::kBFloat16, op,
              " runs on tensor cores and takes float16 or bfloat16, got ", q.scalar_type(),
              " (day 17's kernels are the fp32 backward)");
}
}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def(
      "attention_bwd_tc_dkdv",
      [](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& o, const at::Tensor& lse,
         const at::Tensor& dout, at::Tensor& dq, at::Tensor& dk, at::Tensor& dv, bool causal) {
        require_16bit(q, "attention_bwd_tc_dkdv");
        course::attention_bwd_views_any_float(q, k, v, o, lse, dout, dq, dk, dv, causal, /*dq_acc_needed=*/false,
                                              [](auto... args) { return attention_bwd_tc_dkdv(args...); },
                                              "attention_bwd_tc_dkdv");
      },
      "steps 20a (dv, graded as attention_bwd_tc_dv) and 20b (dk too, as attention_bwd_tc_dkdv): the key-tile walk "
      "on tensor cores without dQ (dq is left as it was)",
      COURSE_ATTENTION_BWD_ARGS);
  m.def(
      "attention_bwd_tc",
      [](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& o, const at::Tensor& lse,
         const at::Tensor& dout, at::Tensor& dq, at::Tensor& dk, at::Tensor& dv, bool causal) {
        require_16bit(q, "attention_bwd_tc");
        course::attention_bwd_views_any_float(q, k, v, o, lse, dout, dq, dk, dv, causal, true,
                                              [](auto... args) { return attention_bwd_tc_atomic(args...); },
                                              "attention_bwd_tc_atomic");
      },
      "dq, dk, dv on tensor cores in one key-tile walk; dQ summed with fp32 atomics (not deterministic)",
      COURSE_ATTENTION_BWD_ARGS);
  m.def(
      "attention_bwd_tc_deterministic",
      [](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& o, const at::Tensor& lse,
         const at::Tensor& dout, at::Tensor& dq, at::Tensor& dk, at::Tensor& dv, bool causal) {
        require_16bit(q, "attention_bwd_tc_deterministic");
        course::attention_bwd_views_any_float(q, k, v, o, lse, dout, dq, dk, dv, causal, false,
                                              [](auto... args) { return attention_bwd_tc_deterministic(args...); },
                                              "attention_bwd_tc_deterministic");
      },
      "dq, dk, dv on tensor cores: the key-tile walk for dK and dV, a query-tile walk for dQ (deterministic)",
      COURSE_ATTENTION_BWD_ARGS);
}
