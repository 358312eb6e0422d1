// Cell equations in double (see docs/math.md). Gate orders: LSTM i, f, g, o; GRU r, z, n.
#include "reference/cell_math.hpp"

#include <cmath>

namespace rnnx::reference {
namespace {

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// y += W v (W [rows, cols], v [cols]), optionally only rows [r0, r1).
void matvec_add(const WeightView& W, const double* v, double* y, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    double acc = 0.0;
    for (int64_t k = 0; k < W.cols; ++k) acc += W(r, k) * v[k];
    y[r - r0] += acc;
  }
}
// y += W^T u over rows [r0, r1) of W (u indexed from r0).
void matvec_t_add(const WeightView& W, const double* u, double* y, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t k = 0; k < W.cols; ++k) y[k] += W(r, k) * u[r - r0];
}
// G += u v^T over rows [r0, r1) of G.
void outer_add(const WeightView& G, const double* u, const double* v, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t k = 0; k < G.cols; ++k) G(r, k) += u[r - r0] * v[k];
}
void bias_add(const WeightView& b, double* y, int64_t r0, int64_t r1) {
  if (b.empty()) return;
  for (int64_t r = r0; r < r1; ++r) y[r - r0] += b[r];
}
void bias_grad(const WeightView& gb, const double* u, int64_t r0, int64_t r1) {
  if (gb.empty()) return;
  for (int64_t r = r0; r < r1; ++r) gb[r] += u[r - r0];
}

}  // namespace

double clip_value(double v, const Clip& clip, NanPolicy nan) {
  if (!clip.enabled) return v;
  if (std::isnan(v)) return nan == NanPolicy::replace ? clip.hi : v;
  return std::min(std::max(v, clip.lo), clip.hi);
}

bool clip_passes(double raw, const Clip& clip, NanPolicy nan) {
  if (!clip.enabled) return true;
  if (std::isnan(raw)) return nan == NanPolicy::propagate;
  return raw >= clip.lo && raw <= clip.hi;
}

void cell_forward(const Config& cfg, const CellWeights& w, const double* x, int64_t in,
                  std::vector<double>& h, std::vector<double>& c, CellRecord* rec) {
  (void)in;
  const int64_t H = cfg.hidden_size, P = cfg.output_size(), G = gates_per_cell(cfg.cell);
  std::vector<double> a(G * H, 0.0);
  if (rec) rec->h_prev = h;
  switch (cfg.cell) {
    case CellType::rnn_tanh:
    case CellType::rnn_relu: {
      matvec_add(w.w_ih, x, a.data(), 0, H);
      bias_add(w.b_ih, a.data(), 0, H);
      matvec_add(w.w_hh, h.data(), a.data(), 0, H);
      bias_add(w.b_hh, a.data(), 0, H);
      for (int64_t j = 0; j < H; ++j)
        h[j] = cfg.cell == CellType::rnn_tanh ? std::tanh(a[j]) : std::max(a[j], 0.0);
      if (rec) {
        rec->pre = a;
        rec->gates = h;
      }
      return;
    }
    case CellType::lstm: {
      matvec_add(w.w_ih, x, a.data(), 0, 4 * H);
      bias_add(w.b_ih, a.data(), 0, 4 * H);
      matvec_add(w.w_hh, h.data(), a.data(), 0, 4 * H);
      bias_add(w.b_hh, a.data(), 0, 4 * H);
      for (int64_t j = 0; j < H; ++j) {
        a[j] = sigmoid(a[j]);                  // i
        a[H + j] = sigmoid(a[H + j]);          // f
        a[2 * H + j] = std::tanh(a[2 * H + j]);  // g
        a[3 * H + j] = sigmoid(a[3 * H + j]);  // o
      }
      std::vector<double> c_raw(H), h_full(H);
      if (rec) rec->c_prev = c;
      for (int64_t j = 0; j < H; ++j) {
        c_raw[j] = a[H + j] * c[j] + a[j] * a[2 * H + j];
        c[j] = clip_value(c_raw[j], cfg.cell_clip, cfg.clip_nan);
        h_full[j] = a[3 * H + j] * std::tanh(c[j]);
      }
      if (cfg.proj_size > 0) {
        std::vector<double> r(P, 0.0);
        matvec_add(w.w_hr, h_full.data(), r.data(), 0, P);
        if (rec) rec->r_raw = r;
        for (int64_t j = 0; j < P; ++j) h[j] = clip_value(r[j], cfg.proj_clip, cfg.clip_nan);
      } else {
        h = h_full;
      }
      if (rec) {
        rec->gates = a;
        rec->c_raw = c_raw;
        rec->c = c;
        rec->h_full = h_full;
      }
      return;
    }
    case CellType::gru: {
      // r and z from both halves; n keeps its input and hidden parts apart.
      std::vector<double> hn(H, 0.0);
      matvec_add(w.w_ih, x, a.data(), 0, 3 * H);
      bias_add(w.b_ih, a.data(), 0, 3 * H);
      matvec_add(w.w_hh, h.data(), a.data(), 0, 2 * H);
      bias_add(w.b_hh, a.data(), 0, 2 * H);
      for (int64_t j = 0; j < 2 * H; ++j) a[j] = sigmoid(a[j]);
      if (cfg.gru_linear_before_reset) {
        matvec_add(w.w_hh, h.data(), hn.data(), 2 * H, 3 * H);
        bias_add(w.b_hh, hn.data(), 2 * H, 3 * H);
        for (int64_t j = 0; j < H; ++j) a[2 * H + j] = std::tanh(a[2 * H + j] + a[j] * hn[j]);
      } else {
        std::vector<double> rh(H), u(H, 0.0);
        for (int64_t j = 0; j < H; ++j) rh[j] = a[j] * h[j];
        matvec_add(w.w_hh, rh.data(), u.data(), 2 * H, 3 * H);
        bias_add(w.b_hh, u.data(), 2 * H, 3 * H);
        for (int64_t j = 0; j < H; ++j) a[2 * H + j] = std::tanh(a[2 * H + j] + u[j]);
        hn = rh;
      }
      for (int64_t j = 0; j < H; ++j) h[j] = (1.0 - a[H + j]) * a[2 * H + j] + a[H + j] * h[j];
      if (rec) {
        rec->gates = a;
        rec->hh_n = hn;
      }
      return;
    }
  }
}

void cell_backward(const Config& cfg, const CellWeights& w, const CellWeights& g, const double* x,
                   int64_t in, const CellRecord& rec, std::vector<double>& dh,
                   std::vector<double>& dc, double* dx) {
  (void)in;
  const int64_t H = cfg.hidden_size, P = cfg.output_size(), G = gates_per_cell(cfg.cell);
  const double* hp = rec.h_prev.data();
  std::vector<double> da(G * H, 0.0);     // gradient of the input-side pre-activations
  std::vector<double> dh_prev(P, 0.0);
  switch (cfg.cell) {
    case CellType::rnn_tanh:
    case CellType::rnn_relu: {
      for (int64_t j = 0; j < H; ++j) {
        const double deriv = cfg.cell == CellType::rnn_tanh ? 1.0 - rec.gates[j] * rec.gates[j]
                                                            : (rec.pre[j] > 0.0 ? 1.0 : 0.0);
        da[j] = dh[j] * deriv;
      }
      outer_add(g.w_hh, da.data(), hp, 0, H);
      bias_grad(g.b_hh, da.data(), 0, H);
      matvec_t_add(w.w_hh, da.data(), dh_prev.data(), 0, H);
      break;
    }
    case CellType::lstm: {
      const auto& a = rec.gates;
      std::vector<double> dh_full(H, 0.0);
      if (cfg.proj_size > 0) {
        std::vector<double> dr(P);
        for (int64_t j = 0; j < P; ++j)
          dr[j] = clip_passes(rec.r_raw[j], cfg.proj_clip, cfg.clip_nan) ? dh[j] : 0.0;
        outer_add(g.w_hr, dr.data(), rec.h_full.data(), 0, P);
        matvec_t_add(w.w_hr, dr.data(), dh_full.data(), 0, P);
      } else {
        dh_full = dh;
      }
      for (int64_t j = 0; j < H; ++j) {
        const double i = a[j], f = a[H + j], gg = a[2 * H + j], o = a[3 * H + j];
        const double tc = std::tanh(rec.c[j]);
        double dcj = dc[j] + dh_full[j] * o * (1.0 - tc * tc);
        if (!clip_passes(rec.c_raw[j], cfg.cell_clip, cfg.clip_nan)) dcj = 0.0;
        da[j] = dcj * gg * i * (1.0 - i);
        da[H + j] = dcj * rec.c_prev[j] * f * (1.0 - f);
        da[2 * H + j] = dcj * i * (1.0 - gg * gg);
        da[3 * H + j] = dh_full[j] * tc * o * (1.0 - o);
        dc[j] = dcj * f;
      }
      outer_add(g.w_hh, da.data(), hp, 0, 4 * H);
      bias_grad(g.b_hh, da.data(), 0, 4 * H);
      matvec_t_add(w.w_hh, da.data(), dh_prev.data(), 0, 4 * H);
      break;
    }
    case CellType::gru: {
      const auto& a = rec.gates;
      std::vector<double> dhh(3 * H, 0.0);  // gradient of the hidden-side pre-activations
      std::vector<double> drh(H, 0.0);
      for (int64_t j = 0; j < H; ++j) {
        const double r = a[j], z = a[H + j], n = a[2 * H + j];
        const double dn = dh[j] * (1.0 - z) * (1.0 - n * n);
        da[H + j] = dh[j] * (hp[j] - n) * z * (1.0 - z);
        da[2 * H + j] = dn;
        dh_prev[j] = dh[j] * z;
        if (cfg.gru_linear_before_reset) {
          da[j] = dn * rec.hh_n[j] * r * (1.0 - r);
          dhh[2 * H + j] = dn * r;
        } else {
          dhh[2 * H + j] = dn;
        }
      }
      if (!cfg.gru_linear_before_reset) {
        // n = tanh(W_in x + b_in + W_hn (r*h) + b_hn)
        matvec_t_add(w.w_hh, dhh.data() + 2 * H, drh.data(), 2 * H, 3 * H);
        for (int64_t j = 0; j < H; ++j) {
          const double r = a[j];
          da[j] = drh[j] * hp[j] * r * (1.0 - r);
          dh_prev[j] += drh[j] * r;
        }
        outer_add(g.w_hh, dhh.data() + 2 * H, rec.hh_n.data(), 2 * H, 3 * H);
        bias_grad(g.b_hh, dhh.data() + 2 * H, 2 * H, 3 * H);
      }
      for (int64_t j = 0; j < 2 * H; ++j) dhh[j] = da[j];
      if (cfg.gru_linear_before_reset) {
        outer_add(g.w_hh, dhh.data(), hp, 0, 3 * H);
        bias_grad(g.b_hh, dhh.data(), 0, 3 * H);
        matvec_t_add(w.w_hh, dhh.data(), dh_prev.data(), 0, 3 * H);
      } else {
        outer_add(g.w_hh, dhh.data(), hp, 0, 2 * H);
        bias_grad(g.b_hh, dhh.data(), 0, 2 * H);
        matvec_t_add(w.w_hh, dhh.data(), dh_prev.data(), 0, 2 * H);
      }
      break;
    }
  }
  // Input side: the same pre-activation gradient for every cell.
  outer_add(g.w_ih, da.data(), x, 0, G * H);
  bias_grad(g.b_ih, da.data(), 0, G * H);
  matvec_t_add(w.w_ih, da.data(), dx, 0, G * H);
  dh = dh_prev;
}

}  // namespace rnnx::reference
