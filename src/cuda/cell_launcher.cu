// CellLauncher (cell_launcher.hpp): a grid-stride kernel over the rows x units of one step.
#include <algorithm>

#include "cuda/cell_launcher.hpp"
#include "cuda/cuda_api.hpp"
#include "cuda/step_kernels.hpp"

namespace rnnx::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void cell_kernel(const step::CellArgs<T, T> a) {
  const int64_t width = a.width(), n = a.rows * width;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = e / width;
    step::run_unit(a, i, e - i * width);
  }
}

template <typename T>
void launch_as(const core::CellOp& op, const Config& c, const core::StepDims& d,
               const core::cell::Options<T>* options, void* const* bases, cudaStream_t stream) {
  const auto base = [bases](core::Buf b) { return bases[static_cast<int>(b)]; };
  const step::CellArgs<T, T> a = step::resolve<T, T>(op, c, d, options, base);
  const int64_t n = a.rows * a.width();
  if (n == 0) return;
  const auto blocks =
      static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, 65535 * 4));
  cell_kernel<T><<<blocks, kThreads, 0, stream>>>(a);
}

}  // namespace

CellLauncher::CellLauncher(const Config& config) : config_(config), dims_(core::step_dims(config)) {
  for (int64_t d = 0; d < config.num_directions(); ++d) {
    const std::vector<Activation> acts = direction_activations(config, d);
    f32_[d] = core::cell::options_for<float>(config, acts);
    f64_[d] = core::cell::options_for<double>(config, acts);
  }
}

void CellLauncher::launch(const core::CellOp& op, void* const* bases, cudaStream_t stream) const {
  if (calls().skip_kernel("cell")) return;
  if (config_.dtype == DataType::f64) {
    launch_as<double>(op, config_, dims_, f64_, bases, stream);
  } else {
    launch_as<float>(op, config_, dims_, f32_, bases, stream);
  }
}

}  // namespace rnnx::cuda
