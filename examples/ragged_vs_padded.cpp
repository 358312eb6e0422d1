// A 2-layer bidirectional LSTM with projection (LSTMP) over a ragged batch, in C++. Prints
// what the plan chose, a few results, checks that one sequence gives the same result alone
// as inside the batch, and times the ragged batch against the same batch padded to full
// length (the work should follow the real tokens).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "rnnx/rnnx.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Buffers {
  std::vector<float> x, y, hy, cy, w, dy, dx, dw, ws, reserve;
};

// Median milliseconds of `repeat` runs after one warm-up.
template <typename F>
double median_ms(int repeat, F&& f) {
  f();
  std::vector<double> ms;
  for (int i = 0; i < repeat; ++i) {
    const auto t0 = Clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

void fill(std::vector<float>& v, size_t n, std::mt19937& rng, float scale) {
  std::uniform_real_distribution<float> u(-scale, scale);
  v.resize(n);
  for (auto& e : v) e = u(rng);
}

struct Timing {
  double infer_ms, train_ms;
};

Timing time_plan(rnnx::Plan& plan, Buffers& b, std::mt19937& rng) {
  fill(b.x, plan.x_numel(), rng, 1.0f);
  fill(b.dy, plan.y_numel(), rng, 1.0f);
  b.y.assign(plan.y_numel(), 0.f);
  b.dx.assign(plan.x_numel(), 0.f);
  b.dw.assign(plan.weights_numel(), 0.f);
  b.hy.assign(plan.h_numel(), 0.f);
  b.cy.assign(plan.c_numel(), 0.f);
  const size_t ws = std::max(plan.forward_workspace_size(true), plan.backward_workspace_size());
  b.ws.assign(ws / sizeof(float) + 1, 0.f);
  b.reserve.assign(plan.reserve_size() / sizeof(float) + 1, 0.f);

  rnnx::ForwardArgs f;
  f.x = b.x.data();
  f.weights = b.w.data();
  f.y = b.y.data();
  f.hy = b.hy.data();
  f.cy = b.cy.data();
  f.workspace = b.ws.data();
  f.workspace_size = b.ws.size() * sizeof(float);
  f.reserve = b.reserve.data();
  f.reserve_size = b.reserve.size() * sizeof(float);
  rnnx::BackwardArgs g;
  g.x = b.x.data();
  g.weights = b.w.data();
  g.dy = b.dy.data();
  g.dx = b.dx.data();
  g.dweights = b.dw.data();
  g.workspace = f.workspace;
  g.workspace_size = f.workspace_size;
  g.reserve = f.reserve;
  g.reserve_size = f.reserve_size;

  Timing t{};
  f.training = false;
  t.infer_ms = median_ms(5, [&] { plan.forward(f); });
  f.training = true;
  t.train_ms = median_ms(3, [&] {
    plan.forward(f);
    plan.backward(g);
  });
  return t;
}

}  // namespace

int main() {
  try {
    rnnx::Config cfg;
    cfg.cell = rnnx::CellType::lstm;
    cfg.input_size = 128;
    cfg.hidden_size = 256;
    cfg.proj_size = 64;
    cfg.num_layers = 2;
    cfg.bidirectional = true;
    cfg.cell_clip = {true, -10.0, 10.0};
    const int64_t T = 100, B = 32;

    std::mt19937 rng(42);
    std::uniform_int_distribution<int64_t> len_dist(1, T);
    std::vector<int64_t> lengths(B);
    for (auto& l : lengths) l = len_dist(rng);
    lengths[3] = 0;  // an empty sequence is allowed

    rnnx::Plan ragged(cfg, rnnx::SequenceShape::padded(T, B, lengths));
    rnnx::Plan padded(cfg, rnnx::SequenceShape::padded(T, B));
    std::printf("rnnx %s, %d threads\n", rnnx::build_info().version, rnnx::max_threads());
    std::printf("problem   %s\nimpl      %s\n", ragged.problem_name().c_str(),
                ragged.impl_name().c_str());
    std::printf("tokens    %lld real of %lld padded (%.0f%%)\n",
                static_cast<long long>(ragged.tokens()), static_cast<long long>(T * B),
                100.0 * ragged.tokens() / (T * B));

    Buffers rb, pb;
    fill(rb.w, ragged.weights_numel(), rng, 1.0f / std::sqrt(float(cfg.hidden_size)));
    pb.w = rb.w;
    const Timing tr = time_plan(ragged, rb, rng);
    const Timing tp = time_plan(padded, pb, rng);

    // Results: the final state of the forward direction of sequence 0, and the invariant
    // that sequence 0 alone gives exactly what it gave inside the batch.
    const int64_t P = cfg.output_size(), W = 2 * P;
    rnnx::Plan alone(cfg, rnnx::SequenceShape::padded(T, 1, {lengths[0]}));
    std::vector<float> x1(alone.x_numel()), y1(alone.y_numel()), hy1(alone.h_numel());
    for (int64_t t = 0; t < T; ++t)
      std::copy_n(&rb.x[(t * B) * cfg.input_size], cfg.input_size, &x1[t * cfg.input_size]);
    rnnx::ForwardArgs f;
    f.x = x1.data();
    f.weights = rb.w.data();
    f.y = y1.data();
    f.hy = hy1.data();
    f.training = true;  // same computation as the batch's last (training) forward
    std::vector<char> reserve(alone.reserve_size());
    f.reserve = reserve.data();
    f.reserve_size = reserve.size();
    alone.forward(f);
    double max_diff = 0.0;
    for (int64_t t = 0; t < lengths[0]; ++t)
      for (int64_t j = 0; j < W; ++j)
        max_diff = std::max(max_diff, double(std::fabs(y1[t * W + j] - rb.y[(t * B) * W + j])));
    std::printf("hy[layer 1, fwd, seq 0][0:4] = %.5f %.5f %.5f %.5f\n", rb.hy[2 * B * P],
                rb.hy[2 * B * P + 1], rb.hy[2 * B * P + 2], rb.hy[2 * B * P + 3]);
    std::printf("seq 0 (length %lld) alone vs in the batch: max |diff| = %.3g\n",
                static_cast<long long>(lengths[0]), max_diff);
    std::printf("seq 3 (length 0): y row = %.1f (padding), hy = h0 = %.1f\n", rb.y[3 * W],
                rb.hy[2 * B * P + 3 * P]);
    std::printf("\n%-22s %12s %12s %8s\n", "median ms", "ragged", "padded", "ratio");
    std::printf("%-22s %12.2f %12.2f %8.2f\n", "inference forward", tr.infer_ms, tp.infer_ms,
                tr.infer_ms / tp.infer_ms);
    std::printf("%-22s %12.2f %12.2f %8.2f\n", "training fwd+bwd", tr.train_ms, tp.train_ms,
                tr.train_ms / tp.train_ms);
    std::printf("token ratio            %.2f (the cost should follow it)\n",
                double(ragged.tokens()) / double(T * B));
    return max_diff <= 1e-5 ? 0 : 1;
  } catch (const rnnx::Error& e) {
    std::fprintf(stderr, "rnnx error (%s): %s\n", rnnx::to_string(e.code()), e.what());
    return 2;
  }
}
