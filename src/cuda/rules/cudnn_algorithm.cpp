// cuDNN's RNN algorithm candidates and the key of their search (cudnn_algorithm.hpp).
#include "cuda/rules/cudnn_algorithm.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/autotune_cache.hpp"
#include "rnnx/error_bound.hpp"
#include "rnnx/version.hpp"

namespace rnnx::cuda {

const char* to_string(CudnnAlgo algo) {
  switch (algo) {
    case CudnnAlgo::standard:
      return "standard";
    case CudnnAlgo::persist_static:
      return "persist-static";
    case CudnnAlgo::persist_static_small_h:
      return "persist-static-small-h";
  }
  return "?";
}

std::optional<CudnnAlgo> cudnn_algo_from_string(const std::string& name) {
  for (CudnnAlgo a :
       {CudnnAlgo::standard, CudnnAlgo::persist_static, CudnnAlgo::persist_static_small_h}) {
    if (name == to_string(a)) return a;
  }
  return std::nullopt;
}

std::vector<CudnnAlgo> cudnn_algorithm_candidates(const Config& c, const CudnnBatch& batch) {
  std::vector<CudnnAlgo> out = {CudnnAlgo::standard};
  const bool uniform =
      batch.batch > 0 && std::all_of(batch.lengths.begin(), batch.lengths.end(),
                                     [&](auto n) { return n == batch.lengths.front(); });
  if (!uniform || c.proj_size > 0 || !c.bias ||
      (c.dtype != DataType::f32 && c.dtype != DataType::f16))
    return out;
  out.push_back(CudnnAlgo::persist_static);
  if (c.hidden_size <= 128) out.push_back(CudnnAlgo::persist_static_small_h);
  return out;
}

std::string cudnn_autotune_key(const Config& c, MathMode math, const CudnnBatch& batch,
                               PlanPurpose purpose, const std::string& device, int cudnn_version) {
  std::ostringstream k;
  k << "rnnx-" RNNX_VERSION_STRING " cuda " << core::config_search_key(c)
    << " resolved_math=" << to_string(math) << " B=" << batch.batch << " T=" << batch.max_seq_len
    << " for=" << to_string(purpose) << " gpu=" << device << " cudnn=" << cudnn_version;
  std::string key = k.str();
  std::replace(key.begin(), key.end(), '\t', ' ');  // the cache's separator
  std::replace(key.begin(), key.end(), '\n', ' ');
  return key;
}

double cudnn_candidate_tolerance(const Config& c, MathMode math, const CudnnBatch& batch) {
  // Converted products only where the plan lets cuDNN convert: float32 data under
  // allow_conversion (TF32, or float16 on the explicit opt-in). 16-bit data's own rounding is
  // in the bound whatever the math; float64 is never converted.
  const bool converts = c.dtype == DataType::f32 && math == MathMode::allow_conversion;
  const bool half_data = c.dtype == DataType::f16 || c.dtype == DataType::bf16;
  const double half_bound =
      0.5 * error_bound(c, std::max<int64_t>(batch.max_seq_len, 1),
                        std::max<int64_t>(batch.batch, 1), /*backward=*/false, converts);
  // The worst-case bound grows with T and the widths (2.5% for a float32 LSTM H 1024 at
  // T 100) far past what a candidate computing as the plan allows differs by: the fixed
  // ceilings of before stay, 1e-3 where nothing converts, 5e-2 where something does.
  const double ceiling = converts || half_data ? 5e-2 : 1e-3;
  return std::min(half_bound, ceiling);
}

bool cudnn_candidate_agrees(const std::vector<double>& got, const std::vector<double>& want,
                            double tolerance) {
  if (got.size() != want.size()) return false;
  double scale = 1.0, worst = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    scale = std::max(scale, std::fabs(want[i]));
    const double d = std::fabs(got[i] - want[i]);
    if (std::isnan(d)) return false;
    worst = std::max(worst, d);
  }
  return worst <= tolerance * scale;
}

}  // namespace rnnx::cuda
