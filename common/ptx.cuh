// ptx.cuh: the tensor-core building blocks of the attention kernels, provided from day 12 on (days 12 and 20
// include it instead of copying). Day 11 gives the student the same wrappers, defined in its matmul.cu to be read,
// not written: this file answers none of day 11's holes. CUDA headers only.
//
//   smem_addr             generic pointer -> 32-bit shared-memory address (what ldmatrix and cp.async take)
//   cp_async16            16 bytes global -> shared, asynchronous; invalid = write zeros, read nothing
//   cp_async_commit/wait  close a group of copies / wait until at most N groups are still in flight
//   ldmatrix_x4[_trans]   four 8x8 16-bit matrices from shared memory into the mma fragment layout
//   mma16816<T>           d[16x8] += a[16x16] b[16x8] on tensor cores, T = __half or __nv_bfloat16, fp32 d
//   pack2<T>              two floats -> one register of two 16-bit values (round to nearest)
//   ex2                   2^x in one MUFU instruction
//   lane_id               the lane, read so that the compiler recomputes what derives from it at each use
//   quad_sum / quad_max   reductions over the 4 lanes that own one row of an m16n8 accumulator
//
// The fragment layouts (PTX ISA, "mma.m16n8k16"): in an m16n8 fp32 accumulator, lane t holds rows t/4 and t/4 + 8,
// columns 2(t%4) and 2(t%4) + 1. An A fragment (16x16, row-major) is 4 registers of two 16-bit values: rows t/4
// and t/4 + 8, columns 2(t%4) + {0, 1} and the same + 8. So two adjacent accumulator tiles, packed in pairs, are
// an A fragment: what lets P (and dS) go from one product into the next without shared memory.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace ptx {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// threadIdx.x % 32 lets the compiler hoist every lane-derived shared-memory offset out of a loop and keep it in a
// register for the loop's whole life; in a kernel whose accumulators already hold nearly every register, those
// hoisted offsets are what spills. A volatile read of %laneid is recomputed where it is used (one instruction).
__device__ __forceinline__ int lane_id() {
  int lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  return lane;
}

__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

template <typename T>
__device__ __forceinline__ void mma16816(float* d, const uint32_t* a, uint32_t b0, uint32_t b1) {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "16-bit inputs only");
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  uint32_t w;
  if constexpr (std::is_same_v<T, __half>) {
    const __half2 h = __floats2half2_rn(lo, hi);
    memcpy(&w, &h, sizeof(w));
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    memcpy(&w, &h, sizeof(w));
  }
  return w;
}

__device__ __forceinline__ float ex2(float x) {  // ex2(-inf) = 0; results under 2^-126 flush to 0
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

}  // namespace ptx
