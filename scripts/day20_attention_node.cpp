// Day 12's forward and day 20's backward as ONE C++ autograd node, for scripts/day20_measure.py's training step.
// The course's op (day 18) records a Python autograd formula; at the lesson's model size a step is bound by the
// host, and this node is what the same kernels cost without Python between them (copies and allocations in C++).
// Built by day20_measure.py with the two days' .cu files; not a graded exercise.
#include <torch/extension.h>

#include "attention_bwd_binding.h"  // attention_any_float, attention_bwd_tiled_any_float (checks, dtype, stream)

template <typename T>
cudaError_t flash_attention_mma_forward(const T* q, const T* k, const T* v, T* o, float* lse, int batch, int heads,
                                        int n, int d, bool causal, cudaStream_t stream);
template <typename T>
cudaError_t attention_bwd_tc_atomic(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* dout,
                                    T* dq, T* dk, T* dv, float* delta, float* dq_acc, int batch, int heads, int n,
                                    int d, bool causal, cudaStream_t stream);
template <typename T>
cudaError_t attention_bwd_tc_deterministic(const T* q, const T* k, const T* v, const T* o, const float* lse,
                                           const T* dout, T* dq, T* dk, T* dv, float* delta, float* dq_acc, int batch,
                                           int heads, int n, int d, bool causal, cudaStream_t stream);

namespace {
using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

struct Attention : torch::autograd::Function<Attention> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& q_in, const at::Tensor& k_in,
                            const at::Tensor& v_in, bool causal, bool deterministic) {
    at::Tensor q = q_in, k = k_in, v = v_in;
    if (!(q.is_contiguous() && k.is_contiguous() && v.is_contiguous())) {
      // The kernels read contiguous [B, H, N, d]. A model's q, k and v are usually views of one projection, the
      // same strides g elements apart: then one launch copies all three (else one each).
      const int64_t es = static_cast<int64_t>(q.element_size());
      const int64_t gap = (static_cast<const char*>(k.data_ptr()) - static_cast<const char*>(q.data_ptr())) / es;
      const bool packed = k.sizes() == q.sizes() && v.sizes() == q.sizes() && k.strides() == q.strides() &&
                          v.strides() == q.strides() && gap > 0 &&
                          static_cast<const char*>(v.data_ptr()) - static_cast<const char*>(q.data_ptr()) ==
                              2 * gap * es &&
                          k.storage().is_alias_of(q.storage()) && v.storage().is_alias_of(q.storage());
      if (packed) {
        const at::Tensor qkv =
            q.as_strided({3, q.size(0), q.size(1), q.size(2), q.size(3)},
                         {gap, q.stride(0), q.stride(1), q.stride(2), q.stride(3)}, q.storage_offset())
                .contiguous();
        q = qkv.select(0, 0), k = qkv.select(0, 1), v = qkv.select(0, 2);
      } else {
        q = q.contiguous(), k = k.contiguous(), v = v.contiguous();
      }
    }
    at::Tensor o = at::empty_like(q);
    at::Tensor lse = at::empty({q.size(0), q.size(1), q.size(2)}, q.options().dtype(at::kFloat));
    course::attention_any_float(
        q, k, v, o, lse, causal, [](auto... a) { return flash_attention_mma_forward(a...); },
        "flash_attention_mma_forward");
    ctx->save_for_backward({q, k, v, o, lse});
    ctx->saved_data["causal"] = causal;
    ctx->saved_data["deterministic"] = deterministic;
    // Handed back in [B, N, H, d] memory, as SDPA does: a model that merges the heads (transpose(1, 2).reshape)
    // then gets a view, and this one copy is made here, in C++.
    at::Tensor out = at::empty({q.size(0), q.size(2), q.size(1), q.size(3)}, q.options());
    out.copy_(o.transpose(1, 2));
    return out.transpose(1, 2);
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto s = ctx->get_saved_variables();
    const at::Tensor dout = grads[0].contiguous();
    const at::Tensor grads3 = at::empty({3, s[0].size(0), s[0].size(1), s[0].size(2), s[0].size(3)}, s[0].options());
    at::Tensor dq = grads3.select(0, 0), dk = grads3.select(0, 1), dv = grads3.select(0, 2);  // one allocation
    const bool causal = ctx->saved_data["causal"].toBool();
    if (ctx->saved_data["deterministic"].toBool())
      course::attention_bwd_tiled_any_float(
          s[0], s[1], s[2], s[3], s[4], dout, dq, dk, dv, causal, false,
          [](auto... a) { return attention_bwd_tc_deterministic(a...); }, "attention_bwd_tc_deterministic");
    else
      course::attention_bwd_tiled_any_float(
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
