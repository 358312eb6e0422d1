// CPU instruction-set detection for `rnnx info` and the backend's name. The kernels are
// compiled for the baseline x86-64 and vectorised by the compiler, so for now what they
// use is what the machine has; per-ISA kernels with run-time dispatch come later.
#include "rnnx/version.hpp"

namespace rnnx {

const char* cpu_isa_detected() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512bf16")) return "avx512-bf16";
  if (__builtin_cpu_supports("avx512f")) return "avx512";
  if (__builtin_cpu_supports("avx2")) return "avx2";
#endif
  return "scalar";
}

const char* cpu_isa_used() {
  return cpu_isa_detected();
}

}  // namespace rnnx
