// ONNX W/R/B/P <-> the flat buffer, gate blocks permuted by core/gate_order.hpp.
#include <algorithm>
#include <string>

#include "core/bfloat16.hpp"
#include "core/float16.hpp"
#include "core/gate_order.hpp"
#include "rnnx/convert.hpp"
#include "rnnx/error.hpp"

namespace rnnx {
namespace {

[[noreturn]] void invalid(const std::string& msg) {
  throw Error(Status::invalid_argument, msg);
}

// Copies gate blocks of `rows_per_gate` rows x `cols` between an ONNX tensor (one
// direction's slice) and a flat parameter, in either direction.
template <typename T, bool kImport>
void move_gates(const Config& c, int64_t gates, int64_t rows_per_gate, int64_t cols,
                const int64_t* order, double* onnx, T* flat) {
  for (int64_t k = 0; k < gates; ++k) {
    const int64_t src = order ? order[k] : core::onnx_gate(c.cell, k);
    for (int64_t r = 0; r < rows_per_gate * cols; ++r) {
      double& o = onnx[src * rows_per_gate * cols + r];
      T& f = flat[k * rows_per_gate * cols + r];
      if constexpr (kImport) {
        f = static_cast<T>(o);
      } else {
        o = static_cast<double>(f);
      }
    }
  }
}

template <typename T, bool kImport>
void convert_layer(const Config& c, const WeightLayout& layout, int64_t layer, double* W, double* R,
                   double* B, double* P, T* flat) {
  if (layer < 0 || layer >= c.num_layers) {
    invalid("layer (= " + std::to_string(layer) +
            ") must be in [0, num_layers (= " + std::to_string(c.num_layers) + "))");
  }
  if (kImport && B && !c.bias) invalid("B given but the config has bias = false");
  if (kImport && P && !c.peephole) invalid("P given but the config has peephole = false");
  if (c.proj_size > 0) invalid("ONNX has no LSTM projection; proj_size must be 0");
  const int64_t G = gates_per_cell(c.cell), H = c.hidden_size;
  for (int64_t d = 0; d < c.num_directions(); ++d) {
    const WeightParam* w_ih = layout.get(layer, d, WeightKind::w_ih);
    const WeightParam* w_hh = layout.get(layer, d, WeightKind::w_hh);
    const int64_t I = w_ih->cols;
    if (W) move_gates<T, kImport>(c, G, H, I, nullptr, W + d * G * H * I, flat + w_ih->offset);
    if (R) move_gates<T, kImport>(c, G, H, H, nullptr, R + d * G * H * H, flat + w_hh->offset);
    const WeightParam* b_ih = layout.get(layer, d, WeightKind::b_ih);
    const WeightParam* b_hh = layout.get(layer, d, WeightKind::b_hh);
    if (b_ih && b_hh) {
      if (B) {
        move_gates<T, kImport>(c, G, H, 1, nullptr, B + d * 2 * G * H, flat + b_ih->offset);
        move_gates<T, kImport>(c, G, H, 1, nullptr, B + d * 2 * G * H + G * H, flat + b_hh->offset);
      } else if (kImport) {
        std::fill(flat + b_ih->offset, flat + b_ih->offset + G * H, T(0));
        std::fill(flat + b_hh->offset, flat + b_hh->offset + G * H, T(0));
      }
    }
    if (const WeightParam* p = layout.get(layer, d, WeightKind::w_peephole)) {
      if (P) {
        move_gates<T, kImport>(c, 3, H, 1, core::kOnnxPeephole.data(), P + d * 3 * H,
                               flat + p->offset);
      } else if (kImport) {
        std::fill(flat + p->offset, flat + p->offset + 3 * H, T(0));
      }
    }
  }
}

}  // namespace

void import_onnx_layer(const Config& config, const WeightLayout& layout, int64_t layer,
                       const double* W, const double* R, const double* B, const double* P,
                       void* flat) {
  if (flat == nullptr) invalid("import_onnx_layer: flat is null");
  // The ONNX tensors are only read on import.
  auto* w = const_cast<double*>(W);
  auto* r = const_cast<double*>(R);
  auto* b = const_cast<double*>(B);
  auto* p = const_cast<double*>(P);
  if (config.dtype == DataType::f64) {
    convert_layer<double, true>(config, layout, layer, w, r, b, p, static_cast<double*>(flat));
  } else if (config.dtype == DataType::bf16) {
    convert_layer<core::bfloat16, true>(config, layout, layer, w, r, b, p,
                                        static_cast<core::bfloat16*>(flat));
  } else if (config.dtype == DataType::f16) {
    convert_layer<core::float16, true>(config, layout, layer, w, r, b, p,
                                       static_cast<core::float16*>(flat));
  } else {
    convert_layer<float, true>(config, layout, layer, w, r, b, p, static_cast<float*>(flat));
  }
}

void export_onnx_layer(const Config& config, const WeightLayout& layout, int64_t layer,
                       const void* flat, double* W, double* R, double* B, double* P) {
  if (flat == nullptr) invalid("export_onnx_layer: flat is null");
  if (config.dtype == DataType::f64) {
    convert_layer<double, false>(config, layout, layer, W, R, B, P,
                                 const_cast<double*>(static_cast<const double*>(flat)));
  } else if (config.dtype == DataType::bf16) {
    convert_layer<core::bfloat16, false>(
        config, layout, layer, W, R, B, P,
        const_cast<core::bfloat16*>(static_cast<const core::bfloat16*>(flat)));
  } else if (config.dtype == DataType::f16) {
    convert_layer<core::float16, false>(
        config, layout, layer, W, R, B, P,
        const_cast<core::float16*>(static_cast<const core::float16*>(flat)));
  } else {
    convert_layer<float, false>(config, layout, layer, W, R, B, P,
                                const_cast<float*>(static_cast<const float*>(flat)));
  }
}

bool onnx_takes_alpha(ActivationKind k) {
  return k == ActivationKind::affine || k == ActivationKind::leaky_relu ||
         k == ActivationKind::thresholded_relu || k == ActivationKind::scaled_tanh ||
         k == ActivationKind::hard_sigmoid || k == ActivationKind::elu;
}
bool onnx_takes_beta(ActivationKind k) {
  return k == ActivationKind::affine || k == ActivationKind::scaled_tanh ||
         k == ActivationKind::hard_sigmoid;
}

std::vector<Activation> onnx_activations(const std::vector<std::string>& names,
                                         const std::vector<double>& alpha,
                                         const std::vector<double>& beta) {
  std::vector<Activation> out;
  size_t ia = 0, ib = 0;
  for (size_t k = 0; k < names.size(); ++k) {
    Activation a;
    try {
      a = default_activation(activation_from_string(names[k]));
    } catch (const Error& e) {
      invalid("activations[" + std::to_string(k) + "]: " + e.what());
    }
    if (onnx_takes_alpha(a.kind) && ia < alpha.size()) a.alpha = alpha[ia++];
    if (onnx_takes_beta(a.kind) && ib < beta.size()) a.beta = beta[ib++];
    out.push_back(a);
  }
  if (ia < alpha.size()) {
    invalid("activation_alpha has " + std::to_string(alpha.size()) +
            " values but the activations take " + std::to_string(ia));
  }
  if (ib < beta.size()) {
    invalid("activation_beta has " + std::to_string(beta.size()) +
            " values but the activations take " + std::to_string(ib));
  }
  return out;
}

}  // namespace rnnx
