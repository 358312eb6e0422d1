// .npy files: the header is a Python dict literal ({'descr': '<f4', 'fortran_order': False,
// 'shape': (2, 3), }) after a magic string, a version and a header length; the data follows
// in C order. The parser accepts exactly the literals NumPy writes and nothing more.
#include "npy.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>

#include "rnnx/error.hpp"

namespace rnnx::tool {
namespace {

constexpr unsigned char kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr size_t kMagicSize = sizeof(kMagic);
// Magic, version (2 bytes), header length (2 bytes in 1.0, 4 bytes in 2.0 and 3.0).
constexpr size_t kPreludeV1 = kMagicSize + 2 + 2;
constexpr size_t kPreludeV2 = kMagicSize + 2 + 4;
// NumPy pads the whole prelude + header to a multiple of this (so the data is aligned).
constexpr size_t kHeaderAlign = 64;

[[noreturn]] void bad(const std::string& path, const std::string& msg) {
  throw Error(Status::invalid_argument, path + ": " + msg);
}

// The header as one printable line for an error message: other bytes as \xNN, cut short.
std::string printable(const std::string& text) {
  constexpr size_t kMaxShown = 160;
  std::string out;
  for (size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
    const unsigned char ch = static_cast<unsigned char>(text[i]);
    if (ch >= 0x20 && ch < 0x7f) {
      out.push_back(static_cast<char>(ch));
    } else {
      static const char hex[] = "0123456789abcdef";
      out += std::string("\\x") + hex[ch >> 4] + hex[ch & 15];
    }
  }
  if (text.size() > kMaxShown) out += "...";
  return out;
}

// A cursor over the header dict text; every failure names the file and the position.
class HeaderParser {
 public:
  HeaderParser(const std::string& path, const std::string& text) : path_(path), text_(text) {}

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  bool peek(char ch) {
    skip_space();
    return pos_ < text_.size() && text_[pos_] == ch;
  }
  void expect(char ch) {
    if (!peek(ch)) fail(std::string("expected '") + ch + "'");
    ++pos_;
  }
  bool accept(char ch) {
    if (!peek(ch)) return false;
    ++pos_;
    return true;
  }
  std::string string_literal() {
    skip_space();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) {
      fail("expected a quoted string");
    }
    const char quote = text_[pos_++];
    const size_t end = text_.find(quote, pos_);
    if (end == std::string::npos) fail("unterminated string");
    std::string s = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return s;
  }
  bool bool_literal() {
    skip_space();
    if (text_.compare(pos_, 4, "True") == 0) {
      pos_ += 4;
      return true;
    }
    if (text_.compare(pos_, 5, "False") == 0) {
      pos_ += 5;
      return false;
    }
    fail("expected True or False");
  }
  std::vector<int64_t> shape_tuple() {
    std::vector<int64_t> shape;
    expect('(');
    while (!accept(')')) {
      skip_space();
      const size_t start = pos_;
      int64_t v = 0;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        const int digit = text_[pos_++] - '0';
        if (v > (std::numeric_limits<int64_t>::max() - digit) / 10) fail("shape entry overflows");
        v = v * 10 + digit;
      }
      if (pos_ == start) fail("expected a non-negative integer in the shape");
      if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;  // Python 2 long suffix
      shape.push_back(v);
      if (!accept(',')) {
        expect(')');
        break;
      }
    }
    return shape;
  }
  bool at_end() {
    skip_space();
    return pos_ == text_.size();
  }
  [[noreturn]] void fail(const std::string& what) const {
    bad(path_, "malformed .npy header (" + what + " at offset " + std::to_string(pos_) +
                   "): " + printable(text_));
  }

 private:
  const std::string& path_;
  const std::string& text_;
  size_t pos_ = 0;
};

NpyType parse_descr(const std::string& path, const std::string& descr) {
  for (NpyType t : {NpyType::f4, NpyType::f8, NpyType::i4, NpyType::i8})
    if (descr == npy_descr(t)) return t;
  if (!descr.empty() && descr[0] == '>') {
    bad(path,
        "dtype '" + printable(descr) + "' is big-endian; only little-endian data is supported");
  }
  bad(path, "dtype '" + printable(descr) +
                "' is not supported (supported: '<f4' float32, '<f8' float64, '<i4' int32, "
                "'<i8' int64)");
}

uint32_t little_endian(const unsigned char* p, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}

template <typename T>
T load(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));  // the host is little-endian (x86-64), like the data
  return v;
}

}  // namespace

const char* npy_descr(NpyType type) {
  switch (type) {
    case NpyType::f4:
      return "<f4";
    case NpyType::f8:
      return "<f8";
    case NpyType::i4:
      return "<i4";
    case NpyType::i8:
      return "<i8";
  }
  return "?";
}

const char* npy_type_name(NpyType type) {
  switch (type) {
    case NpyType::f4:
      return "float32";
    case NpyType::f8:
      return "float64";
    case NpyType::i4:
      return "int32";
    case NpyType::i8:
      return "int64";
  }
  return "?";
}

int64_t npy_item_size(NpyType type) {
  return type == NpyType::f4 || type == NpyType::i4 ? 4 : 8;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

int64_t NpyArray::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<double> NpyArray::to_double() const {
  const int64_t n = numel(), item = npy_item_size(type);
  std::vector<double> out(n);
  for (int64_t i = 0; i < n; ++i) {
    const unsigned char* p = data.data() + i * item;
    switch (type) {
      case NpyType::f4:
        out[i] = load<float>(p);
        break;
      case NpyType::f8:
        out[i] = load<double>(p);
        break;
      case NpyType::i4:
        out[i] = load<int32_t>(p);
        break;
      case NpyType::i8:
        out[i] = static_cast<double>(load<int64_t>(p));
        break;
    }
  }
  return out;
}

std::vector<int64_t> NpyArray::to_int64() const {
  if (is_float()) {
    throw Error(Status::invalid_argument, path + ": dtype is " + npy_type_name(type) +
                                              ", expected an integer type (int32 or int64)");
  }
  const int64_t n = numel(), item = npy_item_size(type);
  std::vector<int64_t> out(n);
  for (int64_t i = 0; i < n; ++i) {
    const unsigned char* p = data.data() + i * item;
    out[i] = type == NpyType::i4 ? load<int32_t>(p) : load<int64_t>(p);
  }
  return out;
}

NpyArray parse_npy(const std::string& path, const std::vector<unsigned char>& bytes) {
  if (bytes.size() < kMagicSize + 2 || std::memcmp(bytes.data(), kMagic, kMagicSize) != 0) {
    bad(path, "not a .npy file (the magic string \\x93NUMPY is missing)");
  }
  const int major = bytes[kMagicSize], minor = bytes[kMagicSize + 1];
  if (!((major == 1 || major == 2 || major == 3) && minor == 0)) {
    bad(path, "unsupported .npy format version " + std::to_string(major) + "." +
                  std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)");
  }
  const size_t prelude = major == 1 ? kPreludeV1 : kPreludeV2;
  if (bytes.size() < prelude) bad(path, "truncated inside the .npy prelude");
  const size_t header_len = little_endian(bytes.data() + kMagicSize + 2, prelude - kMagicSize - 2);
  if (bytes.size() - prelude < header_len) {
    bad(path, "truncated: the header length says " + std::to_string(header_len) +
                  " bytes but only " + std::to_string(bytes.size() - prelude) + " follow");
  }
  // 1.0 and 2.0 headers are latin-1, 3.0 is UTF-8; the keys and values we accept are ASCII.
  const std::string header(reinterpret_cast<const char*>(bytes.data() + prelude), header_len);

  NpyArray a;
  a.path = path;
  HeaderParser p(path, header);
  bool have_descr = false, have_order = false, have_shape = false, fortran = false;
  p.expect('{');
  while (!p.accept('}')) {
    const std::string key = p.string_literal();
    p.expect(':');
    if (key == "descr") {
      if (p.peek('[')) bad(path, "structured dtypes are not supported");
      a.type = parse_descr(path, p.string_literal());
      have_descr = true;
    } else if (key == "fortran_order") {
      fortran = p.bool_literal();
      have_order = true;
    } else if (key == "shape") {
      a.shape = p.shape_tuple();
      have_shape = true;
    } else {
      p.fail("unexpected key '" + printable(key) + "'");
    }
    if (!p.accept(',')) {
      p.expect('}');
      break;
    }
  }
  if (!p.at_end()) p.fail("trailing characters after the dict");
  if (!have_descr || !have_order || !have_shape) {
    p.fail("the keys 'descr', 'fortran_order' and 'shape' are all required");
  }
  if (fortran) {
    bad(path,
        "fortran_order is True; only C-order arrays are supported "
        "(save np.ascontiguousarray(a) instead)");
  }
  // Element count and byte size, refusing overflow before comparing with the file size.
  const int64_t item = npy_item_size(a.type);
  int64_t need = item;
  for (int64_t d : a.shape) {
    if (__builtin_mul_overflow(need, d, &need)) {
      bad(path, "shape " + shape_string(a.shape) + " is too large");
    }
  }
  const size_t data_start = prelude + header_len;
  const size_t have = bytes.size() - data_start;
  if (static_cast<uint64_t>(need) > have) {
    bad(path, "truncated: shape " + shape_string(a.shape) + " of " + npy_type_name(a.type) +
                  " needs " + std::to_string(need) + " data bytes but only " +
                  std::to_string(have) + " follow the header");
  }
  if (static_cast<uint64_t>(need) < have) {
    bad(path, std::to_string(have - need) + " bytes of unexpected data after the array of shape " +
                  shape_string(a.shape) + " (" + npy_type_name(a.type) + ")");
  }
  a.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(data_start), bytes.end());
  return a;
}

NpyArray read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) bad(path, std::string("cannot open: ") + std::strerror(errno));
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  if (in.bad()) bad(path, "read error");
  return parse_npy(path, bytes);
}

void write_npy(const std::string& path, NpyType type, const std::vector<int64_t>& shape,
               const void* data) {
  std::string header = std::string("{'descr': '") + npy_descr(type) +
                       "', 'fortran_order': False, 'shape': " + shape_string(shape) + ", }";
  // Pad with spaces and a final newline so that the data starts 64-byte aligned.
  auto padded_total = [&](size_t prelude) {
    return (prelude + header.size() + 1 + kHeaderAlign - 1) / kHeaderAlign * kHeaderAlign;
  };
  const bool v1 = padded_total(kPreludeV1) - kPreludeV1 <= 0xffff;  // 1.0 stores a uint16 length
  const size_t prelude = v1 ? kPreludeV1 : kPreludeV2;
  const size_t total = padded_total(prelude);
  header.append(total - prelude - header.size() - 1, ' ');
  header.push_back('\n');

  std::string prefix(reinterpret_cast<const char*>(kMagic), kMagicSize);
  prefix.push_back(static_cast<char>(v1 ? 1 : 2));
  prefix.push_back(0);
  const uint32_t len = static_cast<uint32_t>(header.size());
  for (size_t i = 0; i < prelude - kMagicSize - 2; ++i)
    prefix.push_back(static_cast<char>((len >> (8 * i)) & 0xff));

  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    throw Error(Status::internal, path + ": cannot open for writing: " + std::strerror(errno));
  }
  out.write(prefix.data(), static_cast<std::streamsize>(prefix.size()));
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(static_cast<const char*>(data),
            static_cast<std::streamsize>(numel * npy_item_size(type)));
  out.close();
  if (!out) throw Error(Status::internal, path + ": write failed");
}

}  // namespace rnnx::tool
