// rnnx_step_gemm: the recurrent product of one time step, C[B, 4H] = h[B, H] W_hh^T, on the
// packed engine of the plan's ISA level (RNNX_CPU_ISA caps it) with the weights packed once,
// as the time loops run it, beside the FMA peak of that level measured in the same process:
// issue #25's "step GEMM at >= 85% of the FMA peak". Threads as packed_gemm splits them
// (panels of B per thread). The virtual machines this runs on lend their cores unevenly
// (the FMA peak of one process moves by 20-50% within seconds), so each round times the
// peak and then the product, and the ratio is the median of the rounds' ratios.
// Two ways of running the product on several threads, each a line of its own:
//   call: packed_gemm per step (a parallel region per call: the team forks and joins);
//   team: as the team time loops run it (cpu/forward.cpp): one parallel region for all the
//         steps, each thread packs its cells' columns of h (pack_a_columns), one barrier,
//         then each multiplies its own panels of every gate (multiply_panel_range), the
//         packed h double-buffered so that the next step's packing needs no second barrier.
// One thread runs `call` only (no team).
//
//   rnnx_step_gemm [--threads 1,2] [--batch 32,64] [--hidden 256,512,1024] [--gates 4]
//                  [--repeat 9] [--json]
#include <omp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "bench_case.hpp"
#include "cpu/gemm.hpp"
#include "cpu/isa.hpp"
#include "cpu/packed_gemm.hpp"
#include "cpu/team_barrier.hpp"
#include "cpu/thread_pool.hpp"
#include "packed_operands.hpp"
#include "peak_kernels.hpp"

namespace {

using json = nlohmann::ordered_json;

// GFLOP/s of the level's register-only FMA loop on `threads` threads, best of three short
// runs (0: no FMA loop at scalar).
double fma_peak(rnnx::cpu::Isa isa, int threads) {
  double (*loop)(int64_t) = nullptr;
  if (isa >= rnnx::cpu::Isa::avx512) loop = &rnnx::peak::fma_avx512_f32;
  if (isa == rnnx::cpu::Isa::avx2) loop = &rnnx::peak::fma_avx2_f32;
  if (loop == nullptr) return 0.0;
  constexpr int64_t kIterations = 1 << 20;
  double flops = 0.0;
  const rnnx::bench::Timing tm = rnnx::bench::time_runs(1, 3, [&] {
    double f = 0.0;
#pragma omp parallel num_threads(threads) reduction(+ : f)
    f += loop(kIterations);
    flops = f;
  });
  return flops / (tm.min_ms * 1e-3) / 1e9;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The packed engine's step GEMM against the FMA peak (bench/README.md)"};
  std::string threads_list = "1,2", batch_list = "32,64", hidden_list = "256,512,1024";
  int64_t gates = 4;
  int repeat = 9;
  bool as_json = false;
  app.add_option("--threads", threads_list, "Comma-separated thread counts")->capture_default_str();
  app.add_option("--batch", batch_list, "Rows of h (B), comma-separated")->capture_default_str();
  app.add_option("--hidden", hidden_list, "H, comma-separated (K = H, N = gates * H)")
      ->capture_default_str();
  app.add_option("--gates", gates, "Gates per cell (LSTM 4, GRU 3, RNN 1)")
      ->check(CLI::Range(1, 4))
      ->capture_default_str();
  app.add_option("--repeat", repeat, "Timed runs per measurement (median)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_flag("--json", as_json, "One JSON object per line");
  CLI11_PARSE(app, argc, argv);
  std::vector<int64_t> threads, batches, hiddens;
  try {
    threads = rnnx::peak::parse_sizes(threads_list);
    batches = rnnx::peak::parse_sizes(batch_list);
    hiddens = rnnx::peak::parse_sizes(hidden_list);
  } catch (const std::exception&) {
    std::fprintf(stderr, "rnnx_step_gemm: --threads, --batch and --hidden take integers\n");
    return 2;
  }
  for (const auto& list : {threads, batches, hiddens}) {
    for (int64_t v : list) {
      if (v < 1 || v > 65536) {
        std::fprintf(stderr, "rnnx_step_gemm: every size and thread count must be in 1..65536\n");
        return 2;
      }
    }
  }
  bool differs = false;
  const rnnx::cpu::Isa isa = rnnx::cpu::isa_for_plan();
  const rnnx::cpu::PackedType type = rnnx::cpu::packed_f32_type(isa);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (int64_t t : threads) {
    const int nt = static_cast<int>(t);
    rnnx::set_num_threads(nt);  // rnnx's pool, which packed_gemm and the team below run on
    for (int64_t H : hiddens) {
      const int64_t N = gates * H, K = H;
      std::vector<float> W(N * K);
      for (float& v : W) v = uniform(rng);
      rnnx::peak::AlignedFloats packed(rnnx::cpu::packed_b_floats(K, N, gates, type));
      const rnnx::cpu::PackedB B =
          rnnx::cpu::pack_b(rnnx::cpu::Op::T, K, N, W.data(), K, packed.data, gates, type);
      for (int64_t M : batches) {
        rnnx::peak::AlignedFloats A(M * K), C(M * N);
        const int64_t a_floats = rnnx::cpu::packed_a_floats(M, K, type);
        rnnx::peak::AlignedFloats a_pack(2 * a_floats);
        for (int64_t i = 0; i < M * K; ++i) A.data[i] = uniform(rng);
        // Enough calls per timed run to last some milliseconds.
        const int64_t calls = std::max<int64_t>(1, static_cast<int64_t>(4e8 / (2.0 * M * N * K)));
        const auto by_call = [&] {
          for (int64_t c = 0; c < calls; ++c) {
            rnnx::cpu::packed_gemm(M, A.data, K, B, false, C.data, N, a_pack.data);
          }
        };
        // The panels of each gate block, split over the threads as the team loops split them;
        // thread t's cells are the columns of its panels, so it packs those columns of h.
        const int64_t panels = B.panels_per_block();
        const auto by_team = [&] {
          rnnx::cpu::TeamBarrier barrier;
          rnnx::cpu::parallel_region(nt, [&](int t, int n) {
            const int64_t q0 = panels * t / n, q1 = panels * (t + 1) / n;
            const int64_t k0 = std::min(K, q0 * rnnx::cpu::kPackedPanel);
            const int64_t k1 = std::min(K, q1 * rnnx::cpu::kPackedPanel);
            for (int64_t c = 0; c < calls; ++c) {
              float* ap = a_pack.data + (c % 2) * a_floats;
              rnnx::cpu::pack_a_columns(M, K, A.data, K, k0, k1, ap, type);
              barrier.wait(n);
              rnnx::cpu::multiply_panel_range(M, ap, B, q0, q1, false, C.data, N);
            }
          });
        };
        std::vector<float> call_result;
        for (const bool team : {false, true}) {
          if (team && nt == 1) continue;
          const auto product = [&] { team ? by_team() : by_call(); };
          product();  // warm-up: the weights into the caches, the threads awake
          // Both ways compute each element in the same chain of k: the same bits, or the
          // team's split of the packing or the panels is wrong.
          if (!team) {
            call_result.assign(C.data, C.data + M * N);
          } else if (!std::equal(call_result.begin(), call_result.end(), C.data)) {
            std::fprintf(stderr,
                         "rnnx_step_gemm: the team product differs from the per-call one "
                         "(threads=%d M=%lld H=%lld)\n",
                         nt, static_cast<long long>(M), static_cast<long long>(H));
            differs = true;
          }
          std::vector<double> speeds, peaks, ratios, ms;
          for (int r = 0; r < repeat; ++r) {
            const double peak = fma_peak(isa, nt);
            const rnnx::bench::Timing tm = rnnx::bench::time_runs(0, 1, product);
            const double gflops = 2.0 * M * N * K * calls / (tm.median_ms * 1e-3) / 1e9;
            speeds.push_back(gflops);
            peaks.push_back(peak);
            ratios.push_back(peak > 0 ? 100.0 * gflops / peak : 0.0);
            ms.push_back(tm.median_ms / calls);
          }
          const double gflops = median(speeds), peak = median(peaks), pct = median(ratios);
          const char* loop = team ? "team" : "call";
          if (as_json) {
            const json j = {{"backend", "step-gemm"},
                            {"isa", rnnx::cpu::isa_name(isa)},
                            {"threads", nt},
                            {"loop", loop},
                            {"M", M},
                            {"N", N},
                            {"K", K},
                            {"gflops", gflops},
                            {"fma_peak_gflops", peak},
                            {"pct_of_fma_peak", pct},
                            {"ms_median", median(ms)}};
            std::printf("%s\n", j.dump().c_str());
          } else {
            std::printf(
                "step-gemm %-6s threads=%d %-4s M=%-4lld N=%-5lld K=%-5lld %7.1f GFLOP/s  %5.1f%% "
                "of the FMA peak (%.1f)\n",
                rnnx::cpu::isa_name(isa), nt, loop, static_cast<long long>(M),
                static_cast<long long>(N), static_cast<long long>(K), gflops, pct, peak);
          }
          std::fflush(stdout);
        }
      }
    }
  }
  return differs ? 1 : 0;
}
