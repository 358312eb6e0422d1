// The cpu backend's algorithm search: the names of its choices, the space the environment
// leaves it, the cache in memory and on disk, RNNX_AUTOTUNE, and the results of every
// candidate the search can pick against the reference (each forced through the cache).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "core/autotune_cache.hpp"
#include "cpu/algo.hpp"
#include "cpu/autotune.hpp"
#include "cpu/library_gemm.hpp"
#include "problems.hpp"
#include "test_util.hpp"

namespace rnnx_test {
namespace {

using cpu::Algo;
using cpu::AlgoSpace;

// A file of this process in the test's temporary folder.
std::string temp_path(const char* tag) {
  return ::testing::TempDir() + "rnnx_autotune_" + tag + "_" + std::to_string(getpid()) + ".txt";
}

// The cache starts and ends empty in memory, so tests do not see each other's choices;
// and every search keeps its choice, however busy the machine that runs the tests is (the
// fallback on interference has its own test).
struct FreshCache {
  FreshCache() { core::autotune_clear_memory(); }
  ~FreshCache() { core::autotune_clear_memory(); }
  ScopedEnv keep{"RNNX_AUTOTUNE_SPREAD", "1e9"};
};

PlanContext context(const Config& c, const SequenceShape& s, int threads,
                    PlanPurpose purpose = PlanPurpose::training) {
  PlanOptions o = backend_options(Backend::cpu, threads);
  o.purpose = purpose;
  PlanContext ctx{c, s, core::make_schedule(s), WeightLayout(c), o};
  ctx.math = resolved_math_mode(c);  // as Plan resolves it
  return ctx;
}

// A problem with every kind of choice open: bidirectional float32 LSTM on two threads,
// ragged lengths (so the input projection's split matters).
TestCase open_case() {
  TestCase p;
  p.cfg = make_config(CellType::lstm, 7, 40, 2, true, DataType::f32);
  p.shape = SequenceShape::padded(9, 5, {9, 3, 0, 7, 1});
  p.name = "lstm_l2_bidir_ragged";
  return p;
}

TEST(Autotune, NamesRoundTrip) {
  const TestCase p = open_case();
  for (bool f32 : {true, false}) {
    Config c = p.cfg;
    c.dtype = f32 ? DataType::f32 : DataType::f64;
    const AlgoSpace space = cpu::algo_space(context(c, p.shape, 2));
    ASSERT_FALSE(space.candidates.empty());
    EXPECT_EQ(space.candidates.front(), space.heuristic) << "the heuristic comes first";
    for (const Algo& a : space.candidates) {
      const std::string name = cpu::algo_name(a, f32, space.isa);
      Algo back;
      ASSERT_TRUE(cpu::parse_algo(name, &back)) << name;
      EXPECT_EQ(back, a) << name;
    }
  }
  Algo a;
  for (const char* bad : {"", "team", "packed-avx512/teams", "mkl/team", "packed-avx512//team"}) {
    EXPECT_FALSE(cpu::parse_algo(bad, &a)) << '"' << bad << '"';
  }
}

TEST(Autotune, SpaceFollowsTheEnvironment) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  const TestCase p = open_case();
  const PlanContext ctx = context(p.cfg, p.shape, 2);
  {
    ScopedEnv e("RNNX_CPU_DIRECTIONS", "sequential");
    for (const Algo& a : cpu::algo_space(ctx).candidates) EXPECT_FALSE(a.concurrent_dirs);
  }
  // The unpacked engines: plain in every build, oneDNN's sgemm where the build has it
  // (GemmEngines.SgemmNeedsOneDnn tests the refusal where not).
  for (const char* gemm : {"plain", "sgemm"}) {
    if (std::string(gemm) == "sgemm" && !cpu::have_onednn()) continue;
    ScopedEnv e("RNNX_CPU_GEMM", gemm);
    const AlgoSpace s = cpu::algo_space(ctx);
    for (const Algo& a : s.candidates) {
      EXPECT_EQ(a.engine,
                std::string(gemm) == "plain" ? cpu::GemmEngine::plain : cpu::GemmEngine::library);
      EXPECT_FALSE(a.team_loops) << "team loops need the packed engine";
    }
    EXPECT_EQ(s.candidates.size(), 2u) << "directions concurrent or not";
  }
  {
    ScopedEnv e("RNNX_CPU_TIME_LOOP", "per-step");
    for (const Algo& a : cpu::algo_space(ctx).candidates) EXPECT_FALSE(a.team_loops);
  }
  // One thread: neither team loops nor concurrent directions are searched.
  for (const Algo& a : cpu::algo_space(context(p.cfg, p.shape, 1)).candidates) {
    EXPECT_FALSE(a.team_loops);
    EXPECT_FALSE(a.concurrent_dirs);
  }
  // float64 runs the BLAS (or the plain loops): only the directions are a choice.
  Config c64 = p.cfg;
  c64.dtype = DataType::f64;
  EXPECT_EQ(cpu::algo_space(context(c64, p.shape, 2)).candidates.size(), 2u);
  // Every choosing variable refuses a value it does not know, naming itself and the value,
  // and so does building a plan.
  for (const char* variable : {"RNNX_CPU_INPUT_PROJECTION", "RNNX_CPU_GEMM", "RNNX_CPU_TIME_LOOP",
                               "RNNX_CPU_DIRECTIONS"}) {
    SCOPED_TRACE(variable);
    ScopedEnv e(variable, "sideways");
    const std::string want = std::string(variable) + " (= \"sideways\")";
    try {
      cpu::algo_space(ctx);
      ADD_FAILURE() << "an unknown value was accepted";
    } catch (const Error& err) {
      EXPECT_EQ(err.code(), Status::invalid_argument);
      EXPECT_NE(std::string(err.what()).find(want), std::string::npos) << err.what();
    }
    try {
      Plan plan(p.cfg, p.shape, backend_options(Backend::cpu, 2));
      ADD_FAILURE() << "a plan was built";
    } catch (const Error& err) {
      EXPECT_EQ(err.code(), Status::invalid_argument);
      EXPECT_NE(std::string(err.what()).find(want), std::string::npos) << err.what();
    }
  }
}

// On two threads the heuristic runs team loops for every cell but LSTM with projection,
// whose two barriers per step cost more beside a busy process (docs/robustness.md); the
// search still measures its team loop, and forcing it still takes it.
TEST(Autotune, ProjectionKeepsTheStepByStepHeuristic) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  const SequenceShape shape = SequenceShape::padded(9, 5, {9, 3, 0, 7, 1});
  const Config lstm = make_config(CellType::lstm, 7, 40, 1, false, DataType::f32);
  if (!cpu::algo_space(context(lstm, shape, 2)).heuristic.team_loops) {
    GTEST_SKIP() << "no packed engine on this machine or build: no team loops to choose";
  }
  Config proj = lstm;
  proj.proj_size = 12;
  const AlgoSpace space = cpu::algo_space(context(proj, shape, 2));
  EXPECT_FALSE(space.heuristic.team_loops);
  bool searched = false;
  for (const Algo& a : space.candidates) searched = searched || a.team_loops;
  EXPECT_TRUE(searched) << "the search must still measure the team loop";
  {
    ScopedEnv e("RNNX_CPU_TIME_LOOP", "team");
    EXPECT_TRUE(cpu::algo_space(context(proj, shape, 2)).heuristic.team_loops);
  }
  // Every other cell keeps team loops, the original GRU (two products per step) included.
  for (const Config& c : {make_config(CellType::gru, 7, 40, 1, false, DataType::f32, 0, false),
                          make_config(CellType::gru, 7, 40, 1, false, DataType::f32),
                          make_config(CellType::rnn_tanh, 7, 40, 1, false, DataType::f32)}) {
    SCOPED_TRACE(short_name(c));
    EXPECT_TRUE(cpu::algo_space(context(c, shape, 2)).heuristic.team_loops);
  }
}

TEST(Autotune, SearchesRemembersAndCanBeTurnedOff) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  FreshCache fresh;
  const TestCase p = open_case();
  const PlanOptions o = backend_options(Backend::cpu, 2);
  const AlgoSpace space = cpu::algo_space(context(p.cfg, p.shape, 2));
  ASSERT_GE(space.candidates.size(), 2u);
  {
    ScopedEnv off("RNNX_AUTOTUNE", "0");
    Plan plan(p.cfg, p.shape, o);
    EXPECT_EQ(plan.impl_name(), std::string("cpu:") + cpu_isa_used() + "/" +
                                    cpu::algo_name(space.heuristic, true, space.isa))
        << "RNNX_AUTOTUNE=0: the heuristic, not marked tuned";
    EXPECT_FALSE(core::autotune_lookup(cpu::autotune_key(context(p.cfg, p.shape, 2))))
        << "nothing searched, nothing stored";
  }
  ScopedEnv on("RNNX_AUTOTUNE", nullptr);
  Plan first(p.cfg, p.shape, o);
  const std::string name = first.impl_name();
  ASSERT_GE(name.size(), 6u);
  EXPECT_EQ(name.substr(name.size() - 6), "/tuned") << name;
  const auto stored = core::autotune_lookup(cpu::autotune_key(context(p.cfg, p.shape, 2)));
  ASSERT_TRUE(stored);
  EXPECT_NE(name.find("/" + *stored + "/tuned"), std::string::npos) << name << " vs " << *stored;
  // Another batch of the same geometry with other lengths (same steps, about as many
  // tokens) reuses the choice.
  const SequenceShape other = SequenceShape::padded(9, 5, {2, 9, 4, 5, 0});
  EXPECT_EQ(cpu::autotune_key(context(p.cfg, other, 2)),
            cpu::autotune_key(context(p.cfg, p.shape, 2)));
  Plan second(p.cfg, other, o);
  EXPECT_EQ(second.impl_name(), name);
  // A different problem has a different key.
  Config wider = p.cfg;
  wider.hidden_size = 41;
  EXPECT_NE(cpu::autotune_key(context(wider, p.shape, 2)),
            cpu::autotune_key(context(p.cfg, p.shape, 2)));
  EXPECT_NE(cpu::autotune_key(context(p.cfg, p.shape, 1)),
            cpu::autotune_key(context(p.cfg, p.shape, 2)));
}

// A plan built for inference searches on its own key (its search times inference forwards,
// not training steps), runs inference forwards, and refuses training forwards and backwards
// by name; a training plan of the same problem searches again, on the training key.
TEST(Autotune, InferencePlansSearchTheirOwnMode) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  FreshCache fresh;
  ScopedEnv on("RNNX_AUTOTUNE", nullptr);
  const TestCase p = open_case();
  PlanOptions o = backend_options(Backend::cpu, 2);
  o.purpose = PlanPurpose::inference;
  const std::string infer_key =
      cpu::autotune_key(context(p.cfg, p.shape, 2, PlanPurpose::inference));
  const std::string train_key = cpu::autotune_key(context(p.cfg, p.shape, 2));
  EXPECT_NE(infer_key, train_key);
  EXPECT_NE(infer_key.find("for=inference"), std::string::npos) << infer_key;
  Plan infer(p.cfg, p.shape, o);
  EXPECT_EQ(infer.options().purpose, PlanPurpose::inference);
  EXPECT_TRUE(core::autotune_lookup(infer_key)) << "searched and stored";
  EXPECT_FALSE(core::autotune_lookup(train_key)) << "no training step was timed";
  const Data d = make_data(p.cfg, p.shape.lengths, 3, {});
  const Tensors in = make_tensors(infer, d);
  EXPECT_NO_THROW(run(infer, in));
  RunOptions training;
  training.training = true;
  expect_error([&] { run(infer, in, training); }, Status::invalid_argument,
               {"forward: training is true", "built for inference", "PlanOptions::purpose"});
  BackwardArgs b;
  expect_error([&] { infer.backward(b); }, Status::invalid_argument,
               {"backward:", "built for inference"});
  Plan train(p.cfg, p.shape, backend_options(Backend::cpu, 2));
  EXPECT_TRUE(core::autotune_lookup(train_key));
  // Both compute the same function: an inference forward of each gives the same y.
  const Results a = run(infer, in), b2 = run(train, in);
  EXPECT_TRUE(near("y", a.y, b2.y, tolerance(p.cfg, 9, 5, false)));
  PlanOptions bad = o;
  bad.purpose = static_cast<PlanPurpose>(5);
  expect_error([&] { Plan x(p.cfg, p.shape, bad); }, Status::invalid_argument, {"purpose (= 5)"});
  // The search of an inference plan runs inference forwards in a workspace of the largest
  // size any candidate's calls need (an inference forward keeps in its workspace what a
  // training one keeps in the reserve: a buffer sized for training overflowed, which
  // AddressSanitizer shows and which crashed a double-precision bidirectional LSTM).
  for (DataType dt : {DataType::f64, DataType::f32}) {
    FreshCache again;
    const Config small = make_config(CellType::lstm, 3, 5, 2, true, dt);
    const SequenceShape ragged = SequenceShape::padded(4, 3, {4, 0, 2});
    Plan plan(small, ragged, o);
    const Tensors t = make_tensors(plan, make_data(small, {4, 0, 2}, 5, {}));
    Plan reference(small, ragged, backend_options(Backend::reference));
    EXPECT_TRUE(near("y", run(plan, t).y, run(reference, t).y, tolerance(small, 4, 3, false)));
  }
  EXPECT_EQ(plan_purpose_from_string("inference"), PlanPurpose::inference);
  expect_error([] { plan_purpose_from_string("eval"); }, Status::invalid_argument,
               {"purpose 'eval'", "training, inference"});
}

// A search whose repeated measurements disagree by more than RNNX_AUTOTUNE_SPREAD (here
// a factor below 1, which every pair of measurements exceeds) measured the machine's load,
// not the candidates: the plan, and the process's later plans of the problem, get the
// heuristic, and the cache file nothing. The factor must be a number > 0.
TEST(Autotune, SearchUnderInterferenceKeepsNothing) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  FreshCache fresh;
  const TestCase p = open_case();
  const PlanOptions o = backend_options(Backend::cpu, 2);
  const AlgoSpace space = cpu::algo_space(context(p.cfg, p.shape, 2));
  ASSERT_GE(space.candidates.size(), 2u);
  const std::string heuristic =
      std::string("cpu:") + cpu_isa_used() + "/" + cpu::algo_name(space.heuristic, true, space.isa);
  const std::string path = temp_path("disturbed");
  std::remove(path.c_str());
  {
    ScopedEnv file("RNNX_AUTOTUNE_CACHE", path.c_str());
    {
      ScopedEnv disturbed("RNNX_AUTOTUNE_SPREAD", "0.5");
      Plan plan(p.cfg, p.shape, o);
      EXPECT_EQ(plan.impl_name(), heuristic);
    }
    // Later plans of the problem in this process keep the heuristic (the same bits as the
    // first), however quiet the machine has become; the file got nothing.
    Plan later(p.cfg, p.shape, o);
    EXPECT_EQ(later.impl_name(), heuristic);
    EXPECT_FALSE(std::ifstream(path).good()) << "a disturbed search wrote the cache file";
    // Another process (here: a fresh memory) searches again.
    core::autotune_clear_memory();
    Plan next(p.cfg, p.shape, o);
    EXPECT_EQ(next.impl_name().substr(next.impl_name().size() - 6), "/tuned") << next.impl_name();
  }
  std::remove(path.c_str());
  for (const char* bad : {"wide", "0", "-2", "1.5x"}) {
    core::autotune_clear_memory();  // so that the plan searches (and reads the variable)
    ScopedEnv e("RNNX_AUTOTUNE_SPREAD", bad);
    try {
      Plan plan(p.cfg, p.shape, o);
      ADD_FAILURE() << "RNNX_AUTOTUNE_SPREAD=" << bad << " was accepted";
    } catch (const Error& err) {
      EXPECT_EQ(err.code(), Status::invalid_argument);
      EXPECT_NE(std::string(err.what()).find(std::string("RNNX_AUTOTUNE_SPREAD (= \"") + bad),
                std::string::npos)
          << err.what();
    }
  }
}

// A long problem is measured with its lengths scaled to 32 steps (the rows of each step in
// the same proportions): it shares its key, and so its choice, with that short problem, in
// every layout; building its plan searches (here through the packed layout's branch too).
TEST(Autotune, LongProblemsAreMeasuredShortened) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  FreshCache fresh;
  ScopedEnv on("RNNX_AUTOTUNE", nullptr);
  const Config cfg = make_config(CellType::gru, 5, 24, 1, true, DataType::f32);
  const std::vector<int64_t> lengths = {256, 0, 100, 17, 1, 255};
  const std::vector<int64_t> scaled = {32, 0, 13, 3, 1, 32};  // ceil(len * 32 / 256)
  for (bool batch_first : {false, true}) {
    EXPECT_EQ(
        cpu::autotune_key(context(cfg, SequenceShape::padded(300, 6, lengths, batch_first), 2)),
        cpu::autotune_key(context(cfg, SequenceShape::padded(32, 6, scaled, batch_first), 2)));
  }
  // Packed: batch_sizes of the lengths sorted (256, 255, 100, 17, 1, 0), and of the scaled.
  std::vector<int64_t> long_sizes(256, 0), short_sizes(32, 0);
  for (int64_t len : {256, 255, 100, 17, 1}) {
    for (int64_t t = 0; t < len; ++t) ++long_sizes[static_cast<size_t>(t)];
  }
  for (int64_t len : {32, 32, 13, 3, 1}) {
    for (int64_t t = 0; t < len; ++t) ++short_sizes[static_cast<size_t>(t)];
  }
  const std::vector<int64_t> order = {4, 0, 2, 1, 3};
  EXPECT_EQ(cpu::autotune_key(context(cfg, SequenceShape::packed(long_sizes, order), 2)),
            cpu::autotune_key(context(cfg, SequenceShape::packed(short_sizes, order), 2)));
  // Different proportions of rows per step: a different key.
  EXPECT_NE(cpu::autotune_key(context(cfg, SequenceShape::padded(256, 6, {}), 2)),
            cpu::autotune_key(context(cfg, SequenceShape::padded(300, 6, lengths), 2)));
  for (const SequenceShape& shape :
       {SequenceShape::padded(300, 6, lengths), SequenceShape::packed(long_sizes, order)}) {
    Plan plan(cfg, shape, backend_options(Backend::cpu, 2));
    const std::string name = plan.impl_name();
    EXPECT_EQ(name.substr(name.size() - 6), "/tuned") << name;
    EXPECT_TRUE(core::autotune_lookup(cpu::autotune_key(context(cfg, shape, 2))));
  }
}

TEST(Autotune, UnknownSwitchValueIsRefused) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  FreshCache fresh;
  ScopedEnv bad("RNNX_AUTOTUNE", "yes");
  const TestCase p = open_case();
  try {
    Plan plan(p.cfg, p.shape, backend_options(Backend::cpu, 2));
    FAIL() << "RNNX_AUTOTUNE=yes accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Status::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("RNNX_AUTOTUNE (= \"yes\")"), std::string::npos)
        << e.what();
  }
}

TEST(Autotune, DiskCacheIsReadWrittenAndChecked) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  FreshCache fresh;
  ScopedEnv on("RNNX_AUTOTUNE", nullptr);
  const TestCase p = open_case();
  const PlanOptions o = backend_options(Backend::cpu, 2);
  const PlanContext ctx = context(p.cfg, p.shape, 2);
  const std::string key = cpu::autotune_key(ctx);
  const AlgoSpace space = cpu::algo_space(ctx);
  ASSERT_GE(space.candidates.size(), 2u);
  const Algo pick = space.candidates.back();  // not the heuristic
  const std::string pick_name = cpu::algo_name(pick, true, space.isa);

  // A file written by another process: junk lines, a stale entry and then the pick (the
  // last line of a key wins).
  const std::string path = temp_path("read");
  {
    std::ofstream f(path);
    f << "no tab on this line\n\tno key\nkey without choice\t\n"
      << key << "\t" << cpu::algo_name(space.heuristic, true, space.isa) << "\n"
      << key << "\t" << pick_name << "\n";
  }
  {
    ScopedEnv file("RNNX_AUTOTUNE_CACHE", path.c_str());
    Plan plan(p.cfg, p.shape, o);
    EXPECT_EQ(plan.impl_name(), std::string("cpu:") + cpu_isa_used() + "/" + pick_name + "/tuned");
  }
  std::remove(path.c_str());

  // A stored choice that is not a candidate (here: one the environment forces away, stored
  // under the key of the forced space, as a file written by another version might hold) is
  // searched again, and the new choice is appended to the file.
  core::autotune_clear_memory();
  const std::string out = temp_path("write");
  std::remove(out.c_str());
  {
    ScopedEnv file("RNNX_AUTOTUNE_CACHE", out.c_str());
    ScopedEnv seq("RNNX_CPU_DIRECTIONS", "sequential");
    const std::string forced_key = cpu::autotune_key(ctx);
    EXPECT_NE(forced_key, key) << "a search among fewer candidates is stored apart";
    {
      std::ofstream f(out);
      f << forced_key << "\tonednn-sgemm/dirs-concurrent\n"
        << forced_key << "\tnot-an-engine/team\n";
    }
    Plan plan(p.cfg, p.shape, o);
    EXPECT_EQ(plan.impl_name().find("dirs-concurrent"), std::string::npos) << plan.impl_name();
    std::ifstream f(out);
    std::string line, last;
    int lines = 0;
    while (std::getline(f, line)) {
      last = line;
      ++lines;
    }
    EXPECT_EQ(lines, 3) << "the search appended its choice";
    EXPECT_EQ(last.substr(0, forced_key.size() + 1), forced_key + "\t");
    Algo stored;
    ASSERT_TRUE(cpu::parse_algo(last.substr(forced_key.size() + 1), &stored)) << last;
    EXPECT_FALSE(stored.concurrent_dirs);
  }
  std::remove(out.c_str());

  // A last line without its newline (another process's append under way, or a file cut
  // short) is not read, nor are bytes that are not text.
  core::autotune_clear_memory();
  const std::string torn = temp_path("torn");
  {
    std::ofstream f(torn, std::ios::binary);
    f << std::string("\0\xff\x01\t\xfe\n", 6) << key << "\t" << pick_name;
  }
  {
    ScopedEnv file("RNNX_AUTOTUNE_CACHE", torn.c_str());
    EXPECT_FALSE(core::autotune_lookup(key)) << "a line without its newline was read";
  }
  std::remove(torn.c_str());

  // A file that cannot be written does not fail the plan.
  core::autotune_clear_memory();
  ScopedEnv file("RNNX_AUTOTUNE_CACHE", "/nonexistent-dir/rnnx/cache.txt");
  EXPECT_NO_THROW(Plan(p.cfg, p.shape, o));
}

// Every candidate the search can pick, forced through the cache, against the reference:
// results may differ between choices only by float rounding.
std::vector<TestCase> search_cases() {
  std::vector<TestCase> out;
  auto add = [&](const char* name, Config c, SequenceShape s) {
    TestCase p;
    p.name = name;
    p.cfg = c;
    p.shape = s;
    out.push_back(p);
  };
  add("lstm_bidir_ragged", open_case().cfg, open_case().shape);
  add("gru_orig_bidir", make_config(CellType::gru, 6, 33, 1, true, DataType::f32, 0, false),
      SequenceShape::padded(6, 4, {6, 6, 2, 5}));
  add("lstmp_l2", make_config(CellType::lstm, 5, 36, 2, false, DataType::f32, 12),
      SequenceShape::padded(7, 3, {7, 4, 1}));
  add("rnn_relu_many_rows", make_config(CellType::rnn_relu, 9, 20, 1, true, DataType::f32),
      SequenceShape::padded(5, 40, {}));
  add("gru_lbr_packed", make_config(CellType::gru, 4, 17, 2, true, DataType::f32),
      packed_shape({8, 2, 5, 1, 8, 3}, true));
  return out;
}

class EveryCandidate : public ::testing::TestWithParam<std::tuple<TestCase, DataType>> {};

TEST_P(EveryCandidate, MatchesTheReference) {
  RNNX_SKIP_UNLESS_AVAILABLE(Backend::cpu);
  FreshCache fresh;
  ScopedEnv on("RNNX_AUTOTUNE", nullptr);
  ScopedEnv no_file("RNNX_AUTOTUNE_CACHE", nullptr);
  rnnx::set_num_threads(2);  // check_cpu_against_reference's plans use the OpenMP default
  TestCase p = std::get<0>(GetParam());
  p.cfg.dtype = std::get<1>(GetParam());
  const PlanContext ctx = context(p.cfg, p.shape, 0);
  const bool f32 = p.cfg.dtype == DataType::f32;
  const AlgoSpace space = cpu::algo_space(ctx);
  std::vector<size_t> sizes;  // of the first candidate's plan
  for (const Algo& a : space.candidates) {
    SCOPED_TRACE(cpu::algo_name(a, f32, space.isa));
    core::autotune_clear_memory();
    core::autotune_store(cpu::autotune_key(ctx), cpu::algo_name(a, f32, space.isa));
    {
      // A single candidate is the heuristic, taken without a search.
      const std::string want =
          "/" + cpu::algo_name(a, f32, space.isa) + (space.candidates.size() > 1 ? "/tuned" : "");
      Plan plan(p.cfg, p.shape, backend_options(Backend::cpu));
      const std::string name = plan.impl_name();
      ASSERT_GE(name.size(), want.size());
      ASSERT_EQ(name.substr(name.size() - want.size()), want) << name;
      // The sizes are the problem's, whatever the search picked.
      const std::vector<size_t> these = {plan.forward_workspace_size(false),
                                         plan.forward_workspace_size(true),
                                         plan.backward_workspace_size(), plan.reserve_size()};
      if (sizes.empty()) sizes = these;
      EXPECT_EQ(these, sizes);
    }
    check_cpu_against_reference(p, p.cfg.dtype);
  }
}

INSTANTIATE_TEST_SUITE_P(Problems, EveryCandidate,
                         ::testing::Combine(::testing::ValuesIn(search_cases()),
                                            ::testing::Values(DataType::f32, DataType::f64)),
                         [](const auto& info) {
                           return std::get<0>(info.param).name + "_" +
                                  to_string(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace rnnx_test
