// describe_libraries() of plugin_describe.hpp. Where libcudnn came from matters most: the
// wheel's RUNPATH should find NVIDIA's pip wheel before any system copy, and this shows it.
#include "cuda/plugin/plugin_describe.hpp"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include "cuda/call_table.hpp"

namespace rnnx::cuda {

std::string describe_libraries() {
  // Through the call table, as every call of the backend (a fake device answers for itself).
  const size_t v = calls().cudnnGetVersion();  // major * 10000 + minor * 100 + patch, cuDNN 9
  std::string text = "cuDNN " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) +
                     "." + std::to_string(v % 100) + " run time";
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(calls().cudnnGetVersion), &info) != 0 &&
      info.dli_fname != nullptr) {
    // Normalised: the loader names it by the RUNPATH it came through (lib/../../nvidia/...).
    char real[PATH_MAX];
    text += std::string(" from ") + (realpath(info.dli_fname, real) ? real : info.dli_fname);
  }
  int runtime = 0;
  if (calls().cudaRuntimeGetVersion(&runtime) == cudaSuccess) {
    text += ", CUDA runtime " + std::to_string(runtime / 1000) + "." +
            std::to_string(runtime % 1000 / 10) + " (static)";
  }
  return text;
}

}  // namespace rnnx::cuda
