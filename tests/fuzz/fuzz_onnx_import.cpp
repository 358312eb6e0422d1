// Fuzz target: ONNX attribute import (include/rnnx/convert.hpp): activation names with their
// alpha/beta lists (onnx_activations), then, for a config from the fuzz input, one layer's
// W/R/B/P imported into the flat buffer and exported back, which must give the same values.
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_common.hpp"
#include "rnnx/convert.hpp"

namespace {

using rnnx::fuzz::finding;
using rnnx::fuzz::refused_cleanly;

void activations(FuzzedDataProvider& in, rnnx::Config& c) {
  static const char* kNames[] = {
      "Sigmoid",         "tanh",       "RELU",        "Affine", "LeakyRelu",
      "ThresholdedRelu", "ScaledTanh", "HardSigmoid", "Elu",    "Softsign",
      "Softplus",        "",           "Gelu"};
  std::vector<std::string> names;
  const int n = in.ConsumeIntegralInRange<int>(0, 7);
  for (int k = 0; k < n; ++k) {
    names.push_back(in.ConsumeBool() ? std::string(in.PickValueInArray(kNames))
                                     : in.ConsumeRandomLengthString(16));
  }
  std::vector<double> alpha(in.ConsumeIntegralInRange<int>(0, 5)),
      beta(in.ConsumeIntegralInRange<int>(0, 5));
  for (double& a : alpha) a = in.ConsumeFloatingPoint<double>();
  for (double& b : beta) b = in.ConsumeFloatingPoint<double>();
  std::vector<rnnx::Activation> acts;
  if (!refused_cleanly("onnx_activations",
                       [&] { acts = rnnx::onnx_activations(names, alpha, beta); }))
    return;
  if (acts.size() != names.size()) finding("onnx_activations changed the count");
  c.activations = acts;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  rnnx::fuzz::set_up_process();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  rnnx::Config c;
  static const rnnx::CellType kCells[] = {rnnx::CellType::rnn_tanh, rnnx::CellType::rnn_relu,
                                          rnnx::CellType::lstm, rnnx::CellType::gru};
  c.cell = in.PickValueInArray(kCells);
  // Sizes stay small: the buffers are allocated here from them (the caller's side of the
  // contract); what is fuzzed is the import's handling of the config and its options.
  c.input_size = in.ConsumeIntegralInRange<int64_t>(-1, 6);
  c.hidden_size = in.ConsumeIntegralInRange<int64_t>(-1, 6);
  c.proj_size =
      in.ConsumeIntegralInRange<int>(0, 3) == 0 ? in.ConsumeIntegralInRange<int64_t>(-1, 5) : 0;
  c.num_layers = in.ConsumeIntegralInRange<int64_t>(0, 3);
  c.bidirectional = in.ConsumeBool();
  c.reverse = in.ConsumeBool() && in.ConsumeBool();
  c.bias = in.ConsumeBool();
  c.peephole = in.ConsumeBool();
  c.input_forget = in.ConsumeIntegralInRange<int>(0, 3) == 0;
  c.gru_linear_before_reset = in.ConsumeBool();
  c.gate_clip = in.ConsumeBool() ? in.ConsumeFloatingPoint<double>() : 0.0;
  c.dtype = in.ConsumeBool() ? rnnx::DataType::f64 : rnnx::DataType::f32;
  activations(in, c);
  if (!refused_cleanly("validate", [&] { rnnx::validate(c); })) return 0;

  const rnnx::WeightLayout layout(c);
  const int64_t D = c.num_directions(), G = rnnx::gates_per_cell(c.cell), H = c.hidden_size;
  const int64_t layer = in.ConsumeIntegralInRange<int64_t>(-1, c.num_layers);
  const int64_t I = layer <= 0 ? c.input_size : D * c.output_size();
  std::vector<double> W(D * G * H * I), R(D * G * H * H), B(D * 2 * G * H), P(D * 3 * H);
  // Values a float32 holds exactly, so the round trip compares equal in either dtype.
  for (auto* v : {&W, &R, &B, &P})
    for (double& e : *v) e = in.ConsumeIntegralInRange<int>(-64, 64) / 8.0;
  const bool give_b = in.ConsumeBool(), give_p = in.ConsumeBool();
  const int64_t es = rnnx::dtype_size(c.dtype);
  std::vector<unsigned char> flat(layout.numel() * es, 0xAB);
  const bool imported = refused_cleanly("import_onnx_layer", [&] {
    rnnx::import_onnx_layer(c, layout, layer, W.data(), R.data(), give_b ? B.data() : nullptr,
                            give_p ? P.data() : nullptr, flat.data());
  });
  const bool valid = layer >= 0 && layer < c.num_layers && c.proj_size == 0 &&
                     (!give_b || c.bias) && (!give_p || c.peephole);
  if (imported != valid) {
    finding(std::string("import_onnx_layer ") + (imported ? "accepted" : "refused") + " layer " +
            std::to_string(layer) + " of " + std::to_string(c.num_layers));
  }
  if (!imported) return 0;

  std::vector<double> W2(W.size()), R2(R.size()), B2(B.size()), P2(P.size());
  if (!refused_cleanly("export_onnx_layer", [&] {
        rnnx::export_onnx_layer(c, layout, layer, flat.data(), W2.data(), R2.data(), B2.data(),
                                P2.data());
      })) {
    finding("export_onnx_layer refused what import_onnx_layer accepted");
  }
  if (W2 != W || R2 != R) finding("W or R changed in an import + export round trip");
  if (c.bias && B2 != (give_b ? B : std::vector<double>(B.size(), 0.0)))
    finding("B changed in an import + export round trip");
  if (c.peephole && P2 != (give_p ? P : std::vector<double>(P.size(), 0.0)))
    finding("P changed in an import + export round trip");
  return 0;
}
