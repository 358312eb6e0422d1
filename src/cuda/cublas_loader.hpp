// cuBLAS, loaded when the own kernels first need it rather than linked: libcublasLt (which
// libcublas needs) is about half a gigabyte, and loading it at start-up cost every program
// that links librnnx, GPU or not, most of a second and 200 MB of memory (measured with
// `rnnx info`). Only the plans that run rnnx's own CUDA kernels load it.
#pragma once

#include <cublas_v2.h>

namespace rnnx::cuda {

// The cuBLAS entry points the own kernels use.
struct Cublas {
  cublasStatus_t (*create)(cublasHandle_t*);
  cublasStatus_t (*destroy)(cublasHandle_t);
  cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t);
  cublasStatus_t (*sgemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                          const float*, const float*, int, const float*, int, const float*, float*,
                          int);
  cublasStatus_t (*dgemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                          const double*, const double*, int, const double*, int, const double*,
                          double*, int);
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                            const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                            int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                            cublasGemmAlgo_t);
  const char* (*status_name)(cublasStatus_t);
  const char* (*status_string)(cublasStatus_t);
};

// Loaded once (libcublas.so.<major> of the toolkit rnnx was built with, found like librnnx's
// other libraries); throws Error(unsupported) naming the library and the loader's reason
// when it cannot be loaded. The library calls' table (call_table.hpp) points at it.
const Cublas& load_cublas();
// The entry points in use: the call table's (the loaded library's, or a fake device's).
const Cublas& cublas();

// Throws Error naming `what` and cuBLAS's text: out_of_memory for allocation failures,
// unsupported for what cuBLAS does not support, internal for the rest.
void check(cublasStatus_t status, const char* what);

}  // namespace rnnx::cuda
