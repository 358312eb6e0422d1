// CPU feature detection from CPUID and XCR0 (cpu_features.hpp). The bit positions are those
// of Intel's SDM, volume 2, CPUID and XGETBV; AMD uses the same ones.
#include "cpu/cpu_features.hpp"

#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace rnnx::cpu {
namespace {

constexpr bool bit(unsigned long long word, int n) {
  return ((word >> n) & 1ull) != 0;
}

// XCR0 state components: 1 SSE (xmm), 2 AVX (upper ymm), 5 opmask, 6 upper zmm0-15,
// 7 zmm16-31, 17 tile configuration, 18 tile data.
constexpr unsigned long long kXcr0Avx = (1ull << 1) | (1ull << 2);
constexpr unsigned long long kXcr0Avx512 = kXcr0Avx | (1ull << 5) | (1ull << 6) | (1ull << 7);
constexpr unsigned long long kXcr0Amx = (1ull << 17) | (1ull << 18);

CpuidWords read_cpuid() {
  CpuidWords w;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return w;
  w.leaf1_ecx = c;
  constexpr int kOsxsave = 27;  // the OS enabled XGETBV (and XSAVE)
  if (bit(c, kOsxsave)) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    w.xcr0 = (static_cast<unsigned long long>(hi) << 32) | lo;
  }
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    const unsigned max_subleaf = a;
    w.leaf7_ebx = b;
    w.leaf7_ecx = c;
    w.leaf7_edx = d;
    if (max_subleaf >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d)) w.leaf7_1_eax = a;
  }
#endif
  return w;
}

}  // namespace

CpuFeatures decode_cpu_features(const CpuidWords& w) {
  CpuFeatures f;
  const bool os_avx = (w.xcr0 & kXcr0Avx) == kXcr0Avx;
  const bool os_avx512 = (w.xcr0 & kXcr0Avx512) == kXcr0Avx512;
  const bool os_amx = (w.xcr0 & kXcr0Amx) == kXcr0Amx;
  const bool avx = os_avx && bit(w.leaf1_ecx, 28);
  f.fma = avx && bit(w.leaf1_ecx, 12);
  f.avx2 = avx && bit(w.leaf7_ebx, 5);
  f.avx512f = os_avx512 && bit(w.leaf7_ebx, 16);
  f.avx512dq = f.avx512f && bit(w.leaf7_ebx, 17);
  f.avx512bw = f.avx512f && bit(w.leaf7_ebx, 30);
  f.avx512vl = f.avx512f && bit(w.leaf7_ebx, 31);
  f.avx512_vnni = f.avx512f && bit(w.leaf7_ecx, 11);
  f.avx512_bf16 = f.avx512f && bit(w.leaf7_1_eax, 5);
  f.avx_vnni = avx && bit(w.leaf7_1_eax, 4);
  f.amx_bf16 = os_amx && bit(w.leaf7_edx, 22);
  f.amx_tile = os_amx && bit(w.leaf7_edx, 24);
  f.amx_int8 = os_amx && bit(w.leaf7_edx, 25);
  return f;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = decode_cpu_features(read_cpuid());
  return features;
}

std::string cpu_feature_names(const CpuFeatures& f) {
  const std::pair<bool, const char*> named[] = {
      {f.avx2, "avx2"},
      {f.fma, "fma"},
      {f.avx512f, "avx512f"},
      {f.avx512bw, "avx512bw"},
      {f.avx512vl, "avx512vl"},
      {f.avx512dq, "avx512dq"},
      {f.avx512_bf16, "avx512-bf16"},
      {f.avx512_vnni, "avx512-vnni"},
      {f.avx_vnni, "avx-vnni"},
      {f.amx_tile, "amx-tile"},
      {f.amx_bf16, "amx-bf16"},
      {f.amx_int8, "amx-int8"},
  };
  std::string out;
  for (const auto& [present, name] : named) {
    if (!present) continue;
    if (!out.empty()) out += ' ';
    out += name;
  }
  return out;
}

bool amx_tiles_granted() {
#if defined(__x86_64__) && defined(__linux__)
  static const bool granted = [] {
    constexpr long kArchReqXcompPerm = 0x1023;  // arch_prctl: ask for an XSAVE feature
    constexpr long kXfeatureXtileData = 18;     // the AMX tile data state
    if (!cpu_features().amx_tile) return false;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtileData) == 0;
  }();
  return granted;
#else
  return false;
#endif
}

}  // namespace rnnx::cpu
