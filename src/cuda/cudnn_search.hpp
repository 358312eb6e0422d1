// The cuDNN algorithm search (cuDNN 9 has no find API for RNNs): the plan's backend built for
// each candidate of cudnn_algorithm_candidates, timed on synthetic data of the plan's own
// shape, the fastest kept and remembered under cudnn_autotune_key (in memory, and in
// RNNX_AUTOTUNE_CACHE's file when set), exactly as the cpu backend's search does.
#pragma once

#include <functional>
#include <memory>

#include "core/backend.hpp"
#include "cuda/rules/cudnn_algorithm.hpp"

namespace rnnx::cuda {

using CudnnBackendMaker = std::function<std::unique_ptr<BackendImpl>(CudnnAlgo)>;

// The backend of the fastest candidate: STANDARD when it is the only one or RNNX_AUTOTUNE=0,
// the cached choice when there is one, else the result of a search by the cpu search's rules
// (core/fastest_candidate.hpp: from STANDARD, a candidate replaces the incumbent only when
// clearly faster twice; a disturbed search gives STANDARD, remembered for this process only).
// A candidate that fails (an error from cuDNN) or whose y differs from STANDARD's beyond
// rounding is dropped; a search that cannot finish gives STANDARD and stores nothing.
std::unique_ptr<BackendImpl> with_fastest_cudnn_algorithm(const PlanContext& ctx,
                                                          const CudnnBackendMaker& make);

}  // namespace rnnx::cuda
