// The own path's device side on the GPU (core/step_backend.hpp): cuBLAS for the programs' GEMMs,
// CellLauncher for their cell steps, kernels.hpp for copies, fills and dropout.
#pragma once

#include <memory>

#include "core/backend.hpp"
#include "core/step_backend.hpp"

namespace rnnx::cuda {

// float32 and float64 configs; the GPU of the calling thread.
std::unique_ptr<core::StepDevice> make_step_device(const PlanContext& ctx);

}  // namespace rnnx::cuda
