// Buffers and the plan's accessors: workspace and reserve sizes are queryable and stable;
// a caller's workspace (exactly the size asked for, filled with garbage) gives the same
// results as the plan's own and, on the cpu backend, execution then allocates nothing; the
// reserve follows the real tokens; weight gradients overwrite or accumulate; optional
// outputs may be null; tensor sizes, names and moves.
#include <gtest/gtest.h>

#include "alloc_counter.hpp"
#include "core/schedule.hpp"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

using Param = BackendParam;

std::vector<Config> configs(DataType dt) {
  Config lstmp = make_config(CellType::lstm, 6, 10, 2, true, dt, 4);
  lstmp.cell_clip = {true, -0.5, 0.5};
  lstmp.proj_clip = {true, -0.1, 0.1};
  lstmp.dropout = 0.3;
  Config gru = make_config(CellType::gru, 5, 7, 3, false, dt, 0, false);
  gru.dropout = 0.2;
  // ONNX's options: the generic step kernels keep pre-activations (RNN too) and gate-clip
  // flags in the reserve.
  Config onnx_lstm = make_config(CellType::lstm, 4, 6, 2, false, dt, 3);
  onnx_lstm.peephole = onnx_lstm.input_forget = onnx_lstm.reverse = true;
  onnx_lstm.gate_clip = 0.7;
  onnx_lstm.dropout = 0.2;
  Config onnx_rnn = make_config(CellType::rnn_tanh, 5, 6, 1, true, dt);
  onnx_rnn.gate_clip = 0.5;
  onnx_rnn.activations = {{ActivationKind::softsign}, {ActivationKind::elu, 0.5, 0.0}};
  return {lstmp,
          gru,
          make_config(CellType::gru, 3, 9, 1, true, dt),
          make_config(CellType::rnn_tanh, 17, 5, 2, true, dt),
          onnx_lstm,
          onnx_rnn};
}

const std::vector<int64_t> kLengths = {7, 3, 0, 7, 5};

class Buffers : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override { RNNX_SKIP_UNLESS_AVAILABLE(GetParam().backend); }
  PlanOptions opts() const { return backend_options(GetParam().backend); }
};

TEST_P(Buffers, SizesAreQueryableAndStable) {
  for (const Config& c : configs(GetParam().dtype)) {
    SCOPED_TRACE(short_name(c));
    Plan p(c, SequenceShape::padded(7, 5, kLengths), opts());
    EXPECT_GE(p.reserve_size(), 64u) << "the reserve holds at least the plan's header";
    EXPECT_EQ(p.reserve_size(), p.reserve_size());
    EXPECT_EQ(p.forward_workspace_size(false), p.forward_workspace_size(false));
    EXPECT_EQ(p.forward_workspace_size(true), p.forward_workspace_size(true));
    EXPECT_EQ(p.backward_workspace_size(), p.backward_workspace_size());
    Plan q(c, SequenceShape::padded(7, 5, kLengths), opts());
    EXPECT_EQ(q.reserve_size(), p.reserve_size());
    EXPECT_EQ(q.forward_workspace_size(true), p.forward_workspace_size(true));
    EXPECT_EQ(q.backward_workspace_size(), p.backward_workspace_size());
  }
}

// Exactly the size asked for (so AddressSanitizer sees any overrun), filled with 0xFF
// bytes (NaN in either float type) or zeros: identical results to the plan's own.
TEST_P(Buffers, CallerWorkspaceGivesIdenticalResults) {
  for (const Config& c : configs(GetParam().dtype)) {
    SCOPED_TRACE(short_name(c));
    Plan p(c, SequenceShape::padded(7, 5, kLengths), opts());
    const Tensors t = make_tensors(p, make_data(c, kLengths, 61), kNaN, kNaN);
    RunOptions o;
    o.backward = true;
    o.dropout_counter = 4;
    const Results own = run(p, t, o);
    for (unsigned char fill : {0xFF, 0x00, 0x7F}) {
      o.caller_workspace = true;
      o.workspace_fill = fill;
      const Results got = run(p, t, o);
      EXPECT_TRUE(identical("y", got.y, own.y));
      EXPECT_TRUE(identical("hy", got.hy, own.hy));
      EXPECT_TRUE(identical("cy", got.cy, own.cy));
      EXPECT_TRUE(identical("dx", got.dx, own.dx));
      EXPECT_TRUE(identical("dh0", got.dh0, own.dh0));
      EXPECT_TRUE(identical("dc0", got.dc0, own.dc0));
      EXPECT_TRUE(identical("dweights", got.dw, own.dw));
    }
    // Inference with a caller workspace, too.
    RunOptions inf;
    inf.caller_workspace = true;
    expect_results_near(run(p, t, inf), run(p, t), 0, 0);
  }
}

// A workspace larger than needed is fine.
TEST_P(Buffers, LargerWorkspaceIsAccepted) {
  const Config c = configs(GetParam().dtype)[0];
  Plan p(c, SequenceShape::padded(7, 5, kLengths), opts());
  const Tensors t = make_tensors(p, make_data(c, kLengths, 62));
  Bytes ws(p.forward_workspace_size(false) + 4096, 0xFF);
  Buf y(c.dtype, p.y_numel(), kNaN);
  ForwardArgs a;
  a.x = t.x.data();
  a.h0 = t.h0.data();
  a.c0 = t.c0.data();
  a.weights = t.w.data();
  a.y = y.data();
  a.workspace = ws.data();
  a.workspace_size = ws.size;
  p.forward(a);
  RunOptions o;
  o.want_hy = o.want_cy = false;
  const Results want = run(p, t, o);
  EXPECT_TRUE(identical("y", y, want.y));
}

// The reserve and the workspaces follow the real tokens, not B * T (cpu); the reference
// keeps nothing in its reserve but never more for fewer tokens. (A batch of full lengths
// needs no gathered copies of x, y, dy and dx on cpu, so the workspaces are compared with a
// batch one token short of full, which has them.)
TEST_P(Buffers, ReserveFollowsRealTokens) {
  for (const Config& c : configs(GetParam().dtype)) {
    SCOPED_TRACE(short_name(c));
    Plan full(c, SequenceShape::padded(9, 6), opts());                        // 54 tokens
    Plan nearly(c, SequenceShape::padded(9, 6, {9, 9, 9, 8, 9, 9}), opts());  // 53 tokens
    Plan ragged(c, SequenceShape::padded(9, 6, {1, 1, 9, 1, 1, 1}), opts());  // 14 tokens
    Plan packed(c, make_shape(LayoutKind::packed_sorted_indices, 9, 6, {1, 1, 9, 1, 1, 1}), opts());
    EXPECT_LE(ragged.reserve_size(), full.reserve_size());
    EXPECT_LE(ragged.backward_workspace_size(), nearly.backward_workspace_size());
    EXPECT_LE(ragged.forward_workspace_size(true), nearly.forward_workspace_size(true));
    EXPECT_LE(ragged.forward_workspace_size(false), nearly.forward_workspace_size(false));
    if (GetParam().backend == Backend::cpu) {
      EXPECT_LT(2 * (ragged.reserve_size() - 64), full.reserve_size() - 64)
          << "ragged " << ragged.reserve_size() << " full " << full.reserve_size();
      EXPECT_EQ(packed.reserve_size(), ragged.reserve_size());
      // Full lengths in time-major order are already the packed rows: no copies.
      EXPECT_LT(full.forward_workspace_size(false), nearly.forward_workspace_size(false));
      EXPECT_LT(full.backward_workspace_size(), nearly.backward_workspace_size());
    }
  }
}

// Accumulate adds to what dweights holds; overwrite ignores it (NaN there is fine).
TEST_P(Buffers, WeightGradientModes) {
  for (const Config& c : configs(GetParam().dtype)) {
    SCOPED_TRACE(short_name(c));
    Plan p(c, SequenceShape::padded(7, 5, kLengths), opts());
    const Tensors t = make_tensors(p, make_data(c, kLengths, 63));
    RunOptions o;
    o.backward = true;
    o.dw_init.assign(p.weights_numel(), kNaN);
    const Results g = run(p, t, o);  // overwrite over NaN
    for (int64_t i = 0; i < g.dw.size(); ++i) ASSERT_FALSE(std::isnan(g.dw.get(i))) << i;
    o.dw_init.assign(p.weights_numel(), 0.0);
    EXPECT_TRUE(identical("overwrite over zeros vs over NaN", run(p, t, o).dw, g.dw));

    // Accumulate twice from zero = 2 x overwrite; onto random values = values + overwrite.
    o.mode = GradMode::accumulate;
    o.dw_init.assign(p.weights_numel(), 0.0);
    const Results once = run(p, t, o);
    o.dw_init = once.dw.values();
    const Results twice = run(p, t, o);
    Buf two_g(c.dtype, g.dw.size());
    for (int64_t i = 0; i < g.dw.size(); ++i) two_g.set(i, 2 * g.dw.get(i));
    const double tol = 2 * tolerance(c, 7, 5, true);
    EXPECT_TRUE(near("accumulate from zero", once.dw, g.dw, tol));
    EXPECT_TRUE(near("accumulate twice", twice.dw, two_g, tol));
    Rng rng(3);
    std::vector<double> init(p.weights_numel());
    for (double& v : init) v = rng.uniform(-2.0, 2.0);
    o.dw_init = init;
    const Results onto = run(p, t, o);
    Buf want(c.dtype, g.dw.size());
    for (int64_t i = 0; i < g.dw.size(); ++i)
      want.set(i, Buf::from(c.dtype, init).get(i) + g.dw.get(i));
    EXPECT_TRUE(near("accumulate onto values", onto.dw, want, tol));
    // dx, dh0, dc0 are always overwritten (the sentinel NaN is gone), in both modes.
    for (int64_t i = 0; i < onto.dx.size(); ++i) ASSERT_FALSE(std::isnan(onto.dx.get(i)));
    for (int64_t i = 0; i < onto.dh0.size(); ++i) ASSERT_FALSE(std::isnan(onto.dh0.get(i)));
  }
}

// Every optional output may be left out; what is asked for does not change.
TEST_P(Buffers, OptionalOutputsMayBeNull) {
  for (const Config& c : configs(GetParam().dtype)) {
    SCOPED_TRACE(short_name(c));
    Plan p(c, SequenceShape::padded(7, 5, kLengths), opts());
    const Tensors t = make_tensors(p, make_data(c, kLengths, 64));
    RunOptions o;
    o.backward = true;
    o.dropout_counter = 2;
    const Results all = run(p, t, o);
    for (int only = 0; only < 5; ++only) {
      RunOptions s = o;
      s.want_hy = only == 0;
      s.want_cy = only == 0;
      s.want_dx = only == 1;
      s.want_dh0 = only == 2;
      s.want_dc0 = only == 3;
      s.want_dw = only == 4;
      const Results r = run(p, t, s);
      SCOPED_TRACE("only output " + std::to_string(only));
      // Absent outputs compare as "both absent" only where `r` lacks them: compare the
      // present ones.
      EXPECT_TRUE(identical("y", r.y, all.y));
      const std::pair<const Buf*, const Buf*> pairs[] = {{&r.hy, &all.hy},   {&r.cy, &all.cy},
                                                         {&r.dx, &all.dx},   {&r.dh0, &all.dh0},
                                                         {&r.dc0, &all.dc0}, {&r.dw, &all.dw}};
      for (const auto& [got, want] : pairs) {
        if (got->present()) {
          EXPECT_TRUE(identical("output", *got, *want));
        }
      }
    }
  }
}

// include/rnnx/plan.hpp: "With a caller-provided workspace, execution allocates nothing"
// (checked for operator new; the cpu backend only -- the reference may allocate).
TEST_P(Buffers, NoAllocationWithCallerWorkspace) {
  if (GetParam().backend == Backend::reference) GTEST_SKIP() << "the oracle may allocate";
  for (const Config& c : configs(GetParam().dtype)) {
    SCOPED_TRACE(short_name(c));
    Plan p(c, SequenceShape::padded(7, 5, kLengths), opts());
    const Tensors t = make_tensors(p, make_data(c, kLengths, 65));
    Bytes fws(p.forward_workspace_size(true)), bws(p.backward_workspace_size()),
        reserve(p.reserve_size());
    Buf y(c.dtype, p.y_numel()), hy(c.dtype, p.h_numel()), dx(c.dtype, p.x_numel()),
        dh0(c.dtype, p.h_numel()), dw(c.dtype, p.weights_numel());
    ForwardArgs f;
    f.x = t.x.data();
    f.h0 = t.h0.data();
    f.c0 = t.c0.data();
    f.weights = t.w.data();
    f.y = y.data();
    f.hy = hy.data();
    f.training = true;
    f.workspace = fws.data();
    f.workspace_size = fws.size;
    f.reserve = reserve.data();
    f.reserve_size = reserve.size;
    BackwardArgs b;
    b.x = t.x.data();
    b.h0 = t.h0.data();
    b.c0 = t.c0.data();
    b.weights = t.w.data();
    b.dy = t.dy.data();
    b.dx = dx.data();
    b.dh0 = dh0.data();
    b.dweights = dw.data();
    b.workspace = bws.data();
    b.workspace_size = bws.size;
    b.reserve = reserve.data();
    b.reserve_size = reserve.size;
    p.forward(f);  // a first call may set up thread pools and the like
    p.backward(b);
    start_counting_allocations();
    p.forward(f);
    p.backward(b);
    EXPECT_EQ(stop_counting_allocations(), 0) << "operator new calls during forward + backward";
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, Buffers, all_backends(), backend_param_name);

// ---------------------------------------------------------------------------------------
// Accessors, names, moves (reference; the values do not depend on the backend).

// core::rows_in_place says "in place" exactly when gathering the caller's rows into packed
// sorted order would leave them as they are (the packed layout; full lengths time-major, or
// one sequence), which is when the cpu backend skips the gather, the scatter and their room.
TEST(Schedule, RowsInPlaceExactlyWhenTheGatherIsTheIdentity) {
  struct Case {
    const char* name;
    SequenceShape shape;
  };
  const std::vector<Case> cases = {
      {"time-major full", SequenceShape::padded(4, 3)},
      {"time-major full, lengths given", SequenceShape::padded(4, 3, {4, 4, 4})},
      {"time-major ragged", SequenceShape::padded(4, 3, {4, 2, 4})},
      {"time-major sorted ragged", SequenceShape::padded(4, 3, {4, 3, 1})},
      {"batch-first full", SequenceShape::padded(4, 3, {}, true)},
      {"batch-first one sequence", SequenceShape::padded(4, 1, {}, true)},
      {"batch-first one short sequence", SequenceShape::padded(4, 1, {3}, true)},
      {"time-major one short sequence", SequenceShape::padded(4, 1, {2})},
      {"packed", SequenceShape::packed({3, 2, 1}, {2, 0, 1})},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const core::Schedule s = core::make_schedule(c.shape);
    // In place iff packed row r is the caller's row r for every r and the caller's rows
    // cover exactly the real tokens.
    const int64_t caller_rows = c.shape.layout == Layout::packed ? s.tokens : s.T * s.B;
    const std::vector<int64_t> map = core::caller_rows(c.shape, s);
    bool identity = caller_rows == s.tokens;
    for (int64_t r = 0; r < s.tokens; ++r) identity = identity && map[r] == r;
    EXPECT_EQ(core::rows_in_place(c.shape, s), identity);
  }
}

TEST(Plan, TensorSizes) {
  Config c = make_config(CellType::lstm, 17, 34, 2, true, DataType::f32, 5);
  Plan p(c, SequenceShape::padded(7, 3, {7, 0, 4}), backend_options(Backend::reference));
  EXPECT_EQ(p.max_seq_len(), 7);
  EXPECT_EQ(p.batch(), 3);
  EXPECT_EQ(p.tokens(), 11);
  EXPECT_EQ(p.x_numel(), 7 * 3 * 17);
  EXPECT_EQ(p.y_numel(), 7 * 3 * 2 * 5);
  EXPECT_EQ(p.h_numel(), 2 * 2 * 3 * 5);
  EXPECT_EQ(p.c_numel(), 2 * 2 * 3 * 34);
  EXPECT_EQ(p.weights_numel(), WeightLayout(c).numel());

  Plan q(c, SequenceShape::packed({3, 2, 2, 1}, {2, 0, 1}), backend_options(Backend::reference));
  EXPECT_EQ(q.max_seq_len(), 4);
  EXPECT_EQ(q.batch(), 3);
  EXPECT_EQ(q.tokens(), 8);
  EXPECT_EQ(q.x_numel(), 8 * 17);
  EXPECT_EQ(q.y_numel(), 8 * 10);
  EXPECT_EQ(q.h_numel(), 2 * 2 * 3 * 5);

  c.cell = CellType::gru;
  c.proj_size = 0;
  Plan g(c, SequenceShape::padded(2, 2, {}, true), backend_options(Backend::reference));
  EXPECT_EQ(g.c_numel(), 0);
  EXPECT_EQ(g.tokens(), 4);
}

TEST(Plan, Names) {
  Config c = make_config(CellType::lstm, 17, 34, 2, true, DataType::f32);
  Plan p(c, SequenceShape::padded(7, 3, {7, 2, 5}), backend_options(Backend::reference));
  EXPECT_EQ(p.problem_name(), "lstm_l2_bidir_t7_b3_i17_h34_p0_len-mixed");
  EXPECT_EQ(p.impl_name(), "reference");
  Config g = make_config(CellType::gru, 3, 4, 1, false, DataType::f64, 0, false);
  Plan q(g, SequenceShape::padded(5, 2), backend_options(Backend::reference));
  EXPECT_EQ(q.problem_name(), "gru-orig_l1_uni_t5_b2_i3_h4_p0_len-full");
  EXPECT_STREQ(to_string(CellType::rnn_relu), "rnn_relu");
  EXPECT_STREQ(to_string(Layout::batch_first), "batch_first");
  EXPECT_STREQ(to_string(DataType::f32), "float32");
  EXPECT_STREQ(to_string(Backend::cpu), "cpu");
  EXPECT_EQ(gates_per_cell(CellType::lstm), 4);
  EXPECT_EQ(gates_per_cell(CellType::gru), 3);
  EXPECT_EQ(gates_per_cell(CellType::rnn_tanh), 1);
  EXPECT_EQ(dtype_size(DataType::f64), 8);
}

// PlanOptions::num_threads applies to the call only: the caller's OpenMP setting is
// restored afterwards, also when the call throws.
TEST(Plan, ThreadCountDoesNotLeak) {
  const int before = rnnx::max_threads();
  for (Backend backend : {Backend::reference, Backend::cpu}) {
    if (backend == Backend::cpu && !cpu_backend_available()) continue;
    Config c = make_config(CellType::lstm, 3, 4, 1, false, DataType::f32);
    const int threads = before == 1 ? 2 : 1;
    Plan p(c, SequenceShape::padded(3, 2), backend_options(backend, threads));
    const Tensors t = make_tensors(p, make_data(c, {3, 3}, 67));
    run(p, t);
    EXPECT_EQ(rnnx::max_threads(), before) << to_string(backend);
    ForwardArgs bad;
    EXPECT_THROW(p.forward(bad), Error);
    EXPECT_EQ(rnnx::max_threads(), before) << to_string(backend);
  }
}

TEST(Plan, IsMovable) {
  Config c = make_config(CellType::gru, 3, 4, 2, true, DataType::f64);
  const std::vector<int64_t> lengths = {3, 1};
  Plan a(c, SequenceShape::padded(3, 2, lengths), backend_options(Backend::reference));
  const Tensors t = make_tensors(a, make_data(c, lengths, 66));
  RunOptions o;
  o.backward = true;
  const Results want = run(a, t, o);
  Plan b(std::move(a));
  expect_results_near(run(b, t, o), want, 0, 0);
  Plan d(c, SequenceShape::padded(1, 1), backend_options(Backend::reference));
  d = std::move(b);
  expect_results_near(run(d, t, o), want, 0, 0);
  EXPECT_EQ(d.batch(), 2);
}

}  // namespace
}  // namespace rnnx_test
