// The reference backend: the oracle every other backend is tested against. Plain loops,
// one sequence at a time in its own order, every quantity in double. Backward recomputes
// the forward (its reserve holds nothing beyond the plan's header) and runs
// back-propagation through time sequence by sequence. Slow on purpose.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/backend.hpp"
#include "core/backend_registry.hpp"
#include "core/bfloat16.hpp"
#include "core/direction.hpp"
#include "core/dropout.hpp"
#include "core/float16.hpp"
#include "reference/cell_math.hpp"

namespace rnnx {
namespace {

using core::Schedule;
using reference::CellRecord;
using reference::CellWeights;

template <typename T>
class ReferenceBackend final : public BackendImpl {
 public:
  explicit ReferenceBackend(const PlanContext& ctx) : BackendImpl(ctx) {}

  std::string name() const override { return "reference"; }
  // Everything it knows of the batch it reads from the context at each call.
  bool rebind() override { return true; }

  size_t forward_workspace_size(bool) const override { return carve_forward(nullptr).used(); }
  size_t backward_workspace_size() const override { return carve_backward(nullptr).used(); }
  size_t reserve_size() const override { return 0; }

  void forward(const ForwardArgs& a, void* ws) override {
    Buffers buf;
    carve_forward(ws, &buf);
    run_forward(a.x, a.h0, a.c0, a.weights, a.training, a.dropout_counter, buf, nullptr);
    const auto& c = ctx_.config;
    const int64_t L = c.num_layers, D = c.num_directions(), P = c.output_size();
    write_sequence(buf.out[(L - 1) % 2], static_cast<T*>(a.y), D * P,
                   static_cast<T>(c.padding_fill));
    if (a.hy) std::transform(buf.hy, buf.hy + h_count(), static_cast<T*>(a.hy), to_t);
    if (a.cy) std::transform(buf.cy, buf.cy + c_count(), static_cast<T*>(a.cy), to_t);
  }

  void backward(const BackwardArgs& a, void* ws, uint64_t dropout_counter) override {
    Buffers buf;
    Carver carver = carve_backward(ws, &buf);
    (void)carver;
    // Recompute the training forward, keeping every layer's output.
    run_forward(a.x, a.h0, a.c0, a.weights, /*training=*/true, dropout_counter, buf, buf.layers);
    const auto& c = ctx_.config;
    const auto& s = ctx_.schedule;
    const int64_t L = c.num_layers, D = c.num_directions(), P = c.output_size(), H = c.hidden_size;
    const int64_t width = D * P;
    std::fill(buf.dw, buf.dw + ctx_.weights.numel(), 0.0);

    // dout: gradient w.r.t. the current layer's output, logical [T][B][width].
    double* dout = buf.dout;
    std::fill(dout, dout + s.T * s.B * width, 0.0);
    if (a.dy) read_sequence(static_cast<const T*>(a.dy), dout, width);
    for (int64_t l = L - 1; l >= 0; --l) {
      const int64_t in = l == 0 ? c.input_size : width;
      double* din = buf.din;
      std::fill(din, din + s.T * s.B * in, 0.0);
      const double* layer_in = l == 0 ? buf.x : buf.layers + (l - 1) * s.T * s.B * width;
      for (int64_t d = 0; d < D; ++d) {
        const CellWeights cw = weights_of(buf.w, l, d);
        const CellWeights gw = weights_of(buf.dw, l, d);
        const std::vector<Activation> acts = direction_activations(c, d);
        const bool rev = reversed(d);
        for (int64_t b = 0; b < s.B; ++b) {
          const int64_t len = length_of(b);
          const int64_t sd = (l * D + d) * s.B + b;
          // Forward again for this sequence, recording every step.
          std::vector<CellRecord>& rec = buf.records;
          rec.resize(len);
          std::vector<double> h(buf.h0 + sd * P, buf.h0 + (sd + 1) * P);
          std::vector<double> cs(H, 0.0);
          if (c.cell == CellType::lstm)
            std::copy(buf.c0 + sd * H, buf.c0 + (sd + 1) * H, cs.begin());
          for (int64_t k = 0; k < len; ++k) {
            const int64_t t = rev ? len - 1 - k : k;
            reference::cell_forward(c, acts, cw, layer_in + (t * s.B + b) * in, h, cs, &rec[k]);
          }
          // Back-propagation through time.
          std::vector<double> dh(P, 0.0), dc(H, 0.0);
          if (a.dhy) {
            for (int64_t j = 0; j < P; ++j) dh[j] = static_cast<const T*>(a.dhy)[sd * P + j];
          }
          if (a.dcy) {
            for (int64_t j = 0; j < H; ++j) dc[j] = static_cast<const T*>(a.dcy)[sd * H + j];
          }
          for (int64_t k = len - 1; k >= 0; --k) {
            const int64_t t = rev ? len - 1 - k : k;
            const double* g_out = dout + (t * s.B + b) * width + d * P;
            for (int64_t j = 0; j < P; ++j) dh[j] += g_out[j];
            reference::cell_backward(c, acts, cw, gw, layer_in + (t * s.B + b) * in, rec[k], dh, dc,
                                     din + (t * s.B + b) * in);
          }
          if (a.dh0) {
            for (int64_t j = 0; j < P; ++j)
              static_cast<T*>(a.dh0)[sd * P + j] = static_cast<T>(dh[j]);
          }
          if (a.dc0) {
            for (int64_t j = 0; j < H; ++j)
              static_cast<T*>(a.dc0)[sd * H + j] = static_cast<T>(dc[j]);
          }
        }
      }
      if (l > 0) {
        // The gradient flows through the dropout that fed this layer.
        if (c.dropout > 0.0) {
          const core::DropoutKey key{c.seed, dropout_counter, l - 1, c.dropout};
          const double scale = c.dropout < 1.0 ? 1.0 / (1.0 - c.dropout) : 0.0;
          for (int64_t t = 0; t < s.T; ++t)
            for (int64_t b = 0; b < s.B; ++b)
              for (int64_t j = 0; j < width; ++j) {
                double& g = din[(t * s.B + b) * width + j];
                g = core::dropout_keep(key, core::dropout_element(t, b, s.B, width, j)) ? g * scale
                                                                                        : 0.0;
              }
        }
        std::swap(buf.din, buf.dout);
        dout = buf.dout;
      } else if (a.dx) {
        write_sequence(din, static_cast<T*>(a.dx), c.input_size, T(0));
      }
    }
    if (a.dweights) {
      T* dw = static_cast<T*>(a.dweights);
      const bool acc = a.weight_grad_mode == GradMode::accumulate;
      for (int64_t i = 0; i < ctx_.weights.numel(); ++i)
        dw[i] = acc ? static_cast<T>(dw[i] + buf.dw[i]) : static_cast<T>(buf.dw[i]);
    }
  }

 private:
  struct Buffers {
    double* w = nullptr;       // the weights in double
    double* x = nullptr;       // layer-0 input, logical [T][B][I]
    double* out[2] = {};       // ping-pong layer outputs, logical [T][B][D*P']
    double* layers = nullptr;  // backward: every layer's output (after dropout)
    double* h0 = nullptr;      // [L*D][B][P']
    double* c0 = nullptr;      // [L*D][B][H]
    double* hy = nullptr;
    double* cy = nullptr;
    double* dout = nullptr;  // backward
    double* din = nullptr;
    double* dw = nullptr;
    std::vector<CellRecord> records;  // grows once per call; the oracle may allocate here
  };

  static T to_t(double v) { return static_cast<T>(v); }
  int64_t h_count() const {
    const auto& c = ctx_.config;
    return c.num_layers * c.num_directions() * ctx_.schedule.B * c.output_size();
  }
  int64_t c_count() const {
    const auto& c = ctx_.config;
    return c.num_layers * c.num_directions() * ctx_.schedule.B * c.hidden_size;
  }
  // Direction 1 of a bidirectional network, or the single direction of a reverse one,
  // runs from each sequence's last element to its first.
  bool reversed(int64_t d) const { return core::direction_reversed(ctx_.config, d); }
  int64_t length_of(int64_t b) const {
    const auto& s = ctx_.schedule;
    return s.sorted_lengths[s.orig_to_sorted[b]];
  }

  Carver carve_forward(void* ws, Buffers* buf = nullptr) const {
    const auto& c = ctx_.config;
    const auto& s = ctx_.schedule;
    const int64_t grid = s.T * s.B, width = c.num_directions() * c.output_size();
    Carver carver(ws);
    Buffers tmp;
    Buffers& b = buf ? *buf : tmp;
    b.w = carver.take<double>(ctx_.weights.numel());
    b.x = carver.take<double>(grid * c.input_size);
    b.out[0] = carver.take<double>(grid * width);
    b.out[1] = carver.take<double>(grid * width);
    b.h0 = carver.take<double>(h_count());
    b.c0 = carver.take<double>(c_count());
    b.hy = carver.take<double>(h_count());
    b.cy = carver.take<double>(c_count());
    return carver;
  }

  Carver carve_backward(void* ws, Buffers* buf = nullptr) const {
    const auto& c = ctx_.config;
    const auto& s = ctx_.schedule;
    const int64_t grid = s.T * s.B, width = c.num_directions() * c.output_size();
    Buffers tmp;
    Buffers& b = buf ? *buf : tmp;
    Carver carver = carve_forward(ws, &b);
    b.layers = carver.take<double>(c.num_layers * grid * width);
    b.dout = carver.take<double>(grid * std::max(width, c.input_size));
    b.din = carver.take<double>(grid * std::max(width, c.input_size));
    b.dw = carver.take<double>(ctx_.weights.numel());
    return carver;
  }

  // Caller's layout -> logical [T][B][width] doubles; padding stays untouched (never read).
  void read_sequence(const T* src, double* dst, int64_t width) const {
    const auto& s = ctx_.schedule;
    for (int64_t b = 0; b < s.B; ++b)
      for (int64_t t = 0; t < length_of(b); ++t) {
        const T* row = src + core::caller_row(ctx_.shape, s, t, b) * width;
        std::transform(row, row + width, dst + (t * s.B + b) * width,
                       [](T v) { return static_cast<double>(v); });
      }
  }

  // Logical [T][B][width] -> caller's layout, `fill` at padding positions.
  void write_sequence(const double* src, T* dst, int64_t width, T fill) const {
    const auto& s = ctx_.schedule;
    const bool packed = ctx_.shape.layout == Layout::packed;
    for (int64_t b = 0; b < s.B; ++b) {
      const int64_t len = length_of(b);
      const int64_t T_rows = packed ? len : s.T;
      for (int64_t t = 0; t < T_rows; ++t) {
        T* row = dst + core::caller_row(ctx_.shape, s, t, b) * width;
        if (t < len) {
          std::transform(src + (t * s.B + b) * width, src + (t * s.B + b + 1) * width, row, to_t);
        } else {
          std::fill(row, row + width, fill);
        }
      }
    }
  }

  // Views of one layer and direction's parameters in a flat double buffer.
  CellWeights weights_of(double* base, int64_t l, int64_t d) const {
    CellWeights cw;
    auto view = [&](WeightKind kind) -> reference::WeightView {
      const WeightParam* p = ctx_.weights.get(l, d, kind);
      if (!p) return {};
      return reference::WeightView(base + p->offset, p->rows, p->cols);
    };
    cw.w_ih = view(WeightKind::w_ih);
    cw.w_hh = view(WeightKind::w_hh);
    cw.b_ih = view(WeightKind::b_ih);
    cw.b_hh = view(WeightKind::b_hh);
    cw.w_hr = view(WeightKind::w_hr);
    cw.w_peephole = view(WeightKind::w_peephole);
    return cw;
  }

  // The whole forward in double. With `layers` set, each layer's output (after dropout)
  // is kept there, [L][T][B][D*P'].
  void run_forward(const void* x, const void* h0, const void* c0, const void* weights,
                   bool training, uint64_t counter, Buffers& buf, double* layers) {
    const auto& c = ctx_.config;
    const auto& s = ctx_.schedule;
    const int64_t L = c.num_layers, D = c.num_directions(), P = c.output_size(), H = c.hidden_size;
    const int64_t width = D * P;
    std::transform(static_cast<const T*>(weights),
                   static_cast<const T*>(weights) + ctx_.weights.numel(), buf.w,
                   [](T v) { return static_cast<double>(v); });
    std::fill(buf.x, buf.x + s.T * s.B * c.input_size, 0.0);
    read_sequence(static_cast<const T*>(x), buf.x, c.input_size);
    for (int64_t i = 0; i < h_count(); ++i) buf.h0[i] = h0 ? static_cast<const T*>(h0)[i] : 0.0;
    for (int64_t i = 0; i < c_count(); ++i) buf.c0[i] = c0 ? static_cast<const T*>(c0)[i] : 0.0;
    std::vector<double> h(P), cs(H);
    for (int64_t l = 0; l < L; ++l) {
      const int64_t in = l == 0 ? c.input_size : width;
      const double* layer_in = l == 0 ? buf.x : buf.out[(l - 1) % 2];
      double* out = buf.out[l % 2];
      std::fill(out, out + s.T * s.B * width, 0.0);
      for (int64_t d = 0; d < D; ++d) {
        const CellWeights cw = weights_of(buf.w, l, d);
        const std::vector<Activation> acts = direction_activations(c, d);
        const bool rev = reversed(d);
        for (int64_t b = 0; b < s.B; ++b) {
          const int64_t len = length_of(b);
          const int64_t sd = (l * D + d) * s.B + b;
          h.assign(buf.h0 + sd * P, buf.h0 + (sd + 1) * P);
          if (c.cell == CellType::lstm) cs.assign(buf.c0 + sd * H, buf.c0 + (sd + 1) * H);
          for (int64_t k = 0; k < len; ++k) {
            const int64_t t = rev ? len - 1 - k : k;
            reference::cell_forward(c, acts, cw, layer_in + (t * s.B + b) * in, h, cs, nullptr);
            std::copy(h.begin(), h.end(), out + (t * s.B + b) * width + d * P);
          }
          std::copy(h.begin(), h.end(), buf.hy + sd * P);
          if (c.cell == CellType::lstm) std::copy(cs.begin(), cs.end(), buf.cy + sd * H);
        }
      }
      if (training && c.dropout > 0.0 && l < L - 1) {
        const core::DropoutKey key{c.seed, counter, l, c.dropout};
        const double scale = c.dropout < 1.0 ? 1.0 / (1.0 - c.dropout) : 0.0;
        for (int64_t b = 0; b < s.B; ++b)
          for (int64_t t = 0; t < length_of(b); ++t)
            for (int64_t j = 0; j < width; ++j) {
              double& v = out[(t * s.B + b) * width + j];
              v = core::dropout_keep(key, core::dropout_element(t, b, s.B, width, j)) ? v * scale
                                                                                      : 0.0;
            }
      }
      if (layers) std::copy(out, out + s.T * s.B * width, layers + l * s.T * s.B * width);
    }
  }
};

std::unique_ptr<BackendImpl> make_reference_backend(const PlanContext& ctx) {
  switch (ctx.config.dtype) {
    case DataType::f64:
      return std::make_unique<ReferenceBackend<double>>(ctx);
    case DataType::bf16:
      // Reads widen each bf16 value exactly; writes round the double result once to float32
      // and then to bf16 (the double rounding moves a result by at most one bf16 ulp).
      return std::make_unique<ReferenceBackend<core::bfloat16>>(ctx);
    case DataType::f16:  // the oracle of the GPU's float16 runs, reads and writes as bf16's
      return std::make_unique<ReferenceBackend<core::float16>>(ctx);
    case DataType::f32:
      break;
  }
  return std::make_unique<ReferenceBackend<float>>(ctx);
}

}  // namespace

core::BackendRegistration reference_backend_registration() {
  return {Backend::reference, &make_reference_backend, nullptr};
}

}  // namespace rnnx
