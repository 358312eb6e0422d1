// The cuda backend through the public API, against the reference backend: every problem of
// problems.hpp (cells, layers, directions, projection, clipping and its NaN policy, dropout,
// variable, zero and unsorted lengths in every layout, ONNX's options), float32, float64 and
// float16 (cuDNN's tensor cores; the own kernels refuse it), forward and backward, on cuDNN
// or, where cuDNN cannot, on rnnx's own kernels; rnnx's
// dropout masks made on the GPU bit for bit equal to the CPU's; a call on the caller's
// stream. Needs a GPU except where said.
#include <gtest/gtest.h>

#include "core/autotune_cache.hpp"
#include "core/backend.hpp"
#include "core/cudnn_layout.hpp"
#include "core/dropout.hpp"
#include "cuda/cublas_loader.hpp"
#include "cuda/cudnn_rnn.hpp"
#include "cuda/kernels.hpp"
#include "device_hooks.hpp"
#include "problems.hpp"

namespace rnnx_test {
namespace {

using Param = std::tuple<TestCase, DataType>;
class CudaVsReference : public ::testing::TestWithParam<Param> {};

// cuDNN where it fits, rnnx's own kernels where it does not (core::cudnn_refusal).
TEST_P(CudaVsReference, ForwardAndBackward) {
  TestCase p = std::get<0>(GetParam());
  p.cfg.dtype = std::get<1>(GetParam());
  const std::string refusal = core::cudnn_refusal(p.cfg);
  if (p.cfg.dtype == DataType::f16 && !refusal.empty()) {  // checked before a GPU is looked for
    expect_error([&] { Plan plan(p.cfg, p.shape, backend_options(Backend::cuda)); },
                 Status::unsupported, {"backend cuda", refusal, "float16"});
    return;
  }
  RNNX_SKIP_WITHOUT_GPU();
  check_against_reference(p, p.cfg.dtype, Backend::cuda, &cuda_hooks());
}

INSTANTIATE_TEST_SUITE_P(Problems, CudaVsReference,
                         ::testing::Combine(::testing::ValuesIn(cpu_vs_reference_cases()),
                                            ::testing::Values(DataType::f32, DataType::f64,
                                                              DataType::f16)),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return std::get<0>(info.param).name + "_" +
                                  to_string(std::get<1>(info.param));
                         });

TEST(Cuda, MachineWithoutGpuIsRefusedClearly) {
  if (no_gpu_reason().empty()) GTEST_SKIP() << "this machine has a GPU";
  const Config c = make_config(CellType::lstm, 4, 6, 1, false, DataType::f32);
  expect_error([&] { Plan p(c, SequenceShape::padded(3, 2), backend_options(Backend::cuda)); },
               Status::unsupported, {"backend cuda", "no CUDA device"});
}

TEST(Cuda, ImplNameSaysCudnnAndMath) {
  RNNX_SKIP_WITHOUT_GPU();
  const ScopedEnv no_search("RNNX_AUTOTUNE", "0");  // STANDARD, not the search's choice
  Config c = make_config(CellType::gru, 4, 6, 2, true, DataType::f32);
  c.math = MathMode::fp32;
  EXPECT_EQ(Plan(c, SequenceShape::padded(3, 2), backend_options(Backend::cuda)).impl_name(),
            "cuda:cudnn-standard/fma");
  c.math = MathMode::allow_conversion;
  EXPECT_EQ(Plan(c, SequenceShape::padded(3, 2), backend_options(Backend::cuda)).impl_name(),
            "cuda:cudnn-standard/tensor-op-allow-conversion");
  c.dropout = 0.5;
  c.math = MathMode::fp32;
  EXPECT_EQ(Plan(c, SequenceShape::padded(3, 2), backend_options(Backend::cuda)).impl_name(),
            "cuda:cudnn-standard/fma/per-layer");
}

// The search picks among the candidates, remembers its choice for the key, and the plan of a
// problem with variable lengths (STANDARD only) never searches. Printed for the record.
TEST(Cuda, AlgorithmSearchChoosesACandidateAndRemembersIt) {
  RNNX_SKIP_WITHOUT_GPU();
  const ScopedEnv search("RNNX_AUTOTUNE", "1");
  const ScopedEnv no_file("RNNX_AUTOTUNE_CACHE", nullptr);
  core::autotune_clear_memory();
  Config c = make_config(CellType::lstm, 64, 128, 1, false, DataType::f32);
  c.math = MathMode::fp32;
  const SequenceShape full = SequenceShape::padded(50, 32);
  const std::string first = Plan(c, full, backend_options(Backend::cuda)).impl_name();
  std::printf("[   NOTE   ] LSTM H=128 T=50 B=32 float32: the search chose %s\n", first.c_str());
  EXPECT_TRUE(first == "cuda:cudnn-standard/fma" || first == "cuda:cudnn-persist-static/fma" ||
              first == "cuda:cudnn-persist-static-small-h/fma")
      << first;
  EXPECT_EQ(Plan(c, full, backend_options(Backend::cuda)).impl_name(), first) << "from the cache";
  std::vector<int64_t> ragged(32, 50);
  ragged[3] = 7;
  EXPECT_EQ(
      Plan(c, SequenceShape::padded(50, 32, ragged), backend_options(Backend::cuda)).impl_name(),
      "cuda:cudnn-standard/fma");
  // The chosen algorithm gives the reference's results (check_against_reference's problems
  // are small and mostly ragged; this one is the search's own shape, shortened).
  TestCase p =
      make_test_case(c, LayoutKind::time_major, 6, 32, {}, DataOptions{}, GradMode::overwrite);
  check_against_reference(p, DataType::f32, Backend::cuda, &cuda_hooks());
  core::autotune_clear_memory();
}

// What cuDNN cannot express runs on rnnx's own kernels, and says so.
TEST(Cuda, ImplNameSaysOwnKernelsWhereCudnnCannot) {
  RNNX_SKIP_WITHOUT_GPU();
  Config c = make_config(CellType::gru, 4, 6, 2, true, DataType::f32);
  c.gru_linear_before_reset = false;
  c.math = MathMode::fp32;
  EXPECT_EQ(Plan(c, SequenceShape::padded(3, 2), backend_options(Backend::cuda)).impl_name(),
            "cuda:own/fp32");
  c.math = MathMode::allow_conversion;
  EXPECT_EQ(Plan(c, SequenceShape::padded(3, 2), backend_options(Backend::cuda)).impl_name(),
            "cuda:own/bf16-tensor-op");
  c.dtype = DataType::f64;
  EXPECT_EQ(Plan(c, SequenceShape::padded(3, 2), backend_options(Backend::cuda)).impl_name(),
            "cuda:own/fp64");
}

// cuBLAS is not linked (librnnx would load half a gigabyte at start-up,
// check_needed_libraries): the own kernels load it on first use, which works without a GPU.
TEST(Cuda, CublasLoadsWhenFirstNeeded) {
  const cuda::Cublas& c = cuda::cublas();
  EXPECT_NE(c.create, nullptr);
  EXPECT_NE(c.gemm_ex, nullptr);
  EXPECT_STREQ(c.status_name(CUBLAS_STATUS_SUCCESS), "CUBLAS_STATUS_SUCCESS");
  EXPECT_EQ(&cuda::cublas(), &c) << "loaded once";
  expect_error([] { cuda::check(CUBLAS_STATUS_NOT_SUPPORTED, "cublasSgemm"); }, Status::unsupported,
               {"backend cuda", "cublasSgemm", "CUBLAS_STATUS_NOT_SUPPORTED"});
}

// The own kernels run float32 and float64: bfloat16 data of a config cuDNN cannot express is
// refused, naming both (checked before any GPU is looked for).
TEST(Cuda, OwnKernelsRefuseBfloat16) {
  Config c = make_config(CellType::lstm, 4, 6, 1, false, DataType::bf16);
  c.peephole = true;
  expect_error([&] { Plan p(c, SequenceShape::padded(3, 2), backend_options(Backend::cuda)); },
               Status::unsupported, {"backend cuda", "peephole", "bfloat16"});
}

// The GPU's masks are the CPU's: the dropout kernel on rows of ones against
// core::dropout_apply_rows, for float32 and float64, exactly.
TEST(Cuda, DropoutMasksEqualTheCpuBitForBit) {
  RNNX_SKIP_WITHOUT_GPU();
  const auto shape = SequenceShape::padded(9, 5, {9, 0, 4, 9, 1});
  const auto s = core::make_schedule(shape);
  const int64_t width = 37;
  const core::DropoutKey key{0xfeedface12345ull, (1ull << 33) + 5, 1, 0.35};
  std::vector<int64_t> base(static_cast<size_t>(s.tokens));
  for (int64_t t = 0; t < s.T_eff; ++t)
    for (int64_t i = 0; i < s.batch_sizes[t]; ++i)
      base[s.row(t, i)] =
          static_cast<int64_t>(core::dropout_element(t, s.sorted_to_orig[i], s.B, width, 0));
  const DeviceHooks& h = cuda_hooks();
  for (DataType dt : {DataType::f32, DataType::f64}) {
    Buf host = Buf(dt, s.tokens * width, 1.0);
    Buf want = host;
    if (dt == DataType::f32) {
      core::dropout_apply_rows(key, s, width, static_cast<float*>(want.data()));
    } else {
      core::dropout_apply_rows(key, s, width, static_cast<double*>(want.data()));
    }
    const size_t bytes = static_cast<size_t>(host.size() * dtype_size(dt));
    void* d_rows = h.allocate(bytes);
    void* d_base = h.allocate(sizeof(int64_t) * base.size());
    h.to_device(d_rows, host.data(), bytes);
    h.to_device(d_base, base.data(), sizeof(int64_t) * base.size());
    cuda::apply_dropout(dt, d_rows, s.tokens, width, static_cast<const int64_t*>(d_base), key.seed,
                        key.counter, key.layer, key.p, nullptr);
    h.to_host(host.data(), d_rows, bytes);
    h.release(d_rows);
    h.release(d_base);
    int64_t dropped = 0;
    for (int64_t i = 0; i < host.size(); ++i) {
      ASSERT_EQ(host.get(i), want.get(i)) << to_string(dt) << " element " << i;
      dropped += host.get(i) == 0.0;
    }
    EXPECT_GT(dropped, 0);
    EXPECT_LT(dropped, host.size());
  }
}

// A call on the caller's stream gives what the default stream gives.
TEST(Cuda, RunsOnTheCallersStream) {
  RNNX_SKIP_WITHOUT_GPU();
  Config c = make_config(CellType::lstm, 5, 8, 2, true, DataType::f32, 3);
  const SequenceShape shape = SequenceShape::padded(6, 4, {6, 0, 3, 5});
  Plan plan(c, shape, backend_options(Backend::cuda));
  const Data d = make_data(c, {6, 0, 3, 5}, 11, {});
  const Tensors in = make_tensors(plan, d);
  RunOptions o;
  o.backward = true;
  const Results plain = run(plan, in, on_gpu(o));
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  DeviceHooks hooks = cuda_hooks();
  hooks.stream = stream;
  o.device = &hooks;
  const Results streamed = run(plan, in, o);
  cudaStreamDestroy(stream);
  expect_results_near(streamed, plain, 0.0, 0.0);
}

// Where cuDNN puts each weight, against core::cudnn_documented_layout: informative (the
// copies use cuDNN's own answer either way), printed for the record of the first GPU runs.
TEST(Cuda, WeightPlacementAgainstTheDocumentation) {
  RNNX_SKIP_WITHOUT_GPU();
  for (Config c : {make_config(CellType::lstm, 5, 7, 2, true, DataType::f32, 3),
                   make_config(CellType::gru, 6, 4, 2, true, DataType::f32),
                   make_config(CellType::rnn_tanh, 3, 9, 1, false, DataType::f64)}) {
    c.math = MathMode::fp32;
    const SequenceShape shape = SequenceShape::padded(3, 2);
    PlanContext ctx{c, shape, core::make_schedule(shape), WeightLayout(c), {}, MathMode::fp32};
    const core::CudnnBatch batch = core::cudnn_batch(shape, ctx.schedule, c);
    cuda::CudnnHandle handle = cuda::make_handle();
    const cuda::CudnnRnn rnn(ctx, batch, handle.get(), core::CudnnAlgo::standard);
    for (const cuda::CudnnGroup& g : rnn.groups()) {
      std::printf("[   NOTE   ] %s: cuDNN's weight space (%zu bytes) %s the documented layout\n",
                  to_string(c.cell), g.weight_bytes,
                  g.documented_layout ? "follows" : "differs from");
    }
  }
}

}  // namespace
}  // namespace rnnx_test
