// Day 12's forward and day 20's backward as ONE C++ autograd node, for scripts/lessons/day20_measure.py's training step.
// The course's op (day 18) records a Python autograd formula; at the lesson's model size a step is bound by the
// host, and this node is what the same kernels cost without Python between them. Both kernels take views
// (common/head_strides.h), so nothing is copied: q, k and v are read where the model's projection left them, o is
// written in [B, N, H, d] memory (as SDPA returns it, so the model's merge of the heads is a view), and dout is read
// as it arrives. Built by day20_measure.py with the two days' .cu files; not a graded exercise.
#include <torch/extension.h>

#include "attention_bwd_binding.h"  // attention_views_any_float, attention_bwd_views_any_float (checks, dtype, stream)

template <typename T>
cudaError_t flash_attention_mma_forward(const T* q, const T* k, const T* v, T* o, float* lse, int batch, int heads,
                                        int n, int d, course::AttentionStrides st, bool causal, cudaStream_t stream);
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
using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// A view with contiguous columns as it is; anything else copied (the kernels need stride 1 in the last dim).
at::Tensor columns_contiguous(const at::Tensor& t) { return t.stride(3) == 1 ? t : t.contiguous(); }

struct Attention : torch::autograd::Function<Attention> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& q_in, const at::Tensor& k_in,
                            const at::Tensor& v_in, bool causal, bool deterministic) {
    const at::Tensor q = columns_contiguous(q_in), k = columns_contiguous(k_in), v = columns_contiguous(v_in);
    // o in [B, N, H, d] memory, viewed as [B, H, N, d]: a model that merges the heads (transpose(1, 2).reshape)
    // then gets a view, as it does from SDPA.
    at::Tensor o = at::empty({q.size(0), q.size(2), q.size(1), q.size(3)}, q.options()).transpose(1, 2);
    at::Tensor lse = at::empty({q.size(0), q.size(1), q.size(2)}, q.options().dtype(at::kFloat));
    course::attention_views_any_float(
        q, k, v, o, lse, causal, [](auto... a) { return flash_attention_mma_forward(a...); },
        "flash_attention_mma_forward");
    ctx->save_for_backward({q, k, v, o, lse});
    ctx->saved_data["causal"] = causal;
    ctx->saved_data["deterministic"] = deterministic;
    return o;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto s = ctx->get_saved_variables();
    const at::Tensor dout = columns_contiguous(grads[0]);
    const at::Tensor grads3 = at::empty({3, s[0].size(0), s[0].size(1), s[0].size(2), s[0].size(3)}, s[0].options());
    at::Tensor dq = grads3.select(0, 0), dk = grads3.select(0, 1), dv = grads3.select(0, 2);  // one allocation
    const bool causal = ctx->saved_data["causal"].toBool();
    if (ctx->saved_data["deterministic"].toBool())
      course::attention_bwd_views_any_float(
          s[0], s[1], s[2], s[3], s[4], dout, dq, dk, dv, causal, false,
          [](auto... a) { return attention_bwd_tc_deterministic(a...); }, "attention_bwd_tc_deterministic");
    else
      course::attention_bwd_views_any_float(
          s[0], s[1], s[2], s[3], s[4], dout, dq, dk, dv, causal, true,
          [](auto... a) { return attention_bwd_tc_atomic(a...); }, "attention_bwd_tc_atomic");
    return {dq, dk, dv, at::Tensor(), at::Tensor()};  // no gradient for the two flags
  }
};
}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def(
      "attention",
      [](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal, bool deterministic) {
        return Attention::apply(q, k, v, causal, deterministic);
      },
      "o = softmax(q kᵀ / sqrt(d)) v with day 20's backward recorded as one C++ autograd node",
      py::arg("q"), py::arg("k"), py::arg("v"), py::arg("causal"), py::arg("deterministic") = false);
}
