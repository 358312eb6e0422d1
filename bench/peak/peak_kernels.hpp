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

// int8 multiply-adds the AVX2 way, without VNNI (vpmaddubsw: 32 uint8 x int8 products summed
// in pairs into int16 with saturation; vpmaddwd by ones and vpaddd into int32): 64 integer
// operations (32 multiply-adds) per chain step, counted like flops. The upper bound of an
// int8 kernel on an AVX2 CPU without VNNI (docs/int8.md weighs it against float32's FMA).
double int8_avx2_maddubs(int64_t iterations);

// int8 multiply-adds with AVX512-VNNI on registers (vpdpbusd: 64 uint8 x int8 products summed
// in fours into 16 int32, no saturation): 128 integer operations per instruction, counted like
// flops. The bound of rnnx's `int8-avx512-vnni` kernel and of every int8 peer on a CPU
// without AMX (docs/int8.md, "The arithmetic").
double int8_avx512_vnni(int64_t iterations);

// bf16 dot products on AMX tiles (tdpbf16ps: 16 x 16 float32 results, 32 bf16 products each,
// 16,384 flops per instruction) into four independent accumulator tiles. The caller has asked
// the OS for the tile state (amx_permitted()).
double amx_bf16(int64_t iterations);
// Whether the OS lets this process use AMX tiles (asks once: arch_prctl XCOMP_PERM).
bool amx_permitted();

}  // namespace rnnx::peak
