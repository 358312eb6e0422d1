// The flat weight buffer and its views by PyTorch parameter name. For each layer l and
// direction (suffix "" or "_reverse"), in this order:
//   weight_ih_l{l}  [G*H, I_l]   I_0 = input_size, I_l = D*P' for l > 0
//   weight_hh_l{l}  [G*H, P']
//   bias_ih_l{l}    [G*H]        (only with bias)
//   bias_hh_l{l}    [G*H]        (only with bias)
//   weight_hr_l{l}  [P', H]      (only with proj_size > 0)
//   weight_peephole_l{l} [3*H]   (only with peephole; gates i, f, o)
// This is the order of PyTorch's _flat_weights, so a state_dict maps one to one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rnnx/config.hpp"
#include "rnnx/export.h"

RNNX_EXPORT_BEGIN
namespace rnnx {

enum class WeightKind { w_ih, w_hh, b_ih, b_hh, w_hr, w_peephole };

struct WeightParam {
  std::string name;  // PyTorch name, e.g. "weight_hh_l1_reverse"
  WeightKind kind;
  int64_t layer;
  int64_t direction;  // 0 forward, 1 reverse
  int64_t offset;     // in elements from the start of the flat buffer
  int64_t rows;
  int64_t cols;  // 1 for biases
  int64_t numel() const { return rows * cols; }
  // One-dimensional parameters (biases and peepholes).
  bool is_vector() const {
    return kind == WeightKind::b_ih || kind == WeightKind::b_hh || kind == WeightKind::w_peephole;
  }
  bool is_bias() const { return kind == WeightKind::b_ih || kind == WeightKind::b_hh; }
};

class WeightLayout {
 public:
  explicit WeightLayout(const Config& config);

  const std::vector<WeightParam>& params() const { return params_; }
  int64_t numel() const { return numel_; }
  // Throws rnnx::Error(invalid_argument) for an unknown name.
  const WeightParam& find(const std::string& name) const;
  const WeightParam* try_find(const std::string& name) const;
  // The parameter of one kind for one layer and direction, or nullptr when absent
  // (biases without bias, w_hr without projection).
  const WeightParam* get(int64_t layer, int64_t direction, WeightKind kind) const;

 private:
  std::vector<WeightParam> params_;
  int64_t numel_ = 0;
  int64_t num_directions_ = 1;
};

}  // namespace rnnx
RNNX_EXPORT_END
