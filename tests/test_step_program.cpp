// rnnx's own GPU algorithm (core/step_program.hpp, core/step_backend.hpp) proven on the host:
// the programs the cuda backend runs for the configs cuDNN cannot express, run here by a host
// device that does each operation with plain loops (the fused cell steps through the very
// bodies the CUDA kernels call, src/cuda/step_kernels.hpp), against the reference backend on
// every problem of problems.hpp, float32 and float64, forward and backward. What the GPU adds
// on top (cuBLAS's GEMMs, the launch of the bodies) is checked by tests/cuda on a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "core/column_sums.hpp"
#include "core/dropout.hpp"
#include "core/peephole_grad.hpp"
#include "core/step_backend.hpp"
#include "cuda/step_kernels.hpp"
#include "problems.hpp"

namespace rnnx_test {
namespace {

using core::Ref;
using Where = core::Buf;

// Serial host copies of rows of T (the cpu backend's threaded ones are its own).
template <typename T>
class HostRows final : public core::RowCopier {
 public:
  void copy_rows(const void* src, const int64_t* src_map, void* dst, const int64_t* dst_map,
                 int64_t rows, int64_t width, void*) const override {
    for (int64_t r = 0; r < rows; ++r) {
      T* to = static_cast<T*>(dst) + (dst_map ? dst_map[r] : r) * width;
      for (int64_t j = 0; j < width; ++j)
        to[j] = src ? static_cast<const T*>(src)[(src_map ? src_map[r] : r) * width + j] : T(0);
    }
  }
  void fill_rows(void* dst, const int64_t* dst_map, int64_t rows, int64_t width, double value,
                 void*) const override {
    for (int64_t r = 0; r < rows; ++r)
      std::fill_n(static_cast<T*>(dst) + (dst_map ? dst_map[r] : r) * width, width,
                  static_cast<T>(value));
  }
};

template <typename T>
class HostDevice final : public core::StepDevice {
 public:
  explicit HostDevice(const PlanContext& ctx) : ctx_(ctx), dims_(core::step_dims(ctx.config)) {
    for (int64_t d = 0; d < ctx.config.num_directions(); ++d)
      options_[d] = core::cell::options_for<T>(ctx.config, direction_activations(ctx.config, d));
  }
  std::string name() const override { return "host-steps"; }
  const core::Memory& memory() const override { return core::host_memory(); }
  bool takes_stream() const override { return false; }
  const int64_t* upload(const std::vector<int64_t>& map) override {
    if (map.size() > capacity_) {
      kept_ = core::host_memory().allocate(map.size() * sizeof(int64_t), "test map");
      capacity_ = map.size();
    }
    if (!map.empty()) std::memcpy(kept_.get(), map.data(), map.size() * sizeof(int64_t));
    return static_cast<const int64_t*>(kept_.get());
  }
  void flush_maps(void*) override {}  // upload copied them already
  const core::RowCopier& rows() const override { return rows_; }
  void run(const core::StepProgram& program, const Buffers& b, const Dropout& drop,
           void*) override {
    auto base = [&](Where buf) -> void* {
      switch (buf) {
        case Where::input:
          return const_cast<void*>(b.input);
        case Where::weights:
          return const_cast<void*>(b.weights);
        case Where::dweights:
          return b.dweights;
        case Where::workspace:
          return b.workspace;
        case Where::reserve:
          return b.reserve;
        case Where::none:
          break;
      }
      return nullptr;
    };
    auto ptr = [&](Ref r) { return static_cast<T*>(base(r.buf)) + r.at; };
    for (const core::StepOp& op : program.ops) {
      if (const auto* g = std::get_if<core::GemmOp>(&op)) {
        if (g->c.buf == Where::dweights && b.dweights == nullptr) continue;
        gemm(*g, ptr(g->a), ptr(g->b), ptr(g->c));
      } else if (const auto* s = std::get_if<core::ColumnSumsOp>(&op)) {
        if (s->dst.buf == Where::dweights && b.dweights == nullptr) continue;
        std::vector<T> sums(static_cast<size_t>(s->width));
        core::column_sums(ptr(s->src), s->width, s->rows, s->width, sums.data());
        for (int64_t j = 0; j < s->width; ++j) ptr(s->dst)[j] += sums[j];
        if (s->also) {
          for (int64_t j = 0; j < s->width; ++j) ptr(s->also)[j] += sums[j];
        }
      } else if (const auto* c = std::get_if<core::CopyOp>(&op)) {
        std::copy_n(ptr(c->src), c->count, ptr(c->dst));
      } else if (const auto* d = std::get_if<core::DropoutOp>(&op)) {
        const core::DropoutKey key{drop.seed, drop.counter, d->layer, drop.p};
        for (int64_t t = 0; t < ctx_.schedule.T_eff; ++t)
          core::dropout_apply_step_rows(key, ctx_.schedule, d->width, t, ptr(d->data));
      } else {
        const auto& cell = std::get<core::CellOp>(op);
        const auto a = cuda::step::resolve<T, T>(cell, ctx_.config, dims_, options_, base);
        for (int64_t i = 0; i < a.rows; ++i) {
          for (int64_t j = 0; j < a.width(); ++j) cuda::step::run_unit(a, i, j);
        }
      }
    }
  }

 private:
  // Never reads C when beta is 0 (the workspace starts as NaN bytes), as cuBLAS does not.
  static void gemm(const core::GemmOp& g, const T* A, const T* B, T* C) {
    for (int64_t i = 0; i < g.m; ++i) {
      for (int64_t j = 0; j < g.n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < g.k; ++p) {
          const T a = g.trans_a ? A[p * g.lda + i] : A[i * g.lda + p];
          const T bv = g.trans_b ? B[j * g.ldb + p] : B[p * g.ldb + j];
          s += static_cast<double>(a) * static_cast<double>(bv);
        }
        T& c = C[i * g.ldc + j];
        c = static_cast<T>(g.beta == 0 ? s : s + g.beta * static_cast<double>(c));
      }
    }
  }

  const PlanContext& ctx_;
  core::StepDims dims_;
  core::cell::Options<T> options_[2];
  HostRows<T> rows_;
  core::Buffer kept_;
  size_t capacity_ = 0;
};

// The plan's context as Plan builds it, for a backend driven directly.
PlanContext context_of(const Plan& plan) {
  PlanContext ctx{plan.config(), plan.shape(), core::make_schedule(plan.shape()),
                  WeightLayout(plan.config()), PlanOptions{}};
  ctx.math = resolved_math_mode(plan.config());
  return ctx;
}

// run() of test_util.hpp for a backend without a Plan around it: outputs start as the
// sentinel, the workspace as NaN bytes, the reserve as zeros.
Results run_backend(BackendImpl& backend, const Plan& plan, const Tensors& in,
                    const RunOptions& o) {
  const Config& c = plan.config();
  const DataType dt = c.dtype;
  const bool lstm = is_lstm(c);
  const bool training = o.training || o.backward;
  Results r;
  r.y = Buf(dt, plan.y_numel(), o.sentinel);
  r.hy = Buf(dt, plan.h_numel(), o.sentinel);
  if (lstm) r.cy = Buf(dt, plan.c_numel(), o.sentinel);
  Bytes reserve(training ? backend.reserve_size() : 0, 0);
  {
    Bytes ws(backend.forward_workspace_size(training), 0xFF);
    ForwardArgs a;
    a.x = in.x.data(), a.h0 = in.h0.data(), a.c0 = in.c0.data(), a.weights = in.w.data();
    a.y = r.y.data(), a.hy = r.hy.data(), a.cy = r.cy.data();
    a.training = training;
    a.dropout_counter = o.dropout_counter;
    a.reserve = training ? reserve.data() : nullptr;
    backend.forward(a, ws.data());
  }
  if (o.backward) {
    r.dx = Buf(dt, plan.x_numel(), o.sentinel);
    r.dh0 = Buf(dt, plan.h_numel(), o.sentinel);
    if (lstm) r.dc0 = Buf(dt, plan.c_numel(), o.sentinel);
    r.dw = o.dw_init.empty() ? Buf(dt, plan.weights_numel(), o.sentinel) : Buf::from(dt, o.dw_init);
    Bytes ws(backend.backward_workspace_size(), 0xFF);
    BackwardArgs a;
    a.x = in.x.data(), a.h0 = in.h0.data(), a.c0 = in.c0.data(), a.weights = in.w.data();
    a.dy = in.dy.data(), a.dhy = in.dhy.data(), a.dcy = in.dcy.data();
    a.dx = r.dx.data(), a.dh0 = r.dh0.data(), a.dc0 = r.dc0.data(), a.dweights = r.dw.data();
    a.weight_grad_mode = o.mode;
    a.reserve = reserve.data();
    backend.backward(a, ws.data(), o.dropout_counter);
  }
  return r;
}

std::unique_ptr<BackendImpl> host_step_backend(const PlanContext& ctx) {
  if (ctx.config.dtype == DataType::f64)
    return core::make_step_backend(ctx, std::make_unique<HostDevice<double>>(ctx));
  return core::make_step_backend(ctx, std::make_unique<HostDevice<float>>(ctx));
}

using Param = std::tuple<TestCase, DataType>;
class StepProgramVsReference : public ::testing::TestWithParam<Param> {};

TEST_P(StepProgramVsReference, ForwardAndBackward) {
  TestCase p = std::get<0>(GetParam());
  p.cfg.dtype = std::get<1>(GetParam());
  p.cfg.math = MathMode::fp32;
  Plan ref(p.cfg, p.shape, backend_options(Backend::reference));
  const PlanContext ctx = context_of(ref);
  const std::unique_ptr<BackendImpl> backend = host_step_backend(ctx);
  EXPECT_EQ(backend->name(), "host-steps");
  check_runner_against_reference(p, ref, [&](const Tensors& in, const RunOptions& o) {
    return run_backend(*backend, ref, in, o);
  });
}

INSTANTIATE_TEST_SUITE_P(Problems, StepProgramVsReference,
                         ::testing::Combine(::testing::ValuesIn(cpu_vs_reference_cases()),
                                            ::testing::Values(DataType::f32, DataType::f64)),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return std::get<0>(info.param).name + "_" +
                                  to_string(std::get<1>(info.param));
                         });

// core::column_sums, the sum behind every bias and peephole gradient: each column in row
// order from zero in double, rounded to T once, the same bits however the columns are split
// (the cpu backend's chunks, core::column_sum's one column: a CUDA thread's). Values where the
// order shows even in double: 2^60 + 1 rounds back to 2^60, so any other order of the same
// terms gives another sum; and in float32, 2^25 + 1 rounds back to 2^25, where double keeps
// the 1.
TEST(ColumnSums, AddEachColumnInRowOrderInDoubleWhateverTheSplit) {
  const int64_t rows = 8, cols = 37;  // more than one of column_sums' blocks
  const float big = 1152921504606846976.0f, mid = 33554432.0f;  // 2^60, 2^25
  std::vector<float> a(static_cast<size_t>(rows * cols));
  for (int64_t j = 0; j < cols; ++j) {
    const float col[rows] = {big, 1.0f + j, -big, mid, 1.0f, -mid, 0.5f, 0.25f * j};
    for (int64_t r = 0; r < rows; ++r) a[r * cols + j] = col[r];
  }
  std::vector<float> in_order(cols), reversed(cols), in_float(cols);
  for (int64_t j = 0; j < cols; ++j) {
    double sum = 0, back = 0;
    for (int64_t r = 0; r < rows; ++r) sum += a[r * cols + j];
    for (int64_t r = rows; r-- > 0;) back += a[r * cols + j];
    in_order[j] = static_cast<float>(sum);
    reversed[j] = static_cast<float>(back);
    for (int64_t r = 0; r < rows; ++r) in_float[j] += a[r * cols + j];
  }
  ASSERT_NE(in_order, reversed) << "the data must tell the orders apart";
  ASSERT_NE(in_order, in_float) << "the data must tell double from float sums";
  for (int64_t chunk : {1, 2, 3, 7, 32, 37}) {
    std::vector<float> sums(cols, -1.0f);
    for (int64_t j0 = 0; j0 < cols; j0 += chunk)
      core::column_sums(a.data() + j0, cols, rows, std::min(chunk, cols - j0), sums.data() + j0);
    EXPECT_EQ(sums, in_order) << "columns split in chunks of " << chunk;
  }
  for (int64_t j = 0; j < cols; ++j)
    EXPECT_EQ(core::column_sum(a.data() + j, cols, rows), in_order[j]) << "column " << j;
  std::vector<float> none(cols, -1.0f);
  core::column_sums(a.data(), cols, 0, cols, none.data());
  EXPECT_EQ(none, std::vector<float>(cols, 0.0f)) << "no rows: zeros";
}

// Past kColumnSumRows rows the runs show: each run of 256 rows in row order, the runs' sums
// in run order (what a GPU block adds in parallel, one thread per run). 2^60 in run 0, then
// 256 ones in run 1, then -2^60 in run 2: in plain row order each 1 is lost against 2^60
// (the sum is 0); by runs the ones make 256, which 2^60 keeps (its ulp in double is 256),
// and the sum is 256. Columns differ in where the terms sit, so that every run boundary
// and a short last run are crossed.
TEST(ColumnSums, LongColumnsAddRunsOfRowsInRunOrder) {
  const int64_t R = core::kColumnSumRows, rows = 3 * R + 5, cols = 19;
  const float big = 1152921504606846976.0f;  // 2^60
  std::vector<float> a(static_cast<size_t>(rows * cols), 0.0f);
  for (int64_t j = 0; j < cols; ++j) {
    a[(j % 7) * cols + j] = big;
    for (int64_t r = R; r < 2 * R; ++r) a[r * cols + j] = 1.0f;
    a[(2 * R + j % 5) * cols + j] = -big;
    a[(3 * R + j % 5) * cols + j] = 0.5f * static_cast<float>(j);  // the short last run
  }
  std::vector<float> by_runs(cols), plain(cols);
  for (int64_t j = 0; j < cols; ++j) {
    double total = 0, sequential = 0;
    for (int64_t r0 = 0; r0 < rows; r0 += R) {
      double run = 0;
      for (int64_t r = r0; r < std::min(rows, r0 + R); ++r) run += a[r * cols + j];
      total += run;
    }
    for (int64_t r = 0; r < rows; ++r) sequential += a[r * cols + j];
    by_runs[j] = static_cast<float>(total);
    plain[j] = static_cast<float>(sequential);
    EXPECT_EQ(by_runs[j], 256.0f + 0.5f * static_cast<float>(j)) << "column " << j;
  }
  ASSERT_NE(by_runs, plain) << "the data must tell runs from plain row order";
  for (int64_t chunk : {1, 5, 19}) {
    std::vector<float> sums(cols, -1.0f);
    for (int64_t j0 = 0; j0 < cols; j0 += chunk)
      core::column_sums(a.data() + j0, cols, rows, std::min(chunk, cols - j0), sums.data() + j0);
    EXPECT_EQ(sums, by_runs) << "columns split in chunks of " << chunk;
  }
  for (int64_t j = 0; j < cols; ++j)
    EXPECT_EQ(core::column_sum(a.data() + j, cols, rows), by_runs[j]) << "column " << j;
}

// The peephole gradients are one computation (core/peephole_grad.hpp): the cpu backend's sum
// as it goes (peephole_grad_columns, over any split of the columns, forward and reversed
// directions, ragged steps) gives the bits of the step program's way, each row's terms kept
// (peephole_terms, as the step kernel writes them) and added up by column_sums.
// A short batch (one run of column_sums' rows) and a long one (its tokens cross several runs).
class PeepholeGrad : public ::testing::TestWithParam<SequenceShape> {};

TEST_P(PeepholeGrad, SumAsYouGoEqualsColumnSumsOfTheRowsTerms) {
  const int64_t H = 21, GH = 4 * H;
  const SequenceShape& shape = GetParam();
  const core::Schedule s = core::make_schedule(shape);
  const int64_t N = s.tokens, B = shape.batch;
  std::mt19937 gen(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  auto random = [&](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = dist(gen) * 1e3f;  // wide products: rounding shows
    return v;
  };
  const std::vector<float> c = random(N * H), c0 = random(B * H), dg = random(N * GH);
  for (bool reversed : {false, true}) {
    // The step program's way: each row's terms, then the column sums.
    std::vector<float> terms(static_cast<size_t>(N * 3 * H));
    for (int64_t t = 0; t < s.T_eff; ++t) {
      const core::PrevStep prev = core::prev_step(s, reversed, t);
      for (int64_t i = 0; i < s.batch_sizes[t]; ++i) {
        const int64_t r = s.offsets[t] + i;
        const float* cp = i < prev.count ? &c[(s.offsets[prev.step] + i) * H] : &c0[i * H];
        for (int64_t j = 0; j < H; ++j) {
          float row[3];
          core::peephole_terms(dg[r * GH + j], dg[r * GH + H + j], dg[r * GH + 3 * H + j], cp[j],
                               c[r * H + j], row);
          for (int q = 0; q < 3; ++q) terms[r * 3 * H + q * H + j] = row[q];
        }
      }
    }
    std::vector<float> expected(static_cast<size_t>(3 * H));
    core::column_sums(terms.data(), 3 * H, N, 3 * H, expected.data());
    for (int64_t chunk : {int64_t{1}, int64_t{5}, int64_t{16}, H}) {
      std::vector<float> got(static_cast<size_t>(3 * H), -1.0f);
      for (int64_t j0 = 0; j0 < H; j0 += chunk) {
        core::peephole_grad_columns(s, reversed, c.data(), c0.data(), dg.data(), H, GH, j0,
                                    std::min(H, j0 + chunk), false, got.data());
      }
      EXPECT_EQ(got, expected) << "reversed " << reversed << ", chunks of " << chunk;
      std::vector<float> twice = got;
      core::peephole_grad_columns(s, reversed, c.data(), c0.data(), dg.data(), H, GH, 0, H, true,
                                  twice.data());
      for (int64_t j = 0; j < 3 * H; ++j) ASSERT_EQ(twice[j], got[j] + expected[j]) << j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, PeepholeGrad,
    ::testing::Values(SequenceShape::padded(5, 4, {5, 2, 4, 1}),
                      SequenceShape::padded(40, 21, {40, 3, 37, 12, 40, 1, 29, 33, 8,  40, 17,
                                                     26, 5, 39, 22, 40, 2, 31, 19, 36, 11})));

// The backward program takes its bias and peephole gradients as column sums over the tokens
// (no product with a row of ones, whose order of additions would be the GEMM's), one per
// bias vector and one for the peepholes of each layer and direction.
TEST(StepProgram, BiasAndPeepholeGradientsAreColumnSumsOverTheTokens) {
  Config c;
  c.cell = CellType::lstm;
  c.input_size = 3;
  c.hidden_size = 5;
  c.num_layers = 2;
  c.bidirectional = true;
  c.peephole = true;
  const SequenceShape shape = SequenceShape::padded(4, 3, {4, 2, 3});
  const core::Schedule s = core::make_schedule(shape);
  const core::StepPrograms p = core::build_step_programs(c, s, WeightLayout(c));
  std::vector<int64_t> widths;
  for (const core::StepOp& op : p.backward.ops) {
    if (const auto* g = std::get_if<core::GemmOp>(&op)) {
      EXPECT_FALSE(g->m == 1 && g->k == s.tokens) << "a gradient summed as a product with ones";
    } else if (const auto* cs = std::get_if<core::ColumnSumsOp>(&op)) {
      EXPECT_EQ(cs->rows, s.tokens);
      EXPECT_EQ(cs->dst.buf, core::Buf::dweights);
      EXPECT_EQ(static_cast<bool>(cs->also), cs->width == 4 * 5) << "b_hh beside b_ih";
      widths.push_back(cs->width);
    }
  }
  // b_ih and b_hh from one pass over dG (LSTM: the same rows), then the peepholes.
  const int64_t GH = 4 * 5, peep = 3 * 5;
  std::vector<int64_t> expected;
  for (int ld = 0; ld < 4; ++ld) expected.insert(expected.end(), {GH, peep});
  EXPECT_EQ(widths, expected);
  for (const core::StepProgram* f : {&p.forward_training, &p.forward_inference}) {
    for (const core::StepOp& op : f->ops)
      EXPECT_FALSE(std::holds_alternative<core::ColumnSumsOp>(op));
  }
}

// Dropout between layers (core::dropout_after_layer): after every layer but the last, in
// training only; backward makes each mask again for the layer above's input and applies it to
// the gradient that goes down.
TEST(StepProgram, DropoutAfterEveryLayerButTheLast) {
  const SequenceShape shape = SequenceShape::padded(3, 2, {3, 2});
  const core::Schedule s = core::make_schedule(shape);
  for (int64_t L : {1, 2, 3}) {
    for (double p : {0.0, 0.25}) {
      Config c;
      c.cell = CellType::gru;
      c.input_size = 3;
      c.hidden_size = 4;
      c.num_layers = L;
      c.dropout = p;
      SCOPED_TRACE("L = " + std::to_string(L) + ", p = " + std::to_string(p));
      std::vector<int64_t> expected;
      for (int64_t l = 0; l < L; ++l) {
        EXPECT_EQ(core::dropout_after_layer(c, l), p > 0 && l + 1 < L) << "layer " << l;
        if (core::dropout_after_layer(c, l)) expected.push_back(l);
      }
      EXPECT_EQ(core::dropout_between_layers(c), !expected.empty());
      const core::StepPrograms programs = core::build_step_programs(c, s, WeightLayout(c));
      auto layers = [](const core::StepProgram& program) {
        std::vector<int64_t> got;
        for (const core::StepOp& op : program.ops) {
          if (const auto* d = std::get_if<core::DropoutOp>(&op)) got.push_back(d->layer);
        }
        return got;
      };
      EXPECT_EQ(layers(programs.forward_training), expected);
      EXPECT_EQ(layers(programs.forward_inference), std::vector<int64_t>{});
      std::vector<int64_t> twice;  // from the top layer down: the input's mask, the gradient's
      for (auto l = expected.rbegin(); l != expected.rend(); ++l)
        twice.insert(twice.end(), {*l, *l});
      EXPECT_EQ(layers(programs.backward), twice);
    }
  }
}

}  // namespace
}  // namespace rnnx_test
