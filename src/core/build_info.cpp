// Build options baked in at compile time, for `rnnx info`; each backend fills its own
// fields (backend_registry.hpp).
#include <deque>
#include <mutex>
#include <string>

#include "core/backend_plugin.hpp"
#include "core/backend_registry.hpp"
#include "rnnx/version.hpp"

#ifndef RNNX_BUILD_TYPE
#define RNNX_BUILD_TYPE "unknown"
#endif

namespace rnnx {

BuildInfo build_info() {
  BuildInfo info{};
  info.version = RNNX_VERSION_STRING;
  info.build_type = RNNX_BUILD_TYPE;
#if defined(__clang__)
  info.compiler = "clang " __clang_version__;  // zig's for the wheels, clang-14 for fuzzing
#else
  info.compiler = "g++ " __VERSION__;
#endif
  info.gemm_engine = "none (no cpu backend in this build)";
  static const std::string backends = core::built_backends();
  info.backends = backends.c_str();
#if defined(__SANITIZE_ADDRESS__)
  info.sanitizers = true;
#else
  info.sanitizers = false;
#endif
  core::describe_backends(info);
  // Every text handed out stays valid: a caller may hold an older BuildInfo while another
  // thread asks again (the texts differ only as plugins load, so this stays small).
  static std::mutex mutex;
  static std::deque<std::string> plugin_texts;
  std::string plugins = core::describe_plugins();
  std::lock_guard<std::mutex> lock(mutex);
  if (plugin_texts.empty() || plugin_texts.back() != plugins) plugin_texts.push_back(plugins);
  info.plugins = plugin_texts.back().c_str();
  return info;
}

}  // namespace rnnx
