// The plain GEMM's tile (plain_gemm_kernels.hpp) in plain C++: op(B) packed block by block of
// k into panels of NC columns, op(A) (times alpha) into panels of R rows, and an R x NC
// micro-tile of accumulators held in registers over a block's k, in vectors of the level's
// width. Pasted into each ISA's anonymous namespace after <cstring> and
// plain_gemm_kernels.hpp, with kVectorBytes, kRows, kColsF32 and kColsF64 defined.

// T's vectors of the level's width (GCC's vector extension, which clang has too).
typedef float VecF32 __attribute__((vector_size(kVectorBytes)));
typedef double VecF64 __attribute__((vector_size(kVectorBytes)));
template <typename T>
struct VecOf;
template <>
struct VecOf<float> {
  using type = VecF32;
};
template <>
struct VecOf<double> {
  using type = VecF64;
};
template <typename T>
using Vec = typename VecOf<T>::type;

template <typename T>
Vec<T> load(const T* p) {
  Vec<T> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// C[rows, cols] += a_panel [kc][R] x b_panel [kc][NC], the panels zero past rows and cols.
// The accumulators, R x NC / (elements per vector) vectors, are only ever indexed by
// constants (the loops unroll), so that they stay in registers; every element of C goes
// through the same vector code, partial tiles too (stored in part).
template <typename T, int R, int NC>
void micro_tile(int64_t kc, const T* __restrict a, const T* __restrict b, T* __restrict C,
                int64_t ldc, int64_t rows, int64_t cols) {
  constexpr int kLanes = kVectorBytes / sizeof(T);
  constexpr int kVecs = NC / kLanes;
  static_assert(NC % kLanes == 0, "a panel is whole vectors");
  Vec<T> acc[R][kVecs] = {};
  for (int64_t k = 0; k < kc; ++k, a += R, b += NC) {
    Vec<T> bv[kVecs];
#pragma GCC unroll 4
    for (int v = 0; v < kVecs; ++v) bv[v] = load(b + v * kLanes);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const T ar = a[r];
#pragma GCC unroll 4
      for (int v = 0; v < kVecs; ++v) acc[r][v] += ar * bv[v];
    }
  }
  if (rows == R && cols == NC) {
    for (int r = 0; r < R; ++r) {
      for (int v = 0; v < kVecs; ++v) {
        T* c = C + r * ldc + v * kLanes;
        const Vec<T> sum = load(c) + acc[r][v];
        std::memcpy(c, &sum, sizeof sum);
      }
    }
    return;
  }
  T part[R][NC];
  std::memcpy(part, acc, sizeof part);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < cols; ++j) C[r * ldc + j] += part[r][j];
  }
}

template <typename T, int R, int NC>
void tile(const PlainProblem<T>& p, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  static_assert(kPlainTileCols % NC == 0, "a tile is whole panels");
  const int64_t n = j1 - j0;
  for (int64_t i = i0; i < i1; ++i) {
    T* c = p.C + i * p.ldc + j0;
    // beta = 0 overwrites, so NaN left in C (an uninitialised workspace) does not survive.
    if (p.beta == T(0)) {
      for (int64_t j = 0; j < n; ++j) c[j] = T(0);
    } else if (p.beta != T(1)) {
      for (int64_t j = 0; j < n; ++j) c[j] *= p.beta;
    }
  }
  alignas(64) T b_pack[kPlainDepth * kPlainTileCols];
  alignas(64) T a_pack[kPlainDepth * R];
  const int64_t panels = (n + NC - 1) / NC;
  for (int64_t k0 = 0; k0 < p.K; k0 += kPlainDepth) {
    const int64_t kc = p.K - k0 < kPlainDepth ? p.K - k0 : kPlainDepth;
    // Panel q: [kc][NC], columns j0 + q NC + jj, zero past column j1.
    for (int64_t q = 0; q < panels; ++q) {
      T* out = b_pack + q * kc * NC;
      for (int64_t jj = 0; jj < NC; ++jj) {
        const int64_t j = j0 + q * NC + jj;
        if (j >= j1) {
          for (int64_t k = 0; k < kc; ++k) out[k * NC + jj] = T(0);
        } else if (p.trans_b) {
          const T* src = p.B + j * p.ldb + k0;
          for (int64_t k = 0; k < kc; ++k) out[k * NC + jj] = src[k];
        } else {
          const T* src = p.B + k0 * p.ldb + j;
          for (int64_t k = 0; k < kc; ++k) out[k * NC + jj] = src[k * p.ldb];
        }
      }
    }
    for (int64_t i = i0; i < i1; i += R) {
      const int64_t rows = i1 - i < R ? i1 - i : R;
      for (int64_t r = 0; r < R; ++r) {
        if (r >= rows) {
          for (int64_t k = 0; k < kc; ++k) a_pack[k * R + r] = T(0);
        } else if (p.trans_a) {
          const T* src = p.A + k0 * p.lda + i + r;
          for (int64_t k = 0; k < kc; ++k) a_pack[k * R + r] = p.alpha * src[k * p.lda];
        } else {
          const T* src = p.A + (i + r) * p.lda + k0;
          for (int64_t k = 0; k < kc; ++k) a_pack[k * R + r] = p.alpha * src[k];
        }
      }
      for (int64_t q = 0; q < panels; ++q) {
        const int64_t cols = n - q * NC < NC ? n - q * NC : NC;
        micro_tile<T, R, NC>(kc, a_pack, b_pack + q * kc * NC, p.C + i * p.ldc + j0 + q * NC, p.ldc,
                             rows, cols);
      }
    }
  }
}
