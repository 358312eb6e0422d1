// Which of cuDNN's RNN algorithms may run a plan, and the key its measured choice is cached
// under (core/autotune_cache.hpp). cuDNN 9 has no find API for RNNs: the cuda backend times
// the candidates itself (src/cuda/cudnn_search.cpp). Device-neutral, so that the rules are
// tested on any machine.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cuda/rules/cudnn_layout.hpp"
#include "rnnx/config.hpp"
#include "rnnx/plan.hpp"

namespace rnnx::cuda {

// CUDNN_RNN_ALGO_STANDARD, _PERSIST_STATIC, _PERSIST_STATIC_SMALL_H. (PERSIST_DYNAMIC needs a
// kernel compiled per batch size at run time, cudnnBuildRNNDynamic: not among them yet.)
enum class CudnnAlgo { standard, persist_static, persist_static_small_h };

// "standard", "persist-static", "persist-static-small-h".
const char* to_string(CudnnAlgo algo);
std::optional<CudnnAlgo> cudnn_algo_from_string(const std::string& name);

// The algorithms cuDNN may run the batch with, STANDARD first. The persistent ones take
// neither variable lengths nor a projection and need the double bias (GPU-NOTES.md, PyTorch's
// own rules): they are candidates only when every sequence of the batch has the same length,
// without projection, with bias, on float32 or float16 data; the small-H one only up to H = 128,
// where its backward runs too. Whatever else a candidate cannot do shows when it is measured (an
// error, or a result that differs from STANDARD's), and it is dropped then.
std::vector<CudnnAlgo> cudnn_algorithm_candidates(const Config& config, const CudnnBatch& batch);

// The key of a search: everything that can change which algorithm is fastest (the config's
// fields as core::config_search_key gives them, the resolved math mode, the batch and its
// one length, what the plan is for (a training step or an inference forward), the GPU's
// name, cuDNN's version, rnnx's version).
std::string cudnn_autotune_key(const Config& config, MathMode math, const CudnnBatch& batch,
                               PlanPurpose purpose, const std::string& device, int cudnn_version);

// How far a candidate's output may be from STANDARD's, relative to the output's largest
// magnitude (at least 1), for the search to keep it: half of rnnx::error_bound for the plan
// (its config, the batch's longest sequence and size; with the conversion's products only
// where the math allows them), the bound the tests hold a cuda plan to against the
// reference, and at most 1e-3 (5e-2 where the plan converts or its data is 16-bit). Half,
// so that a candidate the search keeps also meets the bound against the reference wherever
// STANDARD meets it with room: a candidate that computes more coarsely than the plan allows
// (TF32 in a strict float32 plan, about 1e-3) is dropped wherever the tests would fail it,
// instead of being chosen and failing them; the ceiling keeps the worst-case bound, which
// grows with the sequence and the widths, from admitting such a candidate at large shapes.
double cudnn_candidate_tolerance(const Config& config, MathMode math, const CudnnBatch& batch);

// Whether `got` agrees with `want` within cudnn_candidate_tolerance: every element, NaN
// nowhere (a NaN where STANDARD has a number, or the other way round, disagrees).
bool cudnn_candidate_agrees(const std::vector<double>& got, const std::vector<double>& want,
                            double tolerance);

}  // namespace rnnx::cuda
