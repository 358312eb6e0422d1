// Backward pass: per layer from the top and per direction, the time loop in the reverse
// of the forward order (fused step kernel, then dh_{t-1} = dGates W_hh on the active
// rows), then the weight gradients and the input gradient as GEMMs over all real tokens.
#include <algorithm>
#include <cstring>

#include "core/dropout.hpp"
#include "cpu/buffers.hpp"
#include "cpu/cell_kernels.hpp"
#include "cpu/gemm.hpp"
#include "cpu/passes.hpp"

namespace rnnx::cpu {
namespace {

// Hprev [N, P']: each token's previous state in direction d (h0 for the first step of a
// sequence), from the layer's undropped output. Feeds dW_hh as one GEMM and the GRU kernels.
template <typename T>
void gather_prev_states(const Problem& p, int64_t d, const T* Y, const T* h0, T* h_prev) {
  const core::Schedule& s = p.schedule();
  const int64_t P = p.P, DP = p.DP;
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < p.T_eff; ++t) {
    const PrevStep prev = prev_step(s, d, t);
    for (int64_t i = 0; i < s.batch_sizes[t]; ++i) {
      const T* src = i < prev.count ? Y + (s.offsets[prev.step] + i) * DP + d * P : h0 + i * P;
      std::memcpy(h_prev + (s.offsets[t] + i) * P, src, sizeof(T) * P);
    }
  }
}

template <typename T>
struct DirectionIo {
  const T* X = nullptr;   // [N, I] the layer's input as the forward saw it
  const T* dY = nullptr;  // [N, D*P'] gradient of the layer's output, or null (zero)
  T* dX = nullptr;        // [N, I] gradient of the layer's input, or null (not wanted)
};

template <typename T>
void backward_direction(const Problem& p, const BackwardArgs& a, int64_t l, int64_t d,
                        const ReserveLayer<T>& res, const DirectionIo<T>& io,
                        const BackwardBuffers<T>& buf) {
  const core::Schedule& s = p.schedule();
  const int64_t H = p.H, P = p.P, GH = p.GH, DP = p.DP, I = p.input_width(l);
  const ReserveDir<T>& rd = res.dir[d];
  const T* w = static_cast<const T*>(a.weights);
  const ParamOffsets& po = p.param(l, d);
  const T* w_hh = w + po.w_hh;
  const bool lstm = p.cell == CellType::lstm;
  const bool gru = p.cell == CellType::gru;

  const int64_t sd = (l * p.D + d) * p.B;
  auto slice = [&](const void* base, int64_t width) {
    return base ? static_cast<const T*>(base) + sd * width : nullptr;
  };
  T* dh = buf.dh_state;
  T* dc = buf.dc_state;
  core::gather_state(s, slice(a.dhy, P), dh, P);
  core::gather_state(s, slice(a.h0, P), buf.h0, P);
  if (lstm) {
    core::gather_state(s, slice(a.dcy, H), dc, H);
    core::gather_state(s, slice(a.c0, H), buf.c0, H);
  }
  const bool want_dw = a.dweights != nullptr;
  if (gru || want_dw) gather_prev_states(p, d, res.y, buf.h0, buf.h_prev);

  for (int64_t k = 0; k < p.T_eff; ++k) {
    const int64_t t = d == 0 ? p.T_eff - 1 - k : k;
    const int64_t bs = s.batch_sizes[t], r0 = s.offsets[t];
    const T* dy = io.dY ? io.dY + r0 * DP + d * P : nullptr;
    T* dg = buf.dg + r0 * GH;
    switch (p.cell) {
      case CellType::rnn_tanh:
      case CellType::rnn_relu:
        rnn_backward(RnnBackward<T>{.rows = bs,
                                    .H = H,
                                    .relu = p.cell == CellType::rnn_relu,
                                    .dh = dh,
                                    .dy = dy,
                                    .ld_dy = DP,
                                    .h = res.y + r0 * DP + d * P,
                                    .ld_h = DP,
                                    .dg = dg});
        gemm<T>(Op::N, Op::N, bs, P, GH, T(1), dg, GH, w_hh, P, T(0), dh, P);
        break;
      case CellType::lstm: {
        const PrevStep prev = prev_step(s, d, t);
        LstmBackward<T> kl{.rows = bs,
                           .H = H,
                           .dh = dh,
                           .dy = dy,
                           .ld_dy = DP,
                           .gates = rd.gates + r0 * GH,
                           .c = rd.c + r0 * H,
                           .c_prev = {.a = rd.c + s.offsets[prev.step] * H,
                                      .lda = H,
                                      .count_a = prev.count,
                                      .b = buf.c0,
                                      .ldb = H},
                           .c_pass = rd.c_pass ? rd.c_pass + r0 * H : nullptr,
                           .dc_state = dc,
                           .dg = dg};
        if (p.proj) {
          // dr per token is kept for dW_hr; dh_full = dr W_hr goes to scratch.
          T* dr = buf.dr + r0 * P;
          proj_backward(ProjBackward<T>{.rows = bs,
                                        .P = P,
                                        .dh = dh,
                                        .dy = dy,
                                        .ld_dy = DP,
                                        .pass = rd.r_pass ? rd.r_pass + r0 * P : nullptr,
                                        .dr = dr});
          gemm<T>(Op::N, Op::N, bs, H, P, T(1), dr, P, w + po.w_hr, H, T(0), buf.scratch, H);
          kl.dh = buf.scratch;
          kl.dy = nullptr;
        }
        lstm_backward(kl);
        gemm<T>(Op::N, Op::N, bs, P, GH, T(1), dg, GH, w_hh, P, T(0), dh, P);
        break;
      }
      case CellType::gru: {
        const T* gates = rd.gates + r0 * GH;
        const T* hp = buf.h_prev + r0 * P;
        if (p.gru_lbr) {
          T* dgh = buf.dgh + r0 * GH;
          gru_backward(GruBackward<T>{.rows = bs,
                                      .H = H,
                                      .dh = dh,
                                      .dy = dy,
                                      .ld_dy = DP,
                                      .gates = gates,
                                      .h_prev = hp,
                                      .hn = rd.hn + r0 * H,
                                      .dg = dg,
                                      .dgh = dgh});
          gemm<T>(Op::N, Op::N, bs, P, GH, T(1), dgh, GH, w_hh, P, T(1), dh, P);
        } else {
          gru_orig_backward_n(GruOrigBackwardN<T>{.rows = bs,
                                                  .H = H,
                                                  .dh = dh,
                                                  .dy = dy,
                                                  .ld_dy = DP,
                                                  .gates = gates,
                                                  .h_prev = hp,
                                                  .dg = dg});
          // d(r*h) = dn W_hn, then dr and its share of dh_{t-1}, then the r, z GEMM.
          gemm<T>(Op::N, Op::N, bs, H, H, T(1), dg + 2 * H, GH, w_hh + 2 * H * P, P, T(0),
                  buf.scratch, H);
          gru_orig_backward_r(GruOrigBackwardR<T>{.rows = bs,
                                                  .H = H,
                                                  .drh = buf.scratch,
                                                  .gates = gates,
                                                  .h_prev = hp,
                                                  .dg = dg,
                                                  .dh = dh});
          gemm<T>(Op::N, Op::N, bs, P, 2 * H, T(1), dg, GH, w_hh, P, T(1), dh, P);
        }
        break;
      }
    }
  }
  // Rows of sequences that had ended were left alone: each holds dL/dh0 now.
  if (a.dh0) core::scatter_state(s, dh, static_cast<T*>(a.dh0) + sd * P, P);
  if (a.dc0) core::scatter_state(s, dc, static_cast<T*>(a.dc0) + sd * H, H);

  const int64_t N = p.N;
  if (want_dw) {
    T* dw = static_cast<T*>(a.dweights);
    const T beta = a.weight_grad_mode == GradMode::accumulate ? T(1) : T(0);
    // The hidden side's pre-activation gradient equals the input side's except for the
    // n gate of linear-before-reset GRU (dn * r), kept apart in dgh.
    const T* dgh = gru && p.gru_lbr ? buf.dgh : buf.dg;
    gemm<T>(Op::T, Op::N, GH, I, N, T(1), buf.dg, GH, io.X, I, beta, dw + po.w_ih, I);
    if (gru && !p.gru_lbr) {
      gemm<T>(Op::T, Op::N, 2 * H, P, N, T(1), buf.dg, GH, buf.h_prev, P, beta, dw + po.w_hh, P);
      gemm<T>(Op::T, Op::N, H, P, N, T(1), buf.dg + 2 * H, GH, rd.hn, H, beta,
              dw + po.w_hh + 2 * H * P, P);
    } else {
      gemm<T>(Op::T, Op::N, GH, P, N, T(1), dgh, GH, buf.h_prev, P, beta, dw + po.w_hh, P);
    }
    if (p.bias) {
      // Column sums over the tokens, as ones[1, N] * dG[N, G*H].
      gemm<T>(Op::N, Op::N, 1, GH, N, T(1), buf.ones, N, buf.dg, GH, beta, dw + po.b_ih, GH);
      gemm<T>(Op::N, Op::N, 1, GH, N, T(1), buf.ones, N, dgh, GH, beta, dw + po.b_hh, GH);
    }
    if (p.proj) {
      gemm<T>(Op::T, Op::N, P, H, N, T(1), buf.dr, P, rd.h_full, H, beta, dw + po.w_hr, H);
    }
  }
  if (io.dX) {
    gemm<T>(Op::N, Op::N, N, I, GH, T(1), buf.dg, GH, w + po.w_ih, I, d == 0 ? T(0) : T(1), io.dX,
            I);
  }
}

}  // namespace

template <typename T>
void run_backward(const Problem& p, const BackwardArgs& a, void* workspace,
                  uint64_t dropout_counter) {
  const core::Schedule& s = p.schedule();
  BackwardBuffers<T> buf;
  carve_backward<T>(p, workspace, &buf);
  const int64_t L = p.L;

  // Layer-0 input, needed only for dW_ih; padding is never read.
  const T* x0 = static_cast<const T*>(a.x);
  if (!p.packed && a.dweights) {
    core::gather_rows(p.shape(), s, x0, buf.x, p.I0);
    x0 = buf.x;
  }
  const T* dY = static_cast<const T*>(a.dy);
  if (!p.packed && a.dy) {
    core::gather_rows(p.shape(), s, dY, buf.dy[(L - 1) % 2], p.DP);
    dY = buf.dy[(L - 1) % 2];
  }
  if (a.dweights && p.bias) std::fill(buf.ones, buf.ones + p.N, T(1));

  for (int64_t l = L - 1; l >= 0; --l) {
    const ReserveLayer<T> res = reserve_layer<T>(p, a.reserve, l);
    DirectionIo<T> io;
    io.dY = dY;
    if (l > 0) {
      const ReserveLayer<T> below = reserve_layer<T>(p, a.reserve, l - 1);
      io.X = p.dropout_after(l - 1) ? below.y_dropped : below.y;
      io.dX = buf.dy[(l - 1) % 2];
    } else {
      io.X = x0;
      io.dX = a.dx ? (p.packed ? static_cast<T*>(a.dx) : buf.dx) : nullptr;
    }
    for (int64_t d = 0; d < p.D; ++d) backward_direction(p, a, l, d, res, io, buf);
    if (l > 0) {
      // The gradient flows back through the dropout that fed this layer.
      if (p.dropout_after(l - 1)) {
        const core::DropoutKey key{p.config().seed, dropout_counter, l - 1, p.dropout};
        core::dropout_apply_rows(key, s, p.DP, io.dX);
      }
      dY = io.dX;
    } else if (a.dx && !p.packed) {
      core::scatter_rows(p.shape(), s, static_cast<const T*>(buf.dx), static_cast<T*>(a.dx), p.I0,
                         T(0));
    }
  }
}

template void run_backward<float>(const Problem&, const BackwardArgs&, void*, uint64_t);
template void run_backward<double>(const Problem&, const BackwardArgs&, void*, uint64_t);

}  // namespace rnnx::cpu
