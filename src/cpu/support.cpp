// What the cpu backend can run: every PyTorch-style feature; ONNX's extra cell options
// (peepholes, gate clip, coupled input-forget gate, reverse direction, other activation
// functions) run on the reference backend only, for now.
#include <string>

#include "core/backend.hpp"
#include "rnnx/error.hpp"

namespace rnnx {

void check_cpu_support(const Config& c) {
  if (!uses_onnx_options(c)) return;
  std::string what;
  auto add = [&](bool on, const char* name) {
    if (on) what += (what.empty() ? "" : ", ") + std::string(name);
  };
  add(c.peephole, "peephole");
  add(c.gate_clip > 0.0, "gate_clip");
  add(c.input_forget, "input_forget");
  add(c.reverse, "reverse");
  if (what.empty()) what = "non-default activations";
  throw Error(Status::unsupported,
              "backend cpu does not support the ONNX cell option(s) " + what +
                  " yet; backend reference runs them");
}

}  // namespace rnnx
