// The extended cells' step kernels of extended_cell.hpp over a vector type V: one tile of a step of
// each cell with ONNX's options that change the cell's equations (activation functions,
// peepholes, gate clip, coupled input-forget gate), forward and backward. Same tiles and
// same guarantees as step_kernels.inl (an element's result does not depend on the tiling);
// the math of a unit is core/cell_math.hpp's, the one the CUDA step kernels run: what is
// here is where each value comes from and goes to in the cpu backend's buffers. Pasted
// after step_kernels.inl; no file-level includes.

// A direction's options for core/cell_math.hpp: the kernel's ExtendedCell, its cell clip, and the
// activations the cell has (LSTM 3, GRU 2, RNN 1).
template <class S>
cell::Options<S> cell_options(const ExtendedCell<S>& o, int activations,
                              const Clamp<S>& cell_clip = {}) {
  cell::Options<S> c;
  c.f = o.acts[0];
  if (activations > 1) c.g = o.acts[1];
  if (activations > 2) c.h = o.acts[2];
  c.gate = o.gate_clip;
  c.cell = cell_clip;
  c.input_forget = o.input_forget;
  c.peephole = o.peephole != nullptr;
  return c;
}

template <class S>
uint8_t* gate_pass_row(const ExtendedCell<S>& o, int64_t i, int64_t gh) {
  return o.gate_pass ? o.gate_pass + i * gh : nullptr;
}

// ---- forward ----

template <class V>
void extended_rnn_forward_tile(const RnnForward<typename V::S>& k,
                               const ExtendedCell<typename V::S>& o, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H;
  const cell::Options<S> c = cell_options(o, 1);
  for (int64_t i = t.r0; i < t.r1; ++i) {
    S* in = o.pre ? o.pre + i * H : k.y + i * k.ld_y;
    S* y = k.y + i * k.ld_y;
    const S* hg = k.hg + i * H;
    S* hs = k.h_state + i * H;
    uint8_t* pr = gate_pass_row(o, i, H);
    for_vectors<V>(t.j0, t.j1, y, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      F a = V::add(V::add(V::load(in + j, n), V::load(k.bias + j, n)), V::load(hg + j, n));
      const F h = cell::rnn_forward<V>(c, a, FlagSink<V>{pr, H, j, n});
      if (o.pre) V::store(in + j, a, n);
      V::store(y + j, h, n);
      V::store(hs + j, h, n);
    });
  }
}

template <class V>
void extended_lstm_forward_tile(const LstmForward<typename V::S>& k,
                                const ExtendedCell<typename V::S>& o, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H, GH = 4 * H;
  const cell::Options<S> c = cell_options(o, 3, k.cell_clip);
  const S* ph = o.peephole;
  for (int64_t i = t.r0; i < t.r1; ++i) {
    S* g = k.gates + i * GH;
    const S* hg = k.hg + i * GH;
    S* cs = k.c_state + i * H;
    S* h = k.h + i * k.ld_h;
    S* c_keep = k.c_keep ? k.c_keep + i * H : nullptr;
    uint8_t* c_pass = k.c_pass ? k.c_pass + i * H : nullptr;
    S* h_state = k.h_state ? k.h_state + i * H : nullptr;
    uint8_t* pr = gate_pass_row(o, i, GH);
    for_vectors<V>(t.j0, t.j1, g, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      F a[4], p[3];
      for (int q = 0; q < 4; ++q) {
        a[q] = V::add(V::add(V::load(g + q * H + j, n), V::load(k.bias + q * H + j, n)),
                      V::load(hg + q * H + j, n));
      }
      for (int q = 0; q < 3; ++q) p[q] = ph ? V::load(ph + q * H + j, n) : V::set1(S(0));
      const F c_prev = V::load(cs + j, n);
      const cell::LstmState<V> st =
          cell::lstm_forward<V>(c, a, c_prev, p, FlagSink<V>{pr, H, j, n});
      if (c_pass) {
        V::store_flags(c_pass + j,
                       c.cell.enabled ? cell::clamp_passes<V>(st.c_raw, c.cell) : V::mtrue(), n);
      }
      for (int q = 0; q < 4; ++q) V::store(g + q * H + j, a[q], n);
      V::store(cs + j, st.c, n);
      if (c_keep) V::store(c_keep + j, st.c, n);
      V::store(h + j, st.h, n);
      if (h_state) V::store(h_state + j, st.h, n);
    });
  }
}

// Linear-before-reset GRU.
template <class V>
void extended_gru_forward_tile(const GruForward<typename V::S>& k,
                               const ExtendedCell<typename V::S>& o, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H, GH = 3 * H;
  const cell::Options<S> c = cell_options(o, 2);
  for (int64_t i = t.r0; i < t.r1; ++i) {
    S* g = k.gates + i * GH;
    const S* hg = k.hg + i * GH;
    S* hs = k.h_state + i * H;
    S* y = k.y + i * k.ld_y;
    S* hn_keep = k.hn_keep ? k.hn_keep + i * H : nullptr;
    uint8_t* pr = gate_pass_row(o, i, GH);
    for_vectors<V>(t.j0, t.j1, g, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      F a[3];
      const FlagSink<V> keep{pr, H, j, n};
      for (int q = 0; q < 2; ++q) {
        a[q] = V::add(V::add(V::load(g + q * H + j, n), V::load(k.bias + q * H + j, n)),
                      V::load(hg + q * H + j, n));
      }
      const cell::GruGates<V> rz = cell::gru_gates<V>(c, a, keep);
      const F hn = V::add(V::load(hg + 2 * H + j, n), V::load(k.b_hn + j, n));
      a[2] = cell::gru_lbr_n_input<V>(
          V::add(V::load(g + 2 * H + j, n), V::load(k.bias + 2 * H + j, n)), rz.r, hn);
      const cell::GruOutput<V> out = cell::gru_output<V>(c, a[2], rz.z, V::load(hs + j, n), keep);
      for (int q = 0; q < 3; ++q) V::store(g + q * H + j, a[q], n);
      if (hn_keep) V::store(hn_keep + j, hn, n);
      V::store(hs + j, out.h, n);
      V::store(y + j, out.h, n);
    });
  }
}

template <class V>
void extended_gru_orig_gates_forward_tile(const GruOrigGatesForward<typename V::S>& k,
                                          const ExtendedCell<typename V::S>& o, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H, GH = 3 * H;
  const cell::Options<S> c = cell_options(o, 2);
  for (int64_t i = t.r0; i < t.r1; ++i) {
    S* g = k.gates + i * GH;
    const S* hg = k.hg + i * k.ld_hg;
    const S* hs = k.h_state + i * H;
    S* rh = k.rh + i * H;
    uint8_t* pr = gate_pass_row(o, i, GH);
    for_vectors<V>(t.j0, t.j1, g, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      F a[2];
      for (int q = 0; q < 2; ++q) {
        a[q] = V::add(V::add(V::load(g + q * H + j, n), V::load(k.bias + q * H + j, n)),
                      V::load(hg + q * H + j, n));
      }
      const cell::GruGates<V> rz = cell::gru_gates<V>(c, a, FlagSink<V>{pr, H, j, n});
      V::store(g + j, a[0], n);
      V::store(g + H + j, a[1], n);
      V::store(rh + j, V::mul(rz.r, V::load(hs + j, n)), n);
    });
  }
}

template <class V>
void extended_gru_orig_forward_tile(const GruOrigForward<typename V::S>& k,
                                    const ExtendedCell<typename V::S>& o, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H, GH = 3 * H;
  const cell::Options<S> c = cell_options(o, 2);
  for (int64_t i = t.r0; i < t.r1; ++i) {
    S* g = k.gates + i * GH;
    const S* u = k.u + i * k.ld_u;
    S* hs = k.h_state + i * H;
    S* y = k.y + i * k.ld_y;
    uint8_t* pr = gate_pass_row(o, i, GH);
    for_vectors<V>(t.j0, t.j1, g + 2 * H, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      F an = V::add(V::add(V::add(V::load(g + 2 * H + j, n), V::load(k.bias + 2 * H + j, n)),
                           V::load(u + j, n)),
                    V::load(k.b_hn + j, n));
      // z's pre-activation was clipped by the gates' kernel.
      const F z = cell::activate<V>(c.f, V::load(g + H + j, n));
      const cell::GruOutput<V> out =
          cell::gru_output<V>(c, an, z, V::load(hs + j, n), FlagSink<V>{pr, H, j, n});
      V::store(g + 2 * H + j, an, n);
      V::store(hs + j, out.h, n);
      V::store(y + j, out.h, n);
    });
  }
}

// ---- backward ----

template <class V>
void extended_rnn_backward_tile(const RnnBackward<typename V::S>& k,
                                const ExtendedCell<typename V::S>& o, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H;
  const cell::Options<S> c = cell_options(o, 1);
  for (int64_t i = t.r0; i < t.r1; ++i) {
    const S* dh = k.dh + i * H;
    const S* dy = k.dy ? k.dy + i * k.ld_dy : nullptr;
    const S* a = o.pre + i * H;
    const uint8_t* pr = gate_pass_row(o, i, H);
    S* dg = k.dg + i * H;
    for_vectors<V>(t.j0, t.j1, dg, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      const F d = plus_dy<V>(V::load(dh + j, n), dy, j, n);
      V::store(dg + j, cell::rnn_backward<V>(c, V::load(a + j, n), d, FlagMasks<V>{pr, H, j, n}),
               n);
    });
  }
}

template <class V>
void extended_lstm_backward_tile(const LstmBackward<typename V::S>& k,
                                 const ExtendedCell<typename V::S>& o, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H, GH = 4 * H;
  const cell::Options<S> c = cell_options(o, 3);
  const S* ph = o.peephole;
  for (int64_t i = t.r0; i < t.r1; ++i) {
    const S* g = k.gates + i * GH;
    const S* cr = k.c + i * H;
    const PrevRows<S>& prev = k.c_prev;  // (its row() is shared inline code: not called here)
    const S* cp = i < prev.count_a ? prev.a + i * prev.lda : prev.b + i * prev.ldb;
    const uint8_t* c_pass = k.c_pass ? k.c_pass + i * H : nullptr;
    const uint8_t* pr = gate_pass_row(o, i, GH);
    const S* dh_row = k.dh + i * H;
    const S* dy = k.dy ? k.dy + i * k.ld_dy : nullptr;
    S* dc_state = k.dc_state + i * H;
    S* dg = k.dg + i * GH;
    for_vectors<V>(t.j0, t.j1, dg, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      F a[4], p[3];
      for (int q = 0; q < 4; ++q) a[q] = V::load(g + q * H + j, n);
      for (int q = 0; q < 3; ++q) p[q] = ph ? V::load(ph + q * H + j, n) : V::set1(S(0));
      const F dh = plus_dy<V>(V::load(dh_row + j, n), dy, j, n);
      const cell::LstmGrad<V> r = cell::lstm_backward<V>(
          c, a, V::load(cr + j, n), V::load(cp + j, n), p, dh, V::load(dc_state + j, n),
          FlagMasks<V>{pr, H, j, n}, FlagMasks<V>{c_pass, 0, j, n});
      for (int q = 0; q < 4; ++q) V::store(dg + q * H + j, r.da[q], n);
      V::store(dc_state + j, r.dc_prev, n);
    });
  }
}

// Linear-before-reset GRU.
template <class V>
void extended_gru_backward_tile(const GruBackward<typename V::S>& k,
                                const ExtendedCell<typename V::S>& o, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H, GH = 3 * H;
  const cell::Options<S> c = cell_options(o, 2);
  for (int64_t i = t.r0; i < t.r1; ++i) {
    const S* ga = k.gates + i * GH;
    const S* hp = k.h_prev + i * H;
    const S* hn = k.hn + i * H;
    const S* dy = k.dy ? k.dy + i * k.ld_dy : nullptr;
    const uint8_t* pr = gate_pass_row(o, i, GH);
    S* dh = k.dh + i * H;
    S* dg = k.dg + i * GH;
    S* dgh = k.dgh + i * GH;
    for_vectors<V>(t.j0, t.j1, dg, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      F a[3];
      for (int q = 0; q < 3; ++q) a[q] = V::load(ga + q * H + j, n);
      const F d = plus_dy<V>(V::load(dh + j, n), dy, j, n);
      const cell::GruGrad<V> r = cell::gru_backward<V>(
          c, true, a, V::load(hn + j, n), V::load(hp + j, n), d, FlagMasks<V>{pr, H, j, n});
      for (int q = 0; q < 3; ++q) V::store(dg + q * H + j, r.da[q], n);
      V::store(dgh + j, r.da[0], n);
      V::store(dgh + H + j, r.da[1], n);
      V::store(dgh + 2 * H + j, r.dhn, n);
      V::store(dh + j, r.dh_prev, n);
    });
  }
}

template <class V>
void extended_gru_orig_backward_n_tile(const GruOrigBackwardN<typename V::S>& k,
                                       const ExtendedCell<typename V::S>& o, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H, GH = 3 * H;
  const cell::Options<S> c = cell_options(o, 2);
  for (int64_t i = t.r0; i < t.r1; ++i) {
    const S* ga = k.gates + i * GH;
    const S* hp = k.h_prev + i * H;
    const S* dy = k.dy ? k.dy + i * k.ld_dy : nullptr;
    const uint8_t* pr = gate_pass_row(o, i, GH);
    S* dh = k.dh + i * H;
    S* dg = k.dg + i * GH;
    for_vectors<V>(t.j0, t.j1, dg + H, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      // r's gradient needs W_hn^T dn: extended_gru_orig_backward_r_tile, after the GEMM.
      F a[3] = {V::set1(S(0)), V::load(ga + H + j, n), V::load(ga + 2 * H + j, n)};
      const F d = plus_dy<V>(V::load(dh + j, n), dy, j, n);
      const cell::GruGrad<V> r = cell::gru_backward<V>(
          c, false, a, V::set1(S(0)), V::load(hp + j, n), d, FlagMasks<V>{pr, H, j, n});
      V::store(dg + H + j, r.da[1], n);
      V::store(dg + 2 * H + j, r.da[2], n);
      V::store(dh + j, r.dh_prev, n);
    });
  }
}

template <class V>
void extended_gru_orig_backward_r_tile(const GruOrigBackwardR<typename V::S>& k,
                                       const ExtendedCell<typename V::S>& o, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H, GH = 3 * H;
  const cell::Options<S> c = cell_options(o, 2);
  for (int64_t i = t.r0; i < t.r1; ++i) {
    const S* ga = k.gates + i * GH;
    const S* hp = k.h_prev + i * H;
    const S* drh = k.drh + i * H;
    const uint8_t* pr = gate_pass_row(o, i, GH);
    S* dh = k.dh + i * H;
    S* dg = k.dg + i * GH;
    for_vectors<V>(t.j0, t.j1, dg, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      const F d = V::load(drh + j, n);
      const cell::GruResetGrad<V> r = cell::gru_backward_reset<V>(
          c, V::load(ga + j, n), V::load(hp + j, n), d, FlagMasks<V>{pr, H, j, n});
      V::store(dg + j, r.da_r, n);
      V::store(dh + j, V::fma(d, r.r, V::load(dh + j, n)), n);
    });
  }
}
