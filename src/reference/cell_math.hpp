// One step of each cell, forward and backward, in double, written straight from the
// equations of docs/math.md (PyTorch's cells plus ONNX's options: peepholes, gate clip,
// coupled input-forget gate, activation functions). Used only by the reference backend.
#pragma once

#include <cstdint>
#include <vector>

#include "rnnx/config.hpp"

namespace rnnx::reference {

struct WeightView {
  double* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  WeightView() = default;
  WeightView(double* d, int64_t r, int64_t c) : data(d), rows(r), cols(c) {}
  bool empty() const { return data == nullptr; }
  double& operator()(int64_t r, int64_t c) const { return data[r * cols + c]; }
  double& operator[](int64_t i) const { return data[i]; }
};

// One layer and direction's parameters (or their gradients); absent ones are empty.
struct CellWeights {
  WeightView w_ih, w_hh, b_ih, b_hh, w_hr, w_peephole;
};

// What one forward step keeps for its backward.
struct CellRecord {
  std::vector<double> h_prev;  // [P']
  std::vector<double> c_prev;  // [H] LSTM
  std::vector<double> pre;     // [G*H] gate pre-activations, after the gate clip
  std::vector<char> pre_pass;  // [G*H] whether the gate clip let the gradient through
  std::vector<double> gates;   // [G*H] activated gates
  std::vector<double> hh_n;    // GRU: W_hn h + b_hn (linear before reset) or r*h (original)
  std::vector<double> c_raw;   // LSTM: c before clipping
  std::vector<double> c;       // LSTM: c after clipping
  std::vector<double> h_full;  // LSTM: o * h(c), the input of the projection
  std::vector<double> r_raw;   // LSTMP: W_hr h_full before clipping
};

// Clamp to [lo, hi] following the NaN policy (replace: NaN becomes hi).
double clip_value(double v, const Clip& clip, NanPolicy nan);
// Whether the gradient passes the clamp: the value was inside [lo, hi], or NaN propagated.
bool clip_passes(double raw, const Clip& clip, NanPolicy nan);

// h [P'] and c [H] are the state before the step on entry and after it on return.
// `acts` are the direction's activations (direction_activations()).
void cell_forward(const Config& cfg, const std::vector<Activation>& acts, const CellWeights& w,
                  const double* x, std::vector<double>& h, std::vector<double>& c, CellRecord* rec);

// dh [P'] on entry: dL/dh_t (everything reaching this step's output); on return:
// dL/dh_{t-1}. dc likewise for LSTM. Adds into dx [in] and into the gradients `g`.
void cell_backward(const Config& cfg, const std::vector<Activation>& acts, const CellWeights& w,
                   const CellWeights& g, const double* x, const CellRecord& rec,
                   std::vector<double>& dh, std::vector<double>& dc, double* dx);

}  // namespace rnnx::reference
