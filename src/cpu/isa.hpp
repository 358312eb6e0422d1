// The CPU instruction-set levels the cpu backend's kernels are built for, what the machine
// supports, and the cap set by RNNX_CPU_ISA or set_cpu_isa_limit(). Levels are ordered: a
// machine at one level runs every lower one.
#pragma once

#include <string>

namespace rnnx::cpu {

// The levels are x86-64's. Another architecture (aarch64) detects scalar, and every x86 name
// caps it at scalar. An aarch64 level (ASIMD/NEON, later SVE) cannot simply be appended: the
// cap is min(detected, cap), which would then hand an x86 level to an aarch64 machine capped
// with an x86 name; its detection (getauxval(AT_HWCAP)), its names and the order of the
// levels come per architecture, with kernel_dispatch.cpp, plain_gemm.cpp, packed_gemm.cpp
// and gemm.hpp's packed_f32_type() choosing its tables.
enum class Isa : int {
  scalar = 0,       // baseline x86-64 (SSE2), or any other architecture (on aarch64 its
                    // 16-byte vectors are ASIMD's, the baseline there)
  avx2 = 1,         // AVX2 + FMA
  avx512 = 2,       // AVX-512 F, BW, VL, DQ (+ AVX2, FMA)
  avx512_bf16 = 3,  // avx512 + AVX512-BF16 (bf16 dot products for the GEMMs)
};

// "scalar", "avx2", "avx512", "avx512-bf16".
const char* isa_name(Isa isa);
// Parses one of the names above; false for anything else.
bool isa_from_name(const char* name, Isa* out);

// The best level the machine (CPU and OS) supports.
Isa isa_detected();
// min(detected, cap), refusing an unknown RNNX_CPU_ISA (Error(invalid_argument) naming
// it): what a cpu plan reads once, when it is built, and keeps (its impl_name() shows it).
// `plan_cap` is the plan's own (PlanOptions::cpu.isa): "" defers to set_cpu_isa_limit() and
// RNNX_CPU_ISA, "auto" is no cap, a level name caps at it; another value is refused naming
// the option. Thread-safe.
Isa isa_for_plan(const std::string& plan_cap = "");

}  // namespace rnnx::cpu
