// The list of this build's backends (backend_registry.hpp): adding a backend is its folder
// and one line here.
#include "core/backend_registry.hpp"

#include "rnnx/error.hpp"

namespace rnnx::core {
namespace {

struct Registered {
  Backend backend;
  std::unique_ptr<BackendImpl> (*make)(const PlanContext& ctx);
};

constexpr Registered kBackends[] = {
    {Backend::reference, &make_reference_backend},
    {Backend::cpu, &make_cpu_backend},
#if defined(RNNX_HAVE_CUDA)
    {Backend::cuda, &make_cuda_backend},
#endif
};

}  // namespace

bool backend_built(Backend backend) {
  for (const Registered& r : kBackends) {
    if (r.backend == backend) return true;
  }
  return false;
}

std::string built_backends() {
  std::string list;
  for (const Registered& r : kBackends)
    list += (list.empty() ? "" : ", ") + std::string(to_string(r.backend));
  return list;
}

std::unique_ptr<BackendImpl> make_backend(const PlanContext& ctx) {
  const Backend wanted = ctx.options.backend;
  for (const Registered& r : kBackends) {
    if (r.backend == wanted) return r.make(ctx);
  }
  throw Error(Status::unsupported, std::string("backend (= ") + to_string(wanted) +
                                       ") is not in this build, which has " + built_backends());
}

}  // namespace rnnx::core
