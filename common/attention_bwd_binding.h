// attention_bwd_binding.h: the PyTorch side of the attention backward (day 15 onward). Every backward op has the
// same interface: from the forward's inputs q, k, v, its saved outputs o and lse (the row logsumexp) and the
// incoming gradient dout, it writes dq, dk, dv. q, k, v, o, dout, dq, dk, dv are contiguous [B, H, N, d] tensors
// of one dtype (float32, float16 or bfloat16), lse is a contiguous fp32 [B, H, N]. Each day's bindings.cpp only
// names its launcher; the launchers live in the day's .cu file, which includes only CUDA headers and takes raw
// pointers, sizes and PyTorch's current stream. Modelled on attention_binding.h, whose checks it reuses. Day 20's
// kernels also take views of q, k, v, o and dout (attention_bwd_views_any_float).
#pragma once

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAGuard.h>

#include <utility>

#include "attention_binding.h"
#include "course_glue.h"

namespace course {

// The forward's checks for q, k, v, o, lse (shapes, dtypes, device, contiguity, d = 64 or 128, B·H·N in an int),
// then the same for dout (an input) and dq, dk, dv (the outputs).
// views: q, k, v, o and dout may be views with contiguous columns (day 20's kernels); dq, dk, dv stay contiguous.
inline AttentionSizes check_attention_bwd_args(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                               const at::Tensor& o, const at::Tensor& lse, const at::Tensor& dout,
                                               const at::Tensor& dq, const at::Tensor& dk, const at::Tensor& dv,
                                               bool views = false) {
  const AttentionSizes s = check_attention_args(q, k, v, o, lse, views, /*o_written=*/false);
  const std::pair<const char*, const at::Tensor*> more[] = {{"dout", &dout}, {"dq", &dq}, {"dk", &dk}, {"dv", &dv}};
  for (const auto& [name, t] : more) {
    TORCH_CHECK(t->is_cuda() && t->device() == q.device(), name, " must be a CUDA tensor on q's device (", q.device(),
                "), got ", t->device());
    TORCH_CHECK(t->sizes() == q.sizes(), name, " must have q's shape ", q.sizes(), ", got ", t->sizes());
    TORCH_CHECK(t->scalar_type() == q.scalar_type(), name, " must have q's dtype ", q.scalar_type(), ", got ",
                t->scalar_type());
    if (views && t == &dout) {
      TORCH_CHECK(t->stride(3) == 1, "dout must have contiguous columns (stride 1 in the last dim), got strides ",
                  t->strides());
    } else {
      TORCH_CHECK(t->is_contiguous(), name, " must be contiguous");
    }
  }
  return s;
}

// Checks the tensors, picks T from the dtype and calls
//   launch(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* dout, T* dq, T* dk, T* dv,
//          batch, heads, n, d, strides, causal, stream)
// on q's device and that device's current stream, the strides read off q, k, v, o and dout. views: those five may
// have any strides but the columns' (day 20's kernels); else they must be contiguous. dq, dk, dv are contiguous.
template <typename Launch>
void attention_bwd_strided_any_float(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                     const at::Tensor& o, const at::Tensor& lse, const at::Tensor& dout,
                                     at::Tensor& dq, at::Tensor& dk, at::Tensor& dv, bool causal, bool views,
                                     Launch launch, const char* what) {
  const AttentionSizes s = check_attention_bwd_args(q, k, v, o, lse, dout, dq, dk, dv, views);
  const AttentionStrides st{head_strides(q), head_strides(k), head_strides(v), head_strides(o), head_strides(dout)};
  const c10::cuda::CUDAGuard guard(q.device());  // the stream below, and any scratch, belong to q's device
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  dispatch_float_types(q.scalar_type(), [&](auto tag) {
    using T = decltype(tag);
    check_launch(launch(data_as<const T>(q), data_as<const T>(k), data_as<const T>(v), data_as<const T>(o),
                        data_as<const float>(lse), data_as<const T>(dout), data_as<T>(dq), data_as<T>(dk),
                        data_as<T>(dv), s.batch, s.heads, s.n, s.d, st, causal, stream),
                 what);
  });
}

// The same for contiguous tensors and launchers that take no strides:
//   launch(q, k, v, o, lse, dout, dq, dk, dv, batch, heads, n, d, causal, stream). `launch` is a generic lambda
// around one of the day's launcher templates, e.g. [](auto... args) { return attention_bwd_naive(args...); }.
template <typename Launch>
void attention_bwd_any_float(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& o,
                             const at::Tensor& lse, const at::Tensor& dout, at::Tensor& dq, at::Tensor& dk,
                             at::Tensor& dv, bool causal, Launch launch, const char* what) {
  attention_bwd_strided_any_float(
      q, k, v, o, lse, dout, dq, dk, dv, causal, /*views=*/false,
      [&](auto qp, auto kp, auto vp, auto op, const float* lsep, auto dop, auto dqp, auto dkp, auto dvp, int batch,
          int heads, int n, int d, const AttentionStrides&, bool c, cudaStream_t stream) {
        return launch(qp, kp, vp, op, lsep, dop, dqp, dkp, dvp, batch, heads, n, d, c, stream);
      },
      what);
}

// The same for launchers that also take the materialized backward's fp32 scratch: an [B, H, N, N] buffer (P, then
// dS) and an [B, H, N] one (D = rowsum(dO ∘ O)):
//   launch(q, k, v, o, lse, dout, dq, dk, dv, scratch, delta, batch, heads, n, d, causal, stream).
// Both come from PyTorch's caching allocator, so they show in torch.cuda.max_memory_allocated (the report's
// "scratch MiB"). They are released when this function returns, possibly before the kernels have run; that is
// safe because the allocator only hands the blocks out again to work queued after them on the same stream.
template <typename Launch>
void attention_bwd_with_scratch_any_float(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                          const at::Tensor& o, const at::Tensor& lse, const at::Tensor& dout,
                                          at::Tensor& dq, at::Tensor& dk, at::Tensor& dv, bool causal, Launch launch,
                                          const char* what) {
  attention_bwd_any_float(
      q, k, v, o, lse, dout, dq, dk, dv, causal,
      [&](auto qp, auto kp, auto vp, auto op, const float* lsep, auto dop, auto dqp, auto dkp, auto dvp, int batch,
          int heads, int n, int d, bool c, cudaStream_t stream) {
        const auto fp32 = q.options().dtype(at::kFloat);
        const at::Tensor scratch = at::empty({batch, heads, n, n}, fp32);
        const at::Tensor delta = at::empty({batch, heads, n}, fp32);
        return launch(qp, kp, vp, op, lsep, dop, dqp, dkp, dvp, data_as<float>(scratch), data_as<float>(delta), batch,
                      heads, n, d, c, stream);
      },
      what);
}

// dK and dV alone (day 16): launch(q, k, v, o, lse, dout, dk, dv, delta, batch, heads, n, d, causal, stream), with
// delta an fp32 [B, H, N] scratch for D = rowsum(dO ∘ O). The checks are the full backward's, with dk standing in
// for the dq it does not take (same shape and dtype).
template <typename Launch>
void attention_bwd_dkdv_any_float(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& o,
                                  const at::Tensor& lse, const at::Tensor& dout, at::Tensor& dk, at::Tensor& dv,
                                  bool causal, Launch launch, const char* what) {
  attention_bwd_any_float(
      q, k, v, o, lse, dout, dk, dk, dv, causal,
      [&](auto qp, auto kp, auto vp, auto op, const float* lsep, auto dop, auto, auto dkp, auto dvp, int batch,
          int heads, int n, int d, bool c, cudaStream_t stream) {
        const at::Tensor delta = at::empty({batch, heads, n}, q.options().dtype(at::kFloat));
        return launch(qp, kp, vp, op, lsep, dop, dkp, dvp, data_as<float>(delta), batch, heads, n, d, c, stream);
      },
      what);
}

// The complete backward without N x N scratch, on views (day 20): q, k, v, o and dout with any strides but the
// columns' (views = false: contiguous), dq, dk, dv contiguous; the launcher also receives the strides,
//   launch(q, k, v, o, lse, dout, dq, dk, dv, delta, dq_acc, batch, heads, n, d, strides, causal, stream),
// delta an fp32 [B, H, N] scratch for D, dq_acc an fp32 [B, H, N, d] one for dQ sums that several blocks add into
// (allocated only when dq_acc_needed; else nullptr).
template <typename Launch>
void attention_bwd_views_any_float(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& o,
                                   const at::Tensor& lse, const at::Tensor& dout, at::Tensor& dq, at::Tensor& dk,
                                   at::Tensor& dv, bool causal, bool dq_acc_needed, Launch launch, const char* what,
                                   bool views = true) {
  attention_bwd_strided_any_float(
      q, k, v, o, lse, dout, dq, dk, dv, causal, views,
      [&](auto qp, auto kp, auto vp, auto op, const float* lsep, auto dop, auto dqp, auto dkp, auto dvp, int batch,
          int heads, int n, int d, const AttentionStrides& st, bool c, cudaStream_t stream) {
        const auto fp32 = q.options().dtype(at::kFloat);
        const at::Tensor delta = at::empty({batch, heads, n}, fp32);
        const at::Tensor dq_acc = dq_acc_needed ? at::empty({batch, heads, n, d}, fp32) : at::Tensor();
        return launch(qp, kp, vp, op, lsep, dop, dqp, dkp, dvp, data_as<float>(delta),
                      dq_acc_needed ? data_as<float>(dq_acc) : nullptr, batch, heads, n, d, st, c, stream);
      },
      what);
}

// The same on contiguous tensors, for launchers that take no strides (day 17): launch(q, k, v, o, lse, dout, dq,
// dk, dv, delta, dq_acc, batch, heads, n, d, causal, stream).
template <typename Launch>
void attention_bwd_tiled_any_float(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& o,
                                   const at::Tensor& lse, const at::Tensor& dout, at::Tensor& dq, at::Tensor& dk,
                                   at::Tensor& dv, bool causal, bool dq_acc_needed, Launch launch, const char* what) {
  attention_bwd_views_any_float(
      q, k, v, o, lse, dout, dq, dk, dv, causal, dq_acc_needed,
      [&](auto qp, auto kp, auto vp, auto op, const float* lsep, auto dop, auto dqp, auto dkp, auto dvp,
          float* delta, float* dq_acc, int batch, int heads, int n, int d, const AttentionStrides&, bool c,
          cudaStream_t stream) {
        return launch(qp, kp, vp, op, lsep, dop, dqp, dkp, dvp, delta, dq_acc, batch, heads, n, d, c, stream);
      },
      what, /*views=*/false);
}

}  // namespace course

#define COURSE_ATTENTION_BWD_ARGS                                                                               \
  py::arg("q"), py::arg("k"), py::arg("v"), py::arg("o"), py::arg("lse"), py::arg("dout"), py::arg("dq"),     \
      py::arg("dk"), py::arg("dv"), py::arg("causal")

// Defines a Python op `name`(q, k, v, o, lse, dout, dq, dk, dv, causal) -> None that runs the launcher template
// `launcher`.
#define COURSE_ATTENTION_BWD_OP(m, name, launcher, doc)                                                          \
  m.def(                                                                                                        \
      name,                                                                                                     \
      [](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& o,                    \
         const at::Tensor& lse, const at::Tensor& dout, at::Tensor& dq, at::Tensor& dk, at::Tensor& dv,         \
         bool causal) {                                                                                         \
        course::attention_bwd_any_float(q, k, v, o, lse, dout, dq, dk, dv, causal,                              \
                                        [](auto... args) { return launcher(args...); }, #launcher);             \
      },                                                                                                        \
      doc, COURSE_ATTENTION_BWD_ARGS)

// The same for a launcher that takes the [B, H, N, N] and [B, H, N] fp32 scratch (attention_bwd_with_scratch_any_float).
#define COURSE_ATTENTION_BWD_SCRATCH_OP(m, name, launcher, doc)                                                  \
  m.def(                                                                                                        \
      name,                                                                                                     \
      [](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& o,                    \
         const at::Tensor& lse, const at::Tensor& dout, at::Tensor& dq, at::Tensor& dk, at::Tensor& dv,         \
         bool causal) {                                                                                         \
        course::attention_bwd_with_scratch_any_float(q, k, v, o, lse, dout, dq, dk, dv, causal,                 \
                                                     [](auto... args) { return launcher(args...); }, #launcher); \
      },                                                                                                        \
      doc, COURSE_ATTENTION_BWD_ARGS)

// The same for a dK/dV-only launcher (attention_bwd_dkdv_any_float): `name`(q, k, v, o, lse, dout, dk, dv, causal).
#define COURSE_ATTENTION_BWD_DKDV_OP(m, name, launcher, doc)                                                     \
  m.def(                                                                                                        \
      name,                                                                                                     \
      [](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& o,                    \
         const at::Tensor& lse, const at::Tensor& dout, at::Tensor& dk, at::Tensor& dv, bool causal) {          \
        course::attention_bwd_dkdv_any_float(q, k, v, o, lse, dout, dk, dv, causal,                             \
                                             [](auto... args) { return launcher(args...); }, #launcher);        \
      },                                                                                                        \
      doc, py::arg("q"), py::arg("k"), py::arg("v"), py::arg("o"), py::arg("lse"), py::arg("dout"),             \
      py::arg("dk"), py::arg("dv"), py::arg("causal"))

// The same for a tiled launcher (attention_bwd_tiled_any_float): `name`(q, k, v, o, lse, dout, dq, dk, dv, causal).
#define COURSE_ATTENTION_BWD_TILED_OP(m, name, launcher, dq_acc_needed, doc)                                     \
  m.def(                                                                                                        \
      name,                                                                                                     \
      [](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& o,                    \
         const at::Tensor& lse, const at::Tensor& dout, at::Tensor& dq, at::Tensor& dk, at::Tensor& dv,         \
         bool causal) {                                                                                         \
        course::attention_bwd_tiled_any_float(q, k, v, o, lse, dout, dq, dk, dv, causal, dq_acc_needed,         \
                                              [](auto... args) { return launcher(args...); }, #launcher);       \
      },                                                                                                        \
      doc, COURSE_ATTENTION_BWD_ARGS)
