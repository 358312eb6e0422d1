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

#include "rnnx/convert.hpp"
#include "rnnx/error.hpp"

namespace rnnx::tool {
namespace {

using nlohmann::json;

// Every key case.json may hold; anything else must be listed in "ignore".
const std::vector<std::string> kKnownKeys = {"cell",
                                             "input_size",
                                             "hidden_size",
                                             "proj_size",
                                             "num_layers",
                                             "bidirectional",
                                             "bias",
                                             "batch_first",
                                             "gru_linear_before_reset",
                                             "cell_clip",
                                             "proj_clip",
                                             "clip_nan",
                                             "dropout",
                                             "seed",
                                             "dropout_counter",
                                             "training",
                                             "padding_fill",
                                             "dtype",
                                             "ignore",
                                             "direction",
                                             "peephole",
                                             "gate_clip",
                                             "input_forget",
                                             "activations",
                                             "activation_alpha",
                                             "activation_beta",
                                             "math"};

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
    if (std::find(kKnownKeys.begin(), kKnownKeys.end(), key) != kKnownKeys.end()) continue;
    if (spec.ignores(key)) continue;
    throw Error(
        Status::invalid_argument,
        path + ": unknown key \"" + key +
            "\" (list it in \"ignore\" to have it passed over; known keys are in docs/cli.md)");
  }

  Config& c = spec.config;
  c.cell = cell_from_string(r.choice("cell", {"lstm", "gru", "rnn_tanh", "rnn_relu"}, nullptr));
  c.input_size = r.integer("input_size", r.require("input_size"));
  c.hidden_size = r.integer("hidden_size", r.require("hidden_size"));
  c.proj_size = r.integer("proj_size", int64_t{0});
  c.num_layers = r.integer("num_layers", int64_t{1});
  c.bidirectional = r.boolean("bidirectional", false);
  if (r.get("direction")) {
    // ONNX's spelling; must agree with "bidirectional" when both are given.
    const std::string dir = r.choice("direction", {"forward", "reverse", "bidirectional"}, nullptr);
    if (r.get("bidirectional") && c.bidirectional != (dir == "bidirectional")) {
      r.fail("direction", "(= \"" + dir + "\") contradicts \"bidirectional\"");
    }
    c.bidirectional = dir == "bidirectional";
    c.reverse = dir == "reverse";
  }
  c.peephole = r.boolean("peephole", false);
  c.input_forget = r.boolean("input_forget", false);
  if (const json* gc = r.get("gate_clip"); gc && !gc->is_null())
    c.gate_clip = r.number("gate_clip", *gc);
  c.activations = r.activations();
  c.bias = r.boolean("bias", true);
  spec.batch_first = r.boolean("batch_first", false);
  c.gru_linear_before_reset = r.boolean("gru_linear_before_reset", true);
  c.cell_clip = r.clip("cell_clip");
  c.proj_clip = r.clip("proj_clip");
  const std::string propagate = "propagate";
  c.clip_nan = nan_policy_from_string(r.choice("clip_nan", {"propagate", "replace"}, &propagate));
  c.dropout = r.number("dropout", 0.0);
  c.seed = r.unsigned_integer("seed", 0);
  spec.dropout_counter = r.unsigned_integer("dropout_counter", 0);
  spec.training = r.boolean("training", false);
  c.padding_fill = r.number_or_special("padding_fill", 0.0);
  const std::string float32 = "float32";
  c.dtype =
      dtype_from_string(r.choice("dtype", {"float32", "float64", "bfloat16", "float16"}, &float32));
  const std::string from_environment = "from_environment";
  c.math = math_mode_from_string(
      r.choice("math", {"from_environment", "fp32", "allow_conversion"}, &from_environment));
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
