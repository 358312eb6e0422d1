// A test-only shared object, loaded with LD_PRELOAD into a process that uses librnnx (the
// Python suite's fault test runs its interpreter so): it replaces the form of operator new
// rnnx's host memory allocates its buffers with (aligned, nothrow; core/memory.cpp) and
// refuses requests on demand, so that the shipped library carries no test hook.
//
// RNNX_TEST_FAIL_ALLOC_AFTER=N: the first N such allocations after the variable takes that
// value succeed, every later one fails (returns null), until it is unset or changed; a value
// that is not a count >= 0 aborts the process with a message. Read at every call: they are
// few and large, and a test switches it around one call.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>

namespace {

bool refuse() {
  static std::mutex mutex;
  static std::string seen;
  static long long made = 0;
  const char* env = std::getenv("RNNX_TEST_FAIL_ALLOC_AFTER");
  std::lock_guard<std::mutex> lock(mutex);
  if (env == nullptr || *env == '\0') {
    seen.clear();
    return false;
  }
  if (seen != env) {
    seen = env;
    made = 0;
  }
  char* end = nullptr;
  const long long after = std::strtoll(env, &end, 10);
  if (*end != '\0' || after < 0) {
    std::fprintf(stderr,
                 "fail_alloc_preload: RNNX_TEST_FAIL_ALLOC_AFTER (= \"%s\") must be a "
                 "count >= 0, or unset\n",
                 env);
    std::abort();
  }
  if (made >= after) return true;
  ++made;
  return false;
}

}  // namespace

void* operator new(std::size_t n, std::align_val_t al, const std::nothrow_t&) noexcept {
  if (refuse()) return nullptr;
  const std::size_t a = static_cast<std::size_t>(al);
  void* p = nullptr;
  return posix_memalign(&p, a < sizeof(void*) ? sizeof(void*) : a, n > 0 ? n : 1) == 0 ? p
                                                                                       : nullptr;
}

// Its deallocation (libstdc++'s frees with free() too; replaced as a pair all the same).
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
