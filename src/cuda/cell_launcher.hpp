// The fused cell steps of the own path on the GPU: one thread per (row, unit) of a step,
// running the bodies of step_kernels.hpp (the ones the CPU tests prove against the
// reference) on a CellOp resolved against the call's buffers.
#pragma once

#include <cuda_runtime_api.h>

#include "core/cell_math.hpp"
#include "core/step_program.hpp"
#include "rnnx/config.hpp"

namespace rnnx::cuda {

class CellLauncher {
 public:
  // float32 and float64 configs (the caller refuses the others).
  explicit CellLauncher(const Config& config);
  // bases[b]: the first element of buffer core::Buf b (null where absent).
  void launch(const core::CellOp& op, void* const* bases, cudaStream_t stream) const;

 private:
  Config config_;
  core::StepDims dims_;
  core::cell::Options<float> f32_[2];
  core::cell::Options<double> f64_[2];
};

}  // namespace rnnx::cuda
