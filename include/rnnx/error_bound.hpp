// The accuracy rnnx promises: a bound on how far a backend's results may lie from the exact
// values of the equations (docs/math.md), as a fraction of each tensor's scale. Every test
// of rnnx (C++, Python, the PyTorch and ONNX cross-checks) holds the backends to it.
#pragma once

#include <cstdint>

#include "rnnx/config.hpp"
#include "rnnx/export.h"

RNNX_EXPORT_BEGIN
namespace rnnx {

// max |got - exact| <= bound * (max(1, max |exact|) + |exact|), elementwise, for a problem
// with `max_seq_len` steps and `batch` sequences: forward results (y, hy, cy) when
// `backward` is false, gradients (dx, dh0, dc0, dweights) when true. `bf16_products`: the
// matrix products run on bf16-rounded operands (math mode allow_conversion on a machine
// that converts); the bound then adds bf16's rounding, which holds in the 2-norm sense for
// random data but not elementwise where a derivative jumps (ReLU at 0, clamps at their
// bounds). docs/math.md derives the formula.
double error_bound(const Config& config, int64_t max_seq_len, int64_t batch, bool backward,
                   bool bf16_products = false);

// The accuracy of a run whose products take bf16 operands (math mode allow_conversion) in
// norm, as benchdnn compares bf16 results: ||got - exact||_2 / max(||exact||_2, tiny) <=
// bound over a whole tensor, same arguments as above. The bound is 2 * 2^-8 * sqrt(n)
// (bf16's unit roundoff 2^-8 on each operand of a product; n the bf16 products a result
// passes through one after another, from the steps and layers) plus error_bound's float32
// part: ~1e-2, where the elementwise bound has to allow ~1e-1. It also holds where a
// derivative jumps (ReLU at 0, clamps at their bounds), unless bf16's error moves an
// argument across the jump and the element that flips carries much of a tensor's norm
// (a small tensor). For float64 (never converted) it is error_bound's. docs/math.md
// derives it.
double norm_error_bound(const Config& config, int64_t max_seq_len, int64_t batch, bool backward);

}  // namespace rnnx
RNNX_EXPORT_END
