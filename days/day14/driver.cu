// driver.cu: runs one of day 14's kernels without Python, so that cuda-gdb and GPU core dumps see a small program
// instead of the Python interpreter and all of PyTorch. Provided; nothing to fill in.
//
// Build it with the exercise's file (from days/day14; -G: device debug information, no optimisation):
//   nvcc -G -g -std=c++17 -I../../common -o race_debug driver.cu race.cu
// Run:
//   ./race_debug [rows] [cols] [--reps N] [--wrong-cols K]
// It fills x[rows, cols] with random logits, runs softmax_forward<float> once, compares with a softmax computed
// on the CPU in double precision and prints the largest error. --reps N then times N more calls (median, µs).
// --wrong-cols K tells the kernel that rows are K times longer than they are: a launcher given the wrong size,
// which makes the kernel read far past its tensors (the core-dump example of the lesson).

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

template <typename T>
cudaError_t softmax_forward(const T* x, T* y, int rows, int cols, cudaStream_t stream);

static int check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(err));
  return err != cudaSuccess;
}

int main(int argc, char** argv) {
  int rows = 1000, cols = 1000, reps = 0, wrong = 1, positional = 0;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--wrong-cols") && i + 1 < argc) {
      wrong = std::atoi(argv[++i]);
    } else if (positional < 2) {
      (positional++ == 0 ? rows : cols) = std::atoi(argv[i]);
    } else {
      std::fprintf(stderr, "usage: %s [rows] [cols] [--reps N] [--wrong-cols K]\n", argv[0]);
      return 2;
    }
  }
  const size_t n = static_cast<size_t>(rows) * cols;
  std::vector<float> x(n), y(n);
  unsigned state = 12345u;  // a fixed LCG: the same inputs on every run, for a debugger session to repeat
  for (float& v : x) {
    state = state * 1664525u + 1013904223u;
    v = 6.0f * (static_cast<float>(state >> 8) / 16777216.0f) - 3.0f;
  }
  float *dx = nullptr, *dy = nullptr;
  if (check(cudaMalloc(&dx, n * sizeof(float)), "cudaMalloc x") || check(cudaMalloc(&dy, n * sizeof(float)), "cudaMalloc y"))
    return 1;
  check(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice), "copy x");
  if (check(softmax_forward<float>(dx, dy, rows, cols * wrong, nullptr), "launch") ||
      check(cudaDeviceSynchronize(), "kernel"))
    return 1;
  check(cudaMemcpy(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost), "copy y");
  double worst = 0.0;
  for (int r = 0; r < rows; ++r) {
    const float* xr = &x[static_cast<size_t>(r) * cols];
    double m = -INFINITY, s = 0.0;
    for (int c = 0; c < cols; ++c) m = std::max(m, static_cast<double>(xr[c]));
    for (int c = 0; c < cols; ++c) s += std::exp(xr[c] - m);
    for (int c = 0; c < cols; ++c) {
      worst = std::max(worst, std::fabs(std::exp(xr[c] - m) / s - y[static_cast<size_t>(r) * cols + c]));
    }
  }
  std::printf("rows %d, cols %d: largest error vs the CPU %.3g\n", rows, cols, worst);
  if (reps > 0) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    std::vector<float> ms(reps);
    for (int i = 0; i < reps; ++i) {
      cudaEventRecord(a);
      softmax_forward<float>(dx, dy, rows, cols, nullptr);
      cudaEventRecord(b);
      cudaEventSynchronize(b);
      cudaEventElapsedTime(&ms[i], a, b);
    }
    std::sort(ms.begin(), ms.end());
    std::printf("median of %d calls: %.1f us\n", reps, 1000.0f * ms[reps / 2]);
  }
  cudaFree(dx);
  cudaFree(dy);
  return worst < 1e-5 ? 0 : 3;
}
