// The backends of this build: each is one folder (src/<backend>) with one factory, listed
// once in backend_registry.cpp; a Plan asks here for the one its options name.
#pragma once

#include <memory>
#include <string>

#include "core/backend.hpp"

namespace rnnx {

// The factories (each backend's folder defines its own).
std::unique_ptr<BackendImpl> make_reference_backend(const PlanContext& ctx);
std::unique_ptr<BackendImpl> make_cpu_backend(const PlanContext& ctx);
// Built with RNNX_WITH_CUDA (src/cuda).
std::unique_ptr<BackendImpl> make_cuda_backend(const PlanContext& ctx);

// What the cpu backend's GEMMs run on in this build (build_info(); src/cpu/gemm.cpp): the
// engines in words, and whether it links oneDNN (float32) and a BLAS (float64).
struct CpuBuild {
  const char* gemm_engines;
  bool onednn;
  bool blas;
};
CpuBuild cpu_build();

namespace core {

// Whether this build has `backend`.
bool backend_built(Backend backend);
// "reference, cpu": the backends this build has, for messages.
std::string built_backends();
// The backend ctx.options.backend names, built for ctx. Throws Error(unsupported) naming it
// and the backends this build has when the build lacks it.
std::unique_ptr<BackendImpl> make_backend(const PlanContext& ctx);

}  // namespace core
}  // namespace rnnx
