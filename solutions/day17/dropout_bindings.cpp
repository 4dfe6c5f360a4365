// Day 17's optional dropout step, bindings: provided. The forward's and the backward's checks are the attention
// ops' (common/attention_binding.h, common/attention_bwd_binding.h); `rng` is an int64 [2] tensor on q's device
// holding (seed, offset), read by the kernels on the device; 0 <= p < 1. The launchers live in attention_dropout.cu.
#include "attention_bwd_binding.h"

template <typename T>
cudaError_t attention_dropout_forward(const T* q, const T* k, const T* v, T* o, float* lse, const int64_t* rng,
                                      float p, int batch, int heads, int n, int d, bool causal, cudaStream_t stream);
// delta: fp32 [B, H, N] scratch for D = rowsum(dO ∘ O).
template <typename T>
cudaError_t attention_dropout_backward(const T* q, const T* k, const T* v, const T* o, const float* lse,
                                       const T* dout, T* dq, T* dk, T* dv, float* delta, const int64_t* rng, float p,
                                       int batch, int heads, int n, int d, bool causal, cudaStream_t stream);

namespace {

void check_dropout_args(const at::Tensor& q, const at::Tensor& rng, double p) {
  TORCH_CHECK(rng.is_cuda() && rng.device() == q.device(), "rng must be a CUDA tensor on q's device (", q.device(),
              "), got ", rng.device());
  TORCH_CHECK(rng.scalar_type() == at::kLong && rng.dim() == 1 && rng.size(0) == 2 && rng.is_contiguous(),
              "rng must be a contiguous int64 tensor of 2 elements (seed, offset), got ", rng.scalar_type(), " ",
              rng.sizes());
  TORCH_CHECK(p >= 0.0 && p < 1.0, "dropout probability p must be in [0, 1), got ", p);
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def(
      "attention_dropout",
      [](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& rng, at::Tensor& o,
         at::Tensor& lse, bool causal, double p) {
        check_dropout_args(q, rng, p);
        course::attention_any_float(
            q, k, v, o, lse, causal,
            [&](auto qp, auto kp, auto vp, auto op, float* lsep, int batch, int heads, int n, int d, bool c,
                cudaStream_t stream) {
              return attention_dropout_forward(qp, kp, vp, op, lsep, course::data_as<const int64_t>(rng),
                                               static_cast<float>(p), batch, heads, n, d, c, stream);
            },
            "attention_dropout_forward");
      },
      "o = (softmax(q kᵀ / sqrt(d)) ∘ M / (1 - p)) v and the undropped lse, M drawn by Philox from rng = (seed, "
      "offset)",
      py::arg("q"), py::arg("k"), py::arg("v"), py::arg("rng"), py::arg("o"), py::arg("lse"), py::arg("causal"),
      py::arg("p"));
  m.def(
      "attention_dropout_bwd",
      [](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& o, const at::Tensor& lse,
         const at::Tensor& dout, const at::Tensor& rng, at::Tensor& dq, at::Tensor& dk, at::Tensor& dv, bool causal,
         double p) {
        check_dropout_args(q, rng, p);
        course::attention_bwd_any_float(
            q, k, v, o, lse, dout, dq, dk, dv, causal,
            [&](auto qp, auto kp, auto vp, auto op, const float* lsep, auto dop, auto dqp, auto dkp, auto dvp,
                int batch, int heads, int n, int d, bool c, cudaStream_t stream) {
              const at::Tensor delta = at::empty({batch, heads, n}, q.options().dtype(at::kFloat));
              return attention_dropout_backward(qp, kp, vp, op, lsep, dop, dqp, dkp, dvp,
                                                course::data_as<float>(delta), course::data_as<const int64_t>(rng),
                                                static_cast<float>(p), batch, heads, n, d, c, stream);
            },
            "attention_dropout_backward");
      },
      "dq, dk, dv of attention with dropout: the mask drawn again from rng, P recomputed from lse (deterministic)",
      py::arg("q"), py::arg("k"), py::arg("v"), py::arg("o"), py::arg("lse"), py::arg("dout"), py::arg("rng"),
      py::arg("dq"), py::arg("dk"), py::arg("dv"), py::arg("causal"), py::arg("p"));
}
