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
  // On AVX-512 machines both float32 engines are candidates of the algorithm search.
  info.gemm_engine =
      "float32 packed-avx512 or onednn-sgemm (the search measures both; "
      "only onednn-sgemm without AVX-512), float64 openblas-dgemm";
#if defined(__SANITIZE_ADDRESS__)
  info.sanitizers = true;
#else
  info.sanitizers = false;
#endif
  return info;
}

int max_threads() {
  return omp_get_max_threads();
}

}  // namespace rnnx
