// What every fuzz target shares: the rule that an input either succeeds or is refused with
// an rnnx::Error of an input code, and the process set-up (one thread, no algorithm search,
// so a run is fast and repeatable). Anything else aborts, which libFuzzer reports as a crash.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>
#include <utility>

#include "rnnx/error.hpp"

namespace rnnx::fuzz {

[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "rnnx fuzz finding: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// Runs `body`; returns true when it succeeded, false when it was refused with an rnnx::Error
// whose code says the input is wrong (invalid_argument) or cannot run here (unsupported).
// Every other outcome is a finding: internal or out_of_memory codes, an empty message, and
// exceptions of any other type (std::out_of_range from a container, bad_alloc, ...).
template <typename Body>
bool refused_cleanly(const char* what, Body&& body) {
  try {
    std::forward<Body>(body)();
    return true;
  } catch (const Error& e) {
    if (e.code() != Status::invalid_argument && e.code() != Status::unsupported) {
      finding(std::string(what) + ": rnnx::Error with code " + to_string(e.code()) + ": " +
              e.what());
    }
    if (e.what() == nullptr || e.what()[0] == '\0') finding(std::string(what) + ": empty message");
    return false;
  } catch (const std::exception& e) {
    finding(std::string(what) + ": unexpected exception (not rnnx::Error): " + e.what());
  } catch (...) {
    finding(std::string(what) + ": unexpected exception of unknown type");
  }
}

// Before the first input: a single thread and the heuristic's algorithm choice (the search
// would time candidates on every plan and write its cache file).
inline void set_up_process() {
  setenv("OMP_NUM_THREADS", "1", 1);
  setenv("RNNX_AUTOTUNE", "0", 1);
  unsetenv("RNNX_AUTOTUNE_CACHE");
}

}  // namespace rnnx::fuzz
