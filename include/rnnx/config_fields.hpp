// The field table of rnnx::Config: every field once, by name and member, in declaration
// order. What must cover every field comes from it instead of listing them by hand: the
// text form (to_string / config_from_string, a field's text), the plan's fingerprint, the
// algorithm searches' keys, the Python class's constructor, properties, dict and repr, the
// C API's set-by-name, and the known keys of rnnx's case files. Adding a field to Config is
// its declaration, its line here and its semantics (validate, the backends); a field
// declared but missing here fails to compile (config_fields.cpp counts Config's members).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "rnnx/config.hpp"
#include "rnnx/export.h"

RNNX_EXPORT_BEGIN
namespace rnnx {

// Calls visit(name, &Config::member) for each field, in declaration order.
template <typename Visit>
constexpr void for_each_config_field(Visit&& visit) {
  visit("cell", &Config::cell);
  visit("input_size", &Config::input_size);
  visit("hidden_size", &Config::hidden_size);
  visit("proj_size", &Config::proj_size);
  visit("num_layers", &Config::num_layers);
  visit("bidirectional", &Config::bidirectional);
  visit("bias", &Config::bias);
  visit("gru_linear_before_reset", &Config::gru_linear_before_reset);
  visit("cell_clip", &Config::cell_clip);
  visit("proj_clip", &Config::proj_clip);
  visit("clip_nan", &Config::clip_nan);
  visit("dropout", &Config::dropout);
  visit("seed", &Config::seed);
  visit("dtype", &Config::dtype);
  visit("padding_fill", &Config::padding_fill);
  visit("math", &Config::math);
  visit("reverse", &Config::reverse);
  visit("peephole", &Config::peephole);
  visit("gate_clip", &Config::gate_clip);
  visit("input_forget", &Config::input_forget);
  visit("activations", &Config::activations);
}

// The fields that front ends (Python's Config, case files) require, having no meaningful
// default for a problem; C++'s Config{} and the C API's config start from lstm, 0, 0.
inline constexpr const char* kRequiredConfigFields[] = {"cell", "input_size", "hidden_size"};

// The text of one field's value, and its inverse. Enums by their names (to_string), bools
// "true"/"false", integers in decimal, reals in the shortest form that reads back to the
// same double ("nan", "inf", "-inf" too), a clip "off" or "lo:hi", activations "default"
// (the cell's own) or ONNX names with alpha and beta, "Sigmoid(0,0),Tanh(0,0),...".
// The parsers throw Error(invalid_argument) naming the field, the text and what it takes.
std::string config_field_text(const Config& config, std::string_view field);
void set_config_field(Config& config, std::string_view field, std::string_view text);
// Whether `field` names a field of Config.
bool is_config_field(std::string_view field);

// Every field as "name=value", separated by single spaces, in declaration order.
std::string to_string(const Config& config);
// The inverse, on the defaults of Config{}: any subset of the fields, in any order, each at
// most once; throws invalid_argument naming an unknown field or a bad value. The result is
// not validated (validate()).
Config config_from_string(std::string_view text);

}  // namespace rnnx
RNNX_EXPORT_END
