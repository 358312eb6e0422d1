// CPU instruction-set detection and the cap on what the cpu backend's kernels use: the
// environment variable RNNX_CPU_ISA (read once) and set_cpu_isa_limit() (which overrides
// it). A plan reads the level once, when it is built (isa_for_plan), and keeps it.
#include "cpu/isa.hpp"

#include <strings.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>

#include "cpu/cpu_features.hpp"
#include "rnnx/cpu.hpp"
#include "rnnx/error.hpp"

namespace rnnx::cpu {
namespace {

constexpr const char* kNames[] = {"scalar", "avx2", "avx512", "avx512-bf16"};
constexpr const char* kNameList = "scalar, avx2, avx512, avx512-bf16";
constexpr int kNoCap = -1;
constexpr int kUnknownName = -2;

Isa detect() {
  const CpuFeatures& f = cpu_features();
  const bool avx2 = f.avx2 && f.fma;
  // The AVX-512 kernels are built with -mavx512f -mavx512bw -mavx512vl -mavx512dq.
  const bool avx512 = avx2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq;
  if (avx512 && f.avx512_bf16) return Isa::avx512_bf16;
  if (avx512) return Isa::avx512;
  if (avx2) return Isa::avx2;
  return Isa::scalar;
}

struct EnvCap {
  int level = kNoCap;  // an Isa, kNoCap or kUnknownName
  std::string value;
};

const EnvCap& env_cap() {
  static const EnvCap cap = [] {
    EnvCap c;
    const char* v = std::getenv("RNNX_CPU_ISA");
    if (v == nullptr || *v == '\0') return c;
    c.value = v;
    Isa isa;
    c.level = isa_from_name(v, &isa) ? static_cast<int>(isa) : kUnknownName;
    return c;
  }();
  return cap;
}

// set_cpu_isa_limit(); kNoCap defers to the environment.
std::atomic<int> g_api_cap{kNoCap};

int cap_level() {
  const int api = g_api_cap.load(std::memory_order_relaxed);
  return api != kNoCap ? api : env_cap().level;
}

}  // namespace

const char* isa_name(Isa isa) {
  return kNames[static_cast<int>(isa)];
}

bool isa_from_name(const char* name, Isa* out) {
  for (int i = 0; i < 4; ++i) {
    if (strcasecmp(name, kNames[i]) == 0) {
      *out = static_cast<Isa>(i);
      return true;
    }
  }
  return false;
}

Isa isa_detected() {
  static const Isa detected = detect();
  return detected;
}

Isa isa_for_plan(const std::string& plan_cap) {
  const int detected = static_cast<int>(isa_detected());
  if (plan_cap == "auto") return static_cast<Isa>(detected);
  if (!plan_cap.empty()) {
    Isa isa;
    if (!isa_from_name(plan_cap.c_str(), &isa)) {
      throw Error(Status::invalid_argument, "cpu choice isa (= \"" + plan_cap +
                                                "\") must be one of " + kNameList + ", or auto");
    }
    return static_cast<Isa>(std::min(detected, static_cast<int>(isa)));
  }
  const int cap = cap_level();
  if (cap == kUnknownName) {
    throw Error(Status::invalid_argument, "RNNX_CPU_ISA (= \"" + env_cap().value +
                                              "\") must be one of " + kNameList + ", or unset");
  }
  return static_cast<Isa>(cap < 0 ? detected : std::min(detected, cap));
}

}  // namespace rnnx::cpu

namespace rnnx {

const char* cpu_isa_detected() {
  return cpu::isa_name(cpu::isa_detected());
}

const char* cpu_features_detected() {
  static const std::string names = cpu::cpu_feature_names(cpu::cpu_features());
  return names.c_str();
}

const char* cpu_isa_used() {
  return cpu::isa_name(cpu::isa_for_plan());
}

void set_cpu_isa_limit(const char* isa) {
  if (isa == nullptr || *isa == '\0') {
    cpu::g_api_cap.store(cpu::kNoCap, std::memory_order_relaxed);
    return;
  }
  cpu::Isa level;
  if (!cpu::isa_from_name(isa, &level)) {
    throw Error(Status::invalid_argument, std::string("set_cpu_isa_limit: isa (= \"") + isa +
                                              "\") must be one of " + cpu::kNameList);
  }
  cpu::g_api_cap.store(static_cast<int>(level), std::memory_order_relaxed);
}

}  // namespace rnnx
