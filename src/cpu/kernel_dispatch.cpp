// Picks the step-kernel table of an instruction-set level (see kernel_dispatch.hpp).
#include "cpu/kernel_dispatch.hpp"

#include <algorithm>
#include <type_traits>

namespace rnnx::cpu {

namespace scalar {
extern const StepKernels<float> kStepKernelsF32;
extern const StepKernels<double> kStepKernelsF64;
}  // namespace scalar
#if RNNX_CPU_X86_KERNELS
namespace avx2 {
extern const StepKernels<float> kStepKernelsF32;
}  // namespace avx2
namespace avx512 {
extern const StepKernels<float> kStepKernelsF32;
}  // namespace avx512
#endif

template <typename T>
const StepKernels<T>& step_kernels(Isa isa) {
  if constexpr (std::is_same_v<T, double>) {
    // float64 stays on libm's exp and tanh: it is the precise mode, and its GEMMs dominate.
    (void)isa;
    return scalar::kStepKernelsF64;
  } else {
    isa = std::min(isa, isa_detected());
#if RNNX_CPU_X86_KERNELS
    if (isa >= Isa::avx512) return avx512::kStepKernelsF32;
    if (isa >= Isa::avx2) return avx2::kStepKernelsF32;
#endif
    // An aarch64 ASIMD table would be picked here, under its own build macro (CMakeLists.txt,
    // RNNX_CPU_ISA_LEVELS) and level (isa.hpp).
    return scalar::kStepKernelsF32;
  }
}

template const StepKernels<float>& step_kernels<float>(Isa);
template const StepKernels<double>& step_kernels<double>(Isa);

}  // namespace rnnx::cpu
