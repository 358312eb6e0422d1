// The step kernels of cell_kernels.hpp over a vector type V (one tile of rows and cells
// each, see kernel_dispatch.hpp), written once and pasted by src/cpu/kernels/*.cpp into
// each ISA's own namespace after its V: element j of a row is computed by the same
// operations whether it sits in a full vector or in the masked tail, so results do not
// depend on the tiling. Equations and operation order as in src/reference/cell_math.cpp,
// with fused multiply-adds where they remove a rounding. No file-level includes.
//
// V provides: S (float or double), F (a vector of W values of S), M (a lane mask), W;
// load/store(p, [v,] n) of the first n <= W lanes (the rest read as 0 and are not
// written); set1, add, sub, mul, fma(a, b, c) = a*b + c, fnma(a, b, c) = c - a*b,
// abs, nabs (-|x|), copysign, clamp(x, lo, hi) and at_least(x, lo) (NaN stays NaN), relu
// (NaN stays), isnan, lt, le, ge, gt (false on NaN), mand, mor, mtrue,
// select(m, if_true, if_false), load_flags/store_flags (one byte, 0 or 1, per lane), exp,
// sigmoid, tanh; for vector_math.inl also round (to nearest), scale2(p, n) = p 2^n and
// div_pos(a, d) for d in [1, 2^30]; for activations.inl div (IEEE division) and
// log1p_unit(u) for u in [0, 1].

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

// ---- forward ----

template <class V>
void rnn_forward_tile(const RnnForward<typename V::S>& k, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H;
  for (int64_t i = t.r0; i < t.r1; ++i) {
    S* y = k.y + i * k.ld_y;
    const S* hg = k.hg + i * H;
    S* hs = k.h_state + i * H;
    for_vectors<V>(t.j0, t.j1, y, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      const F a = V::add(V::add(V::load(y + j, n), V::load(hg + j, n)), V::load(k.bias + j, n));
      const F h = k.relu ? V::relu(a) : V::tanh(a);
      V::store(y + j, h, n);
      V::store(hs + j, h, n);
    });
  }
}

template <class V>
void lstm_forward_tile(const LstmForward<typename V::S>& k, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H;
  const Clamp<S>& clip = k.cell_clip;
  for (int64_t i = t.r0; i < t.r1; ++i) {
    S* g = k.gates + i * 4 * H;
    const S* hg = k.hg + i * 4 * H;
    S* c = k.c_state + i * H;
    S* h = k.h + i * k.ld_h;
    S* c_keep = k.c_keep ? k.c_keep + i * H : nullptr;
    uint8_t* c_pass = k.c_pass ? k.c_pass + i * H : nullptr;
    S* h_state = k.h_state ? k.h_state + i * H : nullptr;
    for_vectors<V>(t.j0, t.j1, g, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      auto pre = [&](int64_t o) RNNX_KERNEL_INLINE {
        return V::add(V::add(V::load(g + o + j, n), V::load(hg + o + j, n)),
                      V::load(k.bias + o + j, n));
      };
      const F gi = V::sigmoid(pre(0));
      const F gf = V::sigmoid(pre(H));
      const F gg = V::tanh(pre(2 * H));
      const F go = V::sigmoid(pre(3 * H));
      if (k.keep_gates) {
        V::store(g + j, gi, n);
        V::store(g + H + j, gf, n);
        V::store(g + 2 * H + j, gg, n);
        V::store(g + 3 * H + j, go, n);
      }
      const F c_raw = V::fma(gf, V::load(c + j, n), V::mul(gi, gg));
      F cn = c_raw;
      if (clip.enabled) {
        cn = clamp_value<V>(c_raw, clip);
        if (c_pass) V::store_flags(c_pass + j, clamp_passes<V>(c_raw, clip), n);
      } else if (c_pass) {
        V::store_flags(c_pass + j, V::mtrue(), n);
      }
      V::store(c + j, cn, n);
      if (c_keep) V::store(c_keep + j, cn, n);
      const F hv = V::mul(go, V::tanh(cn));
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
  const F one = V::set1(S(1));
  for (int64_t i = t.r0; i < t.r1; ++i) {
    S* g = k.gates + i * 3 * H;
    const S* hg = k.hg + i * 3 * H;
    S* hs = k.h_state + i * H;
    S* y = k.y + i * k.ld_y;
    S* hn_keep = k.hn_keep ? k.hn_keep + i * H : nullptr;
    for_vectors<V>(t.j0, t.j1, g, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      const F r =
          V::sigmoid(V::add(V::add(V::load(g + j, n), V::load(hg + j, n)), V::load(k.bias + j, n)));
      const F z = V::sigmoid(V::add(V::add(V::load(g + H + j, n), V::load(hg + H + j, n)),
                                    V::load(k.bias + H + j, n)));
      const F hn = V::add(V::load(hg + 2 * H + j, n), V::load(k.b_hn + j, n));
      const F nv =
          V::tanh(V::fma(r, hn, V::add(V::load(g + 2 * H + j, n), V::load(k.bias + 2 * H + j, n))));
      if (k.keep_gates) {
        V::store(g + j, r, n);
        V::store(g + H + j, z, n);
        V::store(g + 2 * H + j, nv, n);
      }
      if (hn_keep) V::store(hn_keep + j, hn, n);
      const F h = V::fma(z, V::load(hs + j, n), V::mul(V::sub(one, z), nv));
      V::store(hs + j, h, n);
      V::store(y + j, h, n);
    });
  }
}

template <class V>
void gru_orig_gates_forward_tile(const GruOrigGatesForward<typename V::S>& k, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H;
  for (int64_t i = t.r0; i < t.r1; ++i) {
    S* g = k.gates + i * 3 * H;
    const S* hg = k.hg + i * k.ld_hg;
    const S* hs = k.h_state + i * H;
    S* rh = k.rh + i * H;
    for_vectors<V>(t.j0, t.j1, g, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      const F r =
          V::sigmoid(V::add(V::add(V::load(g + j, n), V::load(hg + j, n)), V::load(k.bias + j, n)));
      const F z = V::sigmoid(V::add(V::add(V::load(g + H + j, n), V::load(hg + H + j, n)),
                                    V::load(k.bias + H + j, n)));
      V::store(g + j, r, n);
      V::store(g + H + j, z, n);
      V::store(rh + j, V::mul(r, V::load(hs + j, n)), n);
    });
  }
}

template <class V>
void gru_orig_forward_tile(const GruOrigForward<typename V::S>& k, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H;
  const F one = V::set1(S(1));
  for (int64_t i = t.r0; i < t.r1; ++i) {
    S* g = k.gates + i * 3 * H;
    const S* u = k.u + i * k.ld_u;
    S* hs = k.h_state + i * H;
    S* y = k.y + i * k.ld_y;
    for_vectors<V>(t.j0, t.j1, g + 2 * H, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      const F a = V::add(V::add(V::add(V::load(g + 2 * H + j, n), V::load(k.bias + 2 * H + j, n)),
                                V::load(u + j, n)),
                         V::load(k.b_hn + j, n));
      const F nv = V::tanh(a);
      V::store(g + 2 * H + j, nv, n);
      const F z = V::load(g + H + j, n);
      const F h = V::fma(z, V::load(hs + j, n), V::mul(V::sub(one, z), nv));
      V::store(hs + j, h, n);
      V::store(y + j, h, n);
    });
  }
}

// ---- backward ----

template <class V>
void rnn_backward_tile(const RnnBackward<typename V::S>& k, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H;
  const F one = V::set1(S(1)), zero = V::set1(S(0));
  for (int64_t i = t.r0; i < t.r1; ++i) {
    const S* h = k.h + i * k.ld_h;
    const S* dh = k.dh + i * H;
    const S* dy = k.dy ? k.dy + i * k.ld_dy : nullptr;
    S* dg = k.dg + i * H;
    for_vectors<V>(t.j0, t.j1, dg, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      const F d = plus_dy<V>(V::load(dh + j, n), dy, j, n);
      const F hv = V::load(h + j, n);
      // ReLU: h > 0 exactly when the pre-activation is > 0 (NaN gives 0 either way). A
      // product, not a select, so that NaN and inf in dh propagate as in the reference.
      const F deriv = k.relu ? V::select(V::gt(hv, zero), one, zero) : V::fnma(hv, hv, one);
      V::store(dg + j, V::mul(d, deriv), n);
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
  const F one = V::set1(S(1));
  for (int64_t i = t.r0; i < t.r1; ++i) {
    const S* g = k.gates + i * 4 * H;
    const S* c = k.c + i * H;
    const PrevRows<S>& prev = k.c_prev;  // (its row() is shared inline code: not called here)
    const S* cp = i < prev.count_a ? prev.a + i * prev.lda : prev.b + i * prev.ldb;
    const uint8_t* c_pass = k.c_pass ? k.c_pass + i * H : nullptr;
    const S* dh_row = k.dh + i * H;
    const S* dy = k.dy ? k.dy + i * k.ld_dy : nullptr;
    S* dc = k.dc_state + i * H;
    S* dg = k.dg + i * 4 * H;
    for_vectors<V>(t.j0, t.j1, dg, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      const F gi = V::load(g + j, n), gf = V::load(g + H + j, n);
      const F gg = V::load(g + 2 * H + j, n), go = V::load(g + 3 * H + j, n);
      const F dh = plus_dy<V>(V::load(dh_row + j, n), dy, j, n);
      const F tc = V::tanh(V::load(c + j, n));
      F dcj = V::fma(V::mul(dh, go), V::fnma(tc, tc, one), V::load(dc + j, n));
      if (c_pass) dcj = V::select(V::load_flags(c_pass + j, n), dcj, V::set1(S(0)));
      V::store(dg + j, V::mul(V::mul(V::mul(dcj, gg), gi), V::sub(one, gi)), n);
      V::store(dg + H + j, V::mul(V::mul(V::mul(dcj, V::load(cp + j, n)), gf), V::sub(one, gf)), n);
      V::store(dg + 2 * H + j, V::mul(V::mul(dcj, gi), V::fnma(gg, gg, one)), n);
      V::store(dg + 3 * H + j, V::mul(V::mul(V::mul(dh, tc), go), V::sub(one, go)), n);
      V::store(dc + j, V::mul(dcj, gf), n);
    });
  }
}

template <class V>
void gru_backward_tile(const GruBackward<typename V::S>& k, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H;
  const F one = V::set1(S(1));
  for (int64_t i = t.r0; i < t.r1; ++i) {
    const S* g = k.gates + i * 3 * H;
    const S* hp = k.h_prev + i * H;
    const S* hn = k.hn + i * H;
    const S* dy = k.dy ? k.dy + i * k.ld_dy : nullptr;
    S* dh = k.dh + i * H;
    S* dg = k.dg + i * 3 * H;
    S* dgh = k.dgh + i * 3 * H;
    for_vectors<V>(t.j0, t.j1, dg, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      const F r = V::load(g + j, n), z = V::load(g + H + j, n), nv = V::load(g + 2 * H + j, n);
      const F d = plus_dy<V>(V::load(dh + j, n), dy, j, n);
      const F dn = V::mul(V::mul(d, V::sub(one, z)), V::fnma(nv, nv, one));
      const F dz = V::mul(V::mul(V::mul(d, V::sub(V::load(hp + j, n), nv)), z), V::sub(one, z));
      const F dr = V::mul(V::mul(V::mul(dn, V::load(hn + j, n)), r), V::sub(one, r));
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
void gru_orig_backward_n_tile(const GruOrigBackwardN<typename V::S>& k, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H;
  const F one = V::set1(S(1));
  for (int64_t i = t.r0; i < t.r1; ++i) {
    const S* g = k.gates + i * 3 * H;
    const S* hp = k.h_prev + i * H;
    const S* dy = k.dy ? k.dy + i * k.ld_dy : nullptr;
    S* dh = k.dh + i * H;
    S* dg = k.dg + i * 3 * H;
    for_vectors<V>(t.j0, t.j1, dg + H, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      const F z = V::load(g + H + j, n), nv = V::load(g + 2 * H + j, n);
      const F d = plus_dy<V>(V::load(dh + j, n), dy, j, n);
      V::store(dg + H + j,
               V::mul(V::mul(V::mul(d, V::sub(V::load(hp + j, n), nv)), z), V::sub(one, z)), n);
      V::store(dg + 2 * H + j, V::mul(V::mul(d, V::sub(one, z)), V::fnma(nv, nv, one)), n);
      V::store(dh + j, V::mul(d, z), n);
    });
  }
}

template <class V>
void gru_orig_backward_r_tile(const GruOrigBackwardR<typename V::S>& k, Tile t) {
  using S = typename V::S;
  using F = typename V::F;
  const int64_t H = k.H;
  const F one = V::set1(S(1));
  for (int64_t i = t.r0; i < t.r1; ++i) {
    const S* g = k.gates + i * 3 * H;
    const S* hp = k.h_prev + i * H;
    const S* drh = k.drh + i * H;
    S* dh = k.dh + i * H;
    S* dg = k.dg + i * 3 * H;
    for_vectors<V>(t.j0, t.j1, dg, [&](int64_t j, int n) RNNX_KERNEL_INLINE {
      const F r = V::load(g + j, n);
      const F d = V::load(drh + j, n);
      V::store(dg + j, V::mul(V::mul(V::mul(d, V::load(hp + j, n)), r), V::sub(one, r)), n);
      V::store(dh + j, V::fma(d, r, V::load(dh + j, n)), n);
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
