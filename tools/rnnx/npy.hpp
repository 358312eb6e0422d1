// A small NumPy .npy reader and writer: format versions 1.0, 2.0 and 3.0, little-endian
// float32/float64/int32/int64, C order only. Every error is an rnnx::Error
// (invalid_argument for a bad file, internal for a failed write) naming the file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rnnx::tool {

enum class NpyType { f4, f8, i4, i8 };

const char* npy_descr(NpyType type);      // "<f4", ...
const char* npy_type_name(NpyType type);  // "float32", ...
int64_t npy_item_size(NpyType type);

struct NpyArray {
  std::string path;  // where it was read from, for messages
  NpyType type = NpyType::f4;
  std::vector<int64_t> shape;
  std::vector<unsigned char> data;  // numel * item size bytes, C order, little-endian

  int64_t numel() const;
  bool is_float() const { return type == NpyType::f4 || type == NpyType::f8; }
  // All elements converted to double (exact for f4/f8; i8 above 2^53 rounds).
  std::vector<double> to_double() const;
  // Integer elements as int64; throws for floating-point arrays.
  std::vector<int64_t> to_int64() const;
};

// "(3, 4)" in NumPy's notation, "(3,)" for one dimension, "()" for a scalar.
std::string shape_string(const std::vector<int64_t>& shape);

NpyArray read_npy(const std::string& path);
// Parses the bytes of a whole .npy file; `path` is only used in messages.
NpyArray parse_npy(const std::string& path, const std::vector<unsigned char>& bytes);

// Writes `data` (numel * item size bytes, C order) as a version 1.0 file, or 2.0 when the
// header does not fit in 65535 bytes.
void write_npy(const std::string& path, NpyType type, const std::vector<int64_t>& shape,
               const void* data);

}  // namespace rnnx::tool
