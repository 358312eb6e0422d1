// The cuda tests' side of test_util.hpp's run(): device buffers through the CUDA runtime,
// and the skip of every GPU test on a machine without a GPU (never counted as passed).
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "test_util.hpp"

namespace rnnx_test {

inline void cuda_or_throw(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

inline const DeviceHooks& cuda_hooks() {
  static const DeviceHooks hooks{
      [](size_t n) {
        void* p = nullptr;
        cuda_or_throw(cudaMalloc(&p, n == 0 ? 1 : n), "cudaMalloc");
        return p;
      },
      [](void* p) { cudaFree(p); },
      [](void* dst, const void* src, size_t n) {
        cuda_or_throw(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice), "cudaMemcpy to device");
      },
      [](void* dst, const void* src, size_t n) {
        cuda_or_throw(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
      },
      nullptr};
  return hooks;
}

// "" when a GPU is there, else why not.
inline std::string no_gpu_reason() {
  static const std::string reason = [] {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) return std::string("no CUDA device: ") + cudaGetErrorString(e);
    return n == 0 ? std::string("no CUDA device on this machine") : std::string();
  }();
  return reason;
}

// RNNX_REQUIRE_GPU=1 (tools/gpu-check sets it where nvidia-smi lists a GPU): a GPU the
// runtime cannot use (driver mismatch, hidden device) fails every GPU test instead of
// skipping it, so such a machine never reads as a pass.
inline bool gpu_required() {
  const char* v = std::getenv("RNNX_REQUIRE_GPU");
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

#define RNNX_SKIP_WITHOUT_GPU()                                                         \
  do {                                                                                  \
    const std::string why = ::rnnx_test::no_gpu_reason();                               \
    if (!why.empty() && ::rnnx_test::gpu_required())                                    \
      FAIL() << why << " but RNNX_REQUIRE_GPU is set (nvidia-smi lists a GPU that the " \
             << "CUDA runtime cannot use)";                                             \
    if (!why.empty()) GTEST_SKIP() << why << " (GPU tests run on tools/gpu-check)";     \
  } while (0)

inline RunOptions on_gpu(RunOptions o) {
  o.device = &cuda_hooks();
  return o;
}

}  // namespace rnnx_test
