// rnnx_machine_peak: what the machine's arithmetic units can do, for bench/run_all.py's
// roofline columns: float32 FMAs on registers (the best of AVX-512 and AVX2 the CPU has),
// int8 multiply-adds (AVX2's vpmaddubsw, AVX512-VNNI's vpdpbusd) and bf16 dot products on AMX
// tiles, on 1..n threads at once (one loop per thread, each on its
// own core's units). No memory traffic: the bound no kernel of rnnx can pass.
// --round-trip measures instead how long a cache line takes from one core to another and
// back (two threads handing a counter to each other): what every barrier of a team time
// loop waits for at least. On a virtual machine it presumably follows where the hypervisor
// puts the virtual CPUs, and can change from one process to the next (bench/README.md, "Noise").
//
//   rnnx_machine_peak [--threads 1,2] [--repeat 5] [--ms 100] [--json]
//   rnnx_machine_peak --round-trip [--repeat 5] [--json]
#include <cpuid.h>
#include <omp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_case.hpp"
#include "peak_kernels.hpp"
#include "rnnx/cpu.hpp"

namespace {

using json = nlohmann::ordered_json;

struct Kernel {
  const char* kind;  // what the record calls it
  const char* isa;   // what runs it
  double (*run)(int64_t iterations);
};

// The float32 FMA loop of the best ISA the CPU has within RNNX_CPU_ISA (so that a capped
// run measures the peak of the level it caps to), or none.
bool fma_kernel(Kernel* k) {
  const std::string isa = rnnx::cpu_isa_used();
  if (isa.rfind("avx512", 0) == 0) {
    *k = {"fma-f32", "avx512", &rnnx::peak::fma_avx512_f32};
    return true;
  }
  if (isa == "avx2") {
    *k = {"fma-f32", "avx2", &rnnx::peak::fma_avx2_f32};
    return true;
  }
  return false;
}

// The AVX2 int8 loop (vpmaddubsw, no VNNI) where the CPU has AVX2 within RNNX_CPU_ISA: what
// an int8 kernel could reach on a CPU without VNNI, beside float32's FMA.
bool int8_avx2_kernel(Kernel* k) {
  const std::string isa = rnnx::cpu_isa_used();
  if (isa != "avx2" && isa.rfind("avx512", 0) != 0) return false;
  *k = {"int8-avx2-maddubs", "avx2", &rnnx::peak::int8_avx2_maddubs};
  return true;
}

// The AVX512-VNNI int8 loop where the CPU has it (CPUID 7.0 ECX bit 11) and RNNX_CPU_ISA
// allows AVX-512: the ceiling of rnnx's int8 kernel (and of the int8 peers) without AMX.
bool int8_vnni_kernel(Kernel* k) {
  if (std::string(rnnx::cpu_isa_used()).rfind("avx512", 0) != 0) return false;
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !((c >> 11) & 1u)) return false;
  *k = {"int8-avx512-vnni", "avx512", &rnnx::peak::int8_avx512_vnni};
  return true;
}

// AMX-BF16 and AMX-TILE (CPUID 7.0 EDX bits 22 and 24), granted by the OS.
bool amx_kernel(Kernel* k) {
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  if (!((d >> 22) & 1u) || !((d >> 24) & 1u) || !rnnx::peak::amx_permitted()) return false;
  *k = {"amx-bf16", "amx", &rnnx::peak::amx_bf16};
  return true;
}

// One timed run: every thread runs the loop for `iterations`; the flops of all of them.
double run_once(const Kernel& k, int threads, int64_t iterations) {
  double flops = 0.0;
#pragma omp parallel num_threads(threads) reduction(+ : flops)
  flops += k.run(iterations);
  return flops;
}

void report(const Kernel& k, int threads, bool as_json, double gflops,
            const rnnx::bench::Timing& tm, int repeat) {
  if (as_json) {
    const json j = {{"backend", "machine-peak"}, {"kind", k.kind},      {"impl", k.isa},
                    {"threads", threads},        {"repeat", repeat},    {"ms_median", tm.median_ms},
                    {"ms_min", tm.min_ms},       {"ms_max", tm.max_ms}, {"gflops", gflops}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    // int8's operations are integer multiply-adds, counted like flops (the JSON's gflops).
    const char* unit = std::string(k.kind).rfind("int8", 0) == 0 ? "GOP/s" : "GFLOP/s";
    std::printf("machine-peak %-9s %-7s threads=%d  %.1f %s (median of %d, %.2f ms each)\n", k.kind,
                k.isa, threads, gflops, unit, repeat, tm.median_ms);
  }
  std::fflush(stdout);
}

void report_missing(const char* kind, int threads, bool as_json, const char* why) {
  if (as_json) {
    const json j = {
        {"backend", "machine-peak"}, {"kind", kind}, {"threads", threads}, {"error", why}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("machine-peak %-9s threads=%d: %s\n", kind, threads, why);
  }
}

// Nanoseconds per round trip of a cache line between two threads (on two cores where the
// OS lets them run at once): thread 0 writes an odd value and waits for the next even one,
// which thread 1 writes when it sees the odd one. -1 when OpenMP gave fewer than two
// threads (OMP_THREAD_LIMIT=1), where thread 0 would wait for a partner forever.
double round_trip_ns(int64_t trips) {
  alignas(64) std::atomic<int64_t> counter{0};
  double ns = -1.0;
#pragma omp parallel num_threads(2)
  if (omp_get_num_threads() == 2) {
    const bool first = omp_get_thread_num() == 0;
#pragma omp barrier
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < trips; ++i) {
      const int64_t mine = 2 * i + (first ? 1 : 2);
      if (first) counter.store(mine, std::memory_order_release);
      while (counter.load(std::memory_order_acquire) != (first ? mine + 1 : mine - 1)) {
      }
      if (!first) counter.store(mine, std::memory_order_release);
    }
    if (first) {
      ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
           static_cast<double>(trips);
    }
  }
  return ns;
}

int round_trip(int repeat, bool as_json) {
  // Two threads spinning on one CPU would hand the line over once per time slice.
  if (omp_get_num_procs() < 2) {
    std::fprintf(stderr,
                 "rnnx_machine_peak: --round-trip needs two CPUs; this process may run on %d\n",
                 omp_get_num_procs());
    return 2;
  }
  constexpr int64_t kTrips = 50000;
  if (round_trip_ns(kTrips / 10) < 0) {  // also wakes both threads
    std::fprintf(stderr,
                 "rnnx_machine_peak: --round-trip needs two threads; OpenMP gives %d "
                 "(OMP_THREAD_LIMIT?)\n",
                 omp_get_thread_limit());
    return 2;
  }
  std::vector<double> ns;
  for (int r = 0; r < repeat; ++r) ns.push_back(round_trip_ns(kTrips));
  std::sort(ns.begin(), ns.end());
  const double median = ns[ns.size() / 2];
  if (as_json) {
    const json j = {
        {"backend", "machine-peak"}, {"kind", "core-round-trip"}, {"threads", 2},
        {"repeat", repeat},          {"ns_median", median},       {"ns_min", ns.front()},
        {"ns_max", ns.back()}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf(
        "machine-peak core-round-trip threads=2  %.0f ns (median of %d, min %.0f, max %.0f)\n",
        median, repeat, ns.front(), ns.back());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "The machine's float32 FMA, int8 and AMX bf16 peaks, on registers (bench/README.md)"};
  std::string threads_list = "1";
  int repeat = 5;
  double target_ms = 100.0;
  bool as_json = false;
  app.add_option("--threads", threads_list, "Comma-separated thread counts")->capture_default_str();
  app.add_option("--repeat", repeat, "Timed runs per measurement (median)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--ms", target_ms, "About how long one timed run takes")
      ->check(CLI::Range(1.0, 10000.0))
      ->capture_default_str();
  app.add_flag("--json", as_json, "One JSON object per line");
  bool trip = false;
  app.add_flag("--round-trip", trip,
               "Instead: a cache line's round trip between two cores, in nanoseconds")
      ->excludes(app.get_option("--threads"))
      ->excludes(app.get_option("--ms"));
  CLI11_PARSE(app, argc, argv);
  if (trip) return round_trip(repeat, as_json);
  std::vector<int> thread_counts;
  try {
    thread_counts = rnnx::bench::parse_threads(threads_list);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rnnx_machine_peak: --threads: %s\n", e.what());
    return 2;
  }

  Kernel fma{}, amx{}, int8{}, vnni{};
  const bool have_fma = fma_kernel(&fma), have_amx = amx_kernel(&amx),
             have_int8 = int8_avx2_kernel(&int8), have_vnni = int8_vnni_kernel(&vnni);
  for (int threads : thread_counts) {
    if (threads == 0) threads = omp_get_max_threads();
    for (auto [have, k, kind, why] :
         {std::tuple{have_fma, fma, "fma-f32", "no AVX2 or AVX-512 on this CPU"},
          std::tuple{have_int8, int8, "int8-avx2-maddubs", "no AVX2 on this CPU"},
          std::tuple{have_vnni, vnni, "int8-avx512-vnni",
                     "no AVX512-VNNI on this CPU (or RNNX_CPU_ISA caps it)"},
          std::tuple{have_amx, amx, "amx-bf16",
                     "no AMX-BF16 on this CPU (or the OS refuses it)"}}) {
      if (!have) {
        report_missing(kind, threads, as_json, why);
        continue;
      }
      // Iterations for about target_ms per run, from a short calibration run after a first
      // one that wakes the threads (and, for AMX, the tile unit).
      int64_t iterations = 1 << 16;
      run_once(k, threads, iterations);
      const auto t0 = std::chrono::steady_clock::now();
      run_once(k, threads, iterations);
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      iterations =
          std::max<int64_t>(1, static_cast<int64_t>(iterations * target_ms / std::max(ms, 1e-3)));
      double flops = 0.0;
      const rnnx::bench::Timing tm =
          rnnx::bench::time_runs(1, repeat, [&] { flops = run_once(k, threads, iterations); });
      report(k, threads, as_json, flops / (tm.median_ms * 1e-3) / 1e9, tm, repeat);
    }
  }
  return 0;
}
