// The cuDNN backend itself, for what must reach it past cudnn_refusal: tests/cuda's
// probe of what cuDNN does with a config rnnx routes to its own kernels until a GPU run
// shows cuDNN equal to the contract (cell clipping: its NaN rule and its backward).
#pragma once

#include <memory>

#include "core/backend.hpp"
#include "cuda/rules/cudnn_algorithm.hpp"

namespace rnnx::cuda {

// cuDNN's backend for ctx with `algo`, whatever cudnn_refusal says (no search).
std::unique_ptr<BackendImpl> make_cudnn_backend_unrouted(const PlanContext& ctx, CudnnAlgo algo);

}  // namespace rnnx::cuda
