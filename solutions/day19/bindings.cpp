// Day 19 bindings: provided. The ring's launchers take, besides the tensors, the workspace this file allocates:
// the running fp32 state of every query row (max, sum, unnormalized output), two slots per rank for a key/value shard, and the
// counters, a `full` and a `done` per rank and step (zeroed for every call with one memset on the op's stream:
// a counter's value is a count of arrivals within this call).
#include <type_traits>

#include "attention_binding.h"

int ring_attention_shard_rows(int n, int ranks);
#define RING_LAUNCHER(fn)                                                                                       \
  template <typename T>                                                                                         \
  cudaError_t fn(const T* q, const T* k, const T* v, T* o, float* lse, float* o_acc, float* ml_acc, T* slots, \
                 unsigned* counters, int bh, int n, int d, bool causal, int ranks, unsigned jitter,            \
                 cudaStream_t stream);
RING_LAUNCHER(ring_attention_forward)
RING_LAUNCHER(ring_attention_acqrel_forward)
RING_LAUNCHER(ring_attention_local_forward)

namespace {

constexpr int64_t kMaxRanks = 64;

// o, lse = attention(q, k, v) computed by `ranks` groups of blocks passing key/value shards around a ring.
// jitter: 0 for a plain run; any other value seeds the stress mode's sleeps and block order.
template <typename Launch>
void ring_op(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, at::Tensor& o, at::Tensor& lse,
             bool causal, int64_t ranks, int64_t jitter, Launch launch, const char* what) {
  TORCH_CHECK(ranks >= 1 && ranks <= kMaxRanks, "ranks must be in [1, ", kMaxRanks, "], got ", ranks);
  TORCH_CHECK(jitter >= 0 && jitter <= UINT32_MAX, "jitter must be in [0, 2^32), got ", jitter);
  course::attention_any_float(
      q, k, v, o, lse, causal,
      [&](auto qp, auto kp, auto vp, auto op, float* lsep, int batch, int heads, int n, int d, bool c,
          cudaStream_t stream) {
        using T = std::remove_const_t<std::remove_pointer_t<decltype(qp)>>;
        const int bh = batch * heads, r = static_cast<int>(ranks);
        const int64_t shard = ring_attention_shard_rows(n, r);
        const auto f32 = q.options().dtype(at::kFloat);
        const at::Tensor o_acc = at::empty({int64_t{bh} * n * d}, f32);
        const at::Tensor ml_acc = at::empty({int64_t{bh} * n * 2}, f32);
        const at::Tensor slots = at::empty({r * 4 * int64_t{bh} * shard * d}, q.options());
        const at::Tensor counters = at::empty({2 * int64_t{r} * r}, q.options().dtype(at::kInt));
        const cudaError_t err = cudaMemsetAsync(counters.data_ptr(), 0, counters.nbytes(), stream);
        if (err != cudaSuccess) return err;
        return launch(qp, kp, vp, op, lsep, course::data_as<float>(o_acc), course::data_as<float>(ml_acc),
                      course::data_as<T>(slots), reinterpret_cast<unsigned*>(counters.data_ptr<int>()), bh, n, d,
                      c, r, static_cast<unsigned>(jitter), stream);
      },
      what);
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def(
      "ring_attention",
      [](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, at::Tensor& o, at::Tensor& lse, bool causal,
         int64_t ranks, int64_t jitter) {
        ring_op(q, k, v, o, lse, causal, ranks, jitter, [](auto... a) { return ring_attention_forward(a...); },
                "ring_attention");
      },
      "o, lse = attention over `ranks` shards passed around a ring of block groups (fences and volatile counters)",
      pybind11::arg("q"), pybind11::arg("k"), pybind11::arg("v"), pybind11::arg("o"), pybind11::arg("lse"),
      pybind11::arg("causal"), pybind11::arg("ranks"), pybind11::arg("jitter") = 0);
  m.def(
      "ring_attention_acqrel",
      [](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, at::Tensor& o, at::Tensor& lse, bool causal,
         int64_t ranks, int64_t jitter) {
        ring_op(q, k, v, o, lse, causal, ranks, jitter,
                [](auto... a) { return ring_attention_acqrel_forward(a...); }, "ring_attention_acqrel");
      },
      "the same ring with acquire/release counters (cuda::atomic_ref, device scope)", pybind11::arg("q"),
      pybind11::arg("k"), pybind11::arg("v"), pybind11::arg("o"), pybind11::arg("lse"), pybind11::arg("causal"),
      pybind11::arg("ranks"), pybind11::arg("jitter") = 0);
  m.def(
      "ring_attention_local",
      [](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, at::Tensor& o, at::Tensor& lse, bool causal,
         int64_t ranks) {
        ring_op(q, k, v, o, lse, causal, ranks, 0, [](auto... a) { return ring_attention_local_forward(a...); },
                "ring_attention_local");
      },
      "the ring's schedule and compute with every shard already local (the overlap measurement's reference)",
      pybind11::arg("q"), pybind11::arg("k"), pybind11::arg("v"), pybind11::arg("o"), pybind11::arg("lse"),
      pybind11::arg("causal"), pybind11::arg("ranks"));
}
