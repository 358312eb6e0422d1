// cublas() and check(cublasStatus_t) of cublas_loader.hpp.
#include "cuda/cublas_loader.hpp"

#include <dlfcn.h>

#include <string>

#include "cuda/call_table.hpp"
#include "rnnx/error.hpp"

namespace rnnx::cuda {
namespace {

template <typename F>
void resolve(void* lib, const char* symbol, F* to, const std::string& name) {
  void* p = dlsym(lib, symbol);
  if (p == nullptr) {
    throw Error(Status::unsupported,
                "backend cuda: " + name + " has no " + symbol + " (its own kernels need it)");
  }
  *to = reinterpret_cast<F>(p);
}

Cublas load() {
  const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  const auto last_error = [] {
    const char* e = dlerror();
    return std::string(e != nullptr ? e : "no reason given");
  };
  std::string why = lib == nullptr ? last_error() : "";
  // NVIDIA's pip wheel (nvidia-cublas puts it in site-packages/nvidia/cu<major>/lib), seen
  // from this library's own folder, site-packages/<package>/lib, as the plugin's RUNPATH does
  // for cuDNN: the plugin's own RUNPATH covers dlopen too, this covers a copy without it.
  if (lib == nullptr) {
    Dl_info self{};
    if (dladdr(reinterpret_cast<void*>(&load), &self) != 0 && self.dli_fname != nullptr) {
      std::string dir = self.dli_fname;
      dir = dir.substr(0, dir.rfind('/') + 1);
      const std::string path =
          dir + "../../nvidia/cu" + std::to_string(CUBLAS_VER_MAJOR) + "/lib/" + name;
      lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (lib == nullptr) why += "; " + last_error();
    }
  }
#ifdef RNNX_CUDA_TOOLKIT_LIBDIR
  // The toolkit found at build time, for when the search path does not know it: the test
  // binaries link rnnx statically, with only cuDNN's folder in their RUNPATH. Never in the
  // plugin, which must not carry a path of the machine that built it.
  if (lib == nullptr) {
    const std::string path = std::string(RNNX_CUDA_TOOLKIT_LIBDIR) + "/" + name;
    lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) why += "; " + last_error();
  }
#endif
  if (lib == nullptr) {
    throw Error(Status::unsupported, "backend cuda: cannot load " + name +
                                         " (cuBLAS, which rnnx's own CUDA kernels use): " + why);
  }
  Cublas c{};  // the library stays loaded for the process
  resolve(lib, "cublasCreate_v2", &c.create, name);
  resolve(lib, "cublasDestroy_v2", &c.destroy, name);
  resolve(lib, "cublasSetStream_v2", &c.set_stream, name);
  resolve(lib, "cublasSgemm_v2", &c.sgemm, name);
  resolve(lib, "cublasDgemm_v2", &c.dgemm, name);
  resolve(lib, "cublasGemmEx", &c.gemm_ex, name);
  resolve(lib, "cublasGetStatusName", &c.status_name, name);
  resolve(lib, "cublasGetStatusString", &c.status_string, name);
  return c;
}

}  // namespace

const Cublas& load_cublas() {
  static const Cublas c = load();  // a failed load throws, and the next call tries again
  return c;
}

const Cublas& cublas() {
  return calls().cublas();
}

void check(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const Status code = status == CUBLAS_STATUS_ALLOC_FAILED    ? Status::out_of_memory
                      : status == CUBLAS_STATUS_NOT_SUPPORTED ? Status::unsupported
                                                              : Status::internal;
  throw Error(code, std::string("backend cuda: ") + what + ": " + cublas().status_name(status) +
                        " (" + cublas().status_string(status) + ")");
}

}  // namespace rnnx::cuda
