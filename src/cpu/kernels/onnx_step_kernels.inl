// The generic step kernels of onnx_cell.hpp over a vector type V: one tile of a step of
// each cell with ONNX's options that change the cell's equations (activation functions,
// peepholes, gate clip, coupled input-forget gate), forward and backward. Same tiles and
// same guarantees as step_kernels.inl (an element's result does not depend on the tiling),
// equations and operation order as in src/reference/cell_math.cpp, activations from
// activations.inl. Pasted after step_kernels.inl and activations.inl; no file-level includes.

// The gate clip of pre-activations a at cells [e, e + n) of a row, recording whether each
// passed the gradient when the row keeps flags.
template <class V>
RNNX_KERNEL_INLINE inline typename V::F gate_clip(const OnnxCell<typename V::S>& o, uint8_t* pass,
                                                  int64_t e, typename V::F a, int n) {
  if (!o.gate_clip.enabled) return a;
  if (pass) V::store_flags(pass + e, clamp_passes<V>(a, o.gate_clip), n);
  return clamp_value<V>(a, o.gate_clip);
}

// The gradient of pre-activations a through activation f and the gate clip: d_out f'(a),
// or 0 where the clip did not pass it.
template <class V>
RNNX_KERNEL_INLINE inline typename V::F through(const Activation& f, const uint8_t* pass, int64_t e,
                                                typename V::F a, typename V::F d_out, int n) {
  const typename V::F g = V::mul(d_out, activation_grad<V>(f, a));
  return pass ? V::select(V::load_flags(pass + e, n), g, V::set1(typename V::S(0))) : g;
}

template <class S>
uint8_t* gate_pass_row(const OnnxCell<S>& o, int64_t i, int64_t gh) {
  return o.gate_pass ? o.gate_pass + i * gh : nullptr;
}

// ---- forward ----

template <class V>
void onnx_rnn_forward_tile(const RnnForward<typename V::S>& k, const OnnxCell<typename V::S>& o,
                           Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H;
  for (int64_t i = t.r0; i < t.r1; ++i) {
    S* in = o.pre ? o.pre + i * H : k.y + i * k.ld_y;
    S* y = k.y + i * k.ld_y;
    const S* hg = k.hg + i * H;
    S* hs = k.h_state + i * H;
    uint8_t* pr = gate_pass_row(o, i, H);
    for_vectors<V>(t.j0, t.j1, y, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      const F a = gate_clip<V>(
          o, pr, j, V::add(V::add(V::load(in + j, n), V::load(k.bias + j, n)), V::load(hg + j, n)),
          n);
      const F h = activate<V>(o.acts[0], a);
      if (o.pre) V::store(in + j, a, n);
      V::store(y + j, h, n);
      V::store(hs + j, h, n);
    });
  }
}

template <class V>
void onnx_lstm_forward_tile(const LstmForward<typename V::S>& k, const OnnxCell<typename V::S>& o,
                            Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H, GH = 4 * H;
  const Activation &fa = o.acts[0], &ga = o.acts[1], &ha = o.acts[2];
  const Clamp<S>& clip = k.cell_clip;
  const S* ph = o.peephole;
  const F one = V::set1(S(1));
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
      auto pre = [&](int64_t q) RNNX_KERNEL_INLINE {
        return V::add(V::add(V::load(g + q * H + j, n), V::load(k.bias + q * H + j, n)),
                      V::load(hg + q * H + j, n));
      };
      const F c_prev = V::load(cs + j, n);
      F ai = pre(0), af = pre(1);
      const F ag = gate_clip<V>(o, pr, 2 * H + j, pre(2), n);
      F ao = pre(3);
      if (ph) {
        ai = V::fma(V::load(ph + j, n), c_prev, ai);
        af = V::fma(V::load(ph + H + j, n), c_prev, af);
      }
      ai = gate_clip<V>(o, pr, j, ai, n);
      af = gate_clip<V>(o, pr, H + j, af, n);
      const F ig = activate<V>(fa, ai);
      const F fg = o.input_forget ? V::sub(one, ig) : activate<V>(fa, af);
      const F c_raw = V::fma(fg, c_prev, V::mul(ig, activate<V>(ga, ag)));
      F c = c_raw;
      if (clip.enabled) {
        c = clamp_value<V>(c_raw, clip);
        if (c_pass) V::store_flags(c_pass + j, clamp_passes<V>(c_raw, clip), n);
      } else if (c_pass) {
        V::store_flags(c_pass + j, V::mtrue(), n);
      }
      if (ph) ao = V::fma(V::load(ph + 2 * H + j, n), c, ao);
      ao = gate_clip<V>(o, pr, 3 * H + j, ao, n);
      const F hv = V::mul(activate<V>(fa, ao), activate<V>(ha, c));
      V::store(g + j, ai, n);
      V::store(g + H + j, af, n);
      V::store(g + 2 * H + j, ag, n);
      V::store(g + 3 * H + j, ao, n);
      V::store(cs + j, c, n);
      if (c_keep) V::store(c_keep + j, c, n);
      V::store(h + j, hv, n);
      if (h_state) V::store(h_state + j, hv, n);
    });
  }
}

// Linear-before-reset GRU.
template <class V>
void onnx_gru_forward_tile(const GruForward<typename V::S>& k, const OnnxCell<typename V::S>& o,
                           Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H, GH = 3 * H;
  const Activation &fa = o.acts[0], &ga = o.acts[1];
  const F one = V::set1(S(1));
  for (int64_t i = t.r0; i < t.r1; ++i) {
    S* g = k.gates + i * GH;
    const S* hg = k.hg + i * GH;
    S* hs = k.h_state + i * H;
    S* y = k.y + i * k.ld_y;
    S* hn_keep = k.hn_keep ? k.hn_keep + i * H : nullptr;
    uint8_t* pr = gate_pass_row(o, i, GH);
    for_vectors<V>(t.j0, t.j1, g, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      auto pre = [&](int64_t q) RNNX_KERNEL_INLINE {
        return V::add(V::add(V::load(g + q * H + j, n), V::load(k.bias + q * H + j, n)),
                      V::load(hg + q * H + j, n));
      };
      const F ar = gate_clip<V>(o, pr, j, pre(0), n);
      const F az = gate_clip<V>(o, pr, H + j, pre(1), n);
      const F r = activate<V>(fa, ar), z = activate<V>(fa, az);
      const F hn = V::add(V::load(hg + 2 * H + j, n), V::load(k.b_hn + j, n));
      const F an = gate_clip<V>(
          o, pr, 2 * H + j,
          V::fma(r, hn, V::add(V::load(g + 2 * H + j, n), V::load(k.bias + 2 * H + j, n))), n);
      const F nv = activate<V>(ga, an);
      const F h = V::fma(z, V::load(hs + j, n), V::mul(V::sub(one, z), nv));
      V::store(g + j, ar, n);
      V::store(g + H + j, az, n);
      V::store(g + 2 * H + j, an, n);
      if (hn_keep) V::store(hn_keep + j, hn, n);
      V::store(hs + j, h, n);
      V::store(y + j, h, n);
    });
  }
}

template <class V>
void onnx_gru_orig_gates_forward_tile(const GruOrigGatesForward<typename V::S>& k,
                                      const OnnxCell<typename V::S>& o, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H, GH = 3 * H;
  for (int64_t i = t.r0; i < t.r1; ++i) {
    S* g = k.gates + i * GH;
    const S* hg = k.hg + i * k.ld_hg;
    const S* hs = k.h_state + i * H;
    S* rh = k.rh + i * H;
    uint8_t* pr = gate_pass_row(o, i, GH);
    for_vectors<V>(t.j0, t.j1, g, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      const F ar = gate_clip<V>(
          o, pr, j, V::add(V::add(V::load(g + j, n), V::load(k.bias + j, n)), V::load(hg + j, n)),
          n);
      const F az = gate_clip<V>(
          o, pr, H + j,
          V::add(V::add(V::load(g + H + j, n), V::load(k.bias + H + j, n)), V::load(hg + H + j, n)),
          n);
      V::store(g + j, ar, n);
      V::store(g + H + j, az, n);
      V::store(rh + j, V::mul(activate<V>(o.acts[0], ar), V::load(hs + j, n)), n);
    });
  }
}

template <class V>
void onnx_gru_orig_forward_tile(const GruOrigForward<typename V::S>& k,
                                const OnnxCell<typename V::S>& o, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H, GH = 3 * H;
  const F one = V::set1(S(1));
  for (int64_t i = t.r0; i < t.r1; ++i) {
    S* g = k.gates + i * GH;
    const S* u = k.u + i * k.ld_u;
    S* hs = k.h_state + i * H;
    S* y = k.y + i * k.ld_y;
    uint8_t* pr = gate_pass_row(o, i, GH);
    for_vectors<V>(t.j0, t.j1, g + 2 * H, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      const F an = gate_clip<V>(
          o, pr, 2 * H + j,
          V::add(V::add(V::add(V::load(g + 2 * H + j, n), V::load(k.bias + 2 * H + j, n)),
                        V::load(u + j, n)),
                 V::load(k.b_hn + j, n)),
          n);
      const F nv = activate<V>(o.acts[1], an);
      const F z = activate<V>(o.acts[0], V::load(g + H + j, n));
      const F h = V::fma(z, V::load(hs + j, n), V::mul(V::sub(one, z), nv));
      V::store(g + 2 * H + j, an, n);
      V::store(hs + j, h, n);
      V::store(y + j, h, n);
    });
  }
}

// ---- backward ----

template <class V>
void onnx_rnn_backward_tile(const RnnBackward<typename V::S>& k, const OnnxCell<typename V::S>& o,
                            Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H;
  for (int64_t i = t.r0; i < t.r1; ++i) {
    const S* dh = k.dh + i * H;
    const S* dy = k.dy ? k.dy + i * k.ld_dy : nullptr;
    const S* a = o.pre + i * H;
    const uint8_t* pr = gate_pass_row(o, i, H);
    S* dg = k.dg + i * H;
    for_vectors<V>(t.j0, t.j1, dg, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      const F d = plus_dy<V>(V::load(dh + j, n), dy, j, n);
      V::store(dg + j, through<V>(o.acts[0], pr, j, V::load(a + j, n), d, n), n);
    });
  }
}

template <class V>
void onnx_lstm_backward_tile(const LstmBackward<typename V::S>& k, const OnnxCell<typename V::S>& o,
                             Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H, GH = 4 * H;
  const Activation &fa = o.acts[0], &ga = o.acts[1], &ha = o.acts[2];
  const S* ph = o.peephole;
  const F zero = V::set1(S(0)), one = V::set1(S(1));
  for (int64_t i = t.r0; i < t.r1; ++i) {
    const S* a = k.gates + i * GH;
    const S* c = k.c + i * H;
    const PrevRows<S>& prev = k.c_prev;  // (its row() is shared inline code: not called here)
    const S* cp = i < prev.count_a ? prev.a + i * prev.lda : prev.b + i * prev.ldb;
    const uint8_t* c_pass = k.c_pass ? k.c_pass + i * H : nullptr;
    const uint8_t* pr = gate_pass_row(o, i, GH);
    const S* dh_row = k.dh + i * H;
    const S* dy = k.dy ? k.dy + i * k.ld_dy : nullptr;
    S* dc_state = k.dc_state + i * H;
    S* dg = k.dg + i * GH;
    for_vectors<V>(t.j0, t.j1, dg, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      const F ai = V::load(a + j, n), af = V::load(a + H + j, n);
      const F ag = V::load(a + 2 * H + j, n), ao = V::load(a + 3 * H + j, n);
      const F dh = plus_dy<V>(V::load(dh_row + j, n), dy, j, n);
      const F ig = activate<V>(fa, ai);
      const F fg = o.input_forget ? V::sub(one, ig) : activate<V>(fa, af);
      const F gg = activate<V>(ga, ag);
      const F og = activate<V>(fa, ao);
      const F cv = V::load(c + j, n), cpv = V::load(cp + j, n);
      const F dao = through<V>(fa, pr, 3 * H + j, ao, V::mul(dh, activate<V>(ha, cv)), n);
      F dc = V::fma(V::mul(dh, og), activation_grad<V>(ha, cv), V::load(dc_state + j, n));
      if (ph) dc = V::fma(dao, V::load(ph + 2 * H + j, n), dc);
      if (c_pass) dc = V::select(V::load_flags(c_pass + j, n), dc, zero);
      F di = V::mul(dc, gg), df = V::mul(dc, cpv);
      if (o.input_forget) {
        di = V::sub(di, df);
        df = zero;
      }
      const F dai = through<V>(fa, pr, j, ai, di, n);
      const F daf = o.input_forget ? zero : through<V>(fa, pr, H + j, af, df, n);
      F dc_prev = V::mul(dc, fg);
      if (ph) {
        dc_prev = V::fma(dai, V::load(ph + j, n), dc_prev);
        dc_prev = V::fma(daf, V::load(ph + H + j, n), dc_prev);
      }
      V::store(dg + j, dai, n);
      V::store(dg + H + j, daf, n);
      V::store(dg + 2 * H + j, through<V>(ga, pr, 2 * H + j, ag, V::mul(dc, ig), n), n);
      V::store(dg + 3 * H + j, dao, n);
      V::store(dc_state + j, dc_prev, n);
    });
  }
}

// Linear-before-reset GRU.
template <class V>
void onnx_gru_backward_tile(const GruBackward<typename V::S>& k, const OnnxCell<typename V::S>& o,
                            Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H, GH = 3 * H;
  const Activation &fa = o.acts[0], &ga = o.acts[1];
  const F one = V::set1(S(1));
  for (int64_t i = t.r0; i < t.r1; ++i) {
    const S* a = k.gates + i * GH;
    const S* hp = k.h_prev + i * H;
    const S* hn = k.hn + i * H;
    const S* dy = k.dy ? k.dy + i * k.ld_dy : nullptr;
    const uint8_t* pr = gate_pass_row(o, i, GH);
    S* dh = k.dh + i * H;
    S* dg = k.dg + i * GH;
    S* dgh = k.dgh + i * GH;
    for_vectors<V>(t.j0, t.j1, dg, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      const F ar = V::load(a + j, n), az = V::load(a + H + j, n), an = V::load(a + 2 * H + j, n);
      const F d = plus_dy<V>(V::load(dh + j, n), dy, j, n);
      const F r = activate<V>(fa, ar), z = activate<V>(fa, az), nv = activate<V>(ga, an);
      const F dn = through<V>(ga, pr, 2 * H + j, an, V::mul(d, V::sub(one, z)), n);
      const F dz = through<V>(fa, pr, H + j, az, V::mul(d, V::sub(V::load(hp + j, n), nv)), n);
      const F dr = through<V>(fa, pr, j, ar, V::mul(dn, V::load(hn + j, n)), n);
      V::store(dg + j, dr, n);
      V::store(dg + H + j, dz, n);
      V::store(dg + 2 * H + j, dn, n);
      V::store(dgh + j, dr, n);
      V::store(dgh + H + j, dz, n);
      V::store(dgh + 2 * H + j, V::mul(dn, r), n);
      V::store(dh + j, V::mul(d, z), n);
    });
  }
}

template <class V>
void onnx_gru_orig_backward_n_tile(const GruOrigBackwardN<typename V::S>& k,
                                   const OnnxCell<typename V::S>& o, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H, GH = 3 * H;
  const Activation &fa = o.acts[0], &ga = o.acts[1];
  const F one = V::set1(S(1));
  for (int64_t i = t.r0; i < t.r1; ++i) {
    const S* a = k.gates + i * GH;
    const S* hp = k.h_prev + i * H;
    const S* dy = k.dy ? k.dy + i * k.ld_dy : nullptr;
    const uint8_t* pr = gate_pass_row(o, i, GH);
    S* dh = k.dh + i * H;
    S* dg = k.dg + i * GH;
    for_vectors<V>(t.j0, t.j1, dg + H, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      const F az = V::load(a + H + j, n), an = V::load(a + 2 * H + j, n);
      const F d = plus_dy<V>(V::load(dh + j, n), dy, j, n);
      const F z = activate<V>(fa, az), nv = activate<V>(ga, an);
      V::store(dg + H + j,
               through<V>(fa, pr, H + j, az, V::mul(d, V::sub(V::load(hp + j, n), nv)), n), n);
      V::store(dg + 2 * H + j, through<V>(ga, pr, 2 * H + j, an, V::mul(d, V::sub(one, z)), n), n);
      V::store(dh + j, V::mul(d, z), n);
    });
  }
}

template <class V>
void onnx_gru_orig_backward_r_tile(const GruOrigBackwardR<typename V::S>& k,
                                   const OnnxCell<typename V::S>& o, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H, GH = 3 * H;
  for (int64_t i = t.r0; i < t.r1; ++i) {
    const S* a = k.gates + i * GH;
    const S* hp = k.h_prev + i * H;
    const S* drh = k.drh + i * H;
    const uint8_t* pr = gate_pass_row(o, i, GH);
    S* dh = k.dh + i * H;
    S* dg = k.dg + i * GH;
    for_vectors<V>(t.j0, t.j1, dg, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      const F ar = V::load(a + j, n);
      const F d = V::load(drh + j, n);
      V::store(dg + j, through<V>(o.acts[0], pr, j, ar, V::mul(d, V::load(hp + j, n)), n), n);
      V::store(dh + j, V::fma(d, activate<V>(o.acts[0], ar), V::load(dh + j, n)), n);
    });
  }
}
