// Register-only loops that measure what one core's arithmetic units can do, each in its own
// translation unit built with its ISA's flags (CMakeLists.txt); main.cpp calls one only on
// a machine that has its ISA. Each returns the floating-point operations it performed, and
// keeps its accumulators live so the compiler cannot drop the work.
#pragma once

#include <cstdint>

namespace rnnx::peak {

// float32 FMAs on independent accumulators (vfmadd231ps, 2 flops per lane): enough chains
// to cover the FMA latency on both ports.
double fma_avx512_f32(int64_t iterations);
double fma_avx2_f32(int64_t iterations);

// bf16 dot products on AMX tiles (tdpbf16ps: 16 x 16 float32 results, 32 bf16 products each,
// 16,384 flops per instruction) into four independent accumulator tiles. The caller has asked
// the OS for the tile state (amx_permitted()).
double amx_bf16(int64_t iterations);
// Whether the OS lets this process use AMX tiles (asks once: arch_prctl XCOMP_PERM).
bool amx_permitted();

}  // namespace rnnx::peak
