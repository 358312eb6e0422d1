// The cuda backends' row copier for the batch mover (core/batch_mover.hpp): kernels.hpp's
// copy_rows and fill_rows on one GPU, in one data type, on the call's stream.
#pragma once

#include <cuda_runtime.h>

#include "core/batch_mover.hpp"
#include "cuda/cuda_api.hpp"
#include "cuda/kernels.hpp"
#include "rnnx/config.hpp"

namespace rnnx::cuda {

class DeviceRows final : public core::RowCopier {
 public:
  DeviceRows(DataType dtype, int device) : dtype_(dtype), device_(device) {}
  void copy_rows(const void* src, const int64_t* src_map, void* dst, const int64_t* dst_map,
                 int64_t rows, int64_t width, void* stream) const override {
    if (rows <= 0 || width <= 0) return;
    DeviceScope scope(device_);
    cuda::copy_rows(dtype_, src, src_map, dst, dst_map, rows, width,
                    static_cast<cudaStream_t>(stream));
  }
  void fill_rows(void* dst, const int64_t* dst_map, int64_t rows, int64_t width, double value,
                 void* stream) const override {
    if (rows <= 0 || width <= 0) return;
    DeviceScope scope(device_);
    cuda::fill_rows(dtype_, dst, dst_map, rows, width, value, static_cast<cudaStream_t>(stream));
  }

 private:
  DataType dtype_;
  int device_;
};

}  // namespace rnnx::cuda
