// ONNX's activation functions and their derivatives over n contiguous values of a vector
// type V (y may equal x), for the kernel table: the functions are core/cell_math.hpp's, the
// ones the extended cells' kernels call, whose sigmoid and tanh are V's (vector_math.inl). The
// reference backend keeps its own plain copy (src/reference/activations.hpp): that
// independence is what the comparisons test. Pasted into each ISA's namespace after its V;
// no file-level includes.

template <class V>
void activate_array(const Activation& a, const typename V::S* x, typename V::S* y, int64_t n) {
  for_vectors<V>(0, n, y, [&](int64_t j, int m) RNNX_KERNEL_INLINE {
    V::store(y + j, cell::activate<V>(a, V::load(x + j, m)), m);
  });
}

template <class V>
void activation_grad_array(const Activation& a, const typename V::S* x, typename V::S* y,
                           int64_t n) {
  for_vectors<V>(0, n, y, [&](int64_t j, int m) RNNX_KERNEL_INLINE {
    V::store(y + j, cell::activation_grad<V>(a, V::load(x + j, m)), m);
  });
}
