// The backend plugin loader (src/core/backend_plugin.hpp, rnnx/plugin.hpp) against the fake
// plugins of tests/plugin_fakes: every way a file can be refused gives Error naming the path
// and the reason; an accepted plugin's error crosses the C boundary with its status and
// message; build_info() names the plugin. The fake brings "cuda": where the build has the
// cuda backend built in, loading it is refused instead, and the crossing tests skip (the
// builds without CUDA run them, and the rnnx-cuda wheel's check runs the real plugin).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/backend_registry.hpp"
#include "rnnx/error.hpp"
#include "rnnx/plan.hpp"
#include "rnnx/plugin.hpp"
#include "rnnx/version.hpp"

namespace rnnx {
namespace {

// Runs f, expecting Error(code) whose message holds every one of `parts`.
template <typename F>
void expect_error(F&& f, Status code, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const std::string& part : parts) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
          << "\"" << part << "\" missing from: " << e.what();
    }
  }
}

Plan cuda_plan() {
  Config c;
  c.cell = CellType::lstm;
  c.input_size = 3;
  c.hidden_size = 5;
  PlanOptions o;
  o.backend = Backend::cuda;
  return Plan(c, SequenceShape::padded(4, 2, {4, 3}), o);
}

bool cuda_built_in() {
  return core::backend_built(Backend::cuda);
}

TEST(BackendPlugin, MissingFileNamesThePathAndTheLoadersReason) {
  const std::string path = "/nonexistent/librnnx_cuda.so";
  expect_error([&] { load_backend_plugin(path); }, Status::invalid_argument,
               {"backend plugin " + path, "cannot load it", "No such file"});
  expect_error([] { load_backend_plugin(""); }, Status::invalid_argument, {"path is empty"});
}

TEST(BackendPlugin, LibraryWithoutTheEntryIsNotAPlugin) {
  expect_error([] { load_backend_plugin(RNNX_TEST_NOT_A_PLUGIN); }, Status::invalid_argument,
               {RNNX_TEST_NOT_A_PLUGIN, "not an rnnx backend plugin",
                "no symbol rnnx_backend_plugin_entry"});
}

TEST(BackendPlugin, MissingDependencyNamesIt) {
  expect_error([] { load_backend_plugin(RNNX_TEST_PLUGIN_fake_plugin_needing_missing); },
               Status::invalid_argument,
               {RNNX_TEST_PLUGIN_fake_plugin_needing_missing, "cannot load it",
                "librnnx_fake_dependency.so"});
}

TEST(BackendPlugin, OtherAbiVersionNamesBothSides) {
  expect_error([] { load_backend_plugin(RNNX_TEST_PLUGIN_fake_plugin_other_abi); },
               Status::invalid_argument,
               {RNNX_TEST_PLUGIN_fake_plugin_other_abi, "plugin ABI version 999",
                "speaks version 1", "rnnx " RNNX_VERSION_STRING});
}

TEST(BackendPlugin, OtherRnnxVersionNamesBothSides) {
  expect_error([] { load_backend_plugin(RNNX_TEST_PLUGIN_fake_plugin_other_version); },
               Status::invalid_argument,
               {RNNX_TEST_PLUGIN_fake_plugin_other_version, "built for rnnx 0.0.1-other",
                "this librnnx is rnnx " RNNX_VERSION_STRING});
}

TEST(BackendPlugin, UnknownAndBuiltInBackendsAreRefused) {
  expect_error([] { load_backend_plugin(RNNX_TEST_PLUGIN_fake_plugin_unknown_backend); },
               Status::invalid_argument, {"brings backend \"tpu\"", "does not know"});
  expect_error([] { load_backend_plugin(RNNX_TEST_PLUGIN_fake_plugin_builtin_backend); },
               Status::invalid_argument, {"brings backend cpu", "built in"});
  expect_error([] { register_backend_plugin(Backend::cpu, "/x/librnnx_cpu.so"); },
               Status::invalid_argument, {"cpu", "built into this librnnx"});
  expect_error([] { register_backend_plugin(static_cast<Backend>(7), "/x/y.so"); },
               Status::invalid_argument, {"(= 7) is not a backend"});
}

TEST(BackendPlugin, PlanWithoutPluginSaysWhereItLooked) {
  if (cuda_built_in()) GTEST_SKIP() << "the cuda backend is built in";
  unsetenv("RNNX_CUDA_PLUGIN");
  expect_error([] { cuda_plan(); }, Status::unsupported,
               {"backend (= cuda) is not in this build", "RNNX_CUDA_PLUGIN", "librnnx_cuda.so",
                "rnnx-cuda"});
}

TEST(BackendPlugin, PlanWithBadEnvironmentPathSaysWhy) {
  if (cuda_built_in()) GTEST_SKIP() << "the cuda backend is built in";
  setenv("RNNX_CUDA_PLUGIN", RNNX_TEST_PLUGIN_fake_plugin_other_abi, 1);
  expect_error([] { cuda_plan(); }, Status::unsupported,
               {"backend (= cuda) is not in this build", "its plugin did not load",
                "plugin ABI version 999", "from RNNX_CUDA_PLUGIN"});
  unsetenv("RNNX_CUDA_PLUGIN");
}

TEST(BackendPlugin, RegisteredPathIsLoadedOnFirstUse) {
  if (cuda_built_in()) GTEST_SKIP() << "the cuda backend is built in";
  EXPECT_THROW(register_backend_plugin(Backend::cuda, ""), Error);
  register_backend_plugin(Backend::cuda, RNNX_TEST_PLUGIN_fake_plugin_other_version);
  expect_error([] { cuda_plan(); }, Status::unsupported,
               {"its plugin did not load", "built for rnnx 0.0.1-other",
                "registered by register_backend_plugin"});
  register_backend_plugin(Backend::cuda, RNNX_TEST_PLUGIN_fake_cuda_plugin);
  expect_error([] { cuda_plan(); }, Status::unsupported, {"backend cuda: no CUDA device"});
}

// Last in the file: the plugin stays loaded for the process.
TEST(BackendPlugin, ErrorsCrossTheBoundaryIntact) {
  if (cuda_built_in()) {
    expect_error([] { load_backend_plugin(RNNX_TEST_PLUGIN_fake_cuda_plugin); },
                 Status::invalid_argument, {"brings backend cuda", "built in"});
    return;
  }
  EXPECT_EQ(load_backend_plugin(RNNX_TEST_PLUGIN_fake_cuda_plugin), Backend::cuda);
  EXPECT_EQ(load_backend_plugin(RNNX_TEST_PLUGIN_fake_cuda_plugin), Backend::cuda);  // again
  // The plugin's status and message, and what crossed to it (config text, host lengths).
  expect_error([] { cuda_plan(); }, Status::unsupported,
               {"backend cuda: no CUDA device (fake plugin", "cell=lstm input_size=3",
                "2 lengths, first 4"});
  const std::string plugins = build_info().plugins;
  EXPECT_NE(plugins.find(std::string("cuda from ") + RNNX_TEST_PLUGIN_fake_cuda_plugin),
            std::string::npos)
      << plugins;
  EXPECT_NE(plugins.find("fake libraries 1.2.3"), std::string::npos) << plugins;
  // Another file for a backend already loaded is refused.
  expect_error([] { load_backend_plugin(RNNX_TEST_PLUGIN_fake_plugin_needing_missing); },
               Status::invalid_argument, {"cannot load it"});
}

}  // namespace
}  // namespace rnnx
