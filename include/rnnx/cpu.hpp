// The cpu backend's controls: the instruction sets it uses (and a cap on them), its
// algorithm search, and what its bf16 GEMMs run on. docs/cpu.md has the details.
#pragma once

#include <string>

#include "rnnx/export.h"

RNNX_EXPORT_BEGIN
namespace rnnx {

// CPU instruction sets, as names from "scalar" < "avx2" < "avx512" < "avx512-bf16": the
// best the machine supports, and what the cpu backend's kernels use, which is the lower of
// that and the cap set by set_cpu_isa_limit() or, without one, by the environment variable
// RNNX_CPU_ISA. cpu_isa_used() throws Error (invalid_argument) when RNNX_CPU_ISA holds
// another name, and so does building a cpu plan.
const char* cpu_isa_detected();
const char* cpu_isa_used();
// The instruction-set features the CPU and the OS both provide, read from CPUID and XCR0,
// as names separated by spaces: "avx2 fma avx512f avx512bw avx512vl avx512dq avx512-bf16
// avx512-vnni avx-vnni amx-tile amx-bf16 amx-int8" (those present, in that order; "" on a
// machine with none of them, or not x86-64). Beside the levels above: kernels that need one
// feature (VNNI, AMX) check it, not the level.
const char* cpu_features_detected();

// Caps the instruction set of the cpu backend's kernels for the whole process, for the plans
// built from then on (a plan keeps the level it was built with, and its impl_name() shows
// it): "scalar", "avx2", "avx512" or "avx512-bf16" (case-insensitive); a level above what
// the machine supports means the best it supports. nullptr or "" removes the cap
// (RNNX_CPU_ISA applies again). Thread-safe; other names throw Error (invalid_argument).
// Results differ between levels only by float rounding.
void set_cpu_isa_limit(const char* isa);

// The cpu backend's algorithm search (docs/cpu.md): whether a new plan measures its
// candidates (environment variable RNNX_AUTOTUNE: unset or 1 yes, 0 no; other values throw
// Error(invalid_argument)), and the file its choices persist in (RNNX_AUTOTUNE_CACHE; empty:
// in memory for the process only).
bool autotune_enabled();
std::string autotune_cache_file();

// What the cpu backend runs the GEMMs of float32 plans with math mode allow_conversion on,
// for a plan built now: under the current ISA cap and RNNX_CPU_BF16_KERNEL: "amx-bf16" (AMX tiles),
// "avx512-bf16" (vdpbf16ps), or "none" (no AVX512-BF16 within the cap: they run in
// float32). Throws Error (invalid_argument) for a bad RNNX_CPU_ISA or RNNX_CPU_BF16_KERNEL.
const char* cpu_bf16_gemm();

// What the cpu backend runs plans of math mode int8 on, for a plan built now: under the
// current ISA cap and RNNX_CPU_INT8_KERNEL: "amx-int8" (AMX tiles), "avx512-vnni" (vpdpbusd),
// "scalar" (the definition, RNNX_CPU_INT8_KERNEL=scalar), or "none" (such a plan is
// refused). Throws Error (invalid_argument) for a bad RNNX_CPU_ISA or RNNX_CPU_INT8_KERNEL.
const char* cpu_int8_gemm();

}  // namespace rnnx
RNNX_EXPORT_END
