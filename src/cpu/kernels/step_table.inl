// The table of kernel_dispatch.hpp for a vector type V: every kernel of step_kernels.inl,
// extended_step_kernels.inl and the array activations, instantiated for V. Pasted last into
// each ISA's namespace; no file-level includes.

// float16 conversions where the vector type has them (V::widen_f16 / V::narrow_f16).
template <class V>
void widen_f16_array(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += V::W) {
    const int w = n - i < V::W ? static_cast<int>(n - i) : V::W;
    V::store(y + i, V::widen_f16(x + i, w), w);
  }
}
template <class V>
void narrow_f16_array(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; i += V::W) {
    const int w = n - i < V::W ? static_cast<int>(n - i) : V::W;
    V::narrow_f16(y + i, V::load(x + i, w), w);
  }
}
template <class V>
constexpr void (*widen_f16_entry())(const uint16_t*, float*, int64_t) {
  if constexpr (requires(const uint16_t* p) { V::widen_f16(p, 1); }) {
    return &widen_f16_array<V>;
  } else {
    return nullptr;
  }
}
template <class V>
constexpr void (*narrow_f16_entry())(const float*, uint16_t*, int64_t) {
  if constexpr (requires(uint16_t * p, typename V::F v) { V::narrow_f16(p, v, 1); }) {
    return &narrow_f16_array<V>;
  } else {
    return nullptr;
  }
}

// core's sums over the tokens, compiled with this file's flags (a local symbol of each level).
template <typename T>
void column_sums_entry(const T* A, int64_t lda, int64_t rows, int64_t cols, T* out) {
  core::column_sums(A, lda, rows, cols, out);
}
template <typename T>
void peephole_grad_columns_entry(const core::Schedule& s, bool reversed, const T* c, const T* c0,
                                 const T* dg, int64_t H, int64_t GH, int64_t j0, int64_t j1,
                                 bool accumulate, T* dp) {
  core::peephole_grad_columns(s, reversed, c, c0, dg, H, GH, j0, j1, accumulate, dp);
}

template <class V>
constexpr StepKernels<typename V::S> step_table(const char* isa, int cost_scale) {
  return StepKernels<typename V::S>{
      isa,
      V::W,
      cost_scale,
#define RNNX_ENTRY(name, Args, cells, cost, extended) &name##_tile<V>,
      RNNX_STEP_KERNELS(RNNX_ENTRY)
#undef RNNX_ENTRY
#define RNNX_ENTRY(name, Args, cells, cost, extended) \
  RNNX_WHEN(extended, &extended_##name##_tile<V>, )
              RNNX_STEP_KERNELS(RNNX_ENTRY)
#undef RNNX_ENTRY
          & apply_activation<V, &V::exp>,
      &apply_activation<V, &V::sigmoid>,
      &apply_activation<V, &V::tanh>,
      &activate_array<V>,
      &activation_grad_array<V>,
      widen_f16_entry<V>(),
      narrow_f16_entry<V>(),
      &column_sums_entry<typename V::S>,
      &peephole_grad_columns_entry<typename V::S>,
  };
}
