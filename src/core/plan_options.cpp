// The text form of the cpu backend's per-plan choices (PlanOptions::cpu): the C API and
// Python pass them as "isa=avx2 gemm=packed". The values belong to the cpu backend, which
// checks them when it builds a plan (cpu/algo.cpp, cpu/isa.cpp).
#include <string>
#include <utility>

#include "core/key_value_text.hpp"
#include "rnnx/error.hpp"
#include "rnnx/plan.hpp"

namespace rnnx {
namespace {

constexpr std::pair<const char*, std::string CpuChoices::*> kChoices[] = {
    {"isa", &CpuChoices::isa},
    {"gemm", &CpuChoices::gemm},
    {"time_loop", &CpuChoices::time_loop},
    {"directions", &CpuChoices::directions},
    {"input_projection", &CpuChoices::input_projection},
    {"search", &CpuChoices::search},
};

[[noreturn]] void invalid(const std::string& msg) {
  throw Error(Status::invalid_argument, msg);
}

}  // namespace

bool CpuChoices::empty() const {
  for (const auto& [name, member] : kChoices) {
    if (!(this->*member).empty()) return false;
  }
  return true;
}

std::string to_string(const CpuChoices& choices) {
  std::string s;
  for (const auto& [name, member] : kChoices) {
    const std::string& value = choices.*member;
    if (value.empty()) continue;
    if (!s.empty()) s += ' ';
    s += std::string(name) + "=" + value;
  }
  return s;
}

CpuChoices cpu_choices_from_string(const std::string& text) {
  CpuChoices out;
  for (const auto& [name, value] : core::parse_key_values(text, "cpu choices", "choice")) {
    std::string* slot = nullptr;
    std::string known;
    for (const auto& [n, member] : kChoices) {
      if (name == n) slot = &(out.*member);
      if (!known.empty()) known += ", ";
      known += n;
    }
    if (slot == nullptr) {
      invalid("cpu choices: \"" + name + "\" is not a choice of the cpu backend (" + known + ")");
    }
    if (value.empty()) invalid("cpu choices: " + name + " has no value");
    *slot = value;
  }
  return out;
}

}  // namespace rnnx
