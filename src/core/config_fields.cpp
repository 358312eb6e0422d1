// The text form of Config's fields, from the field table (rnnx/config_fields.hpp): one
// formatter and one parser per value type, so a new field of an existing type needs no code.
#include "rnnx/config_fields.hpp"

#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/key_value_text.hpp"
#include "rnnx/error.hpp"

namespace rnnx {
namespace {

// ---- the table covers Config: count its members as an aggregate ---------------------------

// Converts to anything: Config{AnyField{}, ...} compiles with exactly as many of them as
// Config has members (each member is initialised from one, none by brace elision).
struct AnyField {
  template <typename T>
  constexpr operator T() const;  // NOLINT(google-explicit-constructor): never called
};

template <typename T, size_t... I>
constexpr bool brace_initialisable_from(std::index_sequence<I...>) {
  return requires {
    T{(void(I), AnyField{})...};
  };
}

template <typename T, size_t N = 0>
constexpr size_t member_count() {
  if constexpr (brace_initialisable_from<T>(std::make_index_sequence<N + 1>{})) {
    return member_count<T, N + 1>();
  } else {
    return N;
  }
}

constexpr size_t table_size() {
  size_t n = 0;
  for_each_config_field([&](const char*, auto) { ++n; });
  return n;
}

static_assert(std::is_aggregate_v<Config>);
static_assert(member_count<Config>() == table_size(),
              "a field of rnnx::Config is missing from for_each_config_field "
              "(include/rnnx/config_fields.hpp)");

// ---- one formatter and one parser per value type ----------------------------------------

[[noreturn]] void bad_value(std::string_view field, std::string_view text, const char* takes) {
  throw Error(Status::invalid_argument,
              std::string(field) + " (= \"" + std::string(text) + "\") must be " + takes);
}

std::string real_text(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest exact form
  return std::string(buf, r.ptr);
}

double parse_real(std::string_view field, std::string_view text) {
  if (text == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (text == "inf") return std::numeric_limits<double>::infinity();
  if (text == "-inf") return -std::numeric_limits<double>::infinity();
  double v = 0.0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size()) {
    bad_value(field, text, "a real number (or nan, inf, -inf)");
  }
  return v;
}

template <typename Int>
Int parse_integer(std::string_view field, std::string_view text) {
  Int v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size()) {
    bad_value(field, text,
              std::is_signed_v<Int> ? "a 64-bit integer" : "an unsigned 64-bit integer");
  }
  return v;
}

std::string text_of(CellType v) {
  return to_string(v);
}
std::string text_of(DataType v) {
  return to_string(v);
}
std::string text_of(NanPolicy v) {
  return to_string(v);
}
std::string text_of(MathMode v) {
  return to_string(v);
}
std::string text_of(bool v) {
  return v ? "true" : "false";
}
std::string text_of(int64_t v) {
  return std::to_string(v);
}
std::string text_of(uint64_t v) {
  return std::to_string(v);
}
std::string text_of(double v) {
  return real_text(v);
}
std::string text_of(const Clip& v) {
  return v.enabled ? real_text(v.lo) + ":" + real_text(v.hi) : "off";
}
std::string text_of(const std::vector<Activation>& v) {
  if (v.empty()) return "default";
  std::string s;
  for (const Activation& a : v) {
    if (!s.empty()) s += ",";
    s += std::string(to_string(a.kind)) + "(" + real_text(a.alpha) + "," + real_text(a.beta) + ")";
  }
  return s;
}

// The parser of a member's type, chosen by overload on a pointer to a value of it.
void parse_into(CellType* out, std::string_view, std::string_view text) {
  *out = cell_from_string(std::string(text));
}
void parse_into(DataType* out, std::string_view, std::string_view text) {
  *out = dtype_from_string(std::string(text));
}
void parse_into(NanPolicy* out, std::string_view, std::string_view text) {
  *out = nan_policy_from_string(std::string(text));
}
void parse_into(MathMode* out, std::string_view, std::string_view text) {
  *out = math_mode_from_string(std::string(text));
}
void parse_into(bool* out, std::string_view field, std::string_view text) {
  if (text == "true" || text == "1") {
    *out = true;
  } else if (text == "false" || text == "0") {
    *out = false;
  } else {
    bad_value(field, text, "true or false");
  }
}
void parse_into(int64_t* out, std::string_view field, std::string_view text) {
  *out = parse_integer<int64_t>(field, text);
}
void parse_into(uint64_t* out, std::string_view field, std::string_view text) {
  *out = parse_integer<uint64_t>(field, text);
}
void parse_into(double* out, std::string_view field, std::string_view text) {
  *out = parse_real(field, text);
}
void parse_into(Clip* out, std::string_view field, std::string_view text) {
  if (text == "off") {
    *out = Clip{};
    return;
  }
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) bad_value(field, text, "\"off\" or \"lo:hi\"");
  *out = Clip{true, parse_real(field, text.substr(0, colon)),
              parse_real(field, text.substr(colon + 1))};
}
void parse_into(std::vector<Activation>* out, std::string_view field, std::string_view text) {
  out->clear();
  if (text == "default") return;
  const char* takes = "\"default\" or a list of Name(alpha,beta), e.g. \"Sigmoid(0,0),Tanh(0,0)\"";
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t open = text.find('(', pos);
    const size_t comma = text.find(',', open);
    const size_t close = text.find(')', open);
    if (open == std::string_view::npos || comma == std::string_view::npos ||
        close == std::string_view::npos || comma > close) {
      bad_value(field, text, takes);
    }
    Activation a;
    a.kind = activation_from_string(std::string(text.substr(pos, open - pos)));
    a.alpha = parse_real(field, text.substr(open + 1, comma - open - 1));
    a.beta = parse_real(field, text.substr(comma + 1, close - comma - 1));
    out->push_back(a);
    pos = close + 1;
    if (pos < text.size()) {
      if (text[pos] != ',' || pos + 1 == text.size()) bad_value(field, text, takes);
      ++pos;
    }
  }
}

[[noreturn]] void unknown_field(std::string_view field) {
  std::string known;
  for_each_config_field(
      [&](const char* name, auto) { known += (known.empty() ? "" : ", ") + std::string(name); });
  throw Error(Status::invalid_argument,
              "\"" + std::string(field) + "\" is not a field of rnnx::Config (" + known + ")");
}

}  // namespace

bool operator==(const Activation& a, const Activation& b) {
  return a.kind == b.kind && a.alpha == b.alpha && a.beta == b.beta;
}

bool operator==(const Clip& a, const Clip& b) {
  return a.enabled == b.enabled && a.lo == b.lo && a.hi == b.hi;
}

bool operator==(const Config& a, const Config& b) {
  bool equal = true;
  for_each_config_field([&](const char*, auto member) { equal = equal && a.*member == b.*member; });
  return equal;
}

bool is_config_field(std::string_view field) {
  bool found = false;
  for_each_config_field([&](const char* name, auto) { found = found || field == name; });
  return found;
}

std::string config_field_text(const Config& config, std::string_view field) {
  std::string out;
  bool found = false;
  for_each_config_field([&](const char* name, auto member) {
    if (field != name) return;
    out = text_of(config.*member);
    found = true;
  });
  if (!found) unknown_field(field);
  return out;
}

void set_config_field(Config& config, std::string_view field, std::string_view text) {
  bool found = false;
  for_each_config_field([&](const char* name, auto member) {
    if (field != name) return;
    parse_into(&(config.*member), field, text);
    found = true;
  });
  if (!found) unknown_field(field);
}

std::string to_string(const Config& config) {
  std::string s;
  for_each_config_field([&](const char* name, auto member) {
    if (!s.empty()) s += ' ';
    s += std::string(name) + "=" + text_of(config.*member);
  });
  return s;
}

Config config_from_string(std::string_view text) {
  Config config;
  for (const auto& [field, value] : core::parse_key_values(text, "config text", "field")) {
    set_config_field(config, field, value);
  }
  return config;
}

}  // namespace rnnx
