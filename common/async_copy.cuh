// async_copy.cuh: mbarriers and the bulk-copy engine, sm_90 (not only sm_90a): what hopper.cuh (day 12's forward,
// day 20's backward) builds its TMA copies on, apart from the wgmma and tensor-map code that needs sm_90a.
//
//   mbar_init / init_fence / expect_tx / wait / arrive   copies counted in by an mbarrier; buffers handed back
//   bulk_load                 a contiguous range global -> shared by the bulk-copy engine, counted in by an mbarrier
//   bulk_wait_read / bulk_wait   bulk groups (stores, reductions) done reading shared memory / complete
//   fence_proxy_async         this thread's generic-proxy shared-memory accesses (st.shared, cp.async) ordered
//                             before the async proxy's (bulk copies, TMA, wgmma) that follow a barrier
//
// Device code exists only for sm_90 and later (every function here is one PTX instruction older targets lack).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace hopper {

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900  // (the host pass parses the kernels that call them)
// mbarriers: one thread arms a barrier with the bytes it expects, the copies' completion counts them down, and
// every thread waits for the barrier's current phase (its parity) to complete.
__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}
// A consumer's "done with this buffer": one arrival (the barrier was initialised with the number of arrivals a
// phase needs). The default .release semantics orders this thread's earlier reads before the producer's refill.
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// Generic-proxy writes (cp.async, st.shared) made visible to the async proxy (wgmma's and the bulk engine's accesses).
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// `bytes` (a multiple of 16) from global src to shared dst (both 16-byte aligned) by the bulk-copy engine, no
// thread involved after the issue; the bytes count down mbarrier bar's transaction count (armed by expect_tx).
__device__ __forceinline__ void bulk_load(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
               ::"r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}

template <int N>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
template <int N>
__device__ __forceinline__ void bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}

#endif

}  // namespace hopper
