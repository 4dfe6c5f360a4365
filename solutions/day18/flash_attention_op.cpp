// Day 18: attention as a real PyTorch op. Two operators in the `course` namespace, defined by schema, with CUDA
// implementations that run your own kernels: day 12's tensor-core forward and day 17's deterministic backward
// (course.yaml's `uses:` compiles days/day12/attention.cu and days/day17/attention_bwd.cu into this library).
//
//   course::flash_attention(q, k, v, causal) -> (o, lse)
//   course::flash_attention_backward(dout, q, k, v, o, lse, causal) -> (dq, dk, dv)
//
// The library defines no Python module: the grader loads it (torch.ops.load_library) and finds the ops in
// torch.ops.course. flash_attention.py then registers what PyTorch needs besides the CUDA code: fake
// implementations (shapes and dtypes without data, for torch.compile) and the autograd formula.
#include <torch/library.h>

#include <tuple>

#include "attention_bwd_binding.h"  // check_attention_args, attention_views_any_float, attention_bwd_tiled_any_float

// Day 12's forward and day 17's second-pass backward, as their .cu files define them.
template <typename T>
cudaError_t flash_attention_mma_forward(const T* q, const T* k, const T* v, T* o, float* lse, int batch, int heads,
                                        int n, int d, course::AttentionStrides st, bool causal, cudaStream_t stream);
template <typename T>
cudaError_t attention_bwd_twopass(const T* q, const T* k, const T* v, const T* o, const float* lse, const T* dout,
                                  T* dq, T* dk, T* dv, float* delta, float* dq_acc, int batch, int heads, int n, int d,
                                  bool causal, cudaStream_t stream);

namespace {

// The forward runs on tensor cores, which take 16-bit inputs only.
void check_16_bit(const at::Tensor& q, const char* op) {
  TORCH_CHECK(q.scalar_type() == at::kHalf || q.scalar_type() == at::kBFloat16, op,
              " runs day 12's tensor-core forward and takes float16 or bfloat16, got ", q.scalar_type());
}

// o = softmax(q kᵀ / sqrt(d) [+ causal mask]) v, lse = the rows' logsumexp (fp32), on the current stream.
std::tuple<at::Tensor, at::Tensor> flash_attention_cuda(const at::Tensor& q, const at::Tensor& k,
                                                        const at::Tensor& v, bool causal) {
  check_16_bit(q, "course::flash_attention");
  at::Tensor o, lse;
  // BEGIN SOLUTION: contiguous q, k, v; o like q and lse fp32 [B, H, N], new and contiguous; day 12's forward into them
  const at::Tensor qc = q.contiguous(), kc = k.contiguous(), vc = v.contiguous();
  o = at::empty(qc.sizes(), qc.options());
  lse = at::empty({qc.size(0), qc.size(1), qc.size(2)}, qc.options().dtype(at::kFloat));
  course::attention_views_any_float(
      qc, kc, vc, o, lse, causal, [](auto... args) { return flash_attention_mma_forward(args...); },
      "flash_attention_mma_forward");
  // END SOLUTION
  return {o, lse};
}

// dq, dk, dv of the forward above, from its saved o and lse and the incoming gradient dout.
std::tuple<at::Tensor, at::Tensor, at::Tensor> flash_attention_backward_cuda(
    const at::Tensor& dout, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& o,
    const at::Tensor& lse, bool causal) {
  at::Tensor dq, dk, dv;
  // Day 17's backward through course::attention_bwd_tiled_any_float: its dq_acc_needed is false here, since the
  // second pass writes dq itself and needs no fp32 dQ scratch.
  // BEGIN SOLUTION: contiguous inputs (dout often is not); dq, dk, dv new and contiguous; day 17's two-pass backward
  const at::Tensor qc = q.contiguous(), kc = k.contiguous(), vc = v.contiguous(), oc = o.contiguous();
  const at::Tensor lc = lse.contiguous(), dc = dout.contiguous();
  dq = at::empty(qc.sizes(), qc.options());
  dk = at::empty(qc.sizes(), qc.options());
  dv = at::empty(qc.sizes(), qc.options());
  course::attention_bwd_tiled_any_float(
      qc, kc, vc, oc, lc, dc, dq, dk, dv, causal, /*dq_acc_needed=*/false,
      [](auto... args) { return attention_bwd_twopass(args...); }, "attention_bwd_twopass");
  // END SOLUTION
  return {dq, dk, dv};
}

}  // namespace

// The schemas: what the ops take and return, in PyTorch's schema language. Nothing here is mutated or aliased, so
// the arguments carry no annotations (a `Tensor(a!)` would say the op writes into that argument).
TORCH_LIBRARY(course, m) {
  // BEGIN SOLUTION: the two schemas, flash_attention and flash_attention_backward
  m.def("flash_attention(Tensor q, Tensor k, Tensor v, bool causal) -> (Tensor, Tensor)");
  m.def("flash_attention_backward(Tensor dout, Tensor q, Tensor k, Tensor v, Tensor o, Tensor lse, bool causal) "
        "-> (Tensor, Tensor, Tensor)");
  // END SOLUTION
}

// The CUDA implementations. The fake ones (flash_attention.py) serve every device-less trace.
TORCH_LIBRARY_IMPL(course, CUDA, m) {
  m.impl("flash_attention", &flash_attention_cuda);
  m.impl("flash_attention_backward", &flash_attention_backward_cuda);
}
