// bfloat16 data (DataType::bf16) on the cpu backend; cpu_backend.cpp's factory hands it
// the plans of that type.
#pragma once

#include <memory>

#include "core/backend.hpp"

namespace rnnx::cpu {

std::unique_ptr<BackendImpl> make_bf16_backend(const PlanContext& ctx);

}  // namespace rnnx::cpu
