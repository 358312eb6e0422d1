// The cuda backend's host side on the fake GPU (fake_device.hpp), which CI has: ragged
// training steps through a Network, with the calls each step makes counted (allocations,
// handle and descriptor creations, waits), no leak once the network is gone, and every call
// that returns a status made to fail in turn, which must surface as an rnnx::Error naming
// it (a release, in a destructor: reported on stderr naming it, and counted). On cuDNN
// (LSTM) and on rnnx's own kernels (the original GRU, cuBLAS's GEMMs).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "cuda/call_table.hpp"
#include "cuda/cuda_api.hpp"
#include "fake_device.hpp"
#include "rnnx/network.hpp"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

constexpr int64_t kT = 12, kB = 6, kI = 8, kH = 16;

Config config_for(const std::string& path) {
  Config c = make_config(path == "cudnn" ? CellType::lstm : CellType::gru, kI, kH, 2, true,
                         DataType::f32, 0, path == "cudnn");
  return c;
}

PlanOptions training_options() {
  PlanOptions o = backend_options(Backend::cuda);
  o.purpose = PlanPurpose::training;
  return o;
}

// Device buffers for every call of the steps, from the fake's own memory (so its copies are
// checked against them), made before the steps are counted.
struct Buffers {
  std::vector<void*> all;
  void* take(size_t bytes) {
    void* p = nullptr;
    if (cuda::calls().cudaMalloc(&p, bytes == 0 ? 1 : bytes) != cudaSuccess) throw std::bad_alloc();
    all.push_back(p);
    return p;
  }
  ~Buffers() {
    for (void* p : all) cuda::calls().cudaFree(p);
  }
};

std::vector<SequenceShape> ragged_shapes(int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> len(0, kT);
  std::vector<SequenceShape> shapes;
  for (int s = 0; s < count; ++s) {
    std::vector<int64_t> lengths(kB);
    for (auto& l : lengths) l = len(rng);
    lengths[s % kB] = kT;  // every batch as long as the padded tensors
    shapes.push_back(SequenceShape::padded(kT, kB, lengths));
  }
  return shapes;
}

// One training step (forward with the reserve, then backward) on the caller's buffers.
struct Step {
  void *x, *y, *w, *dy, *dx, *dw, *ws, *reserve;
  size_t ws_size, reserve_size;
  void run(Network& net, const SequenceShape& shape, void* stream = nullptr) const {
    ForwardArgs f;
    f.stream = stream;
    f.x = x, f.y = y, f.weights = w, f.training = true;
    f.workspace = ws, f.workspace_size = net.forward_workspace_size(shape, true);
    f.reserve = reserve, f.reserve_size = net.reserve_size(shape);
    net.forward(shape, f);
    BackwardArgs b;
    b.stream = stream;
    b.x = x, b.weights = w, b.dy = dy, b.dx = dx, b.dweights = dw;
    b.workspace = ws, b.workspace_size = net.backward_workspace_size(shape);
    b.reserve = reserve, b.reserve_size = net.reserve_size(shape);
    net.backward(shape, b);
  }
};

Step make_step(Buffers& bufs, const Config& c, const std::vector<SequenceShape>& shapes) {
  // Sizes from a network of its own: binding shapes on the measured one would warm it.
  Network sizer(c, training_options());
  size_t ws = 0, reserve = 0;
  for (const auto& s : shapes) {
    const BatchInfo i = sizer.describe(s);
    ws = std::max({ws, i.forward_workspace[1], i.backward_workspace});
    reserve = std::max(reserve, i.reserve);
  }
  const size_t f = sizeof(float), D = c.num_directions();
  Step st{};
  st.x = bufs.take(kT * kB * kI * f);
  st.y = bufs.take(kT * kB * D * kH * f);
  st.w = bufs.take(static_cast<size_t>(sizer.weights_numel()) * f);
  st.dy = bufs.take(kT * kB * D * kH * f);
  st.dx = bufs.take(kT * kB * kI * f);
  st.dw = bufs.take(static_cast<size_t>(sizer.weights_numel()) * f);
  st.ws = bufs.take(ws), st.ws_size = ws;
  st.reserve = bufs.take(reserve), st.reserve_size = reserve;
  return st;
}

const char* const kWatched[] = {"cudaMalloc",
                                "cudaFree",
                                "cudnnCreate",
                                "cudnnCreateRNNDescriptor",
                                "cudnnCreateRNNDataDescriptor",
                                "cudnnCreateTensorDescriptor",
                                "cublasCreate",
                                "cudaStreamCreateWithFlags",
                                "cudaEventCreate",
                                "cudaStreamSynchronize",
                                "cudaEventSynchronize",
                                "cudaEventQuery",
                                "cudaStreamWaitEvent",
                                "cudaMallocHost",
                                "cudaFreeHost",
                                "cudaEventCreateWithFlags",
                                "cudaMemcpyAsync",
                                "cudnnRNNForward",
                                "kernel:cell"};

class FakeDevicePath : public ::testing::TestWithParam<std::string> {};

// 100 ragged training steps: the calls per step printed (issue 47's figures), a repeated
// shape costs no allocation, creation or wait, nothing leaks, nothing is misused.
TEST_P(FakeDevicePath, RaggedTrainingStepsCountedAndLeakFree) {
  const ScopedEnv no_search("RNNX_AUTOTUNE", "0");
  FakeDevice fake;
  const Config c = config_for(GetParam());
  const std::vector<SequenceShape> shapes = ragged_shapes(100, 7);
  Buffers bufs;
  const Step st = make_step(bufs, c, shapes);
  const int64_t caller_allocations = fake.live_allocations();
  {
    Network net(c, training_options());
    fake.clear_log();
    std::map<std::string, int64_t> first, rest;
    for (size_t s = 0; s < shapes.size(); ++s) {
      st.run(net, shapes[s]);
      for (const auto& [name, n] : fake.counts()) (s == 0 ? first : rest)[name] += n;
      fake.clear_log();
    }
    std::printf("[   NOTE   ] %s, %s: calls in the first step / per later step (mean of 99)\n",
                GetParam().c_str(), net.impl_name(shapes[0]).c_str());
    for (const char* name : kWatched) {
      std::printf("[   NOTE   ]   %-30s %6lld / %8.2f\n", name, static_cast<long long>(first[name]),
                  static_cast<double>(rest[name]) / 99.0);
    }
    // A new batch's maps go from pinned memory on the call's stream: no host wait per step;
    // its buffers grow geometrically from 32 KiB, so these small batches fit the first ones;
    // handles, streams, events and cuDNN's descriptors are the network's: after the first
    // step, nothing is allocated, created or waited for in 99 ragged steps.
    for (const char* name :
         {"cudaStreamSynchronize", "cudaEventSynchronize", "cudaMalloc", "cudaFree",
          "cudaMallocHost", "cudaFreeHost", "cudnnCreate", "cudnnCreateRNNDescriptor",
          "cudnnCreateRNNDataDescriptor", "cudnnCreateTensorDescriptor",
          "cudnnCreateDropoutDescriptor", "cublasCreate", "cudaStreamCreateWithFlags",
          "cudaEventCreate", "cudaEventCreateWithFlags"}) {
      EXPECT_EQ(rest[name], 0) << name << " in 99 ragged steps";
    }
    // The same shape again: its batch is bound, so nothing is allocated, created or waited
    // for (the caller gives workspace and reserve).
    st.run(net, shapes.back());
    fake.clear_log();
    st.run(net, shapes.back());
    const auto again = fake.counts();
    for (const char* name : {"cudaMalloc", "cudaFree", "cudnnCreate", "cudaStreamCreateWithFlags",
                             "cudaEventCreate", "cudaStreamSynchronize", "cublasCreate"}) {
      EXPECT_EQ(again.count(name) ? again.at(name) : 0, 0) << name << " on a repeated shape";
    }
  }
  EXPECT_EQ(fake.live_allocations(), caller_allocations) << "device memory leaked";
  EXPECT_EQ(fake.live_objects(), 0) << "handles, streams, events or descriptors leaked";
  EXPECT_TRUE(fake.misuse().empty()) << fake.misuse().front();
}

// Every call that returns a status, made to fail in turn during a network's first training
// step (its construction, binding, forward and backward, and its destruction): the step
// throws rnnx::Error naming the call; a release (cudaFree, a destroyer) runs in a destructor,
// so its failure is counted and reported on stderr naming it (once per name) instead; and
// nothing leaks.
TEST_P(FakeDevicePath, EveryFailingCallIsReportedByName) {
  const ScopedEnv no_search("RNNX_AUTOTUNE", "0");
  FakeDevice fake;
  const Config c = config_for(GetParam());
  const std::vector<SequenceShape> shapes = ragged_shapes(1, 11);
  Buffers bufs;
  const Step st = make_step(bufs, c, shapes);
  const int64_t caller_allocations = fake.live_allocations();
  fake.clear_log();
  {
    Network net(c, training_options());
    st.run(net, shapes[0]);
  }
  const std::vector<std::string> calls = fake.log();
  int64_t tried = 0, releases = 0;
  // Release names whose one stderr line (per process) a test has seen.
  static std::set<std::string> reported;
  for (size_t k = 0; k < calls.size(); ++k) {
    if (!returns_checked_status(calls[k])) continue;
    ++tried;
    fake.clear_log();
    fake.fail_at(static_cast<int64_t>(k));
    const int64_t failures = cuda::release_failures();
    const bool release = is_release(calls[k]);
    testing::internal::CaptureStderr();
    try {
      {
        Network net(c, training_options());
        st.run(net, shapes[0]);
      }
      const std::string err = testing::internal::GetCapturedStderr();
      if (!release) {
        ADD_FAILURE() << "call " << k << " (" << calls[k] << ") failed and nothing was reported";
      } else {
        ++releases;
        EXPECT_EQ(cuda::release_failures(), failures + 1)
            << "call " << k << " (" << calls[k] << ")";
        if (reported.insert(calls[k]).second) {
          EXPECT_NE(err.find(calls[k]), std::string::npos)
              << "call " << k << " (" << calls[k] << "): stderr says " << err;
        }
      }
    } catch (const Error& e) {
      testing::internal::GetCapturedStderr();
      const std::string what = e.what();
      EXPECT_FALSE(release) << "call " << k << " (" << calls[k] << ") is a release: " << what;
      const bool named =
          what.find(calls[k]) != std::string::npos ||
          (calls[k] == "cudaGetDeviceCount" && what.find("no CUDA device") != std::string::npos);
      EXPECT_TRUE(named) << "call " << k << " (" << calls[k] << "): " << what;
    }
    fake.fail_at(-1);
    ASSERT_EQ(fake.log().size() > k ? fake.log()[k] : "", calls[k])
        << "the calls' order changed between runs";
  }
  std::printf(
      "[   NOTE   ] %s: %zu calls in a first training step, %lld with a status, each "
      "made to fail (%lld releases)\n",
      GetParam().c_str(), calls.size(), static_cast<long long>(tried),
      static_cast<long long>(releases));
  EXPECT_GT(tried, 20);
  EXPECT_GT(releases, 2);
  EXPECT_EQ(fake.live_allocations(), caller_allocations) << "device memory leaked on a failure";
  EXPECT_EQ(fake.live_objects(), 0) << "handles or descriptors leaked on a failure";
  EXPECT_TRUE(fake.misuse().empty()) << fake.misuse().front();
}

// A new batch's maps overwrite the ones the previous batch's kernels read: the copy is on
// the call's stream (ordered after that work when the stream is the same), and a call on
// another stream first waits, on the device, for what the previous call queued.
TEST_P(FakeDevicePath, NewMapsAreOrderedAfterThePreviousCallsWork) {
  const ScopedEnv no_search("RNNX_AUTOTUNE", "0");
  FakeDevice fake;
  const Config c = config_for(GetParam());
  const std::vector<SequenceShape> shapes = ragged_shapes(4, 5);
  Buffers bufs;
  const Step st = make_step(bufs, c, shapes);
  cudaStream_t a = nullptr, b = nullptr;
  ASSERT_EQ(cuda::calls().cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cuda::calls().cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
  {
    Network net(c, training_options());
    st.run(net, shapes[0], a);
    st.run(net, shapes[1], a);
    fake.clear_log();
    st.run(net, shapes[2], a);  // same stream: stream order suffices
    EXPECT_EQ(fake.counts()["cudaStreamWaitEvent"], 0);
    fake.clear_log();
    st.run(net, shapes[3], b);  // another stream: waits for a's work first
    const std::vector<std::string> log = fake.log();
    const auto at = [&](const std::string& name) {
      return std::find(log.begin(), log.end(), name) - log.begin();
    };
    const auto work = std::min(at("cudnnRNNForward"), at("kernel:cell"));
    EXPECT_EQ(fake.counts()["cudaStreamWaitEvent"], 1);
    EXPECT_LT(at("cudaStreamWaitEvent"), work) << "the wait comes after the step's work";
    EXPECT_EQ(fake.counts()["cudaStreamSynchronize"] + fake.counts()["cudaEventSynchronize"], 0);
    // A device two batches behind: the staging buffer about to be written again is still
    // being copied from, so the host waits for that copy, and for nothing else.
    fake.events_pending(true);
    fake.clear_log();
    st.run(net, shapes[0], b);
    EXPECT_EQ(fake.counts()["cudaEventSynchronize"], 1);
    EXPECT_EQ(fake.counts()["cudaStreamSynchronize"], 0);
    fake.events_pending(false);
  }
  cuda::calls().cudaStreamDestroy(a);
  cuda::calls().cudaStreamDestroy(b);
  EXPECT_EQ(fake.live_objects(), 0);
  EXPECT_TRUE(fake.misuse().empty()) << fake.misuse().front();
}

// A caller's workspace and reserve must be 256-byte aligned on the cuda backend (cuDNN
// carves 256-aligned spaces from them): one that is not is refused before any work, naming
// the buffer, the alignment and the backend; aligned ones run.
TEST_P(FakeDevicePath, CallersBuffersMustBe256AlignedAndSaySo) {
  const ScopedEnv no_search("RNNX_AUTOTUNE", "0");
  FakeDevice fake;
  const Config c = config_for(GetParam());
  const std::vector<SequenceShape> shapes = ragged_shapes(1, 3);
  Buffers bufs;
  Step st = make_step(bufs, c, shapes);
  Network net(c, training_options());
  EXPECT_NO_THROW(st.run(net, shapes[0]));
  {
    Buffers more;  // room for the offset, so that the misaligned one still holds the size
    Step off = st;
    off.ws = static_cast<char*>(more.take(st.ws_size + 256)) + 64;
    expect_error([&] { off.run(net, shapes[0]); }, Status::invalid_argument,
                 {"workspace", "aligned to 256 bytes on backend cuda"});
    off = st;
    off.reserve = static_cast<char*>(more.take(st.reserve_size + 256)) + 64;
    expect_error([&] { off.run(net, shapes[0]); }, Status::invalid_argument,
                 {"reserve", "aligned to 256 bytes on backend cuda"});
  }
  EXPECT_NO_THROW(st.run(net, shapes[0]));
  EXPECT_TRUE(fake.misuse().empty()) << fake.misuse().front();
}

// ---- Kept weights (kept_cudnn_weights.hpp) ---------------------------------------------

// An inference network on cuDNN and the buffers of its calls: one shape, the caller's weights,
// a workspace; `forward` runs one call with a weights version on a stream.
struct KeptSetup {
  Config config;
  SequenceShape shape = SequenceShape::padded(kT, kB, std::vector<int64_t>(kB, kT));
  Buffers bufs;
  void *x = nullptr, *y = nullptr, *w = nullptr, *ws = nullptr;
  size_t ws_size = 0;
  explicit KeptSetup(const Config& c) : config(c) {
    Network sizer(c, backend_options(Backend::cuda));
    ws_size = sizer.describe(shape).forward_workspace[0];
    const size_t f = sizeof(float);
    x = bufs.take(kT * kB * kI * f);
    y = bufs.take(kT * kB * c.num_directions() * kH * f);
    w = bufs.take(static_cast<size_t>(sizer.weights_numel()) * f);
    ws = bufs.take(ws_size);
  }
  void forward(Network& net, uint64_t version, void* stream = nullptr,
               const void* weights = nullptr) const {
    ForwardArgs f;
    f.x = x, f.y = y, f.weights = weights ? weights : w;
    f.workspace = ws, f.workspace_size = ws_size, f.stream = stream;
    f.weights_version = version;
    net.forward(shape, f);
  }
  bool in_workspace(const void* p) const {
    const auto at = static_cast<const char*>(p), base = static_cast<const char*>(ws);
    return at >= base && at < base + ws_size;
  }
};

Config kept_config(bool per_layer) {
  Config c = config_for("cudnn");
  if (per_layer) c.dropout = 0.25;  // one cuDNN RNN per layer: two spaces in a kept copy
  return c;
}

class FakeDeviceKeptWeights : public ::testing::TestWithParam<bool> {};

// The first call of a (weights, version) pair converts into its workspace, the second into a
// device buffer the network keeps, and every later call gives cuDNN that buffer: no
// conversion, allocation, wait or creation, one event recorded. Version 0 converts every
// time, and so does another version of the same weights.
TEST_P(FakeDeviceKeptWeights, SecondCallKeepsACopyLaterCallsReadIt) {
  const ScopedEnv no_search("RNNX_AUTOTUNE", "0");
  FakeDevice fake;
  const KeptSetup k(kept_config(GetParam()));
  const int64_t caller_allocations = fake.live_allocations();
  {
    Network net(k.config, backend_options(Backend::cuda));
    const size_t groups = GetParam() ? 2 : 1;
    k.forward(net, 0);  // binds the batch
    for (int call = 0; call < 3; ++call) {
      fake.clear_log();
      k.forward(net, 0);
      EXPECT_EQ(fake.counts()["kernel:weights_to_cudnn"], static_cast<int64_t>(groups));
      for (const void* p : fake.weight_spaces()) EXPECT_TRUE(k.in_workspace(p));
    }
    EXPECT_EQ(net.stats().kept_weights_bytes, 0u);
    fake.clear_log();
    k.forward(net, 7);  // the pair's first call: as without a version
    EXPECT_EQ(fake.counts()["kernel:weights_to_cudnn"], static_cast<int64_t>(groups));
    EXPECT_EQ(fake.counts()["cudaMalloc"], 0);
    for (const void* p : fake.weight_spaces()) EXPECT_TRUE(k.in_workspace(p));
    fake.clear_log();
    k.forward(net, 7);  // the second: converted once more, into the kept buffer
    EXPECT_EQ(fake.counts()["kernel:weights_to_cudnn"], static_cast<int64_t>(groups));
    EXPECT_EQ(fake.counts()["cudaMalloc"], 1);
    const std::vector<const void*> kept = fake.weight_spaces();
    ASSERT_EQ(kept.size(), groups);
    for (const void* p : kept) EXPECT_FALSE(k.in_workspace(p));
    if (groups == 2) {
      EXPECT_NE(kept[0], kept[1]);
    }
    EXPECT_GT(net.stats().kept_weights_bytes, 0u);
    for (int call = 0; call < 5; ++call) {
      fake.clear_log();
      k.forward(net, 7);
      auto n = fake.counts();
      EXPECT_EQ(n["kernel:weights_to_cudnn"], 0) << "call " << call;
      EXPECT_EQ(fake.weight_spaces(), kept) << "call " << call;
      for (const char* name :
           {"cudaMalloc", "cudaFree", "cudaStreamSynchronize", "cudaEventSynchronize",
            "cudaEventCreateWithFlags", "cudaStreamWaitEvent", "cudaEventQuery"}) {
        EXPECT_EQ(n[name], 0) << name << ", call " << call;
      }
      EXPECT_EQ(n["cudaEventRecord"], 1) << "the call's read of the copy";
    }
    // Another version of the same weights (they changed): converted at the call again.
    fake.clear_log();
    k.forward(net, 8);
    EXPECT_EQ(fake.counts()["kernel:weights_to_cudnn"], static_cast<int64_t>(groups));
    for (const void* p : fake.weight_spaces()) EXPECT_TRUE(k.in_workspace(p));
  }
  EXPECT_EQ(fake.live_allocations(), caller_allocations) << "a kept copy outlived its network";
  EXPECT_EQ(fake.live_objects(), 0) << "events leaked";
  EXPECT_TRUE(fake.misuse().empty()) << fake.misuse().front();
}

// A network keeps four pairs; a fifth pair's copy goes into the least recently used buffer
// (no allocation), only once nothing may still read it: with the device behind (a read
// pending, on any stream) the call converts into its workspace, and the next call after the
// device caught up makes the copy there. A stream other than the maker's waits for the
// making on the device until a query sees it complete, then never again.
TEST_P(FakeDeviceKeptWeights, ABufferIsRewrittenOnlyWhenNoReadMayBePending) {
  const ScopedEnv no_search("RNNX_AUTOTUNE", "0");
  FakeDevice fake;
  const KeptSetup k(kept_config(GetParam()));
  const int64_t groups = GetParam() ? 2 : 1;
  cudaStream_t a = nullptr, b = nullptr;
  ASSERT_EQ(cuda::calls().cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cuda::calls().cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
  {
    Network net(k.config, backend_options(Backend::cuda));
    std::set<const void*> buffers;
    for (uint64_t v = 1; v <= 4; ++v) {
      k.forward(net, v, a);
      fake.clear_log();
      k.forward(net, v, a);
      buffers.insert(fake.weight_spaces().front());
    }
    EXPECT_EQ(buffers.size(), 4u);
    const size_t four = net.stats().kept_weights_bytes;
    // Pair 5, the device behind: pair 1's buffer may still be read, even on the same stream.
    fake.events_pending(true);
    k.forward(net, 5, a);
    for (int call = 0; call < 2; ++call) {
      fake.clear_log();
      k.forward(net, 5, a);
      EXPECT_EQ(fake.counts()["kernel:weights_to_cudnn"], groups) << "call " << call;
      for (const void* p : fake.weight_spaces()) EXPECT_TRUE(k.in_workspace(p)) << "rewritten";
      EXPECT_EQ(fake.counts()["cudaEventSynchronize"] + fake.counts()["cudaStreamSynchronize"], 0);
    }
    // Caught up: the copy is made in pair 1's buffer.
    fake.events_pending(false);
    fake.clear_log();
    k.forward(net, 5, a);
    EXPECT_EQ(fake.counts()["cudaMalloc"], 0);
    EXPECT_EQ(fake.counts()["cudaFree"], 0);
    ASSERT_EQ(fake.weight_spaces().size(), static_cast<size_t>(groups));
    EXPECT_TRUE(buffers.count(fake.weight_spaces().front())) << "not a kept buffer";
    EXPECT_EQ(net.stats().kept_weights_bytes, four);
    // Read on b while the making may be running: b waits for it on the device, each time
    // until a query sees it complete.
    fake.events_pending(true);
    for (int call = 0; call < 2; ++call) {
      fake.clear_log();
      k.forward(net, 5, b);
      EXPECT_EQ(fake.counts()["cudaStreamWaitEvent"], 1) << "call " << call;
      EXPECT_EQ(fake.counts()["kernel:weights_to_cudnn"], 0);
    }
    fake.events_pending(false);
    fake.clear_log();
    k.forward(net, 5, b);  // the query sees the making complete
    EXPECT_EQ(fake.counts()["cudaStreamWaitEvent"], 0);
    EXPECT_EQ(fake.counts()["cudaEventQuery"], 1);
    fake.clear_log();
    k.forward(net, 5, b);
    EXPECT_EQ(fake.counts()["cudaStreamWaitEvent"] + fake.counts()["cudaEventQuery"], 0);
  }
  cuda::calls().cudaStreamDestroy(a);
  cuda::calls().cudaStreamDestroy(b);
  EXPECT_EQ(fake.live_objects(), 0);
  EXPECT_TRUE(fake.misuse().empty()) << fake.misuse().front();
}

// The per-thread default stream is one handle for a stream per thread: a copy made on one
// thread's is waited for by another thread's, as by any other stream (streams are told apart
// by the runtime's id, not the handle).
TEST(FakeDeviceKeptWeightsKey, PerThreadDefaultStreamsAreStreamsOfTheirOwn) {
  const ScopedEnv no_search("RNNX_AUTOTUNE", "0");
  FakeDevice fake;
  const KeptSetup k(kept_config(false));
  Network net(k.config, backend_options(Backend::cuda));
  k.forward(net, 2, cudaStreamPerThread);
  k.forward(net, 2, cudaStreamPerThread);  // made on this thread's stream
  fake.events_pending(true);
  fake.clear_log();
  k.forward(net, 2, cudaStreamPerThread);  // the maker's own stream: ordered by it
  EXPECT_EQ(fake.counts()["cudaStreamWaitEvent"], 0);
  fake.clear_log();
  std::thread([&] { k.forward(net, 2, cudaStreamPerThread); }).join();
  EXPECT_EQ(fake.counts()["cudaStreamWaitEvent"], 1) << "another thread's stream must wait";
  EXPECT_EQ(fake.counts()["kernel:weights_to_cudnn"], 0);
  fake.events_pending(false);
  EXPECT_TRUE(fake.misuse().empty()) << fake.misuse().front();
}

// A call on a capturing stream (a CUDA graph) neither makes nor reads a kept copy: a replay
// would read the buffer long after, whatever became of it. It converts, as without a version.
TEST(FakeDeviceKeptWeightsKey, CapturedCallsConvertAsWithoutAVersion) {
  const ScopedEnv no_search("RNNX_AUTOTUNE", "0");
  FakeDevice fake;
  const KeptSetup k(kept_config(false));
  Network net(k.config, backend_options(Backend::cuda));
  k.forward(net, 0);  // binds the batch (its maps' upload) before the capture
  fake.capturing(true);
  for (int call = 0; call < 3; ++call) {
    fake.clear_log();
    k.forward(net, 4);
    EXPECT_EQ(fake.counts()["kernel:weights_to_cudnn"], 1) << "call " << call;
    EXPECT_EQ(fake.counts()["cudaMalloc"] + fake.counts()["cudaEventRecord"], 0);
    for (const void* p : fake.weight_spaces()) EXPECT_TRUE(k.in_workspace(p));
  }
  EXPECT_EQ(net.stats().kept_weights_bytes, 0u);
  fake.capturing(false);
  k.forward(net, 4);
  k.forward(net, 4);  // made
  fake.capturing(true);
  fake.clear_log();
  k.forward(net, 4);
  EXPECT_EQ(fake.counts()["kernel:weights_to_cudnn"], 1) << "a captured call read the copy";
  for (const void* p : fake.weight_spaces()) EXPECT_TRUE(k.in_workspace(p));
  fake.capturing(false);
  EXPECT_TRUE(fake.misuse().empty()) << fake.misuse().front();
}

// Other weights at the same version are another pair: they do not read the first pair's
// copy. (Another layout, a backend of another algorithm or math, is another pair by the key's
// construction: kept_layout_ in cuda_backend.cpp.)
TEST(FakeDeviceKeptWeightsKey, WeightsAddressAndVersionBothName) {
  const ScopedEnv no_search("RNNX_AUTOTUNE", "0");
  FakeDevice fake;
  KeptSetup k(kept_config(false));
  void* other = k.bufs.take(
      static_cast<size_t>(Network(k.config, backend_options(Backend::cuda)).weights_numel()) *
      sizeof(float));
  Network net(k.config, backend_options(Backend::cuda));
  k.forward(net, 3);
  k.forward(net, 3);
  fake.clear_log();
  k.forward(net, 3);
  const std::vector<const void*> kept = fake.weight_spaces();
  fake.clear_log();
  k.forward(net, 3, nullptr, other);  // other weights, the same number
  EXPECT_EQ(fake.counts()["kernel:weights_to_cudnn"], 1);
  EXPECT_NE(fake.weight_spaces(), kept);
  fake.clear_log();
  k.forward(net, 3, nullptr, other);
  EXPECT_EQ(fake.counts()["kernel:weights_to_cudnn"], 1);  // its own copy, made now
  EXPECT_NE(fake.weight_spaces(), kept);
  fake.clear_log();
  k.forward(net, 3);
  EXPECT_EQ(fake.counts()["kernel:weights_to_cudnn"], 0);
  EXPECT_EQ(fake.weight_spaces(), kept);
  EXPECT_TRUE(fake.misuse().empty()) << fake.misuse().front();
}

// Every call with a status of a kept copy's making and use, made to fail in turn: the call
// throws naming it, except the stream's probes (cudaStreamIsCapturing, cudaStreamGetId) and
// the copy's allocation, whose failure makes the call convert as without a version (an
// optional copy never fails a call that would run without it); either way the network works
// afterwards and makes or reads the copy again, and nothing leaks.
TEST(FakeDeviceKeptWeightsKey, FailingCallsAreNamedAndLeaveItWorking) {
  const ScopedEnv no_search("RNNX_AUTOTUNE", "0");
  FakeDevice fake;
  const KeptSetup k(kept_config(false));
  const int64_t caller_allocations = fake.live_allocations();
  std::vector<std::string> calls;
  {
    Network net(k.config, backend_options(Backend::cuda));
    k.forward(net, 0);
    k.forward(net, 1);
    fake.clear_log();
    k.forward(net, 1);  // makes the copy
    k.forward(net, 1);  // reads it
    calls = fake.log();
  }
  int64_t tried = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    if (!returns_checked_status(calls[i]) || is_release(calls[i])) continue;
    ++tried;
    const bool probe = calls[i] == "cudaStreamIsCapturing" || calls[i] == "cudaStreamGetId" ||
                       calls[i] == "cudaMalloc";
    {
      Network fresh(k.config, backend_options(Backend::cuda));
      k.forward(fresh, 0);
      k.forward(fresh, 1);
      fake.clear_log();
      fake.fail_at(static_cast<int64_t>(i));
      testing::internal::CaptureStderr();
      try {
        k.forward(fresh, 1);
        k.forward(fresh, 1);
        if (!probe) {
          ADD_FAILURE() << "call " << i << " (" << calls[i] << ") failed and nothing was reported";
        }
      } catch (const Error& e) {
        EXPECT_FALSE(probe) << calls[i] << " failed: the call should have converted instead";
        EXPECT_NE(std::string(e.what()).find(calls[i]), std::string::npos)
            << "call " << i << " (" << calls[i] << "): " << e.what();
      }
      testing::internal::GetCapturedStderr();
      fake.fail_at(-1);
      for (int again = 0; again < 3; ++again) EXPECT_NO_THROW(k.forward(fresh, 1)) << calls[i];
      fake.clear_log();
      k.forward(fresh, 1);
      EXPECT_EQ(fake.counts()["kernel:weights_to_cudnn"], 0) << "after " << calls[i];
    }
    EXPECT_EQ(fake.live_allocations(), caller_allocations) << "after " << calls[i];
    EXPECT_EQ(fake.live_objects(), 0) << "after " << calls[i];
  }
  EXPECT_GT(tried, 5);
  EXPECT_TRUE(fake.misuse().empty()) << fake.misuse().front();
}

// Four threads, each on a stream of its own, calling one network with one pair at once: the
// copy is made once and read by most calls; nothing is misused and no event or buffer leaks.
TEST(FakeDeviceKeptWeightsKey, ThreadsOnTheirOwnStreamsShareTheCopy) {
  const ScopedEnv no_search("RNNX_AUTOTUNE", "0");
  FakeDevice fake;
  const KeptSetup k(kept_config(false));
  std::vector<std::unique_ptr<KeptSetup>> own;
  std::vector<cudaStream_t> streams(4);
  for (int t = 0; t < 4; ++t) {
    own.push_back(std::make_unique<KeptSetup>(k.config));
    ASSERT_EQ(cuda::calls().cudaStreamCreateWithFlags(&streams[t], cudaStreamNonBlocking),
              cudaSuccess);
  }
  const int64_t caller_allocations = fake.live_allocations();
  constexpr int kCalls = 50;
  size_t one_copy = 0;
  {
    Network single(k.config, backend_options(Backend::cuda));
    k.forward(single, 9);
    k.forward(single, 9);
    one_copy = single.stats().kept_weights_bytes;
  }
  ASSERT_GT(one_copy, 0u);
  {
    Network net(k.config, backend_options(Backend::cuda));
    fake.clear_log();
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int call = 0; call < kCalls; ++call) own[t]->forward(net, 9, streams[t], k.w);
      });
    }
    for (auto& th : threads) th.join();
    const auto n = fake.counts();
    // At most each thread's first call and the second call of the pair convert (and those
    // of calls that found the copy being made by another thread: none wait for it).
    EXPECT_LE(n.at("kernel:weights_to_cudnn"), 4 * kCalls / 4) << "most calls read the copy";
    EXPECT_EQ(net.stats().kept_weights_bytes, one_copy) << "one copy for the one pair";
  }
  for (cudaStream_t st : streams) cuda::calls().cudaStreamDestroy(st);
  own.clear();
  EXPECT_EQ(fake.live_allocations(), caller_allocations - 4 * 4);
  EXPECT_EQ(fake.live_objects(), 0);
  EXPECT_TRUE(fake.misuse().empty()) << fake.misuse().front();
}

INSTANTIATE_TEST_SUITE_P(OneOrPerLayer, FakeDeviceKeptWeights, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "PerLayer" : "AllLayers"; });

INSTANTIATE_TEST_SUITE_P(Paths, FakeDevicePath, ::testing::Values("cudnn", "own_kernels"));

}  // namespace
}  // namespace rnnx_test
