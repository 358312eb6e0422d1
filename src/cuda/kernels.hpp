// The cuda backend's own small kernels around cuDNN's calls, on raw device pointers of the
// plan's dtype: row gathers and scatters through the schedule's maps, fills, the weight
// conversion between the flat buffer and cuDNN's weight space, and rnnx's dropout masks
// (philox.hpp: the same bits as on the CPU). Each launches on `stream` and returns at once.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/rules/cudnn_layout.hpp"
#include "rnnx/config.hpp"

namespace rnnx::cuda {

// For r < rows: dst row (dst_map ? dst_map[r] : r) = src row (src_map ? src_map[r] : r), rows
// `width` elements wide; a null src writes zeros.
void copy_rows(DataType dtype, const void* src, const int64_t* src_map, void* dst,
               const int64_t* dst_map, int64_t rows, int64_t width, cudaStream_t stream);

// For r < rows: every element of dst row (dst_map ? dst_map[r] : r) = value (rounded to dtype).
void fill_rows(DataType dtype, void* dst, const int64_t* dst_map, int64_t rows, int64_t width,
               double value, cudaStream_t stream);

// dst[0 .. n) = value (rounded to dtype).
void fill(DataType dtype, void* dst, int64_t n, double value, cudaStream_t stream);

// dst[0 .. n) = values in [-scale, scale) that depend on (seed, index) only: synthetic data
// for the algorithm search.
void fill_pattern(DataType dtype, void* dst, int64_t n, uint64_t seed, double scale,
                  cudaStream_t stream);

// The segments (device array of `count` WeightSegment, the longest `longest` elements) copied
// from flat (+ flat_base) into cudnn, or back from cudnn into flat overwriting or adding.
void weights_to_cudnn(DataType dtype, const WeightSegment* segments, int64_t count, int64_t longest,
                      const void* flat, int64_t flat_base, void* cudnn, cudaStream_t stream);
void weights_to_flat(DataType dtype, const WeightSegment* segments, int64_t count, int64_t longest,
                     const void* cudnn, void* flat, int64_t flat_base, bool accumulate,
                     cudaStream_t stream);

// dst[j] += the sum of column j of src [rows, width] (dense) for j < width, each column added
// up in core/column_sums.hpp's order (runs of rows in parallel, combined in run order) as the
// cpu backend adds its bias gradients; also[j] (when not null) gets the same sums. float32
// and float64.
void add_column_sums(DataType dtype, const void* src, int64_t rows, int64_t width, void* dst,
                     void* also, cudaStream_t stream);

// Dropout on packed rows [rows, width] in place: element j of row r is kept (and scaled by
// 1 / (1 - p)) when rnnx's generator keeps element element_base[r] + j of (seed, counter,
// layer), as core::dropout_apply_step_rows decides on the host.
void apply_dropout(DataType dtype, void* data, int64_t rows, int64_t width,
                   const int64_t* element_base, uint64_t seed, uint64_t counter, int64_t layer,
                   double p, cudaStream_t stream);

}  // namespace rnnx::cuda
