// The fixed cells' step kernels of cell_kernels.hpp over a vector type V (one tile of rows
// and cells each, see kernel_dispatch.hpp), written once and pasted by src/cpu/kernels/*.cpp
// into each ISA's own namespace after its V: element j of a row is computed by the same
// operations whether it sits in a full vector or in the masked tail, so results do not
// depend on the tiling. The math of a unit is core/cell_math.hpp's with the fixed cells'
// options (sigmoid gates, tanh or ReLU, no ONNX option); what is here is where the values
// come from and go: forward keeps the activated gates, from which backward takes each
// gate's derivative (s (1 - s), 1 - t^2) instead of evaluating the activation again. No
// file-level includes.
//
// V provides: S (float or double), F (a vector of W values of S), M (a lane mask), W;
// load/store(p, [v,] n) of the first n <= W lanes (the rest read as 0 and are not
// written); set1, add, sub, mul, fma(a, b, c) = a*b + c, fnma(a, b, c) = c - a*b,
// abs, nabs (-|x|), copysign, clamp(x, lo, hi) and at_least(x, lo) (NaN stays NaN), relu
// (NaN stays), isnan, lt, le, ge, gt (false on NaN), mand, mor, mtrue,
// select(m, if_true, if_false), load_flags/store_flags (one byte, 0 or 1, per lane), exp,
// sigmoid, tanh; for vector_math.inl also round (to nearest), scale2(p, n) = p 2^n and
// div_pos(a, d) for d in [1, 2^30]; for core/cell_math.hpp's activations div (IEEE
// division) and log1p_unit(u) for u in [0, 1].

// The body of a kernel's vector loop is inlined at each of its call sites (head, full
// vectors, tail), and so are the activations: as calls they pass vectors through memory.
#ifndef RNNX_KERNEL_INLINE
#define RNNX_KERNEL_INLINE __attribute__((always_inline))
#endif

// body(j, n) over [j0, j1) in vectors of W lanes, n < W in the partial ones. The full
// vectors start where row + j is aligned to a whole vector (a store that straddles two
// cache lines costs twice: up to 2x on the kernels that mostly move data), so a
// misaligned row gets a partial vector at its start too; which lanes are partial never
// changes a result.
template <class V, class Body>
inline void for_vectors(int64_t j0, int64_t j1, const typename V::S* row, const Body& body) {
  int64_t j = j0;
  const auto elem = reinterpret_cast<uintptr_t>(row + j0) / sizeof(typename V::S);
  const int64_t head = static_cast<int64_t>((V::W - elem % V::W) % V::W);
  if (head > 0 && j + head < j1) {
    body(j, static_cast<int>(head));
    j += head;
  }
  for (; j + V::W <= j1; j += V::W) body(j, V::W);
  if (j < j1) body(j, static_cast<int>(j1 - j));
}

// The clamps' helpers and the extended cells' math (extended_step_kernels.inl).
namespace cell = core::cell;
using cell::clamp_passes;
using cell::clamp_value;

// dh (+ dy when dy is set).
template <class V>
typename V::F plus_dy(typename V::F dh, const typename V::S* dy_row, int64_t j, int n) {
  return dy_row ? V::add(dh, V::load(dy_row + j, n)) : dh;
}

// The clips' masks as a row's flags, one byte per gate and unit at q * H + j: forward
// stores each as it is made (row null: the row keeps none), backward loads each where the
// equations need it (row null: every gradient passed).
template <class V>
struct FlagSink {
  uint8_t* row;
  int64_t H, j;
  int n;
  RNNX_KERNEL_INLINE void operator()(int q, typename V::M m) const {
    if (row) V::store_flags(row + q * H + j, m, n);
  }
};
template <class V>
struct FlagMasks {
  const uint8_t* row;
  int64_t H, j;
  int n;
  RNNX_KERNEL_INLINE bool on() const { return row != nullptr; }
  RNNX_KERNEL_INLINE typename V::M operator()(int q) const {
    return V::load_flags(row + q * H + j, n);
  }
};

// ---- forward ----

template <class V>
void rnn_forward_tile(const RnnForward<typename V::S>& k, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H;
  const auto run = [&](const auto& c) RNNX_KERNEL_INLINE {
    for (int64_t i = t.r0; i < t.r1; ++i) {
      S* y = k.y + i * k.ld_y;
      const S* hg = k.hg + i * H;
      S* hs = k.h_state + i * H;
      for_vectors<V>(t.j0, t.j1, y, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
        F a = V::add(V::add(V::load(y + j, n), V::load(hg + j, n)), V::load(k.bias + j, n));
        const F h = cell::rnn_forward<V>(c, a, cell::Discard{});
        V::store(y + j, h, n);
        V::store(hs + j, h, n);
      });
    }
  };
  if (k.relu) {
    run(cell::FixedOptions<S, ActivationKind::relu>{});
  } else {
    run(cell::FixedOptions<S, ActivationKind::tanh>{});
  }
}

template <class V>
void lstm_forward_tile(const LstmForward<typename V::S>& k, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H;
  const cell::FixedOptions<S, ActivationKind::sigmoid> c{k.cell_clip};
  for (int64_t i = t.r0; i < t.r1; ++i) {
    S* g = k.gates + i * 4 * H;
    const S* hg = k.hg + i * 4 * H;
    S* cs = k.c_state + i * H;
    S* h = k.h + i * k.ld_h;
    S* c_keep = k.c_keep ? k.c_keep + i * H : nullptr;
    uint8_t* c_pass = k.c_pass ? k.c_pass + i * H : nullptr;
    S* h_state = k.h_state ? k.h_state + i * H : nullptr;
    // Two passes over the row (cell_math.hpp's lstm_forward_state): the gates and c, then h
    // from the output gate, which the first pass leaves in g's o row.
    for_vectors<V>(t.j0, t.j1, g, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      F a[4];
      for (int q = 0; q < 4; ++q) {
        a[q] = V::add(V::add(V::load(g + q * H + j, n), V::load(hg + q * H + j, n)),
                      V::load(k.bias + q * H + j, n));
      }
      const cell::LstmState<V> st =
          cell::lstm_forward_state<V>(c, a, V::load(cs + j, n), nullptr, cell::Discard{});
      if (k.keep_gates) {
        for (int q = 0; q < 3; ++q) V::store(g + q * H + j, st.gate[q], n);
      }
      V::store(g + 3 * H + j, st.gate[3], n);
      if (c_pass) {
        V::store_flags(c_pass + j, c.cell.enabled ? clamp_passes<V>(st.c_raw, c.cell) : V::mtrue(),
                       n);
      }
      V::store(cs + j, st.c, n);
      if (c_keep) V::store(c_keep + j, st.c, n);
    });
    for_vectors<V>(t.j0, t.j1, g, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      const F hv = cell::lstm_forward_output<V>(c, V::load(g + 3 * H + j, n), V::load(cs + j, n));
      V::store(h + j, hv, n);
      if (h_state) V::store(h_state + j, hv, n);
    });
  }
}

template <class V>
void proj_forward_tile(const ProjForward<typename V::S>& k, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t P = k.P;
  const Clamp<S>& clip = k.proj_clip;
  for (int64_t i = t.r0; i < t.r1; ++i) {
    S* y = k.y + i * k.ld_y;
    S* hs = k.h_state + i * P;
    uint8_t* pass = k.pass ? k.pass + i * P : nullptr;
    for_vectors<V>(t.j0, t.j1, y, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      const F raw = V::load(y + j, n);
      F r = raw;
      if (clip.enabled) {
        r = clamp_value<V>(raw, clip);
        if (pass) V::store_flags(pass + j, clamp_passes<V>(raw, clip), n);
      } else if (pass) {
        V::store_flags(pass + j, V::mtrue(), n);
      }
      V::store(y + j, r, n);
      V::store(hs + j, r, n);
    });
  }
}

template <class V>
void gru_forward_tile(const GruForward<typename V::S>& k, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H;
  const cell::FixedOptions<S, ActivationKind::sigmoid> c{};
  for (int64_t i = t.r0; i < t.r1; ++i) {
    S* g = k.gates + i * 3 * H;
    const S* hg = k.hg + i * 3 * H;
    S* hs = k.h_state + i * H;
    S* y = k.y + i * k.ld_y;
    S* hn_keep = k.hn_keep ? k.hn_keep + i * H : nullptr;
    // Two passes over the row, as the LSTM's: r and z, and n's pre-activation, which the first
    // pass leaves in g's n row (and z in its z row); then n and h. In one pass,
    // sigmoid(r) -> n's input -> tanh(n) -> h is a chain of two activations per vector.
    for_vectors<V>(t.j0, t.j1, g, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      F a[2];
      for (int q = 0; q < 2; ++q) {
        a[q] = V::add(V::add(V::load(g + q * H + j, n), V::load(hg + q * H + j, n)),
                      V::load(k.bias + q * H + j, n));
      }
      const cell::GruGates<V> rz = cell::gru_gates<V>(c, a, cell::Discard{});
      const F hn = V::add(V::load(hg + 2 * H + j, n), V::load(k.b_hn + j, n));
      const F an = cell::gru_lbr_n_input<V>(
          V::add(V::load(g + 2 * H + j, n), V::load(k.bias + 2 * H + j, n)), rz.r, hn);
      if (k.keep_gates) V::store(g + j, rz.r, n);
      V::store(g + H + j, rz.z, n);
      V::store(g + 2 * H + j, an, n);
      if (hn_keep) V::store(hn_keep + j, hn, n);
    });
    for_vectors<V>(t.j0, t.j1, g, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      F an = V::load(g + 2 * H + j, n);
      const cell::GruOutput<V> out =
          cell::gru_output<V>(c, an, V::load(g + H + j, n), V::load(hs + j, n), cell::Discard{});
      if (k.keep_gates) V::store(g + 2 * H + j, out.n, n);
      V::store(hs + j, out.h, n);
      V::store(y + j, out.h, n);
    });
  }
}

template <class V>
void gru_orig_gates_forward_tile(const GruOrigGatesForward<typename V::S>& k, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H;
  const cell::FixedOptions<S, ActivationKind::sigmoid> c{};
  for (int64_t i = t.r0; i < t.r1; ++i) {
    S* g = k.gates + i * 3 * H;
    const S* hg = k.hg + i * k.ld_hg;
    const S* hs = k.h_state + i * H;
    S* rh = k.rh + i * H;
    for_vectors<V>(t.j0, t.j1, g, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      F a[2];
      for (int q = 0; q < 2; ++q) {
        a[q] = V::add(V::add(V::load(g + q * H + j, n), V::load(hg + q * H + j, n)),
                      V::load(k.bias + q * H + j, n));
      }
      const cell::GruGates<V> rz = cell::gru_gates<V>(c, a, cell::Discard{});
      V::store(g + j, rz.r, n);
      V::store(g + H + j, rz.z, n);
      V::store(rh + j, V::mul(rz.r, V::load(hs + j, n)), n);
    });
  }
}

template <class V>
void gru_orig_forward_tile(const GruOrigForward<typename V::S>& k, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H;
  const cell::FixedOptions<S, ActivationKind::sigmoid> c{};
  for (int64_t i = t.r0; i < t.r1; ++i) {
    S* g = k.gates + i * 3 * H;
    const S* u = k.u + i * k.ld_u;
    S* hs = k.h_state + i * H;
    S* y = k.y + i * k.ld_y;
    for_vectors<V>(t.j0, t.j1, g + 2 * H, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      F an = V::add(V::add(V::add(V::load(g + 2 * H + j, n), V::load(k.bias + 2 * H + j, n)),
                           V::load(u + j, n)),
                    V::load(k.b_hn + j, n));
      // z, activated by the gates' kernel.
      const cell::GruOutput<V> out =
          cell::gru_output<V>(c, an, V::load(g + H + j, n), V::load(hs + j, n), cell::Discard{});
      V::store(g + 2 * H + j, out.n, n);
      V::store(hs + j, out.h, n);
      V::store(y + j, out.h, n);
    });
  }
}

// ---- backward ----

template <class V>
void rnn_backward_tile(const RnnBackward<typename V::S>& k, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H;
  for (int64_t i = t.r0; i < t.r1; ++i) {
    const S* h = k.h + i * k.ld_h;
    const S* dh = k.dh + i * H;
    const S* dy = k.dy ? k.dy + i * k.ld_dy : nullptr;
    S* dg = k.dg + i * H;
    for_vectors<V>(t.j0, t.j1, dg, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      const F d = plus_dy<V>(V::load(dh + j, n), dy, j, n);
      const F hv = V::load(h + j, n);
      // A product with the derivative, not a select, so that NaN and inf in dh propagate as
      // in the reference.
      const cell::ValueGrad<V> a =
          k.relu ? cell::relu_from_value<V>(hv) : cell::tanh_from_value<V>(hv);
      V::store(dg + j, cell::through<V>(a.grad, d, cell::AllPass<V>{}, 0), n);
    });
  }
}

template <class V>
void proj_backward_tile(const ProjBackward<typename V::S>& k, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t P = k.P;
  for (int64_t i = t.r0; i < t.r1; ++i) {
    const S* dh = k.dh + i * P;
    const S* dy = k.dy ? k.dy + i * k.ld_dy : nullptr;
    const uint8_t* pass = k.pass ? k.pass + i * P : nullptr;
    S* dr = k.dr + i * P;
    for_vectors<V>(t.j0, t.j1, dr, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      F d = plus_dy<V>(V::load(dh + j, n), dy, j, n);
      if (pass) d = V::select(V::load_flags(pass + j, n), d, V::set1(S(0)));
      V::store(dr + j, d, n);
    });
  }
}

template <class V>
void lstm_backward_tile(const LstmBackward<typename V::S>& k, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H;
  const cell::FixedOptions<S, ActivationKind::sigmoid> c{};
  for (int64_t i = t.r0; i < t.r1; ++i) {
    const S* g = k.gates + i * 4 * H;
    const S* cr = k.c + i * H;
    const PrevRows<S>& prev = k.c_prev;  // (its row() is shared inline code: not called here)
    const S* cp = i < prev.count_a ? prev.a + i * prev.lda : prev.b + i * prev.ldb;
    const uint8_t* c_pass = k.c_pass ? k.c_pass + i * H : nullptr;
    const S* dh_row = k.dh + i * H;
    const S* dy = k.dy ? k.dy + i * k.ld_dy : nullptr;
    S* dc = k.dc_state + i * H;
    S* dg = k.dg + i * 4 * H;
    for_vectors<V>(t.j0, t.j1, dg, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      // The gates were kept activated: each one's derivative from its value.
      const cell::ValueGrad<V> gate[4] = {cell::sigmoid_from_value<V>(V::load(g + j, n)),
                                          cell::sigmoid_from_value<V>(V::load(g + H + j, n)),
                                          cell::tanh_from_value<V>(V::load(g + 2 * H + j, n)),
                                          cell::sigmoid_from_value<V>(V::load(g + 3 * H + j, n))};
      const F dh = plus_dy<V>(V::load(dh_row + j, n), dy, j, n);
      const cell::LstmGrad<V> r = cell::lstm_backward_from_gates<V>(
          c, gate, cell::tanh_from_value<V>(V::tanh(V::load(cr + j, n))), V::load(cp + j, n),
          nullptr, dh, V::load(dc + j, n), cell::AllPass<V>{}, FlagMasks<V>{c_pass, 0, j, n});
      for (int q = 0; q < 4; ++q) V::store(dg + q * H + j, r.da[q], n);
      V::store(dc + j, r.dc_prev, n);
    });
  }
}

template <class V>
void gru_backward_tile(const GruBackward<typename V::S>& k, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H;
  for (int64_t i = t.r0; i < t.r1; ++i) {
    const S* g = k.gates + i * 3 * H;
    const S* hp = k.h_prev + i * H;
    const S* hn = k.hn + i * H;
    const S* dy = k.dy ? k.dy + i * k.ld_dy : nullptr;
    S* dh = k.dh + i * H;
    S* dg = k.dg + i * 3 * H;
    S* dgh = k.dgh + i * 3 * H;
    for_vectors<V>(t.j0, t.j1, dg, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      const F d = plus_dy<V>(V::load(dh + j, n), dy, j, n);
      const cell::GruGrad<V> r = cell::gru_backward_from_gates<V>(
          true, cell::sigmoid_from_value<V>(V::load(g + j, n)),
          cell::sigmoid_from_value<V>(V::load(g + H + j, n)),
          cell::tanh_from_value<V>(V::load(g + 2 * H + j, n)), V::load(hn + j, n),
          V::load(hp + j, n), d, cell::AllPass<V>{});
      for (int q = 0; q < 3; ++q) V::store(dg + q * H + j, r.da[q], n);
      V::store(dgh + j, r.da[0], n);
      V::store(dgh + H + j, r.da[1], n);
      V::store(dgh + 2 * H + j, r.dhn, n);
      V::store(dh + j, r.dh_prev, n);
    });
  }
}

template <class V>
void gru_orig_backward_n_tile(const GruOrigBackwardN<typename V::S>& k, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H;
  const F zero = V::set1(S(0));
  for (int64_t i = t.r0; i < t.r1; ++i) {
    const S* g = k.gates + i * 3 * H;
    const S* hp = k.h_prev + i * H;
    const S* dy = k.dy ? k.dy + i * k.ld_dy : nullptr;
    S* dh = k.dh + i * H;
    S* dg = k.dg + i * 3 * H;
    for_vectors<V>(t.j0, t.j1, dg + H, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      // r's gradient needs W_hn^T dn: gru_orig_backward_r_tile, after the GEMM.
      const F d = plus_dy<V>(V::load(dh + j, n), dy, j, n);
      const cell::GruGrad<V> r = cell::gru_backward_from_gates<V>(
          false, cell::ValueGrad<V>{zero, zero}, cell::sigmoid_from_value<V>(V::load(g + H + j, n)),
          cell::tanh_from_value<V>(V::load(g + 2 * H + j, n)), zero, V::load(hp + j, n), d,
          cell::AllPass<V>{});
      V::store(dg + H + j, r.da[1], n);
      V::store(dg + 2 * H + j, r.da[2], n);
      V::store(dh + j, r.dh_prev, n);
    });
  }
}

template <class V>
void gru_orig_backward_r_tile(const GruOrigBackwardR<typename V::S>& k, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H;
  for (int64_t i = t.r0; i < t.r1; ++i) {
    const S* g = k.gates + i * 3 * H;
    const S* hp = k.h_prev + i * H;
    const S* drh = k.drh + i * H;
    S* dh = k.dh + i * H;
    S* dg = k.dg + i * 3 * H;
    for_vectors<V>(t.j0, t.j1, dg, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      const F d = V::load(drh + j, n);
      const cell::GruResetGrad<V> r =
          cell::gru_backward_reset_from_gate<V>(cell::sigmoid_from_value<V>(V::load(g + j, n)),
                                                V::load(hp + j, n), d, cell::AllPass<V>{});
      V::store(dg + j, r.da_r, n);
      V::store(dh + j, V::fma(d, r.r, V::load(dh + j, n)), n);
    });
  }
}

// ---- activations over arrays ----

template <class V, typename V::F (*Fn)(typename V::F)>
void apply_activation(const typename V::S* x, typename V::S* y, int64_t n) {
  for_vectors<V>(0, n, y, [&](int64_t j, int m) RNNX_KERNEL_INLINE {
    V::store(y + j, Fn(V::load(x + j, m)), m);
  });
}
