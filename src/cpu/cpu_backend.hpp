// The cpu backend's factory (cpu_backend.cpp), for the wrappers of the cpu folder that run it
// inside (half_data_backend.cpp), and its registration (core/backend_registry.hpp).
#pragma once

#include <memory>

#include "core/backend.hpp"
#include "core/backend_registry.hpp"

namespace rnnx {

std::unique_ptr<BackendImpl> make_cpu_backend(const PlanContext& ctx);
core::BackendRegistration cpu_backend_registration();

}  // namespace rnnx
