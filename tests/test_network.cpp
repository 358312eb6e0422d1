// rnnx::Network: one network, a batch's shape per call. Every call gives the bits of a Plan
// of the same config and shape; a new set of lengths allocates nothing with the caller's
// buffers; several threads share one network; a reserve ties a backward to its forward's
// shape; a refused shape leaves the network as it was.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

#include "alloc_counter.hpp"
#include "core/autotune_cache.hpp"
#include "core/network_core.hpp"
#include "rnnx/network.hpp"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

// A network called with one shape, answering as the plan `like` (of the same config and
// shape) for run(): the element counts are the plan's, every size and call the network's.
struct NetworkCall {
  Network& net;
  const Plan& like;
  const Config& config() const { return net.config(); }
  int64_t x_numel() const { return like.x_numel(); }
  int64_t y_numel() const { return like.y_numel(); }
  int64_t h_numel() const { return like.h_numel(); }
  int64_t c_numel() const { return like.c_numel(); }
  int64_t weights_numel() const { return net.weights_numel(); }
  size_t reserve_size() const { return net.reserve_size(like.shape()); }
  size_t forward_workspace_size(bool training) const {
    return net.forward_workspace_size(like.shape(), training);
  }
  size_t backward_workspace_size() const { return net.backward_workspace_size(like.shape()); }
  void forward(const ForwardArgs& a) { net.forward(like.shape(), a); }
  void backward(const BackwardArgs& a) { net.backward(like.shape(), a); }
};

// Batches of other lengths, sizes and layouts, as a training job's stream of batches.
std::vector<SequenceShape> ragged_shapes(int count, uint64_t seed) {
  Rng rng(seed);
  std::vector<SequenceShape> shapes;
  const LayoutKind kinds[] = {LayoutKind::time_major, LayoutKind::batch_first, LayoutKind::packed,
                              LayoutKind::packed_sorted_indices};
  for (int k = 0; k < count; ++k) {
    const int64_t T = 1 + static_cast<int64_t>(rng.uniform(0, 9));
    const int64_t B = 1 + static_cast<int64_t>(rng.uniform(0, 6));
    std::vector<int64_t> lengths(static_cast<size_t>(B));
    for (auto& len : lengths)
      len = 1 + static_cast<int64_t>(rng.uniform(0, static_cast<double>(T)));
    lengths[static_cast<size_t>(k) % lengths.size()] = T;
    // Packed without sorted_indices takes its sequences longest first.
    if (kinds[k % 4] == LayoutKind::packed) std::sort(lengths.rbegin(), lengths.rend());
    shapes.push_back(make_shape(kinds[k % 4], T, B, lengths));
  }
  return shapes;
}

// Every result element written: none left at run()'s NaN sentinel (identical bits alone would
// also hold for two runs that wrote nothing).
::testing::AssertionResult all_written(const Results& r) {
  for (const Buf* b : {&r.y, &r.hy, &r.dx, &r.dh0, &r.dw}) {
    for (int64_t i = 0; i < b->size(); ++i) {
      if (std::isnan(b->get(i)))
        return ::testing::AssertionFailure() << "element " << i << " unwritten";
    }
  }
  return ::testing::AssertionSuccess();
}

PlanOptions fixed_options(Backend backend, int threads) {
  PlanOptions o = backend_options(backend, threads);
  if (backend == Backend::cpu) o.cpu.search = "off";  // one choice, whatever the timing
  return o;
}

struct NetworkCase {
  Config config;
  Backend backend;
};

class NetworkVsPlan : public ::testing::TestWithParam<NetworkCase> {};

TEST_P(NetworkVsPlan, EveryBatchGivesThePlansBits) {
  const auto& [c, backend] = GetParam();
  const PlanOptions options = fixed_options(backend, 2);
  Network net(c, options);
  int k = 0;
  for (const SequenceShape& shape : ragged_shapes(14, 3)) {
    SCOPED_TRACE("batch " + std::to_string(k));
    Plan plan(c, shape, options);
    NetworkCall call{net, plan};
    EXPECT_EQ(net.impl_name(shape), plan.impl_name());
    EXPECT_EQ(call.forward_workspace_size(true), plan.forward_workspace_size(true));
    EXPECT_EQ(call.backward_workspace_size(), plan.backward_workspace_size());
    EXPECT_EQ(call.reserve_size(), plan.reserve_size());
    const Data d = make_data(c, geometry_of(shape).lengths, 10 + k);
    const Tensors in = make_tensors(plan, d);
    RunOptions o;
    o.backward = true;
    o.dropout_counter = static_cast<uint64_t>(k);
    o.caller_workspace = k % 2 == 0;
    const Results got = run(call, in, o);
    EXPECT_TRUE(results_identical(got, run(plan, in, o)));
    EXPECT_TRUE(all_written(got));
    RunOptions inference;
    EXPECT_TRUE(results_identical(run(call, in, inference), run(plan, in, inference)));
    ++k;
  }
  const NetworkStats stats = net.stats();
  EXPECT_GE(stats.batches, k);
  EXPECT_EQ(stats.slots, 1) << "one thread, one call at a time";
  EXPECT_EQ(stats.backends_built, 1) << "the host backends rebind to every later batch";
}

Config with(Config c, double dropout, DataType dtype) {
  c.dropout = dropout;
  c.dtype = dtype;
  return c;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, NetworkVsPlan,
    ::testing::Values(
        NetworkCase{
            with(make_config(CellType::lstm, 5, 7, 2, true, DataType::f32, 3), 0.3, DataType::f32),
            Backend::cpu},
        NetworkCase{make_config(CellType::gru, 4, 6, 2, false, DataType::f64), Backend::cpu},
        NetworkCase{make_config(CellType::rnn_relu, 3, 5, 1, true, DataType::bf16), Backend::cpu},
        NetworkCase{make_config(CellType::lstm, 4, 5, 1, false, DataType::f16), Backend::cpu},
        NetworkCase{make_config(CellType::gru, 4, 6, 2, true, DataType::f32), Backend::reference}),
    [](const ::testing::TestParamInfo<NetworkCase>& info) {
      const Config& c = info.param.config;
      return sanitize(std::string(to_string(c.cell)) + "_" + to_string(c.dtype) + "_" +
                      to_string(info.param.backend));
    });

// What a training job's stream of ragged batches costs: with the caller's workspace and
// reserve, nothing is allocated once the network has run a batch of the largest steps and
// sequences (the schedule, the row map and the buffer layout reuse the vectors they have).
TEST(Network, NewLengthsAllocateNothingWithTheCallersBuffers) {
  for (const LayoutKind kind : {LayoutKind::time_major, LayoutKind::packed_sorted_indices}) {
    for (const DataType dtype : {DataType::f32, DataType::bf16}) {
      SCOPED_TRACE(std::string(tag(kind)) + " " + to_string(dtype));
      Config c = make_config(CellType::lstm, 6, 8, 2, true, dtype, 4);
      c.dropout = 0.25;
      Network net(c, fixed_options(Backend::cpu, 2));
      constexpr int64_t T = 9, B = 6;
      Rng rng(7);
      std::vector<SequenceShape> shapes;
      for (int k = 0; k < 100; ++k) {
        std::vector<int64_t> lengths(B);
        const double low = kind == LayoutKind::time_major ? 0 : 1;  // packed: no empty one
        for (auto& len : lengths) len = static_cast<int64_t>(rng.uniform(low, T + 1));
        lengths[static_cast<size_t>(k) % B] = T - k % 3;
        if (kind == LayoutKind::packed) std::sort(lengths.rbegin(), lengths.rend());
        shapes.push_back(make_shape(kind, T, B, lengths));
      }
      // Buffers for the largest batch, then one call of it: the network's vectors take
      // their envelope, the thread pool its threads.
      const SequenceShape full = make_shape(kind, T, B, std::vector<int64_t>(B, T));
      size_t fws = 0, bws = 0, rs = 0;
      shapes.push_back(full);
      for (const SequenceShape& s : shapes) {
        fws = std::max(fws, net.forward_workspace_size(s, true));
        bws = std::max(bws, net.backward_workspace_size(s));
        rs = std::max(rs, net.reserve_size(s));
      }
      shapes.pop_back();
      const Plan like(c, full, fixed_options(Backend::cpu, 2));
      const int64_t elem = dtype_size(dtype);
      Bytes x(static_cast<size_t>(like.x_numel() * elem), 0),
          y(static_cast<size_t>(like.y_numel() * elem), 0);
      Bytes w(static_cast<size_t>(like.weights_numel() * elem), 0), dw(w.size, 0);
      Bytes dx(x.size, 0), ws(std::max(fws, bws), 0), reserve(rs, 0);
      ForwardArgs f;
      f.x = x.data();
      f.weights = w.data();
      f.y = y.data();
      f.training = true;
      f.workspace = ws.data();
      f.workspace_size = ws.size;
      f.reserve = reserve.data();
      f.reserve_size = reserve.size;
      BackwardArgs b;
      b.x = x.data();
      b.weights = w.data();
      b.dy = y.data();
      b.dx = dx.data();
      b.dweights = dw.data();
      b.workspace = ws.data();
      b.workspace_size = ws.size;
      b.reserve = reserve.data();
      b.reserve_size = reserve.size;
      net.forward(full, f);
      net.backward(full, b);
      // The caller's shape object, reused: its vectors keep their room too.
      SequenceShape shape = full;
      start_counting_allocations();
      for (const SequenceShape& s : shapes) {
        shape = s;
        net.forward(shape, f);
        net.backward(shape, b);
      }
      EXPECT_EQ(stop_counting_allocations(), 0) << "operator new calls over 100 ragged batches";
      EXPECT_EQ(net.stats().backends_built, 1);
    }
  }
}

// Threads share one network, each with its own batches; every result is the one the batch
// gives alone.
TEST(Network, ConcurrentCallsGiveEachBatchItsOwnBits) {
  const Config c = make_config(CellType::gru, 5, 6, 2, true, DataType::f32);
  const PlanOptions options = fixed_options(Backend::cpu, 1);
  const std::vector<SequenceShape> shapes = ragged_shapes(8, 11);
  std::vector<Results> alone;
  std::vector<std::unique_ptr<Plan>> plans;
  std::vector<Tensors> inputs;
  for (size_t k = 0; k < shapes.size(); ++k) {
    plans.push_back(std::make_unique<Plan>(c, shapes[k], options));
    inputs.push_back(make_tensors(*plans.back(), make_data(c, geometry_of(shapes[k]).lengths, k)));
    RunOptions o;
    o.backward = true;
    alone.push_back(run(*plans.back(), inputs.back(), o));
  }
  Network net(c, options);
  std::vector<std::vector<Results>> got(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i) {
    threads.emplace_back([&, i] {
      for (int round = 0; round < 3; ++round) {
        for (size_t k = 0; k < shapes.size(); ++k) {
          const size_t j = (k + i * 3) % shapes.size();
          NetworkCall call{net, *plans[j]};
          RunOptions o;
          o.backward = true;
          o.caller_workspace = (i + k) % 2 == 0;
          got[i].push_back(run(call, inputs[j], o));
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < got.size(); ++i) {
    for (size_t n = 0; n < got[i].size(); ++n) {
      const size_t j = (n % shapes.size() + i * 3) % shapes.size();
      EXPECT_TRUE(results_identical(got[i][n], alone[j])) << "thread " << i << " call " << n;
    }
  }
  EXPECT_LE(net.stats().slots, 4);
}

// A reserve is tied to the shape of the forward that wrote it: a backward on another set of
// lengths of the same network is refused, as a plan refuses another plan's.
TEST(Network, BackwardRefusesTheReserveOfAnotherBatch) {
  const Config c = make_config(CellType::lstm, 3, 4, 1, false, DataType::f32);
  Network net(c, fixed_options(Backend::cpu, 1));
  const SequenceShape a = SequenceShape::padded(4, 2, {4, 2});
  const SequenceShape b = SequenceShape::padded(4, 2, {2, 4});
  const Plan like(c, a, fixed_options(Backend::cpu, 1));
  std::vector<float> x(static_cast<size_t>(like.x_numel()), 0.5f),
      y(static_cast<size_t>(like.y_numel()));
  std::vector<float> w(static_cast<size_t>(like.weights_numel()), 0.1f);
  Bytes reserve(std::max(net.reserve_size(a), net.reserve_size(b)), 0);
  ForwardArgs f;
  f.x = x.data();
  f.weights = w.data();
  f.y = y.data();
  f.training = true;
  f.reserve = reserve.data();
  f.reserve_size = reserve.size;
  net.forward(a, f);
  BackwardArgs bw;
  bw.x = x.data();
  bw.weights = w.data();
  bw.dy = y.data();
  bw.reserve = reserve.data();
  bw.reserve_size = reserve.size;
  expect_error([&] { net.backward(b, bw); }, Status::invalid_argument,
               {"reserve was not written by a training forward"});
  net.backward(a, bw);  // its own batch's
}

// A shape the network refuses names the argument and the value, and the next call runs
// as if it had never come.
TEST(Network, ARefusedShapeLeavesTheNetworkAsItWas) {
  const Config c = make_config(CellType::rnn_tanh, 3, 4, 2, true, DataType::f32);
  const PlanOptions options = fixed_options(Backend::cpu, 2);
  Network net(c, options);
  const SequenceShape good = SequenceShape::padded(5, 3, {5, 1, 3});
  const Plan plan(c, good, options);
  NetworkCall call{net, plan};
  const Tensors in = make_tensors(plan, make_data(c, {5, 1, 3}, 2));
  RunOptions o;
  o.backward = true;
  const Results before = run(call, in, o);
  expect_error(
      [&] {
        net.forward_workspace_size(SequenceShape::padded(5, 3, {5, 6, 3}), true);
      },
      Status::invalid_argument, {"lengths[1] (= 6)", "max_seq_len (= 5)"});
  expect_error(
      [&] {
        net.reserve_size(SequenceShape::packed({2, 3}));
      },
      Status::invalid_argument, {"batch_sizes must be non-increasing"});
  EXPECT_TRUE(results_identical(run(call, in, o), before));
  expect_error([] { Network(make_config(CellType::lstm, 0, 4, 1, false, DataType::f32)); },
               Status::invalid_argument, {"input_size"});
}

// With the search on, the batches of one size class share the network's choice: only the
// first one of a class may search.
TEST(Network, BatchesOfOneSizeClassShareOneChoice) {
  const ScopedEnv search("RNNX_AUTOTUNE", "1");
  const ScopedEnv no_file("RNNX_AUTOTUNE_CACHE", nullptr);
  rnnx::core::autotune_clear_memory();
  const Config c = make_config(CellType::lstm, 8, 8, 1, true, DataType::f32);
  Network net(c, backend_options(Backend::cpu, 2));
  const std::string first = net.impl_name(SequenceShape::padded(40, 4, {40, 30, 20, 40}));
  for (const auto& lengths :
       std::vector<std::vector<int64_t>>{{40, 31, 19, 40}, {39, 40, 21, 29}}) {
    EXPECT_EQ(net.impl_name(SequenceShape::padded(40, 4, lengths)), first);
  }
  rnnx::core::autotune_clear_memory();
}

// The slot a call takes: its shape's, else the most recent (a backend that rebinds), else a
// new one per shape up to the idle limit, then the least recently used (one that does not).
TEST(Network, SlotChoiceKeepsAShapePerSlotWhereTheBackendCannotRebind) {
  using rnnx::core::kNewSlot;
  using rnnx::core::pick_free_slot;
  const std::vector<bool> bound = {false, true, false, true};
  auto by = [&](const std::vector<bool>& v) { return [&v](size_t k) { return bool(v[k]); }; };
  EXPECT_EQ(pick_free_slot(4, by(bound), 0, 32), 3u) << "the most recent bound to the shape";
  EXPECT_EQ(pick_free_slot(4, by(bound), 1, 32), 3u);
  const std::vector<bool> none(4, false);
  EXPECT_EQ(pick_free_slot(4, by(none), 1, 32), 3u) << "rebinds: the most recent";
  EXPECT_EQ(pick_free_slot(4, by(none), -1, 32), 3u) << "not known yet: as rebinding";
  EXPECT_EQ(pick_free_slot(4, by(none), 0, 32), kNewSlot) << "cannot rebind: a new slot";
  EXPECT_EQ(pick_free_slot(4, by(none), 0, 4), 0u) << "at the idle limit: the least recent";
  EXPECT_EQ(pick_free_slot(0, by(none), 1, 32), kNewSlot) << "none free";
}

}  // namespace
}  // namespace rnnx_test
