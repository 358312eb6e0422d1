// write_values / read_values (convert.hpp): one switch over the data types on the storage
// types of core/bfloat16.hpp and core/float16.hpp.
#include <string>

#include "core/bfloat16.hpp"
#include "core/float16.hpp"
#include "rnnx/convert.hpp"
#include "rnnx/error.hpp"

namespace rnnx {
namespace {

void check_count(const char* fn, int64_t n) {
  if (n < 0) {
    throw Error(Status::invalid_argument,
                std::string(fn) + ": n (= " + std::to_string(n) + ") must be >= 0");
  }
}

[[noreturn]] void bad_dtype(const char* fn, DataType dtype) {
  throw Error(Status::invalid_argument,
              std::string(fn) + ": dtype (= " + std::to_string(static_cast<int>(dtype)) +
                  ") is not a DataType");
}

template <typename S>
void write_as(const double* src, void* dst, int64_t n) {
  auto* d = static_cast<S*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = static_cast<S>(src[i]);
}

template <typename S>
void read_as(const void* src, double* dst, int64_t n) {
  const auto* s = static_cast<const S*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<double>(static_cast<float>(s[i]));
}

}  // namespace

void write_values(DataType dtype, const double* src, void* dst, int64_t n) {
  check_count(__func__, n);
  switch (dtype) {
    case DataType::f32:
      return write_as<float>(src, dst, n);
    case DataType::f64:
      return write_as<double>(src, dst, n);
    case DataType::bf16:
      return write_as<core::bfloat16>(src, dst, n);
    case DataType::f16:
      return write_as<core::float16>(src, dst, n);
  }
  bad_dtype(__func__, dtype);
}

void read_values(DataType dtype, const void* src, double* dst, int64_t n) {
  check_count(__func__, n);
  switch (dtype) {
    case DataType::f32:
      return read_as<float>(src, dst, n);
    case DataType::f64: {
      const auto* s = static_cast<const double*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = s[i];
      return;
    }
    case DataType::bf16:
      return read_as<core::bfloat16>(src, dst, n);
    case DataType::f16:
      return read_as<core::float16>(src, dst, n);
  }
  bad_dtype(__func__, dtype);
}

}  // namespace rnnx
