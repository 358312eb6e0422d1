// The gate orders of every layout rnnx converts from and to, in one place (equations in
// docs/math.md). rnnx's own order is PyTorch's: LSTM i, f, g, o; GRU r, z, n; peepholes
// i, f, o. Each table maps rnnx's gate k to the position of that gate in the other layout.
#pragma once

#include <array>
#include <cstdint>

#include "rnnx/config.hpp"

namespace rnnx::core {

// ONNX: LSTM i, o, f, c (c is rnnx's g); GRU z, r, h (h is rnnx's n); peepholes i, o, f.
constexpr std::array<int64_t, 4> kOnnxLstmGate = {0, 2, 3, 1};
constexpr std::array<int64_t, 3> kOnnxGruGate = {1, 0, 2};
constexpr std::array<int64_t, 3> kOnnxPeephole = {0, 2, 1};

// Position in ONNX's order of rnnx's gate k for this cell.
inline int64_t onnx_gate(CellType cell, int64_t k) {
  switch (cell) {
    case CellType::lstm:
      return kOnnxLstmGate[k];
    case CellType::gru:
      return kOnnxGruGate[k];
    default:
      return k;
  }
}

}  // namespace rnnx::core
