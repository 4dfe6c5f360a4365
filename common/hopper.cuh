// hopper.cuh: the Hopper (sm_90a) building blocks of the attention kernels, shared by day 12's forward and day 20's
// backward. Device code exists only in the sm_90a image (`__CUDA_ARCH_FEAT_SM90_ALL`); the host helpers decide at
// run time whether that image is the one running.
//
//   available()            this GPU is a 9.0 part and runs the sm_90a image of the calling file (probed once)
//   make_map<T>            a TMA descriptor for a [B][H][N][D] tensor of any head strides, boxes of [rows][64]
//   desc_sw128             a wgmma shared-memory matrix descriptor (128-byte swizzle)
//   wgmma_ss<T, N, ...>    d[64 x N] (+)= A[64 x 16] B[16 x N], N = 32/64/128/176, operands in shared memory, either major-ness
//   wgmma_rs<T, N>         d[64 x N] += A[64 x 16] B[16 x N], A in registers, B N-major in shared memory
//   wgmma_fence / commit / wait<N>, fence_regs   ordering around the asynchronous products
//   fence_proxy_async      (async_copy.cuh) generic-proxy shared-memory writes before wgmma's async-proxy reads
//   tma_load, tma_tile     TMA copies counted in by an mbarrier (async_copy.cuh: mbar_*, bulk_wait*)
//   named_sync / named_arrive   warpgroups taking turns
//   setmaxnreg_dec / inc   registers moved from a producer warpgroup to the consumers
//   bulk_reduce_add_f32    fp32 tiles added into global memory by the bulk-copy engine (waited on by bulk_wait*)
//
// Tiles live in shared memory as D/64 column blocks of [rows][64] 16-bit values: rows of 128 bytes, 16-byte chunk c
// of row r at c ^ (r % 8), each block starting on a 1024-byte boundary. That is wgmma's canonical 128-byte-swizzled
// layout and what TMA writes with CU_TENSOR_MAP_SWIZZLE_128B. Read as a K-major operand (the reduction runs along a
// row) a k-step of 16 moves 32 bytes along the row (and to the next column block every 4); read as an MN-major one
// (the reduction runs down the rows) a k-step moves 16 rows, and the leading byte offset is the distance between
// column blocks.
#pragma once

#include <cuda.h>          // CUtensorMap
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "async_copy.cuh"  // mbarriers, bulk waits (sm_90)
#include "head_strides.h"  // course::HeadStrides

namespace hopper {

// Set to 1 by the probe when it runs from the sm_90a image. static: each file that includes this has its own.
static __device__ int g_sm90a_image;

static __global__ void probe_kernel() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  g_sm90a_image = 1;
#else
  g_sm90a_image = 0;
#endif
}

// True when this device is a 9.0 GPU running the sm_90a image of the including file (checked once per device), and
// the grader is not running another GPU's rules on it (GRADER_SIMULATE_GPU, e.g. 8.6: grader/gpu_support.py).
static inline bool available() {
  static int known[64] = {};  // 0: not asked yet, 1: yes, 2: no
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return false;
  static const bool simulated_other = [] {
    const char* s = std::getenv("GRADER_SIMULATE_GPU");
    return s != nullptr && *s != '\0' && std::strcmp(s, "9.0") != 0;
  }();
  if (simulated_other) return false;
  if (known[dev] == 0) {
    int major = 0, minor = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    int flag = 0;
    if (major == 9 && minor == 0) {
      probe_kernel<<<1, 1>>>();
      if (cudaGetLastError() != cudaSuccess || cudaMemcpyFromSymbol(&flag, g_sm90a_image, sizeof(int)) != cudaSuccess)
        flag = 0;
    }
    known[dev] = flag == 1 ? 1 : 2;
  }
  return known[dev] == 1;
}

// cuTensorMapEncodeTiled is a driver function: fetched once through the runtime (no -lcuda needed).
static inline PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  static bool asked = false;
  if (!asked) {
    asked = true;
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
#if CUDART_VERSION >= 12050
    const cudaError_t err = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
                                                             &found);
#else
    const cudaError_t err = cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &p, cudaEnableDefault, &found);
#endif
    if (err == cudaSuccess && found == cudaDriverEntryPointSuccess)
      fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }
  return fn;
}

// The tensor [B, H, N, D] (rows where `st` says: a view of a bigger tensor is fine) as a 4-D TMA view, boxes of
// [rows][64] with the 128-byte swizzle; rows past N (within a head) arrive as zeros. False when the driver has no
// TMA or the tensor does not qualify (16-byte aligned start and strides): the caller then takes another path.
template <typename T>
bool make_map(CUtensorMap* map, const T* ptr, course::HeadStrides st, int batch, int heads, int n, int d, int rows) {
  const auto encode = encode_tiled();
  if (encode == nullptr || !st.rows16(sizeof(T)) || reinterpret_cast<uintptr_t>(ptr) % 16 != 0) return false;
  const cuuint64_t dims[4] = {static_cast<cuuint64_t>(d), static_cast<cuuint64_t>(n), static_cast<cuuint64_t>(heads),
                              static_cast<cuuint64_t>(batch)};
  const cuuint64_t strides[3] = {static_cast<cuuint64_t>(st.row) * sizeof(T),
                                 static_cast<cuuint64_t>(st.head) * sizeof(T),
                                 static_cast<cuuint64_t>(st.batch) * sizeof(T)};
  const cuuint32_t box[4] = {64, static_cast<cuuint32_t>(rows), 1, 1};
  const cuuint32_t steps[4] = {1, 1, 1, 1};
  const CUtensorMapDataType type =
      std::is_same_v<T, __half> ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  return encode(map, type, 4, const_cast<T*>(ptr), dims, strides, box, steps, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// Which head a tile comes from: its TMA coordinates after the column and the row
// (make_map's dimensions 2 and 3).
struct Head {
  int h, b;
};

// The registers a block of `threads` starts with, one block an SM (65536 / threads each, rounded down to 8):
// setmaxnreg only moves them between its warpgroups, and asking for more than this waits for ever (a hang).
constexpr int launch_registers(int threads) { return threads * ((65536 / threads) & ~7); }

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

// Shared-memory matrix descriptor: start address, leading and stride byte offsets (>> 4), 128-byte swizzle.
__device__ __forceinline__ uint64_t desc_sw128(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | (static_cast<uint64_t>(lbo >> 4) << 16) |
         (static_cast<uint64_t>(sbo >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Keeps the compiler from moving reads or writes of accumulator registers across a wgmma issue or wait.
template <int N>
__device__ __forceinline__ void fence_regs(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
template <int N>
__device__ __forceinline__ void fence_regs(uint32_t (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(r[i])::"memory");
}

#define HOPPER_R0_31                                                                                               \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31"
#define HOPPER_R0_15 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
#define HOPPER_R32_63                                                                                              \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, " \
  "%54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define HOPPER_R64_87                                                                                              \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, " \
  "%86, %87"
#define HOPPER_ACC8(d, i)                                                                                      \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
      "+f"(d[i + 7])
#define HOPPER_OUT8(d, i)                                                                                      \
  "=f"(d[i]), "=f"(d[i + 1]), "=f"(d[i + 2]), "=f"(d[i + 3]), "=f"(d[i + 4]), "=f"(d[i + 5]), "=f"(d[i + 6]), \
      "=f"(d[i + 7])
#define HOPPER_ACC16(d) HOPPER_ACC8(d, 0), HOPPER_ACC8(d, 8)
#define HOPPER_OUT16(d) HOPPER_OUT8(d, 0), HOPPER_OUT8(d, 8)
#define HOPPER_ACC32(d) HOPPER_ACC8(d, 0), HOPPER_ACC8(d, 8), HOPPER_ACC8(d, 16), HOPPER_ACC8(d, 24)
#define HOPPER_OUT32(d) HOPPER_OUT8(d, 0), HOPPER_OUT8(d, 8), HOPPER_OUT8(d, 16), HOPPER_OUT8(d, 24)
#define HOPPER_ACC64(d) HOPPER_ACC32(d), HOPPER_ACC8(d, 32), HOPPER_ACC8(d, 40), HOPPER_ACC8(d, 48), HOPPER_ACC8(d, 56)
#define HOPPER_OUT64(d) HOPPER_OUT32(d), HOPPER_OUT8(d, 32), HOPPER_OUT8(d, 40), HOPPER_OUT8(d, 48), HOPPER_OUT8(d, 56)
#define HOPPER_ACC88(d) HOPPER_ACC64(d), HOPPER_ACC8(d, 64), HOPPER_ACC8(d, 72), HOPPER_ACC8(d, 80)
#define HOPPER_OUT88(d) HOPPER_OUT64(d), HOPPER_OUT8(d, 64), HOPPER_OUT8(d, 72), HOPPER_OUT8(d, 80)

// d[64 x N] = A[64 x 16] B[16 x N] (kAccumulate: d += ...), N = 32, 64, 128 or 176, both operands in shared memory.
// kTransA / kTransB: the operand is MN-major (its rows run along the reduction) instead of K-major. The first form
// only writes d ("=f"), so the compiler sees no use of the previous values.
template <typename T, int N, bool kAccumulate, int kTransA, int kTransB>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b) {
  static_assert(N == 32 || N == 64 || N == 128 || N == 176, "n32, n64, n128 or n176");
  constexpr bool kHalf = std::is_same_v<T, __half>;
#define HOPPER_SS(ACC, OPS, SCALE_D)                                                                            \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" OPS ";\n}\n"                                              \
               : ACC(d)                                                                                  \
               : "l"(desc_a), "l"(desc_b), "n"(SCALE_D), "n"(kTransA), "n"(kTransB))
  // The input operands follow the outputs: n32 has 16 (desc_a, desc_b, scale_d, trans at 16-20), n64 32 (32-36),
  // n128 64 (64-68), n176 88 (88-92).
#define HOPPER_SS32(TY) "18, 0;\nwgmma.mma_async.sync.aligned.m64n32k16.f32." TY "." TY " {" HOPPER_R0_15 \
  "}, %16, %17, p, 1, 1, %19, %20"
#define HOPPER_SS64(TY) "34, 0;\nwgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " {" HOPPER_R0_31 \
  "}, %32, %33, p, 1, 1, %35, %36"
#define HOPPER_SS128(TY) "66, 0;\nwgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " {" HOPPER_R0_31 \
  ", " HOPPER_R32_63 "}, %64, %65, p, 1, 1, %67, %68"
#define HOPPER_SS176(TY) "90, 0;\nwgmma.mma_async.sync.aligned.m64n176k16.f32." TY "." TY " {" HOPPER_R0_31 \
  ", " HOPPER_R32_63 ", " HOPPER_R64_87 "}, %88, %89, p, 1, 1, %91, %92"
  if constexpr (N == 32) {
    if constexpr (kAccumulate) {
      if constexpr (kHalf) HOPPER_SS(HOPPER_ACC16, HOPPER_SS32("f16"), 1);
      else HOPPER_SS(HOPPER_ACC16, HOPPER_SS32("bf16"), 1);
    } else {
      if constexpr (kHalf) HOPPER_SS(HOPPER_OUT16, HOPPER_SS32("f16"), 0);
      else HOPPER_SS(HOPPER_OUT16, HOPPER_SS32("bf16"), 0);
    }
  } else if constexpr (N == 64) {
    if constexpr (kAccumulate) {
      if constexpr (kHalf) HOPPER_SS(HOPPER_ACC32, HOPPER_SS64("f16"), 1);
      else HOPPER_SS(HOPPER_ACC32, HOPPER_SS64("bf16"), 1);
    } else {
      if constexpr (kHalf) HOPPER_SS(HOPPER_OUT32, HOPPER_SS64("f16"), 0);
      else HOPPER_SS(HOPPER_OUT32, HOPPER_SS64("bf16"), 0);
    }
  } else if constexpr (N == 128) {
    if constexpr (kAccumulate) {
      if constexpr (kHalf) HOPPER_SS(HOPPER_ACC64, HOPPER_SS128("f16"), 1);
      else HOPPER_SS(HOPPER_ACC64, HOPPER_SS128("bf16"), 1);
    } else {
      if constexpr (kHalf) HOPPER_SS(HOPPER_OUT64, HOPPER_SS128("f16"), 0);
      else HOPPER_SS(HOPPER_OUT64, HOPPER_SS128("bf16"), 0);
    }
  } else {
    if constexpr (kAccumulate) {
      if constexpr (kHalf) HOPPER_SS(HOPPER_ACC88, HOPPER_SS176("f16"), 1);
      else HOPPER_SS(HOPPER_ACC88, HOPPER_SS176("bf16"), 1);
    } else {
      if constexpr (kHalf) HOPPER_SS(HOPPER_OUT88, HOPPER_SS176("f16"), 0);
      else HOPPER_SS(HOPPER_OUT88, HOPPER_SS176("bf16"), 0);
    }
  }
#undef HOPPER_SS32
#undef HOPPER_SS64
#undef HOPPER_SS128
#undef HOPPER_SS176
#undef HOPPER_SS
}

// d[64 x N] += A[64 x 16] B[16 x N], N = 64 or 128: A in registers (per warp, the m16n8k16 A fragment of its 16
// rows: an accumulator tile packed in pairs, see ptx.cuh, or ldmatrix.x4 of a row-major tile), B in shared memory,
// N-major (kTransB = 1, imm-trans-b) or K-major (0). !kAccumulate: d = A B (the first k-step of a product).
template <typename T, int N, int kTransB = 1, bool kAccumulate = true>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const uint32_t* a, uint64_t desc_b) {
  static_assert(N == 64 || N == 128, "n64 or n128");
  constexpr bool kHalf = std::is_same_v<T, __half>;
#define HOPPER_RS(SHAPE, TY, REGS, ACC, A0, A1, A2, A3, DB, SD, TB)                                          \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" SD ", 0;\nwgmma.mma_async.sync.aligned." SHAPE ".f32." TY \
               "." TY " {" REGS "}, {%" A0 ", %" A1 ", %" A2 ", %" A3 "}, %" DB ", p, 1, 1, %" TB ";\n}\n"       \
               : ACC(d)                                                                                        \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "n"(kAccumulate ? 1 : 0), "n"(kTransB))
  // The operand numbers: a at N/2 .. N/2 + 3, desc_b, scale-d and trans-b after it.
#define HOPPER_RS64(TY, ACC) HOPPER_RS("m64n64k16", TY, HOPPER_R0_31, ACC, "32", "33", "34", "35", "36", "37", "38")
#define HOPPER_RS128(TY, ACC) \
  HOPPER_RS("m64n128k16", TY, HOPPER_R0_31 ", " HOPPER_R32_63, ACC, "64", "65", "66", "67", "68", "69", "70")
  if constexpr (N == 64) {
    if constexpr (kHalf) {
      if constexpr (kAccumulate) HOPPER_RS64("f16", HOPPER_ACC32);
      else HOPPER_RS64("f16", HOPPER_OUT32);
    } else {
      if constexpr (kAccumulate) HOPPER_RS64("bf16", HOPPER_ACC32);
      else HOPPER_RS64("bf16", HOPPER_OUT32);
    }
  } else {
    if constexpr (kHalf) {
      if constexpr (kAccumulate) HOPPER_RS128("f16", HOPPER_ACC64);
      else HOPPER_RS128("f16", HOPPER_OUT64);
    } else {
      if constexpr (kAccumulate) HOPPER_RS128("bf16", HOPPER_ACC64);
      else HOPPER_RS128("bf16", HOPPER_OUT64);
    }
  }
#undef HOPPER_RS64
#undef HOPPER_RS128
#undef HOPPER_RS
}
#undef HOPPER_R0_15
#undef HOPPER_R0_31
#undef HOPPER_R32_63
#undef HOPPER_R64_87
#undef HOPPER_ACC8
#undef HOPPER_OUT8
#undef HOPPER_ACC16
#undef HOPPER_OUT16
#undef HOPPER_ACC32
#undef HOPPER_OUT32
#undef HOPPER_ACC64
#undef HOPPER_OUT64
#undef HOPPER_ACC88
#undef HOPPER_OUT88

// Named barriers 1..15 (0 is __syncthreads): `threads` arrivals, whole warps, complete a use. sync waits for them;
// arrive adds its warp's and goes on, which lets one warpgroup hand a turn to another.
__device__ __forceinline__ void named_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
// Registers handed between warpgroups (every warp of a warpgroup executes it): a producer gives its registers
// back, consumers take them. ptxas compiles the code after each to the new limit.
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
// The bulk-copy engine adds `bytes` of fp32 at shared src into global dst (both 16-byte aligned, bytes a multiple
// of 16), one reduction per element in L2, no thread involved after the issue; each issue is committed as a bulk
// group. bulk_wait_read<N>: at most N groups still reading their shared source (which may then be rewritten);
// bulk_wait<N>: at most N groups not yet complete.
__device__ __forceinline__ void bulk_reduce_add_f32(float* dst, uint32_t src, uint32_t bytes) {
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n"
               ::"l"(dst), "r"(src), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
// A box of the 4-D view [B][H][N][D] (coordinates innermost first: column, row, head, batch) into shared memory.
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap* map, int col, int row, Head hd,
                                         uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
      "[%6];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(col), "r"(row), "r"(hd.h), "r"(hd.b), "r"(bar)
      : "memory");
}
// kRows x D rows of a head (rows past N arrive as zeros): D/64 boxes of [kRows][64], one per column block, counted
// in by bar (which this arms with the bytes). The map's box must be [kRows][64].
template <int D, int kRows>
__device__ __forceinline__ void tma_tile(uint32_t dst, const CUtensorMap* map, int row, Head hd, uint32_t bar) {
  mbar_expect_tx(bar, kRows * D * 2);
#pragma unroll
  for (int h = 0; h < D / 64; ++h) tma_load(dst + h * (kRows * 128), map, 64 * h, row, hd, bar);
}

#endif  // __CUDA_ARCH_FEAT_SM90_ALL

}  // namespace hopper
