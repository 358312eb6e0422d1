// Build options baked in at compile time, for `rnnx info`.
#include <omp.h>

#include <string>

#include "core/backend_registry.hpp"
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
  const CpuBuild cpu = cpu_build();
  info.gemm_engine = cpu.gemm_engines;
  info.with_onednn = cpu.onednn;
  info.with_blas = cpu.blas;
  static const std::string backends = core::built_backends();
  info.backends = backends.c_str();
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
