// 16-bit data (DataType::bf16 and DataType::f16) on the cpu backend; cpu_backend.cpp's
// factory hands it the plans of those types.
#pragma once

#include <memory>

#include "core/backend.hpp"

namespace rnnx::cpu {

std::unique_ptr<BackendImpl> make_half_data_backend(const PlanContext& ctx);

}  // namespace rnnx::cpu
