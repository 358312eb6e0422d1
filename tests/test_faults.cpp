// Allocation failure, injected: every allocation of a plan build in turn, and a call's own
// workspace, fail with Status::out_of_memory through the C++ and C APIs (never a crash or
// another exception), nothing leaks (the sanitizer pass runs this suite with LeakSanitizer
// on), and the plan works again once memory is back. The library has no hook of its own:
// the test allocator (alloc_counter.cpp) replaces operator new in this binary.
#include <gtest/gtest.h>

#include <typeinfo>

#include "alloc_counter.hpp"
#include "core/autotune_cache.hpp"
#include "rnnx/rnnx.h"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

// Stops the test allocator's failing when a test ends, however it ends.
struct FailingAllocations {
  explicit FailingAllocations(int64_t after) { fail_allocation_after(after); }
  ~FailingAllocations() { stop_failing_allocations(); }
};

Config bidir_lstmp() {
  Config c = make_config(CellType::lstm, 9, 14, 2, true, DataType::f32, 5);
  c.dropout = 0.2;
  return c;
}

// The plan build with its n-th allocation failing, for every n until a build makes fewer
// than n allocations: each refusal gives an rnnx::Error(out_of_memory), never another
// exception, and never a plan that pretends to be fine (unless the refused request was a
// nothrow one with a fallback: then the build must succeed).
void sweep_plan_builds(const Config& c, const SequenceShape& shape) {
  int64_t n = 0;
  for (;; ++n) {
    ASSERT_LT(n, 20000) << "the build never ran out of allocations to refuse";
    bool refused = false;
    try {
      FailingAllocations fail(n);
      Plan plan(c, shape, backend_options(Backend::cpu, 2));
      refused = allocation_refused();
    } catch (const Error& e) {
      ASSERT_EQ(e.code(), Status::out_of_memory) << "allocation " << n << ": " << e.what();
      continue;
    } catch (const std::exception& e) {
      FAIL() << "allocation " << n << " gave a " << typeid(e).name() << ": " << e.what();
    }
    if (!refused) break;  // the build made fewer than n + 1 allocations
  }
  EXPECT_GT(n, 0) << "the build allocated nothing?";
}

TEST(Faults, EveryAllocationOfAPlanBuildFailsCleanly) {
  const ScopedEnv heuristic("RNNX_AUTOTUNE", "0");
  sweep_plan_builds(bidir_lstmp(), SequenceShape::padded(6, 5, {6, 0, 3, 1, 6}));
  sweep_plan_builds(make_config(CellType::gru, 4, 7, 1, false, DataType::f64),
                    packed_shape({4, 4, 2, 1}, true));
}

// With the search on, the build also allocates the search's data and measures on it.
TEST(Faults, AllocationFailuresDuringTheSearchFailCleanly) {
  const ScopedEnv search("RNNX_AUTOTUNE", "1");
  const ScopedEnv no_file("RNNX_AUTOTUNE_CACHE", nullptr);
  const Config c = bidir_lstmp();
  const SequenceShape shape = SequenceShape::padded(6, 5, {6, 0, 3, 1, 6});
  const PlanOptions options = backend_options(Backend::cpu, 2);
  for (int64_t n : {0, 1, 5, 20, 60, 150, 400}) {
    rnnx::core::autotune_clear_memory();
    try {
      FailingAllocations fail(n);
      Plan plan(c, shape, options);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Status::out_of_memory) << e.what();
    }
  }
  rnnx::core::autotune_clear_memory();
}

// A call whose own workspace cannot be allocated fails with out_of_memory, writes no
// valid reserve, and the plan then runs as if nothing had happened.
TEST(Faults, ExecutionWithoutMemoryFailsAndThePlanStaysUsable) {
  const Config c = bidir_lstmp();
  const SequenceShape shape = SequenceShape::padded(6, 5, {6, 0, 3, 1, 6});
  Plan plan(c, shape, backend_options(Backend::cpu, 2));
  const Data d = make_data(c, geometry_of(shape).lengths, 1);
  const Tensors in = make_tensors(plan, d);
  RunOptions training;
  training.backward = true;
  std::vector<float> y(static_cast<size_t>(plan.y_numel()));
  Bytes reserve(plan.reserve_size());
  ForwardArgs a;
  a.x = in.x.data();
  a.weights = in.w.data();
  a.y = y.data();
  a.training = true;
  a.reserve = reserve.data();
  a.reserve_size = reserve.size;
  try {
    FailingAllocations fail(0);
    plan.forward(a);
    FAIL() << "the forward allocated its workspace although allocations fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Status::out_of_memory) << e.what();
    EXPECT_NE(std::string(e.what()).find("forward: workspace"), std::string::npos) << e.what();
  }
  // The failed forward left no reserve that a backward would accept.
  std::vector<float> dw(static_cast<size_t>(plan.weights_numel()));
  BackwardArgs b;
  b.x = in.x.data();
  b.weights = in.w.data();
  b.dweights = dw.data();
  b.reserve = reserve.data();
  b.reserve_size = reserve.size;
  EXPECT_THROW(plan.backward(b), Error);
  Plan fresh(c, shape, backend_options(Backend::cpu, 2));
  EXPECT_TRUE(results_identical(run(plan, in, training), run(fresh, in, training)));

  // The pool's own bookkeeping refused (the list of free buffers cannot grow when the call
  // returns its workspace): the call still succeeds and the buffer is freed, not kept, so
  // the next call without memory for a workspace fails.
  Plan bookkeeping(c, shape, backend_options(Backend::cpu, 2));
  a.training = false;
  a.reserve = nullptr;
  a.reserve_size = 0;
  {
    FailingAllocations fail(1);  // 0: the workspace, 1: the free list's growth
    EXPECT_NO_THROW(bookkeeping.forward(a));
    EXPECT_TRUE(allocation_refused());
  }
  FailingAllocations no_memory(0);
  EXPECT_THROW(bookkeeping.forward(a), Error) << "the refused buffer was kept";
}

TEST(Faults, CApiReportsOutOfMemory) {
  rnnx_config_t config = nullptr;
  ASSERT_EQ(rnnx_config_create(&config), RNNX_STATUS_SUCCESS);
  rnnx_config_set_cell(config, RNNX_CELL_GRU);
  rnnx_config_set_input_size(config, 5);
  rnnx_config_set_hidden_size(config, 8);
  const int64_t lengths[] = {3, 1, 4};
  const rnnx_sequence_desc_t shape = rnnx_sequence_desc_padded(4, 3, lengths, 0);
  int failures = 0;
  for (int64_t n = 0; n < 20000; ++n) {
    rnnx_plan_t plan = nullptr;
    rnnx_status_t status;
    {
      FailingAllocations fail(n);
      status = rnnx_plan_create(&plan, config, &shape, RNNX_BACKEND_CPU, 1);
    }
    if (status == RNNX_STATUS_SUCCESS) {
      rnnx_plan_destroy(plan);
      break;
    }
    ++failures;
    ASSERT_EQ(status, RNNX_STATUS_OUT_OF_MEMORY) << rnnx_get_last_error_message();
    EXPECT_EQ(plan, nullptr);
  }
  EXPECT_GT(failures, 0);
  rnnx_config_destroy(config);
}

// A call's own workspace refused: out_of_memory naming it and its size; a plan reuses its
// workspaces, so once it has one, later calls need no allocation for it.
TEST(Faults, ACallsWorkspaceRefusedIsOutOfMemoryAndReused) {
  const Config c = make_config(CellType::rnn_tanh, 3, 4, 1, false, DataType::f32);
  const SequenceShape shape = SequenceShape::padded(3, 2);
  Plan plan(c, shape, backend_options(Backend::cpu, 1));
  const Tensors in = make_tensors(plan, make_data(c, {3, 3}, 2));
  std::vector<float> y(static_cast<size_t>(plan.y_numel()));
  ForwardArgs a;
  a.x = in.x.data();
  a.weights = in.w.data();
  a.y = y.data();
  try {
    FailingAllocations fail(0);  // the first allocation of the call: its workspace
    plan.forward(a);
    FAIL() << "the workspace was allocated although allocations fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Status::out_of_memory);
    EXPECT_STREQ(e.what(), ("forward: workspace: cannot allocate " +
                            std::to_string(plan.forward_workspace_size(false)) + " bytes")
                               .c_str());
  }
  plan.forward(a);  // memory is back: the plan gets and keeps its workspace
  start_counting_allocations();
  plan.forward(a);
  plan.forward(a);
  EXPECT_EQ(stop_counting_allocations(), 0) << "a plan's later calls reuse its workspace";
}

// Infinities and NaN in the input, the initial state and the weights: forward and backward
// finish (no hang, no crash) and put NaN and infinities where the reference does, every
// other element within the usual bound (IEEE arithmetic: docs/math.md, "NaN").
TEST(Faults, NonFiniteInputsAndWeightsMatchTheReference) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<Config> configs;
  Config lstm = make_config(CellType::lstm, 5, 6, 2, true, DataType::f32, 3);
  lstm.cell_clip = {true, -2.0, 2.0};
  lstm.clip_nan = NanPolicy::replace;
  configs.push_back(lstm);
  configs.push_back(make_config(CellType::gru, 5, 6, 1, false, DataType::f32));
  configs.push_back(make_config(CellType::rnn_relu, 5, 6, 1, true, DataType::f64));
  for (const Config& c : configs) {
    for (bool nan_weight : {false, true}) {
      SCOPED_TRACE(short_name(c) + (nan_weight ? " NaN weight" : " infinite inputs"));
      const SequenceShape shape = SequenceShape::padded(5, 4, {5, 2, 0, 4});
      Plan cpu(c, shape, backend_options(Backend::cpu, 2));
      Plan ref(c, shape, backend_options(Backend::reference));
      Data d = make_data(c, geometry_of(shape).lengths, 8);
      if (nan_weight) {
        // The last bias of the last layer's last direction: one cell turns NaN, the rest
        // of the network stays finite.
        d.w.back() = std::numeric_limits<double>::quiet_NaN();
      } else {
        d.x[0][2 * c.input_size + 1] = inf;  // sequence 0, t = 2
        d.x[3][1] = -inf;                    // sequence 3, t = 0
        d.h0[c.output_size() + 2] = -inf;    // layer 0, sequence 1
      }
      RunOptions o;
      o.backward = true;
      const Results got = run(cpu, make_tensors(cpu, d), o);
      const Results want = run(ref, make_tensors(ref, d), o);
      const double tf = tolerance(c, 5, 4, false), tb = tolerance(c, 5, 4, true);
      int64_t finite = 0;
      for_each_result(got, want, [&](const char* name, const Buf& a, const Buf& b, bool backward) {
        if (!a.present() && !b.present()) return;
        EXPECT_TRUE(near(name, a, b, backward ? tb : tf));
        for (int64_t i = 0; i < b.size(); ++i) finite += std::isfinite(b.get(i));
      });
      EXPECT_GT(finite, 0) << "the test should leave finite results to compare";
    }
  }
}

}  // namespace
}  // namespace rnnx_test
