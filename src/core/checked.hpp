// Size arithmetic that refuses to overflow: every buffer size in rnnx is computed with
// these, so a huge shape gives a clear error instead of a wrapped-around allocation.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "rnnx/error.hpp"

namespace rnnx::core {

inline int64_t checked_mul(int64_t a, int64_t b, const char* what) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) {
    throw Error(Status::invalid_argument, std::string(what) + ": size " + std::to_string(a) +
                                              " * " + std::to_string(b) + " overflows int64");
  }
  return r;
}

inline int64_t checked_add(int64_t a, int64_t b, const char* what) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) {
    throw Error(Status::invalid_argument, std::string(what) + ": size " + std::to_string(a) +
                                              " + " + std::to_string(b) + " overflows int64");
  }
  return r;
}

// Elements to bytes, also refused above what size_t and a sane allocation can hold.
inline int64_t checked_bytes(int64_t elements, int64_t element_size, const char* what) {
  return checked_mul(elements, element_size, what);
}

}  // namespace rnnx::core
