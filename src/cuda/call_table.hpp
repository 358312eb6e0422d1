// The seam between the cuda backend and the GPU: every CUDA runtime, cuDNN and cuBLAS
// function the backend calls, and every kernel launch, goes through one table of pointers.
// The real table points at the libraries; a test installs another (tests/cuda/fake_device:
// host memory, recorded calls, no kernels run), so that CI, which has no GPU, can run the
// backend's host side and check the sequence of its calls: what a ragged training step
// allocates, creates and waits for, and that every status is checked.
#pragma once

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "cuda/cublas_loader.hpp"

namespace rnnx::cuda {

struct CallTable {
  // CUDA runtime.
  cudaError_t (*cudaGetDeviceCount)(int*);
  cudaError_t (*cudaGetDevice)(int*);
  cudaError_t (*cudaSetDevice)(int);
  cudaError_t (*cudaGetDeviceProperties)(cudaDeviceProp*, int);
  cudaError_t (*cudaMalloc)(void**, size_t);
  cudaError_t (*cudaFree)(void*);
  cudaError_t (*cudaMallocHost)(void**, size_t);
  cudaError_t (*cudaFreeHost)(void*);
  cudaError_t (*cudaMemcpyAsync)(void*, const void*, size_t, cudaMemcpyKind, cudaStream_t);
  cudaError_t (*cudaMemsetAsync)(void*, int, size_t, cudaStream_t);
  cudaError_t (*cudaStreamCreateWithFlags)(cudaStream_t*, unsigned int);
  cudaError_t (*cudaStreamDestroy)(cudaStream_t);
  cudaError_t (*cudaStreamSynchronize)(cudaStream_t);
  cudaError_t (*cudaEventCreate)(cudaEvent_t*);
  cudaError_t (*cudaEventCreateWithFlags)(cudaEvent_t*, unsigned int);
  cudaError_t (*cudaEventDestroy)(cudaEvent_t);
  cudaError_t (*cudaEventRecord)(cudaEvent_t, cudaStream_t);
  cudaError_t (*cudaEventSynchronize)(cudaEvent_t);
  cudaError_t (*cudaEventQuery)(cudaEvent_t);
  cudaError_t (*cudaStreamWaitEvent)(cudaStream_t, cudaEvent_t, unsigned int);
  cudaError_t (*cudaStreamGetId)(cudaStream_t, unsigned long long*);
  cudaError_t (*cudaStreamIsCapturing)(cudaStream_t, cudaStreamCaptureStatus*);
  cudaError_t (*cudaEventElapsedTime)(float*, cudaEvent_t, cudaEvent_t);
  cudaError_t (*cudaGetLastError)();
  const char* (*cudaGetErrorName)(cudaError_t);
  const char* (*cudaGetErrorString)(cudaError_t);
  cudaError_t (*cudaRuntimeGetVersion)(int*);
  // cuDNN.
  size_t (*cudnnGetVersion)();
  cudnnStatus_t (*cudnnCreate)(cudnnHandle_t*);
  cudnnStatus_t (*cudnnDestroy)(cudnnHandle_t);
  cudnnStatus_t (*cudnnSetStream)(cudnnHandle_t, cudaStream_t);
  const char* (*cudnnGetErrorString)(cudnnStatus_t);
  void (*cudnnGetLastErrorString)(char*, size_t);
  cudnnStatus_t (*cudnnCreateRNNDescriptor)(cudnnRNNDescriptor_t*);
  cudnnStatus_t (*cudnnDestroyRNNDescriptor)(cudnnRNNDescriptor_t);
  cudnnStatus_t (*cudnnCreateRNNDataDescriptor)(cudnnRNNDataDescriptor_t*);
  cudnnStatus_t (*cudnnDestroyRNNDataDescriptor)(cudnnRNNDataDescriptor_t);
  cudnnStatus_t (*cudnnCreateTensorDescriptor)(cudnnTensorDescriptor_t*);
  cudnnStatus_t (*cudnnDestroyTensorDescriptor)(cudnnTensorDescriptor_t);
  cudnnStatus_t (*cudnnCreateDropoutDescriptor)(cudnnDropoutDescriptor_t*);
  cudnnStatus_t (*cudnnDestroyDropoutDescriptor)(cudnnDropoutDescriptor_t);
  cudnnStatus_t (*cudnnSetDropoutDescriptor)(cudnnDropoutDescriptor_t, cudnnHandle_t, float, void*,
                                             size_t, unsigned long long);
  cudnnStatus_t (*cudnnSetRNNDescriptor_v8)(cudnnRNNDescriptor_t, cudnnRNNAlgo_t, cudnnRNNMode_t,
                                            cudnnRNNBiasMode_t, cudnnDirectionMode_t,
                                            cudnnRNNInputMode_t, cudnnDataType_t, cudnnDataType_t,
                                            cudnnMathType_t, int32_t, int32_t, int32_t, int32_t,
                                            cudnnDropoutDescriptor_t, uint32_t);
  cudnnStatus_t (*cudnnRNNSetClip_v8)(cudnnRNNDescriptor_t, cudnnRNNClipMode_t,
                                      cudnnNanPropagation_t, double, double);
  cudnnStatus_t (*cudnnSetRNNDataDescriptor)(cudnnRNNDataDescriptor_t, cudnnDataType_t,
                                             cudnnRNNDataLayout_t, int, int, int, const int[],
                                             void*);
  cudnnStatus_t (*cudnnSetTensorNdDescriptor)(cudnnTensorDescriptor_t, cudnnDataType_t, int,
                                              const int[], const int[]);
  cudnnStatus_t (*cudnnGetTensorNdDescriptor)(const cudnnTensorDescriptor_t, int, cudnnDataType_t*,
                                              int*, int[], int[]);
  cudnnStatus_t (*cudnnGetRNNTempSpaceSizes)(cudnnHandle_t, cudnnRNNDescriptor_t,
                                             cudnnForwardMode_t, cudnnRNNDataDescriptor_t, size_t*,
                                             size_t*);
  cudnnStatus_t (*cudnnGetRNNWeightSpaceSize)(cudnnHandle_t, cudnnRNNDescriptor_t, size_t*);
  cudnnStatus_t (*cudnnGetRNNWeightParams)(cudnnHandle_t, cudnnRNNDescriptor_t, int32_t, size_t,
                                           const void*, int32_t, cudnnTensorDescriptor_t, void**,
                                           cudnnTensorDescriptor_t, void**);
  cudnnStatus_t (*cudnnRNNForward)(cudnnHandle_t, cudnnRNNDescriptor_t, cudnnForwardMode_t,
                                   const int32_t[], cudnnRNNDataDescriptor_t, const void*,
                                   cudnnRNNDataDescriptor_t, void*, cudnnTensorDescriptor_t,
                                   const void*, void*, cudnnTensorDescriptor_t, const void*, void*,
                                   size_t, const void*, size_t, void*, size_t, void*);
  cudnnStatus_t (*cudnnRNNBackwardData_v8)(cudnnHandle_t, cudnnRNNDescriptor_t, const int32_t[],
                                           cudnnRNNDataDescriptor_t, const void*, const void*,
                                           cudnnRNNDataDescriptor_t, void*, cudnnTensorDescriptor_t,
                                           const void*, const void*, void*, cudnnTensorDescriptor_t,
                                           const void*, const void*, void*, size_t, const void*,
                                           size_t, void*, size_t, void*);
  cudnnStatus_t (*cudnnRNNBackwardWeights_v8)(cudnnHandle_t, cudnnRNNDescriptor_t, cudnnWgradMode_t,
                                              const int32_t[], cudnnRNNDataDescriptor_t,
                                              const void*, cudnnTensorDescriptor_t, const void*,
                                              cudnnRNNDataDescriptor_t, const void*, size_t, void*,
                                              size_t, void*, size_t, void*);
  // cuBLAS (the own kernels' GEMMs): loaded when first needed (cublas_loader.hpp).
  const Cublas& (*cublas)();
  // Kernel launches: false runs the named kernel; true (a fake device) skips it, recorded.
  bool (*skip_kernel)(const char* name);
};

// The table in use: the libraries', unless a test installed another.
const CallTable& calls();
// The libraries' own table.
const CallTable& library_calls();
// Installs `table` (null: the libraries') for every later call of the backend; returns the
// previous one. Tests only, with no backend call running.
const CallTable* install_calls(const CallTable* table);

}  // namespace rnnx::cuda
