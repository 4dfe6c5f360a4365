// float_convert.cuh: storage type <-> float for the dtype-templated kernels (days 03 onward). Loads widen to fp32
// and all arithmetic is fp32; stores round back to the storage type. PyTorch builds with
// -D__CUDA_NO_HALF_CONVERSIONS__ and friends, so the conversions are spelled out with intrinsics.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

// Overloads for loads; explicit specialisations for stores (the argument is always float, so the target type must
// be named: from_float<T>(v)).
__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
