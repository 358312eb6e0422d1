// rnnx_packed_kernel_ab: two builds of the AVX2 packed GEMM kernel (kernels/packed_gemm_avx2.cpp
// compiled twice, each with its own block depth and register block: CMake's
// RNNX_KERNEL_AB_DEPTH_A/_B and RNNX_KERNEL_AB_DEFINES_A/_B) timed
// against each other in one process, in alternation, on the step product C[B, G*H] = h W_hh^T
// (weights packed once, as the time loops run them) and on a block of the all-token products
// (B = 112 rows: packed_gemm_full's rows per pass), one thread. On the virtual machines this
// runs on the same binary's time moves by 20-50% from one process to the next, which hides
// a few percent; within one process, each round timing A, B, B, A (the faster of each
// pair), the ratio of the rounds holds to about a percent. Both builds must give the same
// bits (the depth only splits each element's chain of k where C carries it on, and every
// register block runs each element's chain in order of k).
//
//   rnnx_packed_kernel_ab [--batch 32,64,112] [--hidden 256,512,1024] [--gates 4] [--rounds 9]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "cpu/isa.hpp"
#include "cpu/packed_gemm.hpp"
#include "cpu/packed_gemm_kernels.hpp"
#include "packed_operands.hpp"

namespace rnnx::cpu {
namespace kernel_ab_a {
extern const PackedKernels kPackedKernels;
}
namespace kernel_ab_b {
extern const PackedKernels kPackedKernels;
}
}  // namespace rnnx::cpu

namespace {

using rnnx::cpu::PackedKernels;

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Two builds of the AVX2 packed kernel, A/B in one process (bench/README.md)"};
  std::string batch_list = "32,64,112", hidden_list = "256,512,1024";
  int64_t gates = 4;
  int rounds = 9;
  app.add_option("--batch", batch_list, "Rows of the left operand, comma-separated")
      ->capture_default_str();
  app.add_option("--hidden", hidden_list, "H, comma-separated (K = H, N = gates * H)")
      ->capture_default_str();
  app.add_option("--gates", gates, "Gates per cell")
      ->check(CLI::Range(1, 4))
      ->capture_default_str();
  app.add_option("--rounds", rounds, "Rounds (A, B, B, A each)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::vector<int64_t> batches, hiddens;
  try {
    batches = rnnx::peak::parse_sizes(batch_list);
    hiddens = rnnx::peak::parse_sizes(hidden_list);
  } catch (const std::exception&) {
    std::fprintf(stderr, "rnnx_packed_kernel_ab: --batch and --hidden take integers\n");
    return 2;
  }
  for (const auto& list : {batches, hiddens}) {
    for (int64_t v : list) {
      if (v < 1 || v > 65536) {
        std::fprintf(stderr, "rnnx_packed_kernel_ab: every size must be in 1..65536\n");
        return 2;
      }
    }
  }
  if (rnnx::cpu::isa_detected() < rnnx::cpu::Isa::avx2) {
    std::printf("rnnx_packed_kernel_ab: this CPU has no AVX2, nothing to time\n");
    return 0;
  }
  const auto defines = [](const std::string& text) { return text.empty() ? text : " " + text; };
  std::printf("A: block depth %d%s, B: block depth %d%s (1 thread)\n", RNNX_KERNEL_AB_DEPTH_A,
              defines(RNNX_KERNEL_AB_DEFINES_A_TEXT).c_str(), RNNX_KERNEL_AB_DEPTH_B,
              defines(RNNX_KERNEL_AB_DEFINES_B_TEXT).c_str());
  const rnnx::cpu::PackedType type = rnnx::cpu::PackedType::f32_avx2;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  bool all_same = true;
  for (int64_t H : hiddens) {
    const int64_t N = gates * H, K = H;
    std::vector<float> W(N * K);
    for (float& v : W) v = uniform(rng);
    rnnx::peak::AlignedFloats packed(rnnx::cpu::packed_b_floats(K, N, gates, type));
    const rnnx::cpu::PackedB B =
        rnnx::cpu::pack_b(rnnx::cpu::Op::T, K, N, W.data(), K, packed.data, gates, type);
    const int64_t block_floats = rnnx::cpu::packed_b_floats(K, B.block_cols(), 1, type);
    for (int64_t M : batches) {
      rnnx::peak::AlignedFloats A(M * K), a_pack(rnnx::cpu::packed_a_floats(M, K, type));
      for (int64_t i = 0; i < M * K; ++i) A.data[i] = uniform(rng);
      rnnx::cpu::pack_a_columns(M, K, A.data, K, 0, K, a_pack.data, type);
      std::vector<float> C_a(M * N), C_b(M * N);
      const auto product = [&](const PackedKernels& kern, float* C) {
        for (int64_t b = 0; b < B.blocks; ++b) {
          kern.multiply_panels(M, K, a_pack.data, B.data + b * block_floats, B.block_cols(), 0,
                               B.panels_per_block(), false, C + b * B.block_cols(), N);
        }
      };
      const int64_t calls = std::max<int64_t>(1, static_cast<int64_t>(3e8 / (2.0 * M * N * K)));
      const auto seconds = [&](const PackedKernels& kern, float* C) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int64_t c = 0; c < calls; ++c) product(kern, C);
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
               static_cast<double>(calls);
      };
      const PackedKernels& ka = rnnx::cpu::kernel_ab_a::kPackedKernels;
      const PackedKernels& kb = rnnx::cpu::kernel_ab_b::kPackedKernels;
      product(ka, C_a.data());
      product(kb, C_b.data());
      const bool same = C_a == C_b;
      all_same = all_same && same;
      std::vector<double> ratios, speed_a, speed_b;
      const double flops = 2.0 * static_cast<double>(M * N * K);
      for (int r = 0; r < rounds; ++r) {
        const double a1 = seconds(ka, C_a.data()), b1 = seconds(kb, C_b.data());
        const double b2 = seconds(kb, C_b.data()), a2 = seconds(ka, C_a.data());
        const double a = std::min(a1, a2), b = std::min(b1, b2);
        ratios.push_back(a / b);
        speed_a.push_back(flops / a / 1e9);
        speed_b.push_back(flops / b / 1e9);
      }
      std::printf(
          "M=%-4lld N=%-5lld K=%-5lld A %6.1f GFLOP/s  B %6.1f GFLOP/s  A/B time %.3f "
          "(quartiles %.3f-%.3f)  same bits: %s\n",
          static_cast<long long>(M), static_cast<long long>(N), static_cast<long long>(K),
          quantile(speed_a, 0.5), quantile(speed_b, 0.5), quantile(ratios, 0.5),
          quantile(ratios, 0.25), quantile(ratios, 0.75), same ? "yes" : "NO");
      std::fflush(stdout);
    }
  }
  return all_same ? 0 : 1;
}
