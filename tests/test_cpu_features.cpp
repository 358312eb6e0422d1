// CPU feature detection (src/cpu/cpu_features.cpp): the CPUID and XCR0 bits decode to the
// right features, a feature the OS does not save the registers of is absent, and the level
// the kernels run at follows from the features.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "cpu/cpu_features.hpp"
#include "cpu/isa.hpp"
#include "rnnx/cpu.hpp"

namespace rnnx {
namespace {

using cpu::CpuidWords;
using cpu::decode_cpu_features;

constexpr unsigned kLeaf1Fma = 1u << 12, kLeaf1Osxsave = 1u << 27, kLeaf1Avx = 1u << 28;
constexpr unsigned kLeaf7Avx2 = 1u << 5, kLeaf7Avx512f = 1u << 16, kLeaf7Avx512dq = 1u << 17,
                   kLeaf7Avx512bw = 1u << 30, kLeaf7Avx512vl = 1u << 31;
constexpr unsigned kLeaf7EcxVnni = 1u << 11;
constexpr unsigned kLeaf7EdxAmxBf16 = 1u << 22, kLeaf7EdxAmxTile = 1u << 24,
                   kLeaf7EdxAmxInt8 = 1u << 25;
constexpr unsigned kLeaf71AvxVnni = 1u << 4, kLeaf71Avx512Bf16 = 1u << 5;
constexpr unsigned long long kXcr0Avx = 0x7, kXcr0Avx512 = 0xe7, kXcr0Amx = 0x600e7;

// A Sapphire Rapids-like CPU with every feature, its OS saving every state.
CpuidWords everything() {
  CpuidWords w;
  w.leaf1_ecx = kLeaf1Fma | kLeaf1Osxsave | kLeaf1Avx;
  w.leaf7_ebx = kLeaf7Avx2 | kLeaf7Avx512f | kLeaf7Avx512dq | kLeaf7Avx512bw | kLeaf7Avx512vl;
  w.leaf7_ecx = kLeaf7EcxVnni;
  w.leaf7_edx = kLeaf7EdxAmxBf16 | kLeaf7EdxAmxTile | kLeaf7EdxAmxInt8;
  w.leaf7_1_eax = kLeaf71AvxVnni | kLeaf71Avx512Bf16;
  w.xcr0 = kXcr0Amx;
  return w;
}

TEST(CpuFeatures, DecodesEveryFeature) {
  EXPECT_EQ(cpu::cpu_feature_names(decode_cpu_features(everything())),
            "avx2 fma avx512f avx512bw avx512vl avx512dq avx512-bf16 avx512-vnni avx-vnni "
            "amx-tile amx-bf16 amx-int8");
}

TEST(CpuFeatures, NothingWithoutCpuid) {
  EXPECT_EQ(cpu::cpu_feature_names(decode_cpu_features(CpuidWords{})), "");
}

TEST(CpuFeatures, StatesTheOsDoesNotSaveAreAbsent) {
  CpuidWords w = everything();
  w.xcr0 = kXcr0Avx512;  // no tile state (an OS that does not hand out AMX)
  EXPECT_EQ(cpu::cpu_feature_names(decode_cpu_features(w)),
            "avx2 fma avx512f avx512bw avx512vl avx512dq avx512-bf16 avx512-vnni avx-vnni");
  w.xcr0 = kXcr0Avx;  // no zmm state: the CPU's AVX-512 cannot be used
  EXPECT_EQ(cpu::cpu_feature_names(decode_cpu_features(w)), "avx2 fma avx-vnni");
  w.xcr0 = 0;  // OSXSAVE off: not even AVX
  EXPECT_EQ(cpu::cpu_feature_names(decode_cpu_features(w)), "");
}

TEST(CpuFeatures, Zen4HasEvexVnniButNoVexVnni) {
  CpuidWords w = everything();
  w.leaf7_edx = 0;
  w.leaf7_1_eax = kLeaf71Avx512Bf16;
  w.xcr0 = kXcr0Avx512;
  const cpu::CpuFeatures f = decode_cpu_features(w);
  EXPECT_TRUE(f.avx512_vnni);
  EXPECT_FALSE(f.avx_vnni);
  EXPECT_FALSE(f.amx_int8);
}

TEST(CpuFeatures, HaswellHasAvx2AndFmaOnly) {
  CpuidWords w;
  w.leaf1_ecx = kLeaf1Fma | kLeaf1Osxsave | kLeaf1Avx;
  w.leaf7_ebx = kLeaf7Avx2;
  w.xcr0 = kXcr0Avx;
  EXPECT_EQ(cpu::cpu_feature_names(decode_cpu_features(w)), "avx2 fma");
}

// The level the kernels run at is the one the machine's features give: the public string
// lists what the level needs, and nothing the level would need is missing.
TEST(CpuFeatures, DetectedLevelFollowsTheFeatures) {
  const cpu::CpuFeatures& f = cpu::cpu_features();
  EXPECT_EQ(cpu::cpu_feature_names(f), cpu_features_detected());
  const cpu::Isa isa = cpu::isa_detected();
  const bool avx2 = f.avx2 && f.fma;
  const bool avx512 = avx2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq;
  EXPECT_EQ(isa >= cpu::Isa::avx2, avx2) << cpu_features_detected();
  EXPECT_EQ(isa >= cpu::Isa::avx512, avx512) << cpu_features_detected();
  EXPECT_EQ(isa >= cpu::Isa::avx512_bf16, avx512 && f.avx512_bf16) << cpu_features_detected();
  // RNNX_TEST_EXPECT_ISA (the qemu runs of scripts/test.sh: -cpu Westmere, -cpu Haswell)
  // names the level this machine must be detected at.
  if (const char* want = std::getenv("RNNX_TEST_EXPECT_ISA")) {
    EXPECT_STREQ(cpu_isa_detected(), want) << cpu_features_detected();
  }
}

}  // namespace
}  // namespace rnnx
