// An empty batch (B = 0, the last shard of a data-parallel step) is a valid no-op, as in
// torch.nn.LSTM/GRU/RNN: every sequence tensor has no elements (and may be null), the
// sizes are queryable, the reserve still ties a backward to its forward, nothing is
// written but overwritten weight gradients (zero). T = 0 and empty packed input stay
// refused, as torch refuses them.
#include <gtest/gtest.h>

#include <functional>

#include "test_util.hpp"

namespace rnnx_test {
namespace {

constexpr double kSentinel = 12345.0;

struct EmptyCase {
  std::string name;
  CellType cell;
  int64_t layers;
  bool bidir;
  int64_t proj;
  bool batch_first;
};
std::ostream& operator<<(std::ostream& os, const EmptyCase& c) {
  return os << c.name;
}

std::vector<EmptyCase> empty_cases() {
  return {
      {"lstm_l1_uni", CellType::lstm, 1, false, 0, false},
      {"lstm_p3_l2_bidir_batch_first", CellType::lstm, 2, true, 3, true},
      {"gru_l2_bidir", CellType::gru, 2, true, 0, false},
      {"rnn_tanh_l1_uni_batch_first", CellType::rnn_tanh, 1, false, 0, true},
  };
}

class EmptyBatch : public ::testing::TestWithParam<std::tuple<EmptyCase, BackendParam>> {
 protected:
  void SetUp() override {
    const auto& [ec, bp] = GetParam();
    RNNX_SKIP_UNLESS_AVAILABLE(bp.backend);
    c_ = make_config(ec.cell, 4, 6, ec.layers, ec.bidir, bp.dtype, ec.proj);
    options_ = backend_options(bp.backend);
    plan_ = std::make_unique<Plan>(c_, SequenceShape::padded(5, 0, {}, ec.batch_first), options_);
  }

  // Weights of the plan's layout, all 0.5 (any values: none may be read into an output).
  Buf weights() const { return Buf(c_.dtype, plan_->weights_numel(), 0.5); }

  Config c_;
  PlanOptions options_;
  std::unique_ptr<Plan> plan_;
};

TEST_P(EmptyBatch, SizesAreQueryableAndEmpty) {
  const Plan& p = *plan_;
  EXPECT_EQ(p.batch(), 0);
  EXPECT_EQ(p.max_seq_len(), 5);
  EXPECT_EQ(p.tokens(), 0);
  EXPECT_EQ(p.x_numel(), 0);
  EXPECT_EQ(p.y_numel(), 0);
  EXPECT_EQ(p.h_numel(), 0);
  EXPECT_EQ(p.c_numel(), 0);
  EXPECT_GT(p.weights_numel(), 0);
  EXPECT_EQ(p.forward_workspace_size(false), 0u);
  EXPECT_EQ(p.forward_workspace_size(true), 0u);
  EXPECT_EQ(p.backward_workspace_size(), 0u);
  // Only the header that fingerprints the forward; the same for every empty batch.
  EXPECT_GT(p.reserve_size(), 0u);
  EXPECT_LE(p.reserve_size(), 64u);
  const Plan longer(c_, SequenceShape::padded(9, 0, {}, p.shape().layout == Layout::batch_first),
                    options_);
  EXPECT_EQ(longer.reserve_size(), p.reserve_size());
  EXPECT_NE(p.problem_name().find("_b0_"), std::string::npos) << p.problem_name();
}

// Null sequence and state buffers (no elements), a null workspace: forward (inference and
// training) and backward run; overwritten weight gradients become zero.
TEST_P(EmptyBatch, NullBuffersRunAndOverwrittenGradientsAreZero) {
  Plan& p = *plan_;
  const Buf w = weights();
  Bytes reserve(p.reserve_size());
  ForwardArgs f;
  f.weights = w.data();
  EXPECT_NO_THROW(p.forward(f));
  f.training = true;
  f.reserve = reserve.data();
  f.reserve_size = reserve.size;
  ASSERT_NO_THROW(p.forward(f));
  Buf dw(c_.dtype, p.weights_numel(), kSentinel);
  BackwardArgs b;
  b.weights = w.data();
  b.dweights = dw.data();
  b.weight_grad_mode = GradMode::overwrite;
  b.reserve = reserve.data();
  b.reserve_size = reserve.size;
  ASSERT_NO_THROW(p.backward(b));
  for (int64_t i = 0; i < dw.size(); ++i) ASSERT_EQ(dw.get(i), 0.0) << "dweights[" << i << "]";
  // Twice from the same reserve, as after any training forward.
  dw.fill(kSentinel);
  ASSERT_NO_THROW(p.backward(b));
  for (int64_t i = 0; i < dw.size(); ++i) ASSERT_EQ(dw.get(i), 0.0) << "dweights[" << i << "]";
}

// Non-null buffers are not written (one sentinel element each stands for "nothing of the
// tensor"); accumulated weight gradients keep what they hold.
TEST_P(EmptyBatch, NothingIsWrittenAndAccumulatedGradientsAreKept) {
  Plan& p = *plan_;
  const bool lstm = is_lstm(c_);
  const Buf w = weights();
  Buf x(c_.dtype, 1, 1.0), h0(c_.dtype, 1, 1.0), c0(c_.dtype, 1, 1.0);
  Buf y(c_.dtype, 1, kSentinel), hy(c_.dtype, 1, kSentinel), cy(c_.dtype, 1, kSentinel);
  Bytes reserve(p.reserve_size());
  Bytes workspace(64, 0xab);
  ForwardArgs f;
  f.x = x.data();
  f.h0 = h0.data();
  f.c0 = lstm ? c0.data() : nullptr;
  f.weights = w.data();
  f.y = y.data();
  f.hy = hy.data();
  f.cy = lstm ? cy.data() : nullptr;
  f.training = true;
  f.workspace = workspace.data();
  f.workspace_size = workspace.size;
  f.reserve = reserve.data();
  f.reserve_size = reserve.size;
  ASSERT_NO_THROW(p.forward(f));
  EXPECT_EQ(y.get(0), kSentinel);
  EXPECT_EQ(hy.get(0), kSentinel);
  EXPECT_EQ(cy.get(0), kSentinel);

  Buf dy(c_.dtype, 1, 1.0), dhy(c_.dtype, 1, 1.0), dcy(c_.dtype, 1, 1.0);
  Buf dx(c_.dtype, 1, kSentinel), dh0(c_.dtype, 1, kSentinel), dc0(c_.dtype, 1, kSentinel);
  Rng rng(7);
  Buf dw(c_.dtype, p.weights_numel());
  for (int64_t i = 0; i < dw.size(); ++i) dw.set(i, rng.uniform(-1, 1));
  const std::vector<double> before = dw.values();
  BackwardArgs b;
  b.x = x.data();
  b.h0 = h0.data();
  b.c0 = lstm ? c0.data() : nullptr;
  b.weights = w.data();
  b.dy = dy.data();
  b.dhy = dhy.data();
  b.dcy = lstm ? dcy.data() : nullptr;
  b.dx = dx.data();
  b.dh0 = dh0.data();
  b.dc0 = lstm ? dc0.data() : nullptr;
  b.dweights = dw.data();
  b.weight_grad_mode = GradMode::accumulate;
  b.workspace = workspace.data();
  b.workspace_size = workspace.size;
  b.reserve = reserve.data();
  b.reserve_size = reserve.size;
  ASSERT_NO_THROW(p.backward(b));
  EXPECT_EQ(dx.get(0), kSentinel);
  EXPECT_EQ(dh0.get(0), kSentinel);
  EXPECT_EQ(dc0.get(0), kSentinel);
  EXPECT_EQ(dw.values(), before);
  for (unsigned char byte : workspace) ASSERT_EQ(byte, 0xab);
}

void expect_invalid(const std::function<void()>& f, const std::string& message) {
  try {
    f();
    ADD_FAILURE() << "no error; expected invalid_argument with '" << message << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Status::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

// The reserve fingerprint still decides: a backward needs a training forward of this very
// plan, and a reserve of another plan (another T, or a non-empty batch) is refused.
TEST_P(EmptyBatch, ReserveFingerprintIsChecked) {
  Plan& p = *plan_;
  const Buf w = weights();
  const std::string not_ours =
      "backward: reserve was not written by a training forward of this plan";
  Bytes reserve(p.reserve_size());
  ForwardArgs f;
  f.weights = w.data();
  f.reserve = reserve.data();
  f.reserve_size = reserve.size;
  p.forward(f);  // inference: leaves the reserve unmarked
  Buf dw(c_.dtype, p.weights_numel(), kSentinel);
  BackwardArgs b;
  b.weights = w.data();
  b.dweights = dw.data();
  b.reserve = reserve.data();
  b.reserve_size = reserve.size;
  expect_invalid([&] { p.backward(b); }, not_ours);

  const bool batch_first = p.shape().layout == Layout::batch_first;
  Plan other_t(c_, SequenceShape::padded(7, 0, {}, batch_first), options_);
  ForwardArgs of = f;
  of.training = true;
  other_t.forward(of);
  expect_invalid([&] { p.backward(b); }, not_ours);

  Plan nonempty(c_, SequenceShape::padded(5, 2, {}, batch_first), options_);
  Bytes big(nonempty.reserve_size());
  Buf x(c_.dtype, nonempty.x_numel(), 0.25), y(c_.dtype, nonempty.y_numel());
  ForwardArgs nf;
  nf.x = x.data();
  nf.weights = w.data();
  nf.y = y.data();
  nf.training = true;
  nf.reserve = big.data();
  nf.reserve_size = big.size;
  nonempty.forward(nf);
  BackwardArgs bb = b;
  bb.reserve = big.data();
  bb.reserve_size = big.size;
  expect_invalid([&] { p.backward(bb); }, not_ours);
  for (int64_t i = 0; i < dw.size(); ++i)
    ASSERT_EQ(dw.get(i), kSentinel) << "dweights[" << i << "]";

  // And after a training forward of this plan, the same call succeeds.
  f.training = true;
  p.forward(f);
  EXPECT_NO_THROW(p.backward(b));
}

// Null stays refused where the tensor has elements; the other checks are unchanged.
TEST_P(EmptyBatch, RequiredBuffersAreStillChecked) {
  Plan& p = *plan_;
  const Buf w = weights();
  ForwardArgs f;
  expect_invalid([&] { p.forward(f); }, "forward: weights is null");
  f.weights = w.data();
  f.training = true;
  expect_invalid([&] { p.forward(f); }, "forward (training): reserve is null");
  Bytes small(p.reserve_size() - 1);
  f.reserve = small.data();
  f.reserve_size = small.size;
  expect_invalid([&] { p.forward(f); }, "is smaller than required");
  if (!is_lstm(c_)) {
    Buf c0(c_.dtype, 1);
    ForwardArgs g;
    g.weights = w.data();
    g.c0 = c0.data();
    expect_invalid([&] { p.forward(g); }, "forward: c0 given but cell is");
  }
  BackwardArgs b;
  b.weights = w.data();
  expect_invalid([&] { p.backward(b); }, "backward: reserve is null");

  const bool batch_first = p.shape().layout == Layout::batch_first;
  Plan nonempty(c_, SequenceShape::padded(5, 2, {}, batch_first), options_);
  Buf y(c_.dtype, nonempty.y_numel());
  ForwardArgs nf;
  nf.weights = w.data();
  nf.y = y.data();
  expect_invalid([&] { nonempty.forward(nf); }, "forward: x is null");
  Buf x(c_.dtype, nonempty.x_numel());
  nf.x = x.data();
  nf.y = nullptr;
  expect_invalid([&] { nonempty.forward(nf); }, "forward: y is null");
}

INSTANTIATE_TEST_SUITE_P(
    Cases, EmptyBatch, ::testing::Combine(::testing::ValuesIn(empty_cases()), all_backends()),
    [](const ::testing::TestParamInfo<std::tuple<EmptyCase, BackendParam>>& info) {
      const BackendParam& bp = std::get<1>(info.param);
      return std::get<0>(info.param).name + "_" + to_string(bp.backend) + "_" + to_string(bp.dtype);
    });

// What torch refuses stays refused: a negative batch, T = 0 (also with B = 0), and a
// packed batch without steps (pack_padded_sequence: "Cannot pack empty tensors").
TEST(EmptyBatchShapes, WhatTorchRefusesStaysRefused) {
  const Config c = make_config(CellType::lstm, 4, 6, 1, false, DataType::f32);
  for (Backend backend : {Backend::reference, Backend::cpu}) {
    if (backend == Backend::cpu && !cpu_backend_available()) continue;
    const PlanOptions o = backend_options(backend);
    expect_invalid([&] { Plan p(c, SequenceShape::padded(5, -1), o); },
                   "batch (= -1) must be at least 0");
    expect_invalid([&] { Plan p(c, SequenceShape::padded(0, 0), o); },
                   "max_seq_len (= 0) must be at least 1");
    expect_invalid([&] { Plan p(c, SequenceShape::padded(0, 0, {}, true), o); },
                   "max_seq_len (= 0) must be at least 1");
    expect_invalid([&] { Plan p(c, SequenceShape::packed({}), o); }, "batch_sizes is empty");
    expect_invalid([&] { Plan p(c, SequenceShape::padded(5, 0, {3}), o); },
                   "lengths has 1 entries but batch is 0");
  }
}

}  // namespace
}  // namespace rnnx_test
