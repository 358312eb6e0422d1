// ONNX's cell options (reverse direction, peepholes, gate clip, input_forget, activation
// functions): what they mean beyond the gradient checks (test_gradcheck.cpp), the ONNX weight
// converters and their gate orders, and how the backends and the validation treat them.
#include <gtest/gtest.h>

#include <cmath>

#include "problems.hpp"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

Config small(CellType cell, bool bidir) {
  Config c = make_config(cell, 3, 4, 1, bidir, DataType::f64, 0, true);
  return c;
}

// A reverse network equals the reverse half of a bidirectional one with the same weights.
TEST(OnnxOptions, ReverseEqualsTheReverseHalfOfBidirectional) {
  for (Backend be : {Backend::reference, Backend::cpu}) {
    SCOPED_TRACE(to_string(be));
    for (CellType cell : {CellType::rnn_tanh, CellType::lstm, CellType::gru}) {
      Config bi = small(cell, true), rev = small(cell, false);
      rev.reverse = true;
      const std::vector<int64_t> lengths = {5, 0, 3, 2};
      const SequenceShape shape = make_shape(LayoutKind::time_major, 5, 4, lengths);
      Plan pb(bi, shape, backend_options(be));
      Plan pr(rev, shape, backend_options(be));
      const Data db = make_data(bi, lengths, 7);
      Data dr = db;
      // The reverse plan's weights are the bidirectional plan's *_reverse parameters; its
      // h0/c0 the reverse direction's rows.
      const WeightLayout& lb = pb.weight_layout();
      const WeightLayout& lr = pr.weight_layout();
      dr.w.assign(lr.numel(), 0.0);
      for (const WeightParam& p : lr.params()) {
        const WeightParam& q = lb.find(p.name + "_reverse");
        std::copy_n(db.w.begin() + q.offset, q.numel(), dr.w.begin() + p.offset);
      }
      const int64_t B = 4, H = 4;
      dr.h0.assign(db.h0.begin() + B * H, db.h0.end());
      if (cell == CellType::lstm) dr.c0.assign(db.c0.begin() + B * H, db.c0.end());
      const Results yb = run(pb, make_tensors(pb, db));
      const Results yr = run(pr, make_tensors(pr, dr));
      for (int64_t t = 0; t < 5; ++t)
        for (int64_t b = 0; b < B; ++b)
          for (int64_t j = 0; j < H; ++j)
            EXPECT_NEAR(yr.y.get((t * B + b) * H + j), yb.y.get((t * B + b) * 2 * H + H + j), 1e-12)
                << to_string(cell) << " t=" << t << " b=" << b;
      for (int64_t i = 0; i < B * H; ++i) EXPECT_NEAR(yr.hy.get(i), yb.hy.get(B * H + i), 1e-12);
    }
  }
}

// Zero peepholes, a gate clip no pre-activation reaches and the default activations written
// out are the plain cell.
TEST(OnnxOptions, NeutralSettingsChangeNothing) {
  for (Backend be : {Backend::reference, Backend::cpu}) {
    SCOPED_TRACE(to_string(be));
    for (CellType cell : {CellType::rnn_relu, CellType::lstm, CellType::gru}) {
      Config plain = small(cell, true), onnx = plain;
      onnx.gate_clip = 1e6;
      onnx.activations = direction_activations(plain, 0);
      if (cell == CellType::lstm) onnx.peephole = true;
      const std::vector<int64_t> lengths = {4, 2};
      const SequenceShape shape = make_shape(LayoutKind::batch_first, 4, 2, lengths);
      Plan pp(plain, shape, backend_options(be));
      Plan po(onnx, shape, backend_options(be));
      const Data d = make_data(plain, lengths, 3);
      Data dn = d;
      dn.w.assign(po.weights_numel(), 0.0);  // peepholes stay zero
      for (const WeightParam& p : pp.weight_layout().params())
        std::copy_n(d.w.begin() + p.offset, p.numel(),
                    dn.w.begin() + po.weight_layout().find(p.name).offset);
      const Results a = run(pp, make_tensors(pp, d)), b = run(po, make_tensors(po, dn));
      for (int64_t i = 0; i < a.y.size(); ++i) EXPECT_NEAR(a.y.get(i), b.y.get(i), 1e-12);
    }
  }
}

TEST(OnnxOptions, GateClipBoundsTheRnnOutput) {
  for (Backend be : {Backend::reference, Backend::cpu}) {
    SCOPED_TRACE(to_string(be));
    Config c = small(CellType::rnn_tanh, false);
    c.activations = {{ActivationKind::affine, 1.0, 0.0}};  // y = clipped pre-activation
    c.gate_clip = 0.05;
    const std::vector<int64_t> lengths = {3};
    Plan p(c, make_shape(LayoutKind::time_major, 3, 1, lengths), backend_options(be));
    Data d = make_data(c, lengths, 11);
    for (double& v : d.w) v *= 10.0;
    const Results r = run(p, make_tensors(p, d));
    int64_t at_bound = 0;
    for (int64_t i = 0; i < r.y.size(); ++i) {
      EXPECT_LE(std::fabs(r.y.get(i)), 0.05);
      at_bound += std::fabs(r.y.get(i)) == 0.05;
    }
    EXPECT_GT(at_bound, 0);
  }
}

TEST(OnnxOptions, InputForgetCouplesTheGates) {
  for (Backend be : {Backend::reference, Backend::cpu}) {
    SCOPED_TRACE(to_string(be));
    // With W = 0 except biases: i = sigmoid(b_i), f must be 1 - i whatever b_f says.
    Config c = small(CellType::lstm, false);
    c.input_forget = true;
    const std::vector<int64_t> lengths = {1};
    Plan p(c, make_shape(LayoutKind::time_major, 1, 1, lengths), backend_options(be));
    Data d = make_data(c, lengths, 5);
    const WeightLayout& l = p.weight_layout();
    std::fill(d.w.begin(), d.w.end(), 0.0);
    const int64_t H = 4;
    const double bi = 0.3, bf = 5.0, bg = 0.7;
    for (int64_t j = 0; j < H; ++j) {
      d.w[l.find("bias_ih_l0").offset + j] = bi;
      d.w[l.find("bias_ih_l0").offset + H + j] = bf;
      d.w[l.find("bias_ih_l0").offset + 2 * H + j] = bg;
    }
    const Results r = run(p, make_tensors(p, d));
    const double i = 1.0 / (1.0 + std::exp(-bi));
    for (int64_t j = 0; j < H; ++j) {
      const double c_expected = (1.0 - i) * d.c0[j] + i * std::tanh(bg);
      EXPECT_NEAR(r.cy.get(j), c_expected, 1e-14);
    }
  }
}

TEST(OnnxConvert, GateOrdersAndRoundTrip) {
  for (CellType cell : {CellType::lstm, CellType::gru, CellType::rnn_tanh}) {
    Config c = small(cell, true);
    c.peephole = cell == CellType::lstm;
    const WeightLayout layout(c);
    const int64_t G = gates_per_cell(cell), H = 4, I = 3, D = 2;
    std::vector<double> W(D * G * H * I), R(D * G * H * H), B(D * 2 * G * H), P(D * 3 * H);
    // Every value encodes its ONNX position.
    for (size_t k = 0; k < W.size(); ++k) W[k] = 1000.0 + double(k);
    for (size_t k = 0; k < R.size(); ++k) R[k] = 2000.0 + double(k);
    for (size_t k = 0; k < B.size(); ++k) B[k] = 3000.0 + double(k);
    for (size_t k = 0; k < P.size(); ++k) P[k] = 4000.0 + double(k);
    std::vector<double> flat(layout.numel(), -1.0);
    import_onnx_layer(c, layout, 0, W.data(), R.data(), B.data(), c.peephole ? P.data() : nullptr,
                      flat.data());
    // rnnx gate k comes from ONNX gate onnx_of[k]: LSTM iofc -> ifgo, GRU zrh -> rzn.
    const std::vector<int64_t> onnx_of = cell == CellType::lstm  ? std::vector<int64_t>{0, 2, 3, 1}
                                         : cell == CellType::gru ? std::vector<int64_t>{1, 0, 2}
                                                                 : std::vector<int64_t>{0};
    for (int64_t d = 0; d < D; ++d) {
      const std::string sfx = d ? "_reverse" : "";
      for (int64_t k = 0; k < G; ++k) {
        const int64_t src = onnx_of[k];
        EXPECT_EQ(flat[layout.find("weight_ih_l0" + sfx).offset + k * H * I + 1],
                  W[d * G * H * I + src * H * I + 1]);
        EXPECT_EQ(flat[layout.find("weight_hh_l0" + sfx).offset + k * H * H + 2],
                  R[d * G * H * H + src * H * H + 2]);
        EXPECT_EQ(flat[layout.find("bias_ih_l0" + sfx).offset + k * H], B[d * 2 * G * H + src * H]);
        EXPECT_EQ(flat[layout.find("bias_hh_l0" + sfx).offset + k * H],
                  B[d * 2 * G * H + G * H + src * H]);
      }
      if (c.peephole) {  // ONNX i, o, f -> rnnx i, f, o
        const int64_t off = layout.find("weight_peephole_l0" + sfx).offset;
        EXPECT_EQ(flat[off + 0 * H], P[d * 3 * H + 0 * H]);
        EXPECT_EQ(flat[off + 1 * H], P[d * 3 * H + 2 * H]);
        EXPECT_EQ(flat[off + 2 * H], P[d * 3 * H + 1 * H]);
      }
    }
    for (double v : flat) EXPECT_NE(v, -1.0) << "a parameter was left unset";
    std::vector<double> W2(W.size()), R2(R.size()), B2(B.size()), P2(P.size());
    export_onnx_layer(c, layout, 0, flat.data(), W2.data(), R2.data(), B2.data(),
                      c.peephole ? P2.data() : nullptr);
    EXPECT_EQ(W2, W);
    EXPECT_EQ(R2, R);
    EXPECT_EQ(B2, B);
    if (c.peephole) {
      EXPECT_EQ(P2, P);
    }
  }
}

TEST(OnnxConvert, RefusesWhatTheConfigCannotHold) {
  Config c = small(CellType::lstm, false);
  c.bias = false;
  const WeightLayout layout(c);
  std::vector<double> W(16 * 3), R(16 * 4), B(32), flat(layout.numel());
  try {
    import_onnx_layer(c, layout, 0, W.data(), R.data(), B.data(), nullptr, flat.data());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Status::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("bias = false"), std::string::npos) << e.what();
  }
  EXPECT_THROW(import_onnx_layer(c, layout, 1, W.data(), R.data(), nullptr, nullptr, flat.data()),
               Error);
}

// ONNX's alpha/beta lists are consumed in order by the activations that take a value; the
// others keep ONNX's defaults; names are case-insensitive; leftovers and unknown names are
// refused, naming the list or the entry.
TEST(OnnxConvert, ActivationListsAreConsumedInOrder) {
  const std::vector<Activation> a = onnx_activations(
      {"leakyrelu", "Sigmoid", "Affine", "HardSigmoid", "Tanh"}, {0.5, 2.0, 0.3}, {1.5});
  ASSERT_EQ(a.size(), 5u);
  EXPECT_EQ(a[0].kind, ActivationKind::leaky_relu);
  EXPECT_EQ(a[0].alpha, 0.5);
  EXPECT_EQ(a[1].kind, ActivationKind::sigmoid);
  EXPECT_EQ(a[2].kind, ActivationKind::affine);
  EXPECT_EQ(a[2].alpha, 2.0);
  EXPECT_EQ(a[2].beta, 1.5);
  EXPECT_EQ(a[3].kind, ActivationKind::hard_sigmoid);
  EXPECT_EQ(a[3].alpha, 0.3);
  EXPECT_EQ(a[3].beta, default_activation(ActivationKind::hard_sigmoid).beta);  // list ran out
  EXPECT_EQ(a[4].kind, ActivationKind::tanh);
  EXPECT_TRUE(onnx_activations({}, {}, {}).empty());
  auto refused = [](const std::vector<std::string>& names, const std::vector<double>& alpha,
                    const std::vector<double>& beta, const std::string& message) {
    try {
      onnx_activations(names, alpha, beta);
      ADD_FAILURE() << "expected an error mentioning " << message;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Status::invalid_argument);
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  refused({"Tanh", "Elu"}, {1.0, 2.0}, {},
          "activation_alpha has 2 values but the activations take 1");
  refused({"Elu"}, {}, {0.5}, "activation_beta has 1 values but the activations take 0");
  refused({"Tanh", "Swish"}, {}, {}, "activations[1]");
}

struct BadOnnxConfig {
  const char* name;
  void (*mutate)(Config&);
  const char* message;
};

TEST(OnnxOptions, InvalidCombinationsAreRefused) {
  const BadOnnxConfig cases[] = {
      {"reverse_and_bidirectional", [](Config& c) { c.reverse = c.bidirectional = true; },
       "bidirectional"},
      {"peephole_on_gru",
       [](Config& c) {
         c.cell = CellType::gru;
         c.peephole = true;
       },
       "peephole"},
      {"input_forget_on_rnn",
       [](Config& c) {
         c.cell = CellType::rnn_tanh;
         c.input_forget = true;
       },
       "input_forget"},
      {"negative_gate_clip", [](Config& c) { c.gate_clip = -1.0; }, "gate_clip (= -1"},
      {"nan_gate_clip", [](Config& c) { c.gate_clip = std::nan(""); }, "gate_clip"},
      {"two_activations_for_lstm",
       [](Config& c) {
         c.activations = {{ActivationKind::tanh}, {ActivationKind::tanh}};
       },
       "activations has 2 entries"},
  };
  for (const auto& bc : cases) {
    Config c = small(CellType::lstm, false);
    bc.mutate(c);
    try {
      validate(c);
      ADD_FAILURE() << bc.name << ": accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Status::invalid_argument) << bc.name;
      EXPECT_NE(std::string(e.what()).find(bc.message), std::string::npos)
          << bc.name << ": " << e.what();
    }
  }
  EXPECT_THROW(activation_from_string("Swish"), Error);
  EXPECT_EQ(activation_from_string("leakyrelu"), ActivationKind::leaky_relu);
}

// The cpu backend runs every option: those that change the cell's equations on its generic
// step kernels (impl_name says "/onnx-cell"), `reverse` alone on the fast ones.
TEST(OnnxOptions, CpuRunsThem) {
  struct Case {
    const char* name;
    CellType cell;
    void (*mutate)(Config&);
    bool generic;
  };
  const Case cases[] = {
      {"peephole", CellType::lstm, [](Config& c) { c.peephole = true; }, true},
      {"gate_clip", CellType::gru, [](Config& c) { c.gate_clip = 0.5; }, true},
      {"input_forget", CellType::lstm, [](Config& c) { c.input_forget = true; }, true},
      {"activations", CellType::rnn_tanh,
       [](Config& c) { c.activations = {{ActivationKind::softsign}}; }, true},
      {"reverse", CellType::lstm, [](Config& c) { c.reverse = true; }, false},
      {"default_activations_spelled_out", CellType::gru,
       [](Config& c) {
         c.activations = {{ActivationKind::sigmoid}, {ActivationKind::tanh}};
       },
       false},
  };
  for (const Case& k : cases) {
    Config c = small(k.cell, false);
    k.mutate(c);
    Plan p(c, SequenceShape::padded(3, 2, {3, 2}), backend_options(Backend::cpu));
    EXPECT_EQ(p.impl_name().rfind("cpu:", 0), 0u) << k.name << ": " << p.impl_name();
    EXPECT_EQ(p.impl_name().find("/onnx-cell") != std::string::npos, k.generic)
        << k.name << ": " << p.impl_name();
    const Data d = make_data(c, {3, 2}, 4);
    const Results r = run(p, make_tensors(p, d));
    for (int64_t i = 0; i < r.y.size(); ++i) EXPECT_TRUE(std::isfinite(r.y.get(i))) << k.name;
  }
}

}  // namespace
}  // namespace rnnx_test
