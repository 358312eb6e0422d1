// What the processor and the operating system let the cpu backend use, read once from CPUID
// and from XCR0 (the register states the OS saves on a context switch): an instruction set
// needs both. Read directly, not through a compiler's builtin, so that every toolchain that
// builds rnnx (GCC, clang, zig's clang for the wheels) gets the same answer.
#pragma once

#include <string>

namespace rnnx::cpu {

struct CpuFeatures {
  bool avx2 = false, fma = false;  // with the OS's ymm state
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;  // zmm, opmask
  bool avx512_bf16 = false;                                                    // vdpbf16ps
  bool avx512_vnni = false;  // vpdpbusd on zmm (EVEX)
  bool avx_vnni = false;     // vpdpbusd on ymm (VEX; a Zen 4 lacks it)
  bool amx_tile = false, amx_bf16 = false, amx_int8 = false;  // with the OS's tile state
};

// The machine's, read once (thread-safe). All false on other architectures.
const CpuFeatures& cpu_features();

// Whether this process may use AMX tiles: the CPU has them and Linux handed out their state
// (arch_prctl ARCH_REQ_XCOMP_PERM, asked once, on the first call). False elsewhere.
bool amx_tiles_granted();

// The names of the features present, in the order of the struct, separated by spaces
// ("avx2 fma avx512f ... amx-int8"); "" when none.
std::string cpu_feature_names(const CpuFeatures& f);

// Reads the features from raw CPUID words and XCR0: leaf 1 ECX, leaf 7.0 EBX/ECX/EDX,
// leaf 7.1 EAX. Exposed so that tests can check the decoding without the machine's CPU.
struct CpuidWords {
  unsigned leaf1_ecx = 0;
  unsigned leaf7_ebx = 0, leaf7_ecx = 0, leaf7_edx = 0;
  unsigned leaf7_1_eax = 0;
  unsigned long long xcr0 = 0;  // 0 when OSXSAVE is off (XGETBV would fault)
};
CpuFeatures decode_cpu_features(const CpuidWords& w);

}  // namespace rnnx::cpu
