// rnnx_plan_setup: what a new set of lengths costs before any work runs (issue 45), for each
// of --sets batches of different random lengths (1..T, one sequence at T), nothing executed:
//   plan     a Plan built for the batch, its workspace and reserve sizes asked;
//   network  one Network for all batches, its workspace and reserve sizes asked for the
//            batch (a call's binding: the first question binds the shape, the second finds
//            the slot bound), the caller's SequenceShape object reused.
// Prints, per batch size, the median over --rounds of the time per set-up and the heap
// allocations per set-up (counted by this program's operator new, which librnnx's
// allocations go through). The search is off: a search is measured by `rnnx bench`, and a
// network keeps its choice per size class.
//
//   rnnx_plan_setup [--cell lstm] [--hidden 256] [--input 256] [--steps 200]
//                   [--batches 1,16,64] [--sets 2000] [--rounds 5] [--layout time_major]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "rnnx/rnnx.hpp"

namespace {

std::atomic<long> g_allocations{0};

}  // namespace

void* operator new(size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, size_t) noexcept {
  std::free(p);
}

namespace {

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "rnnx_plan_setup: %s\nusage: rnnx_plan_setup [--cell lstm|gru|rnn_tanh] "
               "[--hidden H] [--input I] [--steps T] [--batches B,B,...] [--sets N] "
               "[--rounds R] [--layout time_major|batch_first]\n",
               why.c_str());
  std::exit(2);
}

int64_t positive(const std::string& flag, const std::string& value) {
  char* end = nullptr;
  const long long v = std::strtoll(value.c_str(), &end, 10);
  if (end == value.c_str() || *end != '\0' || v <= 0)
    usage(flag + " (= \"" + value + "\") must be a positive integer");
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  std::string cell = "lstm", layout = "time_major";
  int64_t hidden = 256, input = 256, steps = 200, sets = 2000, rounds = 5;
  std::vector<int64_t> batches = {1, 16, 64};
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage(flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--cell")
      cell = value;
    else if (flag == "--layout")
      layout = value;
    else if (flag == "--hidden")
      hidden = positive(flag, value);
    else if (flag == "--input")
      input = positive(flag, value);
    else if (flag == "--steps")
      steps = positive(flag, value);
    else if (flag == "--sets")
      sets = positive(flag, value);
    else if (flag == "--rounds")
      rounds = positive(flag, value);
    else if (flag == "--batches") {
      batches.clear();
      std::stringstream list(value);
      for (std::string item; std::getline(list, item, ',');)
        batches.push_back(positive(flag, item));
    } else {
      usage("unknown flag " + flag);
    }
  }
  try {
    rnnx::Config config;
    config.cell = rnnx::cell_from_string(cell);
    config.input_size = input;
    config.hidden_size = hidden;
    rnnx::PlanOptions options;
    options.cpu.search = "off";
    if (layout != "time_major" && layout != "batch_first")
      usage("--layout (= \"" + layout + "\") must be time_major or batch_first");
    const rnnx::Layout lay =
        layout == "time_major" ? rnnx::Layout::time_major : rnnx::Layout::batch_first;
    std::printf(
        "# %s I=%lld H=%lld T=%lld %s, %lld length sets per round, median of %lld "
        "rounds; search off\n",
        cell.c_str(), static_cast<long long>(input), static_cast<long long>(hidden),
        static_cast<long long>(steps), layout.c_str(), static_cast<long long>(sets),
        static_cast<long long>(rounds));
    std::printf("%6s %8s %14s %18s\n", "batch", "api", "us per set-up", "allocations each");
    std::mt19937_64 rng(1);
    for (int64_t B : batches) {
      std::vector<std::vector<int64_t>> lengths(static_cast<size_t>(sets));
      for (auto& l : lengths) {
        l.resize(static_cast<size_t>(B));
        for (auto& v : l) v = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(steps));
        l[0] = steps;
      }
      for (const bool network : {false, true}) {
        std::vector<double> us;
        long allocations = 0;
        size_t sink = 0;
        rnnx::Network net(config, options);
        rnnx::SequenceShape shape = rnnx::SequenceShape::padded(steps, B, lengths[0]);
        shape.layout = lay;
        for (int64_t r = 0; r < rounds; ++r) {
          const long before = g_allocations.load();
          const auto t0 = std::chrono::steady_clock::now();
          for (const auto& l : lengths) {
            shape.lengths = l;  // into the vector it has
            if (network) {
              sink += net.forward_workspace_size(shape, true) + net.reserve_size(shape);
            } else {
              const rnnx::Plan plan(config, shape, options);
              sink += plan.forward_workspace_size(true) + plan.reserve_size();
            }
          }
          const auto t1 = std::chrono::steady_clock::now();
          allocations = g_allocations.load() - before;
          us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() /
                       static_cast<double>(sets));
        }
        std::sort(us.begin(), us.end());
        std::printf("%6lld %8s %14.2f %18.2f%s\n", static_cast<long long>(B),
                    network ? "network" : "plan", us[us.size() / 2],
                    static_cast<double>(allocations) / static_cast<double>(sets),
                    sink == 0 ? " (no sizes?)" : "");
      }
    }
  } catch (const rnnx::Error& e) {
    std::fprintf(stderr, "rnnx_plan_setup: %s\n", e.what());
    return 1;
  }
  return 0;
}
