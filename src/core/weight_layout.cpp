// The flat weight buffer: PyTorch's parameters per layer and direction, in the order of
// PyTorch's _flat_weights (w_ih, w_hh, b_ih, b_hh, w_hr), each dense row-major.
#include <string>

#include "core/checked.hpp"
#include "rnnx/error.hpp"
#include "rnnx/weights.hpp"

namespace rnnx {

WeightLayout::WeightLayout(const Config& c) : num_directions_(c.num_directions()) {
  const int64_t G = gates_per_cell(c.cell), H = c.hidden_size, P = c.output_size();
  const int64_t D = c.num_directions();
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const int64_t in = l == 0 ? c.input_size : D * P;
    for (int64_t d = 0; d < D; ++d) {
      const std::string sfx = "_l" + std::to_string(l) + (d == 1 ? "_reverse" : "");
      auto add = [&](const char* base, WeightKind kind, int64_t rows, int64_t cols) {
        params_.push_back({std::string(base) + sfx, kind, l, d, numel_, rows, cols});
        numel_ = core::checked_add(numel_, core::checked_mul(rows, cols, "weight size"),
                                   "total weight size");
      };
      add("weight_ih", WeightKind::w_ih, G * H, in);
      add("weight_hh", WeightKind::w_hh, G * H, P);
      if (c.bias) {
        add("bias_ih", WeightKind::b_ih, G * H, 1);
        add("bias_hh", WeightKind::b_hh, G * H, 1);
      }
      if (c.proj_size > 0) add("weight_hr", WeightKind::w_hr, P, H);
      if (c.peephole) add("weight_peephole", WeightKind::w_peephole, 3 * H, 1);
    }
  }
}

const WeightParam* WeightLayout::try_find(const std::string& name) const {
  for (const auto& p : params_)
    if (p.name == name) return &p;
  return nullptr;
}

const WeightParam& WeightLayout::find(const std::string& name) const {
  if (const WeightParam* p = try_find(name)) return *p;
  throw Error(Status::invalid_argument, "no weight named '" + name + "' in this configuration");
}

const WeightParam* WeightLayout::get(int64_t layer, int64_t direction, WeightKind kind) const {
  for (const auto& p : params_)
    if (p.layer == layer && p.direction == direction && p.kind == kind) return &p;
  return nullptr;
}

}  // namespace rnnx
