// Keeps the plugin's glibc floor at 2.34 (manylinux_2_34: Ubuntu 22.04, RHEL 9): Debian 12's
// static libstdc++ calls arc4random, new in glibc 2.36, from std::random_device (random.o,
// which std::runtime_error's string code drags in; rnnx uses no random_device). This hidden
// definition satisfies that reference inside the plugin, over getrandom(2) (glibc 2.25), so
// the plugin imports no arc4random. docs/packaging.md has the rest of the floor.
#include <sys/random.h>

#include <cstdint>

extern "C" __attribute__((visibility("hidden"))) uint32_t arc4random(void) noexcept {
  uint32_t v = 0;
  // getrandom of 4 bytes is never cut short once the pool is ready; EINTR before that retries.
  while (getrandom(&v, sizeof v, 0) != static_cast<ssize_t>(sizeof v)) {
  }
  return v;
}
