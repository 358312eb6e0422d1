// Forward pass: per layer and direction one input-projection GEMM over all real tokens,
// then the time loop (recurrent GEMM on the active rows, one fused step kernel). Training
// keeps what backward needs in the reserve; inference keeps nothing.
#include <algorithm>
#include <cstring>

#include "core/dropout.hpp"
#include "cpu/buffers.hpp"
#include "cpu/cell_kernels.hpp"
#include "cpu/gemm.hpp"
#include "cpu/passes.hpp"

namespace rnnx::cpu {
namespace {

// Biases folded for the step kernels: LSTM and RNN b_ih + b_hh; GRU b_ih + b_hh for r, z
// and b_in for n, with b_hn after them (it sits inside r * (...)). Zeros without bias.
template <typename T>
void combine_biases(const Problem& p, const T* w, const ParamOffsets& po, T* out) {
  const int64_t gh = p.GH, H = p.H;
  if (!p.bias) {
    std::fill(out, out + gh + H, T(0));
    return;
  }
  const T* b_ih = w + po.b_ih;
  const T* b_hh = w + po.b_hh;
  const bool gru = p.cell == CellType::gru;
  for (int64_t j = 0; j < gh; ++j) out[j] = b_ih[j] + (gru && j >= 2 * H ? T(0) : b_hh[j]);
  for (int64_t j = 0; j < H; ++j) out[gh + j] = gru ? b_hh[2 * H + j] : T(0);
}

template <typename T>
void forward_direction(const Problem& p, const ForwardArgs& a, int64_t l, int64_t d, const T* X,
                       T* Y, const ReserveDir<T>& rd, bool training, const ForwardBuffers<T>& buf) {
  const core::Schedule& s = p.schedule();
  const int64_t H = p.H, P = p.P, GH = p.GH, DP = p.DP, I = p.input_width(l);
  const T* w = static_cast<const T*>(a.weights);
  const ParamOffsets& po = p.param(l, d);
  const T* w_ih = w + po.w_ih;
  const T* w_hh = w + po.w_hh;
  combine_biases(p, w, po, buf.bias);
  const T* bias = buf.bias;
  const T* b_hn = buf.bias + GH;

  // Input projection of every real token at once. RNN writes it straight into its output
  // columns of y (one gate, the step kernel then works in place).
  T* gx = p.is_rnn() ? Y + d * P : (training ? rd.gates : buf.gx);
  const int64_t ld_gx = p.is_rnn() ? DP : GH;
  gemm<T>(Op::N, Op::T, p.N, GH, I, T(1), X, I, w_ih, I, T(0), gx, ld_gx);

  const int64_t sd = (l * p.D + d) * p.B;  // first state row of this layer and direction
  core::gather_state(s, a.h0 ? static_cast<const T*>(a.h0) + sd * P : nullptr, buf.h_state, P);
  if (p.cell == CellType::lstm) {
    core::gather_state(s, a.c0 ? static_cast<const T*>(a.c0) + sd * H : nullptr, buf.c_state, H);
  }
  T* hs = buf.h_state;
  const Clamp<T> cell_clip(p.config().cell_clip, p.config().clip_nan);
  const Clamp<T> proj_clip(p.config().proj_clip, p.config().clip_nan);

  for (int64_t k = 0; k < p.T_eff; ++k) {
    const int64_t t = d == 0 ? k : p.T_eff - 1 - k;
    const int64_t bs = s.batch_sizes[t], r0 = s.offsets[t];
    T* y = Y + r0 * DP + d * P;
    switch (p.cell) {
      case CellType::rnn_tanh:
      case CellType::rnn_relu:
        gemm<T>(Op::N, Op::T, bs, H, P, T(1), hs, P, w_hh, P, T(0), buf.hg, H);
        rnn_forward(RnnForward<T>{.rows = bs,
                                  .H = H,
                                  .relu = p.cell == CellType::rnn_relu,
                                  .bias = bias,
                                  .hg = buf.hg,
                                  .y = y,
                                  .ld_y = DP,
                                  .h_state = hs});
        break;
      case CellType::lstm: {
        gemm<T>(Op::N, Op::T, bs, GH, P, T(1), hs, P, w_hh, P, T(0), buf.hg, GH);
        // With projection h_full goes to the reserve (training) or scratch, then r = h_full
        // W_hr^T lands in y and becomes the state; without, h is the output and the state.
        T* h_full = !p.proj ? nullptr : training ? rd.h_full + r0 * H : buf.scratch;
        lstm_forward(LstmForward<T>{.rows = bs,
                                    .H = H,
                                    .bias = bias,
                                    .hg = buf.hg,
                                    .gates = gx + r0 * GH,
                                    .c_state = buf.c_state,
                                    .c_keep = training ? rd.c + r0 * H : nullptr,
                                    .c_pass = training && rd.c_pass ? rd.c_pass + r0 * H : nullptr,
                                    .cell_clip = cell_clip,
                                    .h = p.proj ? h_full : y,
                                    .ld_h = p.proj ? H : DP,
                                    .h_state = p.proj ? nullptr : hs});
        if (p.proj) {
          gemm<T>(Op::N, Op::T, bs, P, H, T(1), h_full, H, w + po.w_hr, H, T(0), y, DP);
          proj_forward(ProjForward<T>{.rows = bs,
                                      .P = P,
                                      .y = y,
                                      .ld_y = DP,
                                      .pass = training && rd.r_pass ? rd.r_pass + r0 * P : nullptr,
                                      .proj_clip = proj_clip,
                                      .h_state = hs});
        }
        break;
      }
      case CellType::gru: {
        T* gates = gx + r0 * GH;
        if (p.gru_lbr) {
          gemm<T>(Op::N, Op::T, bs, GH, P, T(1), hs, P, w_hh, P, T(0), buf.hg, GH);
          gru_forward(GruForward<T>{.rows = bs,
                                    .H = H,
                                    .bias = bias,
                                    .b_hn = b_hn,
                                    .hg = buf.hg,
                                    .gates = gates,
                                    .hn_keep = training ? rd.hn + r0 * H : nullptr,
                                    .h_state = hs,
                                    .y = y,
                                    .ld_y = DP});
        } else {
          // r and z first: n needs W_hn (r * h), a second GEMM.
          gemm<T>(Op::N, Op::T, bs, 2 * H, P, T(1), hs, P, w_hh, P, T(0), buf.hg, GH);
          T* rh = training ? rd.hn + r0 * H : buf.scratch;
          gru_orig_gates_forward(GruOrigGatesForward<T>{.rows = bs,
                                                        .H = H,
                                                        .bias = bias,
                                                        .hg = buf.hg,
                                                        .ld_hg = GH,
                                                        .gates = gates,
                                                        .h_state = hs,
                                                        .rh = rh});
          T* u = buf.hg + 2 * H;
          gemm<T>(Op::N, Op::T, bs, H, H, T(1), rh, H, w_hh + 2 * H * P, P, T(0), u, GH);
          gru_orig_forward(GruOrigForward<T>{.rows = bs,
                                             .H = H,
                                             .bias = bias,
                                             .b_hn = b_hn,
                                             .u = u,
                                             .ld_u = GH,
                                             .gates = gates,
                                             .h_state = hs,
                                             .y = y,
                                             .ld_y = DP});
        }
        break;
      }
    }
  }
  // Rows of finished sequences were left alone, so the state buffer holds each
  // sequence's state after its own last step (and h0 for length 0).
  if (a.hy) core::scatter_state(s, hs, static_cast<T*>(a.hy) + sd * P, P);
  if (a.cy) core::scatter_state(s, buf.c_state, static_cast<T*>(a.cy) + sd * H, H);
}

}  // namespace

template <typename T>
void run_forward(const Problem& p, const ForwardArgs& a, void* workspace) {
  const core::Schedule& s = p.schedule();
  const bool training = a.training;
  ForwardBuffers<T> buf;
  carve_forward<T>(p, training, workspace, &buf);

  const T* X = static_cast<const T*>(a.x);
  if (!p.packed) {
    core::gather_rows(p.shape(), s, X, buf.x, p.I0);
    X = buf.x;
  }
  T* Y = nullptr;
  for (int64_t l = 0; l < p.L; ++l) {
    const bool top = l == p.L - 1;
    ReserveLayer<T> res;
    if (training) {
      res = reserve_layer<T>(p, a.reserve, l);
      Y = res.y;
    } else {
      Y = top && p.packed ? static_cast<T*>(a.y) : buf.y[l % 2];
    }
    for (int64_t d = 0; d < p.D; ++d)
      forward_direction(p, a, l, d, X, Y, res.dir[d], training, buf);
    X = Y;
    if (training && p.dropout_after(l)) {
      // The undropped output stays in y: it holds the recurrent states backward needs.
      std::memcpy(res.y_dropped, Y, sizeof(T) * p.N * p.DP);
      const core::DropoutKey key{p.config().seed, a.dropout_counter, l, p.dropout};
      core::dropout_apply_rows(key, s, p.DP, res.y_dropped);
      X = res.y_dropped;
    }
  }
  if (Y != a.y) {
    core::scatter_rows(p.shape(), s, static_cast<const T*>(Y), static_cast<T*>(a.y), p.DP,
                       static_cast<T>(p.config().padding_fill));
  }
}

template void run_forward<float>(const Problem&, const ForwardArgs&, void*);
template void run_forward<double>(const Problem&, const ForwardArgs&, void*);

}  // namespace rnnx::cpu
