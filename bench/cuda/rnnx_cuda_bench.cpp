// rnnx's cuda backend on one bench case (bench_case.hpp: the same names, lengths and FLOP
// counts as `rnnx bench`), timed per call including the device synchronisation, median of
// --repeat after --warmup: prints one JSON object per mode with the lengths, so that
// bench/cuda/torch_gpu_peer.py runs PyTorch on exactly the same batch. Built with the cuda
// backend; its flags are parsed by hand because the GPU machine has no CLI11.
//   rnnx_cuda_bench --cell lstm --input 1024 --hidden 1024 --seq 100 --batch 64
//                   [--layers 1] [--bidirectional] [--proj 0] [--lengths full|uniform|longtail]
//                   [--seed 0] [--mode infer,fwdbwd] [--math fp32|allow_conversion]
//                   [--dtype float32|bfloat16] [--repeat 20] [--warmup 3]
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_case.hpp"
#include "rnnx/rnnx.hpp"

namespace {

using namespace rnnx;

void cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

struct DeviceBuffer {
  explicit DeviceBuffer(size_t n) {
    if (n) cuda(cudaMalloc(&p, n), "cudaMalloc");
  }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* p = nullptr;
};

// Uniform in [lo, hi) on the host, in the dtype, copied to the device (never zeros: they can
// time faster than real data).
void fill(DeviceBuffer& b, DataType dt, int64_t n, double lo, double hi, bench::SplitMix64& rng) {
  std::vector<unsigned char> host(static_cast<size_t>(n * dtype_size(dt)));
  for (int64_t i = 0; i < n; ++i) {
    const double v = lo + (hi - lo) * rng.uniform01();
    if (dt == DataType::f32) {
      reinterpret_cast<float*>(host.data())[i] = static_cast<float>(v);
    } else if (dt == DataType::f64) {
      reinterpret_cast<double*>(host.data())[i] = v;
    } else {
      const float f = static_cast<float>(v);
      uint32_t u;
      std::memcpy(&u, &f, 4);
      reinterpret_cast<uint16_t*>(host.data())[i] =
          static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
    }
  }
  if (n) cuda(cudaMemcpy(b.p, host.data(), host.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
}

std::map<std::string, std::string> parse(int argc, char** argv) {
  std::map<std::string, std::string> o = {
      {"cell", "lstm"}, {"layers", "1"},   {"proj", "0"},         {"lengths", "full"},
      {"seed", "0"},    {"mode", "infer"}, {"math", "fp32"},      {"dtype", "float32"},
      {"repeat", "20"}, {"warmup", "3"},   {"bidirectional", "0"}};
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--", 2) != 0)
      throw std::invalid_argument(std::string("unexpected argument ") + argv[i]);
    const std::string k(argv[i] + 2);
    if (k == "bidirectional") {
      o.insert_or_assign(k, std::string(1, '1'));  // (o[k] = "1" trips GCC 12's -Wrestrict bug)
      continue;
    }
    if (i + 1 >= argc) throw std::invalid_argument("--" + k + " needs a value");
    o[k] = argv[++i];
  }
  for (const char* need : {"input", "hidden", "seq", "batch"})
    if (!o.count(need)) throw std::invalid_argument(std::string("--") + need + " is required");
  return o;
}

void run(const std::map<std::string, std::string>& o) {
  bench::BenchCase bc;
  bc.cell = o.at("cell");
  bc.layers = std::stoll(o.at("layers"));
  bc.bidirectional = o.at("bidirectional") == "1";
  bc.input = std::stoll(o.at("input"));
  bc.hidden = std::stoll(o.at("hidden"));
  bc.proj = std::stoll(o.at("proj"));
  bc.seq = std::stoll(o.at("seq"));
  bc.batch = std::stoll(o.at("batch"));
  bench::validate(bc);
  const uint64_t seed = std::stoull(o.at("seed"));
  const auto lengths = bench::make_lengths(o.at("lengths"), bc.seq, bc.batch, seed);

  Config c;
  c.cell = cell_from_string(bc.cell == "gru-orig" ? "gru" : bc.cell);
  c.gru_linear_before_reset = bc.cell != "gru-orig";
  c.input_size = bc.input;
  c.hidden_size = bc.hidden;
  c.proj_size = bc.proj;
  c.num_layers = bc.layers;
  c.bidirectional = bc.bidirectional;
  c.math = math_mode_from_string(o.at("math"));
  c.dtype = dtype_from_string(o.at("dtype"));
  Plan plan(c, SequenceShape::padded(bc.seq, bc.batch, lengths), PlanOptions{Backend::cuda, 0});
  const DataType dt = c.dtype;
  const size_t es = static_cast<size_t>(dtype_size(dt));
  const bool lstm = c.cell == CellType::lstm;
  DeviceBuffer x(plan.x_numel() * es), y(plan.y_numel() * es), dx(plan.x_numel() * es),
      dy(plan.y_numel() * es), h0(plan.h_numel() * es), hy(plan.h_numel() * es),
      dh0(plan.h_numel() * es), dhy(plan.h_numel() * es), c0(plan.c_numel() * es),
      cy(plan.c_numel() * es), dc0(plan.c_numel() * es), dcy(plan.c_numel() * es),
      w(plan.weights_numel() * es), dw(plan.weights_numel() * es);
  const size_t ws_bytes =
      std::max({plan.forward_workspace_size(false), plan.forward_workspace_size(true),
                plan.backward_workspace_size()});
  DeviceBuffer ws(ws_bytes), reserve(plan.reserve_size());
  bench::SplitMix64 rng(seed + 1);
  const double k = 1.0 / std::sqrt(static_cast<double>(bc.hidden));
  fill(w, dt, plan.weights_numel(), -k, k, rng);
  for (auto [b, n] : {std::pair<DeviceBuffer*, int64_t>{&x, plan.x_numel()},
                      {&dy, plan.y_numel()},
                      {&h0, plan.h_numel()},
                      {&dhy, plan.h_numel()},
                      {&c0, plan.c_numel()},
                      {&dcy, plan.c_numel()}})
    fill(*b, dt, n, -1.0, 1.0, rng);

  for (const std::string& m : bench::split_list(o.at("mode"))) {
    const bench::Mode mode = bench::parse_modes(m).at(0);
    const bool training = mode != bench::Mode::infer;
    ForwardArgs f;
    f.x = x.p, f.h0 = h0.p, f.c0 = lstm ? c0.p : nullptr, f.weights = w.p, f.y = y.p, f.hy = hy.p;
    f.cy = lstm ? cy.p : nullptr;
    f.training = training;
    f.workspace = ws.p, f.workspace_size = ws_bytes;
    f.reserve = training ? reserve.p : nullptr;
    f.reserve_size = training ? plan.reserve_size() : 0;
    BackwardArgs b;
    b.x = x.p, b.h0 = f.h0, b.c0 = f.c0, b.weights = w.p, b.dy = dy.p, b.dhy = dhy.p;
    b.dcy = lstm ? dcy.p : nullptr;
    b.dx = dx.p, b.dh0 = dh0.p, b.dc0 = lstm ? dc0.p : nullptr, b.dweights = dw.p;
    b.workspace = ws.p, b.workspace_size = ws_bytes;
    b.reserve = reserve.p, b.reserve_size = plan.reserve_size();
    const bench::Timing t =
        bench::time_runs(std::stoi(o.at("warmup")), std::stoi(o.at("repeat")), [&] {
          plan.forward(f);
          if (mode == bench::Mode::fwdbwd) plan.backward(b);
          cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
        });
    const double flops = bench::flops(bc, mode, plan.tokens());
    std::string lens;
    for (int64_t len : lengths) {
      if (!lens.empty()) lens += ',';
      lens += std::to_string(len);
    }
    std::printf(
        "{\"runner\": \"rnnx-cuda\", \"impl\": \"%s\", \"case\": \"%s\", \"mode\": \"%s\", "
        "\"median_ms\": %.4f, \"min_ms\": %.4f, \"max_ms\": %.4f, \"gflops\": %.1f, "
        "\"tokens\": %lld, \"lengths\": [%s]}\n",
        plan.impl_name().c_str(), bench::case_name(bc, lengths).c_str(), bench::to_string(mode),
        t.median_ms, t.min_ms, t.max_ms, t.median_ms > 0 ? flops / (t.median_ms * 1e6) : 0.0,
        static_cast<long long>(plan.tokens()), lens.c_str());
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rnnx_cuda_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
