// --backend of `rnnx run` and `rnnx bench` (commands.hpp): their buffers are host memory, so
// they take the host backends and refuse cuda, saying where to go instead.
#include "commands.hpp"

namespace rnnx::tool {

CLI::Option* add_host_backend_option(CLI::App& app, std::string& backend,
                                     const std::string& gpu_hint) {
  return app.add_option("--backend", backend, "reference or cpu")
      ->check(CLI::IsMember({"reference", "cpu", "cuda"}))
      ->check(
          [gpu_hint](const std::string& v) {
            return v == "cuda"
                       ? "--backend cuda: this command runs on host buffers; on a GPU use " +
                             gpu_hint
                       : std::string();
          },
          "host backends")
      ->capture_default_str();
}

}  // namespace rnnx::tool
