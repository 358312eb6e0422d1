// Weight converters between rnnx's flat buffer (PyTorch's parameters, weights.hpp) and
// other frameworks' layouts, and values into and out of a buffer of any DataType. ONNX: W [D, G*H,
// I], R [D, G*H, H], B [D, 2*G*H] (Wb then Rb), P [D, 3*H], with gate orders LSTM i,o,f,c, GRU
// z,r,h, peepholes i,o,f.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rnnx/config.hpp"
#include "rnnx/export.h"
#include "rnnx/weights.hpp"

RNNX_EXPORT_BEGIN
namespace rnnx {

// One layer's ONNX tensors (dense, row-major, double) into `flat` (the config's dtype).
// B and P may be null: biases and peepholes become zero. Throws invalid_argument when the
// layout has no bias but B is given, or no peepholes but P is given.
void import_onnx_layer(const Config& config, const WeightLayout& layout, int64_t layer,
                       const double* W, const double* R, const double* B, const double* P,
                       void* flat);

// The inverse: one layer of `flat` as ONNX tensors (any of W, R, B, P may be null to skip).
void export_onnx_layer(const Config& config, const WeightLayout& layout, int64_t layer,
                       const void* flat, double* W, double* R, double* B, double* P);

// Whether an activation reads a value of ONNX's activation_alpha / activation_beta lists:
// alpha: Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu; beta: Affine,
// ScaledTanh, HardSigmoid.
bool onnx_takes_alpha(ActivationKind kind);
bool onnx_takes_beta(ActivationKind kind);

// ONNX's `activations` attribute with its `activation_alpha` / `activation_beta` lists as
// rnnx activations: names matched case-insensitively (activation_from_string), each with
// ONNX's default alpha and beta, then the lists consumed in order by the activations that
// take them (onnx_takes_alpha, onnx_takes_beta). Throws invalid_argument naming activations[k] for
// an unknown name and activation_alpha / activation_beta when values are left over.
std::vector<Activation> onnx_activations(const std::vector<std::string>& names,
                                         const std::vector<double>& alpha,
                                         const std::vector<double>& beta);

// n values into a buffer of `dtype` (float32 and the 16-bit types round to nearest even; the
// 16-bit ones through float32, as every rnnx conversion does), and out of one (exact). So a
// caller without a bfloat16 or float16 type of its own can fill and read a plan's tensors.
// Throws invalid_argument for n < 0 or a dtype that is none of DataType's values.
void write_values(DataType dtype, const double* src, void* dst, int64_t n);
void read_values(DataType dtype, const void* src, double* dst, int64_t n);

}  // namespace rnnx
RNNX_EXPORT_END
