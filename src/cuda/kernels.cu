// The kernels of kernels.hpp: memory-bound loops over elements, one thread per element
// (grid-stride), instantiated for float, double, bfloat16 and float16.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <string>

#include "core/column_sums.hpp"
#include "core/philox.hpp"
#include "cuda/cuda_api.hpp"
#include "cuda/kernels.hpp"
#include "rnnx/error.hpp"

namespace rnnx::cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, 65535 * 4));
}

template <typename T>
__device__ T from_double(double v) {
  return static_cast<T>(v);
}
template <>
__device__ __nv_bfloat16 from_double<__nv_bfloat16>(double v) {
  return __double2bfloat16(v);
}
template <>
__device__ __half from_double<__half>(double v) {
  return __double2half(v);
}
// Sums in the type's own arithmetic: float and double exactly as the host backends add
// gradients, bfloat16 through float32 and one rounding.
template <typename T>
__device__ T add(T a, T b) {
  return a + b;
}
template <>
__device__ __nv_bfloat16 add<__nv_bfloat16>(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __float2bfloat16(__bfloat162float(a) + __bfloat162float(b));
}
template <>
__device__ __half add<__half>(__half a, __half b) {
  return __float2half(__half2float(a) + __half2float(b));
}

// core/column_sums.hpp's order with the rows in parallel: a block takes 32 columns, its
// threads (x, y) run y of every 8 (coalesced across x), each adding its run's rows in order
// from zero in double; thread y = 0 then adds the 8 runs' partial sums in run order to its
// column's total. So the bits of core::column_sums (the cpu backend's), with rows / 256
// times the threads of one thread per column (4H = 4096 columns were 16 blocks on 132 SMs).
constexpr int kSumColumns = 32, kSumRuns = 8;

template <typename T>
__global__ void column_sums_kernel(const T* src, int64_t rows, int64_t width, T* dst, T* also) {
  __shared__ double part[kSumRuns][kSumColumns];
  const int x = static_cast<int>(threadIdx.x), y = static_cast<int>(threadIdx.y);
  const int64_t j = static_cast<int64_t>(blockIdx.x) * kSumColumns + x;
  const int64_t runs = (rows + core::kColumnSumRows - 1) / core::kColumnSumRows;
  double total = 0;
  for (int64_t g = 0; g < runs; g += kSumRuns) {
    const int64_t run = g + y;
    double sum = 0;
    if (j < width && run < runs) {
      const int64_t r0 = run * core::kColumnSumRows;
      const int64_t r1 = r0 + core::kColumnSumRows < rows ? r0 + core::kColumnSumRows : rows;
      for (int64_t r = r0; r < r1; ++r) sum += static_cast<double>(src[r * width + j]);
    }
    part[y][x] = sum;
    __syncthreads();
    if (y == 0) {
      const int64_t count = runs - g < kSumRuns ? runs - g : kSumRuns;
      for (int64_t q = 0; q < count; ++q) total += part[q][x];
    }
    __syncthreads();
  }
  if (y == 0 && j < width) {
    const T sum = static_cast<T>(total);
    dst[j] += sum;
    if (also != nullptr) also[j] += sum;
  }
}

template <typename T>
__global__ void copy_rows_kernel(const T* src, const int64_t* src_map, T* dst,
                                 const int64_t* dst_map, int64_t rows, int64_t width) {
  const int64_t n = rows * width;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / width, j = i - r * width;
    const int64_t d = dst_map ? dst_map[r] : r;
    dst[d * width + j] = src ? src[(src_map ? src_map[r] : r) * width + j] : from_double<T>(0.0);
  }
}

template <typename T>
__global__ void fill_rows_kernel(T* dst, const int64_t* dst_map, int64_t rows, int64_t width,
                                 double value) {
  const T v = from_double<T>(value);
  const int64_t n = rows * width;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / width, j = i - r * width;
    dst[(dst_map ? dst_map[r] : r) * width + j] = v;
  }
}

// blockIdx.y: the segment; x: its elements.
template <typename T>
__global__ void weights_kernel(const WeightSegment* segs, const T* from, T* to, int64_t flat_base,
                               bool to_cudnn, bool accumulate) {
  const WeightSegment s = segs[blockIdx.y];
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < s.count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if (to_cudnn) {
      to[s.cudnn + i] = from[flat_base + s.flat + i];
    } else {
      T& dst = to[flat_base + s.flat + i];
      dst = accumulate ? add(dst, from[s.cudnn + i]) : from[s.cudnn + i];
    }
  }
}

// x * scale rounded once, as the host backends do (scale = 1 / (1 - p) rounded to T first).
template <typename T>
__device__ T scaled(T x, double scale) {
  return x * static_cast<T>(scale);
}
template <>
__device__ __nv_bfloat16 scaled<__nv_bfloat16>(__nv_bfloat16 x, double scale) {
  return __float2bfloat16(__bfloat162float(x) * static_cast<float>(scale));
}
template <>
__device__ __half scaled<__half>(__half x, double scale) {
  return __float2half(__half2float(x) * static_cast<float>(scale));
}

template <typename T>
__global__ void dropout_kernel(T* data, int64_t rows, int64_t width, const int64_t* element_base,
                               uint64_t seed, uint64_t counter, int64_t layer, double p,
                               double scale) {
  const int64_t n = rows * width;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / width, j = i - r * width;
    const uint64_t e = static_cast<uint64_t>(element_base[r] + j);
    const uint32_t bits = core::dropout_block(seed, counter, layer, e / 4).v[e % 4];
    data[i] = core::dropout_bits_keep(bits, p) ? scaled(data[i], scale) : from_double<T>(0.0);
  }
}

// Values in [-scale, scale) from Philox's bits of (seed, i): test data made on the device.
template <typename T>
__global__ void pattern_kernel(T* dst, int64_t n, uint64_t seed, double scale) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const uint32_t bits = core::dropout_block(seed, 0, 0, static_cast<uint64_t>(i)).v[0];
    dst[i] = from_double<T>((static_cast<double>(bits) / 4294967296.0 * 2.0 - 1.0) * scale);
  }
}

// Calls f with a null pointer of the dtype's device type.
template <typename F>
void by_dtype(DataType dtype, F&& f) {
  switch (dtype) {
    case DataType::f32:
      return f(static_cast<float*>(nullptr));
    case DataType::f64:
      return f(static_cast<double*>(nullptr));
    case DataType::bf16:
      return f(static_cast<__nv_bfloat16*>(nullptr));
    case DataType::f16:
      return f(static_cast<__half*>(nullptr));
  }
}

void check_launch(const char* what) {
  check(calls().cudaGetLastError(), what);
}

}  // namespace

void copy_rows(DataType dtype, const void* src, const int64_t* src_map, void* dst,
               const int64_t* dst_map, int64_t rows, int64_t width, cudaStream_t stream) {
  if (rows <= 0 || width <= 0 || calls().skip_kernel("copy_rows")) return;
  by_dtype(dtype, [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    copy_rows_kernel<T><<<blocks_for(rows * width), kThreads, 0, stream>>>(
        static_cast<const T*>(src), src_map, static_cast<T*>(dst), dst_map, rows, width);
  });
  check_launch("copy_rows kernel");
}

void fill_rows(DataType dtype, void* dst, const int64_t* dst_map, int64_t rows, int64_t width,
               double value, cudaStream_t stream) {
  if (rows <= 0 || width <= 0 || calls().skip_kernel("fill_rows")) return;
  by_dtype(dtype, [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    fill_rows_kernel<T><<<blocks_for(rows * width), kThreads, 0, stream>>>(
        static_cast<T*>(dst), dst_map, rows, width, value);
  });
  check_launch("fill_rows kernel");
}

void fill(DataType dtype, void* dst, int64_t n, double value, cudaStream_t stream) {
  fill_rows(dtype, dst, nullptr, 1, n, value, stream);
}

void fill_pattern(DataType dtype, void* dst, int64_t n, uint64_t seed, double scale,
                  cudaStream_t stream) {
  if (n <= 0 || calls().skip_kernel("fill_pattern")) return;
  by_dtype(dtype, [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    pattern_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(dst), n, seed, scale);
  });
  check_launch("pattern kernel");
}

namespace {
void weights_launch(DataType dtype, const WeightSegment* segs, int64_t count, int64_t longest,
                    const void* from, void* to, int64_t flat_base, bool to_cudnn, bool accumulate,
                    cudaStream_t stream) {
  if (count <= 0 || calls().skip_kernel(to_cudnn ? "weights_to_cudnn" : "weights_to_flat")) return;
  const dim3 grid(std::min(blocks_for(longest), 1024u), static_cast<unsigned>(count));
  by_dtype(dtype, [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    weights_kernel<T><<<grid, kThreads, 0, stream>>>(
        segs, static_cast<const T*>(from), static_cast<T*>(to), flat_base, to_cudnn, accumulate);
  });
  check_launch("weight conversion kernel");
}
}  // namespace

void weights_to_cudnn(DataType dtype, const WeightSegment* segments, int64_t count, int64_t longest,
                      const void* flat, int64_t flat_base, void* cudnn, cudaStream_t stream) {
  weights_launch(dtype, segments, count, longest, flat, cudnn, flat_base, true, false, stream);
}

void weights_to_flat(DataType dtype, const WeightSegment* segments, int64_t count, int64_t longest,
                     const void* cudnn, void* flat, int64_t flat_base, bool accumulate,
                     cudaStream_t stream) {
  weights_launch(dtype, segments, count, longest, cudnn, flat, flat_base, false, accumulate,
                 stream);
}

void add_column_sums(DataType dtype, const void* src, int64_t rows, int64_t width, void* dst,
                     void* also, cudaStream_t stream) {
  if (width <= 0 || calls().skip_kernel("column_sums")) return;
  const dim3 block(kSumColumns, kSumRuns);
  const auto grid = static_cast<unsigned>((width + kSumColumns - 1) / kSumColumns);
  if (dtype == DataType::f32) {
    column_sums_kernel<float><<<grid, block, 0, stream>>>(static_cast<const float*>(src), rows,
                                                          width, static_cast<float*>(dst),
                                                          static_cast<float*>(also));
  } else if (dtype == DataType::f64) {
    column_sums_kernel<double><<<grid, block, 0, stream>>>(static_cast<const double*>(src), rows,
                                                           width, static_cast<double*>(dst),
                                                           static_cast<double*>(also));
  } else {
    throw Error(Status::internal, std::string("add_column_sums: dtype (= ") + to_string(dtype) +
                                      ") is not float32 or float64");
  }
  check_launch("column sums kernel");
}

void apply_dropout(DataType dtype, void* data, int64_t rows, int64_t width,
                   const int64_t* element_base, uint64_t seed, uint64_t counter, int64_t layer,
                   double p, cudaStream_t stream) {
  if (rows <= 0 || width <= 0 || calls().skip_kernel("dropout")) return;
  const double scale = p < 1.0 ? 1.0 / (1.0 - p) : 0.0;
  by_dtype(dtype, [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    dropout_kernel<T><<<blocks_for(rows * width), kThreads, 0, stream>>>(
        static_cast<T*>(data), rows, width, element_base, seed, counter, layer, p, scale);
  });
  check_launch("dropout kernel");
}

}  // namespace rnnx::cuda
