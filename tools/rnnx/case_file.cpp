// case.json parsing: one helper per JSON value kind, each error naming the file, the key
// and the offending value as JSON, then rnnx::validate for the combinations.
#include "case_file.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "rnnx/config_fields.hpp"
#include "rnnx/convert.hpp"
#include "rnnx/error.hpp"

namespace rnnx::tool {
namespace {

using nlohmann::json;

// The keys of case.json besides Config's fields (rnnx/config_fields.hpp); anything else must
// be listed in "ignore".
const std::vector<std::string> kCaseKeys = {"batch_first",    "dropout_counter", "training",
                                            "ignore",         "direction",       "activation_alpha",
                                            "activation_beta"};

class Reader {
 public:
  Reader(const std::string& path, const json& root) : path_(path), root_(root) {}

  [[noreturn]] void fail(const std::string& key, const std::string& msg) const {
    throw Error(Status::invalid_argument, path_ + ": key \"" + key + "\" " + msg);
  }
  const json* get(const std::string& key) const {
    auto it = root_.find(key);
    return it == root_.end() ? nullptr : &*it;
  }
  const json& require(const std::string& key) const {
    const json* v = get(key);
    if (v == nullptr) {
      throw Error(Status::invalid_argument, path_ + ": required key \"" + key + "\" is missing");
    }
    return *v;
  }

  int64_t integer(const std::string& key, const json& v) const {
    if (!v.is_number_integer() ||
        (v.is_number_unsigned() &&
         v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))) {
      fail(key, "must be an integer, got " + v.dump());
    }
    return v.get<int64_t>();
  }
  int64_t integer(const std::string& key, int64_t fallback) const {
    const json* v = get(key);
    return v ? integer(key, *v) : fallback;
  }
  uint64_t unsigned_integer(const std::string& key, uint64_t fallback) const {
    const json* v = get(key);
    if (v == nullptr) return fallback;
    if (!v->is_number_unsigned()) fail(key, "must be a non-negative integer, got " + v->dump());
    return v->get<uint64_t>();
  }
  bool boolean(const std::string& key, bool fallback) const {
    const json* v = get(key);
    if (v == nullptr) return fallback;
    if (!v->is_boolean()) fail(key, "must be true or false, got " + v->dump());
    return v->get<bool>();
  }
  double number(const std::string& key, const json& v) const {
    if (!v.is_number()) fail(key, "must be a number, got " + v.dump());
    return v.get<double>();
  }
  double number(const std::string& key, double fallback) const {
    const json* v = get(key);
    return v ? number(key, *v) : fallback;
  }
  // A number, or "nan", "inf", "-inf" (JSON has no literals for them).
  double number_or_special(const std::string& key, double fallback) const {
    const json* v = get(key);
    if (v == nullptr) return fallback;
    if (v->is_string()) {
      const std::string s = v->get<std::string>();
      if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
      if (s == "inf") return std::numeric_limits<double>::infinity();
      if (s == "-inf") return -std::numeric_limits<double>::infinity();
    }
    if (!v->is_number()) {
      fail(key, "must be a number or one of \"nan\", \"inf\", \"-inf\", got " + v->dump());
    }
    return v->get<double>();
  }
  // One of `choices` (first one is the default when absent).
  std::string choice(const std::string& key, const std::vector<std::string>& choices,
                     const std::string* fallback) const {
    const json* v = fallback ? get(key) : &require(key);
    if (v == nullptr) return *fallback;
    std::string list;
    for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
    if (!v->is_string()) fail(key, "must be one of " + list + ", got " + v->dump());
    const std::string s = v->get<std::string>();
    if (std::find(choices.begin(), choices.end(), s) == choices.end()) {
      fail(key, "must be one of " + list + ", got " + v->dump());
    }
    return s;
  }
  // null or [lo, hi].
  std::vector<double> numbers(const std::string& key) const {
    std::vector<double> out;
    const json* v = get(key);
    if (v == nullptr || v->is_null()) return out;
    if (!v->is_array()) fail(key, "must be an array of numbers, got " + v->dump());
    for (const auto& e : *v) out.push_back(number(key, e));
    return out;
  }
  std::vector<Activation> activations() const {
    const json* v = get("activations");
    if (v == nullptr || v->is_null()) return {};
    if (!v->is_array()) fail("activations", "must be an array of names, got " + v->dump());
    std::vector<std::string> names;
    for (const auto& e : *v) {
      if (!e.is_string()) fail("activations", "must be an array of names, got " + v->dump());
      names.push_back(e.get<std::string>());
    }
    try {
      return onnx_activations(names, numbers("activation_alpha"), numbers("activation_beta"));
    } catch (const Error& err) {
      throw Error(Status::invalid_argument, path_ + ": " + err.what());
    }
  }
  Clip clip(const std::string& key) const {
    const json* v = get(key);
    Clip c;
    if (v == nullptr || v->is_null()) return c;
    if (!v->is_array() || v->size() != 2 || !(*v)[0].is_number() || !(*v)[1].is_number()) {
      fail(key, "must be null or [lo, hi] with two numbers, got " + v->dump());
    }
    c.enabled = true;
    c.lo = (*v)[0].get<double>();
    c.hi = (*v)[1].get<double>();
    return c;
  }

 private:
  const std::string& path_;
  const json& root_;
};

// One reader per value type of Config's fields: a key of case.json holds the field of the
// same name, in JSON's own kinds (enums as their names, clips as null or [lo, hi], reals
// also as "nan", "inf", "-inf").
void read_field(const Reader& r, const std::string& key, CellType* out) {
  *out = cell_from_string(r.choice(key, {"lstm", "gru", "rnn_tanh", "rnn_relu"}, nullptr));
}
void read_field(const Reader& r, const std::string& key, DataType* out) {
  const std::string dflt = to_string(*out);
  *out = dtype_from_string(r.choice(key, {"float32", "float64", "bfloat16", "float16"}, &dflt));
}
void read_field(const Reader& r, const std::string& key, NanPolicy* out) {
  const std::string dflt = to_string(*out);
  *out = nan_policy_from_string(r.choice(key, {"propagate", "replace"}, &dflt));
}
void read_field(const Reader& r, const std::string& key, MathMode* out) {
  const std::string dflt = to_string(*out);
  *out = math_mode_from_string(
      r.choice(key, {"from_environment", "fp32", "allow_conversion", "int8"}, &dflt));
}
void read_field(const Reader& r, const std::string& key, bool* out) {
  *out = r.boolean(key, *out);
}
void read_field(const Reader& r, const std::string& key, int64_t* out) {
  *out = r.integer(key, r.require(key));
}
void read_field(const Reader& r, const std::string& key, uint64_t* out) {
  *out = r.unsigned_integer(key, *out);
}
void read_field(const Reader& r, const std::string& key, double* out) {
  if (const json* v = r.get(key); v && !v->is_null()) *out = r.number_or_special(key, *out);
}
void read_field(const Reader& r, const std::string& key, Clip* out) {
  *out = r.clip(key);
}
void read_field(const Reader& r, const std::string&, std::vector<Activation>* out) {
  *out = r.activations();
}

}  // namespace

bool CaseSpec::ignores(const std::string& name) const {
  return std::find(ignore.begin(), ignore.end(), name) != ignore.end();
}

CaseSpec parse_case_text(const std::string& path, const std::string& text) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    // parse_error, and out_of_range for a number beyond double (1e400): both bad input.
    throw Error(Status::invalid_argument, path + ": not valid JSON: " + e.what());
  }
  if (!root.is_object()) {
    throw Error(Status::invalid_argument,
                path + ": must hold a JSON object, got " + std::string(root.type_name()));
  }
  Reader r(path, root);
  CaseSpec spec;

  if (const json* ig = r.get("ignore")) {
    if (!ig->is_array()) r.fail("ignore", "must be an array of strings, got " + ig->dump());
    for (const auto& item : *ig) {
      if (!item.is_string()) r.fail("ignore", "must be an array of strings, got " + ig->dump());
      spec.ignore.push_back(item.get<std::string>());
    }
  }
  for (const auto& item : root.items()) {
    const std::string& key = item.key();
    if (is_config_field(key)) continue;
    if (std::find(kCaseKeys.begin(), kCaseKeys.end(), key) != kCaseKeys.end()) continue;
    if (spec.ignores(key)) continue;
    throw Error(
        Status::invalid_argument,
        path + ": unknown key \"" + key +
            "\" (list it in \"ignore\" to have it passed over; known keys are in docs/cli.md)");
  }

  // Every field of the config, from the table; the required ones must be present.
  Config& c = spec.config;
  for_each_config_field([&](const char* name, auto member) {
    const std::string key = name;
    bool required = false;
    for (const char* field : kRequiredConfigFields) required = required || key == field;
    if (required || r.get(key)) read_field(r, key, &(c.*member));
  });
  if (r.get("direction")) {
    // ONNX's spelling; must agree with "bidirectional" when both are given.
    const std::string dir = r.choice("direction", {"forward", "reverse", "bidirectional"}, nullptr);
    if (r.get("bidirectional") && c.bidirectional != (dir == "bidirectional")) {
      r.fail("direction", "(= \"" + dir + "\") contradicts \"bidirectional\"");
    }
    if (r.get("reverse") && c.reverse != (dir == "reverse")) {
      r.fail("direction", "(= \"" + dir + "\") contradicts \"reverse\"");
    }
    c.bidirectional = dir == "bidirectional";
    c.reverse = dir == "reverse";
  }
  spec.batch_first = r.boolean("batch_first", false);
  spec.dropout_counter = r.unsigned_integer("dropout_counter", 0);
  spec.training = r.boolean("training", false);
  try {
    validate(c);
  } catch (const Error& e) {
    throw Error(e.code(), path + ": " + e.what());
  }
  return spec;
}

CaseSpec read_case_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(Status::invalid_argument, path + ": cannot open (every case needs one)");
  std::stringstream text;
  text << in.rdbuf();
  return parse_case_text(path, text.str());
}

}  // namespace rnnx::tool
