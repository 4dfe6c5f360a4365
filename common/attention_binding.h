// attention_binding.h: the PyTorch side of the attention track (day 10 onward). Every forward op has the same
// interface, o = softmax(Q Kᵀ / sqrt(d), causal mask optional) V plus the row logsumexp, for contiguous q, k, v,
// o of shape [B, H, N, d] in float32, float16 or bfloat16 and an fp32 lse of shape [B, H, N]; each day's
// bindings.cpp only names its launchers. The launchers live in the day's attention.cu, which includes only CUDA
// headers and takes raw pointers, sizes and PyTorch's current stream. The kernels of days 12 and 20 also take
// views (attention_views_any_float): each tensor's strides are passed on (head_strides.h), its columns contiguous.
#pragma once

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAGuard.h>

#include "course_glue.h"
#include "head_strides.h"

namespace course {

// The head dims the kernels are compiled for (they are template parameters there); anything else stops here.
inline bool attention_head_dim_supported(int64_t d) { return d == 64 || d == 128; }

struct AttentionSizes {
  int batch, heads, n, d;
};

// views: the tensors may be views with contiguous columns (the strided kernels); o_written: o is this call's output.
inline AttentionSizes check_attention_args(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                           const at::Tensor& o, const at::Tensor& lse, bool views = false,
                                           bool o_written = true) {
  TORCH_CHECK(q.is_cuda() && k.is_cuda() && v.is_cuda() && o.is_cuda() && lse.is_cuda(),
              "q, k, v, o and lse must be CUDA tensors");
  TORCH_CHECK(k.device() == q.device() && v.device() == q.device() && o.device() == q.device() &&
                  lse.device() == q.device(),
              "q, k, v, o and lse must be on the same device");
  TORCH_CHECK(q.dim() == 4, "q must be 4-D [B, H, N, d], got shape ", q.sizes());
  TORCH_CHECK(k.sizes() == q.sizes() && v.sizes() == q.sizes() && o.sizes() == q.sizes(),
              "k, v and o must have q's shape ", q.sizes(), ", got k ", k.sizes(), ", v ", v.sizes(), ", o ",
              o.sizes());
  TORCH_CHECK(k.scalar_type() == q.scalar_type() && v.scalar_type() == q.scalar_type() &&
                  o.scalar_type() == q.scalar_type(),
              "q, k, v and o must have the same dtype, got ", q.scalar_type(), ", ", k.scalar_type(), ", ",
              v.scalar_type(), ", ", o.scalar_type());
  const int64_t B = q.size(0), H = q.size(1), N = q.size(2), d = q.size(3);
  TORCH_CHECK(attention_head_dim_supported(d), "head dim d = ", d, " is not supported (supported: 64, 128)");
  TORCH_CHECK(lse.scalar_type() == at::kFloat, "lse must be float32, got ", lse.scalar_type());
  TORCH_CHECK(lse.dim() == 3 && lse.size(0) == B && lse.size(1) == H && lse.size(2) == N, "lse must be [B, H, N] = [",
              B, ", ", H, ", ", N, "], got ", lse.sizes());
  if (views) {
    // Any head, row and batch strides (the kernel is told them); the columns are contiguous, and o, written by
    // many blocks at once, has no two elements at one address.
    TORCH_CHECK(q.stride(3) == 1 && k.stride(3) == 1 && v.stride(3) == 1 && o.stride(3) == 1,
                "q, k, v and o must have contiguous columns (stride 1 in the last dim), got strides q ", q.strides(),
                ", k ", k.strides(), ", v ", v.strides(), ", o ", o.strides());
    TORCH_CHECK(!o_written || o.is_non_overlapping_and_dense(),
                "o must be a dense tensor (contiguous, or a permutation of one, e.g. [B, N, H, d] memory viewed as "
                "[B, H, N, d]), got strides ", o.strides());
    TORCH_CHECK(lse.is_contiguous(), "lse must be contiguous");
  } else {
    TORCH_CHECK(q.is_contiguous() && k.is_contiguous() && v.is_contiguous() && o.is_contiguous() &&
                    lse.is_contiguous(),
                "q, k, v, o and lse must be contiguous");
  }
  // One query row per (b, h, i) is the most any kernel counts in an int (grid sizes, row indices).
  TORCH_CHECK(B * H * N <= INT_MAX, "B * H * N = ", B * H * N, " does not fit in int");
  return {static_cast<int>(B), static_cast<int>(H), static_cast<int>(N), static_cast<int>(d)};
}

// A tensor's head strides in elements: dims 0, 1, 2 of [B, H, N, d] (the columns, dim 3, are contiguous).
inline HeadStrides head_strides(const at::Tensor& t) { return {t.stride(0), t.stride(1), t.stride(2)}; }

// Checks the tensors, picks T from the dtype and calls
//   launch(const T* q, const T* k, const T* v, T* o, float* lse, batch, heads, n, d, strides, causal, stream)
// on q's device and that device's current stream, strides.q .. strides.o read off the tensors (strides.dout =
// strides.o: the forward has no dout). views: q, k, v and o may have any strides but the columns' (the kernels of
// days 12 and 20); else they must be contiguous (attention_any_float). `launch` is a generic lambda around one of
// the day's launcher templates, e.g. [](auto... args) { return flash_attention_mma_forward(args...); }, so T is
// deduced from the pointers.
template <typename Launch>
void attention_views_any_float(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, at::Tensor& o,
                               at::Tensor& lse, bool causal, Launch launch, const char* what, bool views = true) {
  const AttentionSizes s = check_attention_args(q, k, v, o, lse, views);
  const AttentionStrides st{head_strides(q), head_strides(k), head_strides(v), head_strides(o), head_strides(o)};
  const c10::cuda::CUDAGuard guard(q.device());  // the stream below, and any scratch, belong to q's device
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  dispatch_float_types(q.scalar_type(), [&](auto tag) {
    using T = decltype(tag);
    check_launch(launch(data_as<const T>(q), data_as<const T>(k), data_as<const T>(v), data_as<T>(o),
                        data_as<float>(lse), s.batch, s.heads, s.n, s.d, st, causal, stream),
                 what);
  });
}

// The same for contiguous tensors and launchers that take no strides:
//   launch(const T* q, const T* k, const T* v, T* o, float* lse, batch, heads, n, d, causal, stream).
template <typename Launch>
void attention_any_float(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, at::Tensor& o,
                         at::Tensor& lse, bool causal, Launch launch, const char* what) {
  attention_views_any_float(
      q, k, v, o, lse, causal,
      [&](auto qp, auto kp, auto vp, auto op, float* lsep, int batch, int heads, int n, int d,
          const AttentionStrides&, bool c, cudaStream_t stream) {
        return launch(qp, kp, vp, op, lsep, batch, heads, n, d, c, stream);
      },
      what, /*views=*/false);
}

// The same for launchers that also take an fp32 scratch of B·H·N·N values (the materialized S, then P, of the
// naive attention): launch(q, k, v, o, lse, scores, batch, heads, n, d, causal, stream). The scratch comes from
// PyTorch's caching allocator, so it shows in torch.cuda.max_memory_allocated. It is released when this function
// returns, possibly before the kernels have run; that is safe because the allocator only hands the block out
// again to work queued after them on the same stream.
template <typename Launch>
void attention_with_scores_any_float(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, at::Tensor& o,
                                     at::Tensor& lse, bool causal, Launch launch, const char* what) {
  attention_any_float(
      q, k, v, o, lse, causal,
      [&](auto qp, auto kp, auto vp, auto op, float* lsep, int batch, int heads, int n, int d, bool c,
          cudaStream_t stream) {
        const at::Tensor scores = at::empty({batch, heads, n, n}, q.options().dtype(at::kFloat));
        return launch(qp, kp, vp, op, lsep, data_as<float>(scores), batch, heads, n, d, c, stream);
      },
      what);
}

}  // namespace course

#define COURSE_ATTENTION_ARGS \
  py::arg("q"), py::arg("k"), py::arg("v"), py::arg("o"), py::arg("lse"), py::arg("causal")

// Defines a Python op `name`(q, k, v, o, lse, causal) -> None that runs the launcher template `launcher`.
#define COURSE_ATTENTION_OP(m, name, launcher, doc)                                                             \
  m.def(                                                                                                        \
      name,                                                                                                     \
      [](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, at::Tensor& o, at::Tensor& lse,         \
         bool causal) {                                                                                         \
        course::attention_any_float(q, k, v, o, lse, causal, [](auto... args) { return launcher(args...); },    \
                                    #launcher);                                                                 \
      },                                                                                                        \
      doc, COURSE_ATTENTION_ARGS)

// The same for a launcher that takes the [B, H, N, N] fp32 scratch (see attention_with_scores_any_float).
#define COURSE_ATTENTION_SCORES_OP(m, name, launcher, doc)                                                      \
  m.def(                                                                                                        \
      name,                                                                                                     \
      [](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, at::Tensor& o, at::Tensor& lse,         \
         bool causal) {                                                                                         \
        course::attention_with_scores_any_float(                                                                \
            q, k, v, o, lse, causal, [](auto... args) { return launcher(args...); }, #launcher);                 \
      },                                                                                                        \
      doc, COURSE_ATTENTION_ARGS)
