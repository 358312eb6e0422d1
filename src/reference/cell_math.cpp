// Cell equations in double (see docs/math.md). Gate orders: LSTM i, f, g, o; GRU r, z, n;
// peepholes i, f, o.
#include "reference/cell_math.hpp"

#include <algorithm>
#include <cmath>

#include "reference/activations.hpp"

namespace rnnx::reference {

namespace {

// y += W v (W [rows, cols], v [cols]) over rows [r0, r1) (y indexed from r0).
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

// ONNX's gate clip: a symmetric clamp of a gate's pre-activation, with the NaN policy.
struct GateClip {
  Clip clip;
  NanPolicy nan;
  GateClip(const Config& c) : clip{c.gate_clip > 0.0, -c.gate_clip, c.gate_clip}, nan(c.clip_nan) {}
  double apply(double v, char* pass) const {
    *pass = clip_passes(v, clip, nan) ? 1 : 0;
    return clip_value(v, clip, nan);
  }
};

}  // namespace

double clip_value(double v, const Clip& clip, NanPolicy nan) {
  return clamp_value(v, clip.enabled, clip.lo, clip.hi, nan);
}

bool clip_passes(double raw, const Clip& clip, NanPolicy nan) {
  return clamp_passes(raw, clip.enabled, clip.lo, clip.hi, nan);
}

void cell_forward(const Config& cfg, const std::vector<Activation>& acts, const CellWeights& w,
                  const double* x, std::vector<double>& h, std::vector<double>& c,
                  CellRecord* rec) {
  const int64_t H = cfg.hidden_size, P = cfg.output_size(), G = gates_per_cell(cfg.cell);
  const GateClip gclip(cfg);
  std::vector<double> a(G * H, 0.0), act(G * H, 0.0);
  std::vector<char> pass(G * H, 1);
  if (rec) rec->h_prev = h;
  switch (cfg.cell) {
    case CellType::rnn_tanh:
    case CellType::rnn_relu: {
      matvec_add(w.w_ih, x, a.data(), 0, H);
      bias_add(w.b_ih, a.data(), 0, H);
      matvec_add(w.w_hh, h.data(), a.data(), 0, H);
      bias_add(w.b_hh, a.data(), 0, H);
      for (int64_t j = 0; j < H; ++j) {
        a[j] = gclip.apply(a[j], &pass[j]);
        act[j] = h[j] = activate(acts[0], a[j]);
      }
      break;
    }
    case CellType::lstm: {
      const Activation &fa = acts[0], &ga = acts[1], &ha = acts[2];
      matvec_add(w.w_ih, x, a.data(), 0, 4 * H);
      bias_add(w.b_ih, a.data(), 0, 4 * H);
      matvec_add(w.w_hh, h.data(), a.data(), 0, 4 * H);
      bias_add(w.b_hh, a.data(), 0, 4 * H);
      const WeightView& p = w.w_peephole;
      std::vector<double> c_raw(H), h_full(H);
      if (rec) rec->c_prev = c;
      for (int64_t j = 0; j < H; ++j) {
        if (!p.empty()) {
          a[j] += p[j] * c[j];
          a[H + j] += p[H + j] * c[j];
        }
        for (int64_t q : {0, 1, 2}) a[q * H + j] = gclip.apply(a[q * H + j], &pass[q * H + j]);
        const double i = activate(fa, a[j]);
        const double f = cfg.input_forget ? 1.0 - i : activate(fa, a[H + j]);
        const double g = activate(ga, a[2 * H + j]);
        c_raw[j] = f * c[j] + i * g;
        c[j] = clip_value(c_raw[j], cfg.cell_clip, cfg.clip_nan);
        if (!p.empty()) a[3 * H + j] += p[2 * H + j] * c[j];
        a[3 * H + j] = gclip.apply(a[3 * H + j], &pass[3 * H + j]);
        const double o = activate(fa, a[3 * H + j]);
        h_full[j] = o * activate(ha, c[j]);
        act[j] = i;
        act[H + j] = f;
        act[2 * H + j] = g;
        act[3 * H + j] = o;
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
        rec->c_raw = c_raw;
        rec->c = c;
        rec->h_full = h_full;
      }
      break;
    }
    case CellType::gru: {
      const Activation &fa = acts[0], &ga = acts[1];
      // r and z from both halves; n keeps its input and hidden parts apart.
      std::vector<double> hn(H, 0.0);
      matvec_add(w.w_ih, x, a.data(), 0, 3 * H);
      bias_add(w.b_ih, a.data(), 0, 3 * H);
      matvec_add(w.w_hh, h.data(), a.data(), 0, 2 * H);
      bias_add(w.b_hh, a.data(), 0, 2 * H);
      for (int64_t j = 0; j < 2 * H; ++j) {
        a[j] = gclip.apply(a[j], &pass[j]);
        act[j] = activate(fa, a[j]);
      }
      if (cfg.gru_linear_before_reset) {
        matvec_add(w.w_hh, h.data(), hn.data(), 2 * H, 3 * H);
        bias_add(w.b_hh, hn.data(), 2 * H, 3 * H);
        for (int64_t j = 0; j < H; ++j) a[2 * H + j] += act[j] * hn[j];
      } else {
        std::vector<double> u(H, 0.0);
        for (int64_t j = 0; j < H; ++j) hn[j] = act[j] * h[j];  // r * h
        matvec_add(w.w_hh, hn.data(), u.data(), 2 * H, 3 * H);
        bias_add(w.b_hh, u.data(), 2 * H, 3 * H);
        for (int64_t j = 0; j < H; ++j) a[2 * H + j] += u[j];
      }
      for (int64_t j = 0; j < H; ++j) {
        a[2 * H + j] = gclip.apply(a[2 * H + j], &pass[2 * H + j]);
        act[2 * H + j] = activate(ga, a[2 * H + j]);
        h[j] = (1.0 - act[H + j]) * act[2 * H + j] + act[H + j] * h[j];
      }
      if (rec) rec->hh_n = hn;
      break;
    }
  }
  if (rec) {
    rec->pre = a;
    rec->pre_pass = pass;
    rec->gates = act;
  }
}

void cell_backward(const Config& cfg, const std::vector<Activation>& acts, const CellWeights& w,
                   const CellWeights& g, const double* x, const CellRecord& rec,
                   std::vector<double>& dh, std::vector<double>& dc, double* dx) {
  const int64_t H = cfg.hidden_size, P = cfg.output_size(), G = gates_per_cell(cfg.cell);
  const double* hp = rec.h_prev.data();
  const auto& a = rec.pre;
  const auto& act = rec.gates;
  // Gradient of a pre-activation through its activation and the gate clip.
  auto through = [&](const Activation& f, int64_t k, double d_out) {
    return rec.pre_pass[k] ? d_out * activation_grad(f, a[k]) : 0.0;
  };
  std::vector<double> da(G * H, 0.0);  // gradient of the input-side pre-activations
  std::vector<double> dh_prev(P, 0.0);
  switch (cfg.cell) {
    case CellType::rnn_tanh:
    case CellType::rnn_relu: {
      for (int64_t j = 0; j < H; ++j) da[j] = through(acts[0], j, dh[j]);
      outer_add(g.w_hh, da.data(), hp, 0, H);
      bias_grad(g.b_hh, da.data(), 0, H);
      matvec_t_add(w.w_hh, da.data(), dh_prev.data(), 0, H);
      break;
    }
    case CellType::lstm: {
      const Activation &fa = acts[0], &ga = acts[1], &ha = acts[2];
      const WeightView &p = w.w_peephole, &gp = g.w_peephole;
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
        const double i = act[j], f = act[H + j], gg = act[2 * H + j], o = act[3 * H + j];
        const double ct = rec.c[j], cp = rec.c_prev[j];
        const double hc = activate(ha, ct);
        da[3 * H + j] = through(fa, 3 * H + j, dh_full[j] * hc);
        double dct = dc[j] + dh_full[j] * o * activation_grad(ha, ct);
        if (!p.empty()) {
          gp[2 * H + j] += da[3 * H + j] * ct;
          dct += da[3 * H + j] * p[2 * H + j];
        }
        if (!clip_passes(rec.c_raw[j], cfg.cell_clip, cfg.clip_nan)) dct = 0.0;
        double di = dct * gg, df = dct * cp;
        if (cfg.input_forget) {  // f = 1 - i
          di -= df;
          df = 0.0;
        }
        da[j] = through(fa, j, di);
        da[H + j] = cfg.input_forget ? 0.0 : through(fa, H + j, df);
        da[2 * H + j] = through(ga, 2 * H + j, dct * i);
        dc[j] = dct * f;
        if (!p.empty()) {
          gp[j] += da[j] * cp;
          gp[H + j] += da[H + j] * cp;
          dc[j] += da[j] * p[j] + da[H + j] * p[H + j];
        }
      }
      outer_add(g.w_hh, da.data(), hp, 0, 4 * H);
      bias_grad(g.b_hh, da.data(), 0, 4 * H);
      matvec_t_add(w.w_hh, da.data(), dh_prev.data(), 0, 4 * H);
      break;
    }
    case CellType::gru: {
      const Activation &fa = acts[0], &ga = acts[1];
      std::vector<double> dhh(3 * H, 0.0);  // gradient of the hidden-side pre-activations
      std::vector<double> drh(H, 0.0);
      for (int64_t j = 0; j < H; ++j) {
        const double r = act[j], z = act[H + j], n = act[2 * H + j];
        const double dn = through(ga, 2 * H + j, dh[j] * (1.0 - z));
        da[H + j] = through(fa, H + j, dh[j] * (hp[j] - n));
        da[2 * H + j] = dn;
        dh_prev[j] = dh[j] * z;
        if (cfg.gru_linear_before_reset) {
          da[j] = through(fa, j, dn * rec.hh_n[j]);
          dhh[2 * H + j] = dn * r;
        } else {
          dhh[2 * H + j] = dn;
        }
      }
      if (!cfg.gru_linear_before_reset) {
        // n = g(W_in x + b_in + W_hn (r*h) + b_hn)
        matvec_t_add(w.w_hh, dhh.data() + 2 * H, drh.data(), 2 * H, 3 * H);
        for (int64_t j = 0; j < H; ++j) {
          da[j] = through(fa, j, drh[j] * hp[j]);
          dh_prev[j] += drh[j] * act[j];
        }
        outer_add(g.w_hh, dhh.data() + 2 * H, rec.hh_n.data(), 2 * H, 3 * H);
        bias_grad(g.b_hh, dhh.data() + 2 * H, 2 * H, 3 * H);
      }
      for (int64_t j = 0; j < 2 * H; ++j) dhh[j] = da[j];
      const int64_t rows = cfg.gru_linear_before_reset ? 3 * H : 2 * H;
      outer_add(g.w_hh, dhh.data(), hp, 0, rows);
      bias_grad(g.b_hh, dhh.data(), 0, rows);
      matvec_t_add(w.w_hh, dhh.data(), dh_prev.data(), 0, rows);
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
