// Build options baked in at compile time, for `rnnx info`.
#include <omp.h>

#include "rnnx/version.hpp"

#ifndef RNNX_BUILD_TYPE
#define RNNX_BUILD_TYPE "unknown"
#endif

namespace rnnx {

BuildInfo build_info() {
  BuildInfo info{};
  info.version = RNNX_VERSION_STRING;
  info.build_type = RNNX_BUILD_TYPE;
  info.compiler = "g++ " __VERSION__;
  info.gemm_engine = "packed-avx512, else onednn-sgemm (float32), openblas-dgemm (float64)";
#if defined(__SANITIZE_ADDRESS__)
  info.sanitizers = true;
#else
  info.sanitizers = false;
#endif
  return info;
}

int max_threads() { return omp_get_max_threads(); }

}  // namespace rnnx
