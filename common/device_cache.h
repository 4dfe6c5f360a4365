// device_cache.h: a value of the current device, asked once and kept. A launcher runs thousands of times a second in
// a training loop, and an attribute or occupancy query each call would cost more than a small kernel; the answers
// never change while the process runs. Host code only.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdlib>

// One cache per question: `static DeviceCache cache;` beside the code that asks. 0 means "not asked yet", so a
// question whose answer can be 0 stores another value for it (say -1). Devices past the first kCachedDevices are
// asked on every call. Two host threads' first calls may both ask; both store the same answer.
constexpr int kCachedDevices = 64;
using DeviceCache = std::atomic<int>[kCachedDevices];

// *value = the current device's answer, from the cache or from ask(device, &answer) (a cudaError_t).
template <typename Ask>
inline cudaError_t per_device_value(DeviceCache& cache, Ask ask, int* value) {
  int device = 0;
  if (const cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  const bool cached = device < kCachedDevices;
  int answer = cached ? cache[device].load(std::memory_order_relaxed) : 0;
  if (answer == 0) {
    if (const cudaError_t e = ask(device, &answer); e != cudaSuccess) return e;
    if (cached) cache[device].store(answer, std::memory_order_relaxed);
  }
  *value = answer;
  return cudaSuccess;
}

// The shared memory one block of the current device may opt in to (cudaDevAttrMaxSharedMemoryPerBlockOptin), in
// bytes: a launcher picks its tiles by it, never by what an H100 has (227 KiB; an A100 163, sm_86/89/120 99).
// GRADER_SMEM_OPTIN_KIB lowers it (never raises it), read once: the GPU suite runs the smaller GPUs' choices on an
// H100 that way.
inline cudaError_t smem_optin_bytes(int* bytes) {
  static DeviceCache cache;
  auto ask = [](int dev, int* v) { return cudaDeviceGetAttribute(v, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev); };
  if (const cudaError_t err = per_device_value(cache, ask, bytes); err != cudaSuccess) return err;
  static const int cap_kib = [] {
    const char* s = std::getenv("GRADER_SMEM_OPTIN_KIB");
    return s != nullptr ? std::atoi(s) : 0;
  }();
  if (cap_kib > 0 && cap_kib < *bytes / 1024) *bytes = cap_kib * 1024;
  return cudaSuccess;
}

// Lets `kernel` launch with `bytes` of dynamic shared memory (over 48 KiB a block must opt in, once per kernel and
// device; asking again is cheap). A request over smem_optin_bytes is refused with cudaErrorInvalidValue, the error
// the GPU gives: under GRADER_SMEM_OPTIN_KIB, a launcher that sized its tiles by the H100 fails on it as on the
// smaller GPU, instead of passing on the H100's 227 KiB.
template <typename Kernel>
inline cudaError_t allow_smem(Kernel kernel, size_t bytes) {
  int optin = 0;
  if (const cudaError_t err = smem_optin_bytes(&optin); err != cudaSuccess) return err;
  if (bytes > static_cast<size_t>(optin)) return cudaErrorInvalidValue;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
}
