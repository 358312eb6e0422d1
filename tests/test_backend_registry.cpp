// The backend registry (src/core/backend_registry.hpp): it lists exactly the backends whose
// folders the build compiled (CMake's RNNX_BACKENDS, handed to this suite as
// RNNX_TEST_BUILT_BACKENDS), finds each by its name, and lets each fill its own fields of
// build_info().
#include <gtest/gtest.h>

#include <string>

#include "core/backend_registry.hpp"
#include "rnnx/plan.hpp"
#include "rnnx/version.hpp"

namespace rnnx {
namespace {

bool listed(const std::string& list, const std::string& name) {
  return (", " + list + ", ").find(", " + name + ", ") != std::string::npos;
}

TEST(BackendRegistry, ListsExactlyTheBackendsTheBuildCompiled) {
  EXPECT_EQ(core::built_backends(), RNNX_TEST_BUILT_BACKENDS);
  for (Backend b : {Backend::reference, Backend::cpu, Backend::cuda}) {
    EXPECT_EQ(core::backend_built(b), listed(RNNX_TEST_BUILT_BACKENDS, to_string(b)))
        << to_string(b);
  }
  EXPECT_EQ(std::string(build_info().backends), core::built_backends());
}

// build_info's cpu fields come from the cpu backend's registration (its describe), not
// from core: with the cpu backend built, its GEMM engines are named.
TEST(BackendRegistry, EachBackendDescribesItsOwnFields) {
  const BuildInfo info = build_info();
  ASSERT_NE(info.gemm_engine, nullptr);
  const std::string engines = info.gemm_engine;
  if (!core::backend_built(Backend::cpu)) {
    EXPECT_EQ(engines.rfind("none", 0), 0u) << engines;
    return;
  }
  EXPECT_NE(engines.find("float32 packed"), std::string::npos) << engines;
  EXPECT_NE(engines.find("float64"), std::string::npos) << engines;
  EXPECT_EQ(info.with_onednn, engines.find("onednn-sgemm") != std::string::npos) << engines;
  EXPECT_EQ(info.with_blas, engines.find("(no BLAS in this build)") == std::string::npos)
      << engines;
}

}  // namespace
}  // namespace rnnx
