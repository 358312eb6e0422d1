// rnnx_weights_version: what a network's kept weights save an inference call (issue 45):
// forward calls with unchanged weights, timed with weights_version 0 (the weights packed at
// every call) and with a fixed version (the network's kept copy from the third call on),
// alternating A and B in one run on one network of each problem. Prints per problem the
// median ms per call of each and their ratio. Search off, the packed engine's default loop.
//
//   rnnx_weights_version [--calls 200] [--rounds 7] [--threads 0]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "rnnx/rnnx.hpp"

namespace {

struct Problem {
  const char* cell;
  int64_t input, hidden, layers, steps, batch;
  bool bidir;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int64_t calls = 200, rounds = 7;
  int threads = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const long v = std::strtol(argv[i + 1], nullptr, 10);
    if (flag == "--calls" && v > 0) {
      calls = v;
    } else if (flag == "--rounds" && v > 0) {
      rounds = v;
    } else if (flag == "--threads" && v >= 0) {
      threads = static_cast<int>(v);
    } else {
      std::fprintf(stderr, "usage: rnnx_weights_version [--calls N] [--rounds R] [--threads T]\n");
      return 2;
    }
  }
  const std::vector<Problem> problems = {{"lstm", 256, 256, 1, 20, 1, false},
                                         {"lstm", 256, 256, 2, 50, 1, false},
                                         {"lstm", 512, 512, 1, 50, 4, false},
                                         {"gru", 256, 256, 2, 50, 1, true},
                                         {"lstm", 256, 256, 2, 100, 16, false}};
  try {
    std::printf(
        "# inference forwards with unchanged weights, float32, search off, threads %d "
        "(0: all); median of %lld rounds of %lld calls each\n",
        threads, static_cast<long long>(rounds), static_cast<long long>(calls));
    std::printf("%-36s %12s %12s %8s\n", "problem", "v0 ms/call", "kept ms/call", "ratio");
    for (const Problem& pr : problems) {
      rnnx::Config c;
      c.cell = rnnx::cell_from_string(pr.cell);
      c.input_size = pr.input;
      c.hidden_size = pr.hidden;
      c.num_layers = pr.layers;
      c.bidirectional = pr.bidir;
      rnnx::PlanOptions o;
      o.purpose = rnnx::PlanPurpose::inference;
      o.num_threads = threads;
      o.cpu.search = "off";
      rnnx::Network net(c, o);
      const rnnx::SequenceShape shape = rnnx::SequenceShape::padded(pr.steps, pr.batch);
      const rnnx::BatchInfo info = net.describe(shape);
      std::vector<float> x(static_cast<size_t>(info.x_numel), 0.25f);
      std::vector<float> y(static_cast<size_t>(info.y_numel));
      std::vector<float> w(static_cast<size_t>(net.weights_numel()));
      for (size_t i = 0; i < w.size(); ++i) w[i] = 0.02f * static_cast<float>(i % 17) - 0.16f;
      std::vector<char> ws(info.forward_workspace[0] + 64);
      rnnx::ForwardArgs a;
      a.x = x.data();
      a.weights = w.data();
      a.y = y.data();
      a.workspace = ws.data() + (64 - reinterpret_cast<uintptr_t>(ws.data()) % 64) % 64;
      a.workspace_size = info.forward_workspace[0];
      std::vector<double> t[2];
      for (int64_t r = 0; r < rounds; ++r) {
        for (int kept = 0; kept < 2; ++kept) {
          a.weights_version = kept ? 1 : 0;
          net.forward(shape, a);  // warm (and, kept: the pair's first and second calls)
          net.forward(shape, a);
          const auto t0 = std::chrono::steady_clock::now();
          for (int64_t k = 0; k < calls; ++k) net.forward(shape, a);
          const auto t1 = std::chrono::steady_clock::now();
          t[kept].push_back(std::chrono::duration<double, std::milli>(t1 - t0).count() /
                            static_cast<double>(calls));
        }
      }
      char name[64];
      std::snprintf(name, sizeof name, "%s_l%lld%s_t%lld_b%lld_i%lld_h%lld", pr.cell,
                    static_cast<long long>(pr.layers), pr.bidir ? "_bidir" : "",
                    static_cast<long long>(pr.steps), static_cast<long long>(pr.batch),
                    static_cast<long long>(pr.input), static_cast<long long>(pr.hidden));
      const double v0 = median(t[0]), kept = median(t[1]);
      std::printf("%-36s %12.4f %12.4f %8.3f   %s\n", name, v0, kept, kept / v0,
                  net.impl_name(shape).c_str());
    }
  } catch (const rnnx::Error& e) {
    std::fprintf(stderr, "rnnx_weights_version: %s\n", e.what());
    return 1;
  }
  return 0;
}
