// One iteration's hint of a spin-wait (the pool's workers waiting for work, the team loops'
// barrier), so that the waiting core yields its pipeline to its sibling hyperthread and does
// not flood the memory system: `pause` on x86 (about 10-140 cycles, by CPU), and on aarch64
// `isb`, whose delay is of that order, where `yield` is a no-op on most cores and would make
// the spin counts calibrated on x86 far shorter in time. Elsewhere nothing.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace rnnx::cpu {

inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("isb" ::: "memory");
#endif
}

}  // namespace rnnx::cpu
