// README.md, "Using it from C++", is this file: a 2-layer bidirectional LSTMP over a ragged
// batch, a training forward and the backward, every buffer sized by the plan. Returns 0
// only when the outputs are finite and nonzero and the backward gave nonzero gradients.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <rnnx/rnnx.hpp>
#include <vector>

// Whether every element is finite and at least one is nonzero.
static bool finite_and_nonzero(const std::vector<float>& v) {
  bool nonzero = false;
  for (float e : v) {
    if (!std::isfinite(e)) return false;
    nonzero = nonzero || e != 0.0f;
  }
  return nonzero;
}

int main() try {
  rnnx::Config cfg;  // conventions of torch.nn.LSTM
  cfg.cell = rnnx::CellType::lstm;
  cfg.input_size = 128;
  cfg.hidden_size = 256;
  cfg.proj_size = 64;
  cfg.num_layers = 2;
  cfg.bidirectional = true;
  const int64_t T = 10, B = 4;
  const std::vector<int64_t> lengths = {10, 3, 0, 7};  // int64_t; any order, 0 allowed
  rnnx::Plan plan(cfg, rnnx::SequenceShape::padded(T, B, lengths));  // x is [T, B, I]

  // Sizes in elements of the plan's dtype (float32 here): x, dx [T,B,I]; y, dy [T,B,D*P'];
  // hy, dh0 [L*D,B,P']; cy, dc0 [L*D,B,H]; w, dw the flat buffer of PyTorch's parameters.
  std::vector<float> x(plan.x_numel()), dx(plan.x_numel());
  std::vector<float> y(plan.y_numel()), dy(plan.y_numel(), 1.0f);
  std::vector<float> hy(plan.h_numel()), dh0(plan.h_numel());
  std::vector<float> cy(plan.c_numel()), dc0(plan.c_numel());
  std::vector<float> w(plan.weights_numel()), dw(plan.weights_numel());
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.01f * static_cast<float>(i));
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.05f * std::cos(0.7f * static_cast<float>(i));
  const rnnx::WeightParam& p = plan.weight_layout().find("weight_hh_l1_reverse");
  // ... copy a state_dict tensor into w[p.offset .. p.offset + p.numel()) instead
  std::printf("%s on %s; %s is [%lld, %lld] at offset %lld\n", plan.problem_name().c_str(),
              plan.impl_name().c_str(), p.name.c_str(), static_cast<long long>(p.rows),
              static_cast<long long>(p.cols), static_cast<long long>(p.offset));

  rnnx::ForwardArgs f;
  f.x = x.data();
  f.weights = w.data();
  f.y = y.data();
  f.hy = hy.data();
  f.cy = cy.data();
  f.training = true;  // keep what backward needs
  std::vector<std::byte> reserve(plan.reserve_size());
  f.reserve = reserve.data();
  f.reserve_size = reserve.size();
  plan.forward(f);  // no workspace given: the plan keeps its own

  rnnx::BackwardArgs b;
  b.x = x.data();
  b.weights = w.data();
  b.dy = dy.data();
  b.dx = dx.data();
  b.dh0 = dh0.data();
  b.dc0 = dc0.data();
  b.dweights = dw.data();
  b.reserve = reserve.data();
  b.reserve_size = reserve.size();
  plan.backward(b);

  const bool ok = finite_and_nonzero(y) && finite_and_nonzero(hy) && finite_and_nonzero(cy) &&
                  finite_and_nonzero(dx) && finite_and_nonzero(dh0) && finite_and_nonzero(dw);
  std::printf("%s\n", ok ? "ok: outputs and gradients finite and nonzero" : "FAILED");
  return ok ? 0 : 1;
} catch (const rnnx::Error& e) {  // code() is invalid_argument or unsupported
  std::fprintf(stderr, "rnnx: %s\n", e.what());
  return 1;
}
