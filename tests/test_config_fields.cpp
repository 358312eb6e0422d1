// The field table of Config (rnnx/config_fields.hpp): its text form reads back to the same
// config for every field, bad texts are refused naming the field, and what is built from
// the table (the search keys, the fingerprint) covers the fields it says it covers.
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/autotune_cache.hpp"
#include "rnnx/config_fields.hpp"
#include "rnnx/error.hpp"

namespace rnnx_test {
namespace {

using namespace rnnx;

std::vector<std::string> field_names() {
  std::vector<std::string> names;
  for_each_config_field([&](const char* name, auto) { names.emplace_back(name); });
  return names;
}

// A config whose every field differs from Config{}'s (not a valid problem: the text form
// does not validate).
Config every_field_changed() {
  Config c;
  c.cell = CellType::gru;
  c.input_size = 7;
  c.hidden_size = 9;
  c.proj_size = 3;
  c.num_layers = 4;
  c.bidirectional = true;
  c.bias = false;
  c.gru_linear_before_reset = false;
  c.cell_clip = {true, -0.1, 1e300};
  c.proj_clip = {true, -std::numeric_limits<double>::infinity(), 0.30000000000000004};
  c.clip_nan = NanPolicy::replace;
  c.dropout = 0.25;
  c.seed = std::numeric_limits<uint64_t>::max();
  c.dtype = DataType::bf16;
  c.padding_fill = -2.5e-310;  // subnormal
  c.math = MathMode::allow_conversion;
  c.reverse = true;
  c.peephole = true;
  c.gate_clip = 3.0;
  c.input_forget = true;
  c.activations = {{ActivationKind::hard_sigmoid, 0.2, 0.5}, {ActivationKind::elu, 1.0, 0.0}};
  return c;
}

TEST(ConfigFields, TheTableNamesEveryFieldOnce) {
  const std::vector<std::string> names = field_names();
  EXPECT_EQ(names.size(), 21u);  // Config's members; config_fields.cpp checks this at build
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  for (const std::string& n : names) EXPECT_TRUE(is_config_field(n)) << n;
  EXPECT_FALSE(is_config_field("num_threads"));  // a plan option, not a field
}

TEST(ConfigFields, TextReadsBackToTheSameConfig) {
  const Config changed = every_field_changed();
  for (const Config& c : {Config{}, changed}) {
    const std::string text = to_string(c);
    EXPECT_EQ(config_from_string(text), c) << text;
  }
  // Each field alone, on the defaults: its text changes the field and nothing else.
  for (const std::string& name : field_names()) {
    Config one;
    set_config_field(one, name, config_field_text(changed, name));
    EXPECT_NE(one, Config{}) << name;
    EXPECT_EQ(config_field_text(one, name), config_field_text(changed, name)) << name;
    EXPECT_EQ(config_from_string(name + "=" + config_field_text(changed, name)), one) << name;
  }
  // Reals that are not numbers survive too (compared as text: NaN != NaN).
  Config odd;
  odd.padding_fill = std::numeric_limits<double>::quiet_NaN();
  odd.cell_clip = {true, -std::numeric_limits<double>::infinity(), 0.0};
  EXPECT_EQ(to_string(config_from_string(to_string(odd))), to_string(odd));
  // Random reals read back bit for bit.
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1e6, 1e6);
  for (int i = 0; i < 200; ++i) {
    Config c;
    c.dropout = u(rng) / 7.0;
    c.gate_clip = std::ldexp(u(rng), -900);
    EXPECT_EQ(config_from_string(to_string(c)), c) << to_string(c);
  }
}

TEST(ConfigFields, TheTextIsReadable) {
  Config c;
  c.cell = CellType::gru;
  c.input_size = 3;
  c.hidden_size = 5;
  EXPECT_EQ(to_string(c),
            "cell=gru input_size=3 hidden_size=5 proj_size=0 num_layers=1 bidirectional=false "
            "bias=true gru_linear_before_reset=true cell_clip=off proj_clip=off "
            "clip_nan=propagate dropout=0 seed=0 dtype=float32 padding_fill=0 "
            "math=from_environment reverse=false peephole=false gate_clip=0 input_forget=false "
            "activations=default");
  EXPECT_EQ(config_field_text(every_field_changed(), "cell_clip"), "-0.1:1e+300");
  EXPECT_EQ(config_field_text(every_field_changed(), "activations"),
            "HardSigmoid(0.2,0.5),Elu(1,0)");
}

void expect_refused(const std::string& text, const std::vector<std::string>& parts) {
  try {
    (void)config_from_string(text);
    ADD_FAILURE() << "accepted: " << text;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Status::invalid_argument) << text;
    for (const std::string& p : parts) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "\"" << e.what() << "\" lacks \"" << p << "\" (text " << text << ")";
    }
  }
}

TEST(ConfigFields, BadTextsAreRefusedNamingTheFieldAndValue) {
  expect_refused("hidden=4", {"\"hidden\" is not a field of rnnx::Config", "hidden_size"});
  expect_refused("cell=conv", {"cell 'conv'", "lstm"});
  expect_refused("dtype=half", {"dtype 'half'", "float16"});
  expect_refused("clip_nan=drop", {"clip_nan 'drop'"});
  expect_refused("math=tf32", {"math (= \"tf32\")"});
  expect_refused("bias=yes", {"bias (= \"yes\")", "true or false"});
  expect_refused("input_size=4.5", {"input_size (= \"4.5\")", "integer"});
  expect_refused("input_size=", {"input_size (= \"\")"});
  expect_refused("seed=-1", {"seed (= \"-1\")", "unsigned"});
  expect_refused("dropout=0.1x", {"dropout (= \"0.1x\")", "real number"});
  expect_refused("cell_clip=1", {"cell_clip (= \"1\")", "lo:hi"});
  expect_refused("cell_clip=a:1", {"cell_clip (= \"a\")"});
  expect_refused("activations=Tanh", {"activations (= \"Tanh\")", "Name(alpha,beta)"});
  expect_refused("activations=Tanh(0,0),", {"activations (= \"Tanh(0,0),\")"});
  expect_refused("activations=Swish(0,0)", {"activation 'Swish'"});
  expect_refused("num_layers", {"\"num_layers\" is not of the form field=value"});
  expect_refused("seed=1 seed=2", {"seed is given twice"});
}

// The searches' keys hold every field but those that cannot change the fastest algorithm.
TEST(ConfigFields, SearchKeysHoldEveryFieldButSeedFillAndMath) {
  const Config changed = every_field_changed();
  const std::string base = core::config_search_key(Config{});
  for (const std::string& name : field_names()) {
    Config one;
    set_config_field(one, name, config_field_text(changed, name));
    const bool left_out = name == "seed" || name == "padding_fill" || name == "math";
    EXPECT_EQ(core::config_search_key(one) == base, left_out) << name;
  }
}

}  // namespace
}  // namespace rnnx_test
