// The libraries' call table and the installed one (call_table.hpp).
#include "cuda/call_table.hpp"

#include <atomic>

namespace rnnx::cuda {
namespace {

bool run_kernel(const char*) {
  return false;
}

// cudnnRNNSetClip_v8 is deprecated and still the only clip setter with a NaN option
// (cudnn_rnn.cpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
const CallTable kLibraries = {
    &::cudaGetDeviceCount,
    &::cudaGetDevice,
    &::cudaSetDevice,
    &::cudaGetDeviceProperties,
    &::cudaMalloc,
    &::cudaFree,
    &::cudaMallocHost,
    &::cudaFreeHost,
    &::cudaMemcpyAsync,
    &::cudaMemsetAsync,
    &::cudaStreamCreateWithFlags,
    &::cudaStreamDestroy,
    &::cudaStreamSynchronize,
    &::cudaEventCreate,
    &::cudaEventCreateWithFlags,
    &::cudaEventDestroy,
    &::cudaEventRecord,
    &::cudaEventSynchronize,
    &::cudaEventQuery,
    &::cudaStreamWaitEvent,
    &::cudaStreamGetId,
    &::cudaStreamIsCapturing,
    &::cudaEventElapsedTime,
    &::cudaGetLastError,
    &::cudaGetErrorName,
    &::cudaGetErrorString,
    &::cudaRuntimeGetVersion,
    &::cudnnGetVersion,
    &::cudnnCreate,
    &::cudnnDestroy,
    &::cudnnSetStream,
    &::cudnnGetErrorString,
    &::cudnnGetLastErrorString,
    &::cudnnCreateRNNDescriptor,
    &::cudnnDestroyRNNDescriptor,
    &::cudnnCreateRNNDataDescriptor,
    &::cudnnDestroyRNNDataDescriptor,
    &::cudnnCreateTensorDescriptor,
    &::cudnnDestroyTensorDescriptor,
    &::cudnnCreateDropoutDescriptor,
    &::cudnnDestroyDropoutDescriptor,
    &::cudnnSetDropoutDescriptor,
    &::cudnnSetRNNDescriptor_v8,
    &::cudnnRNNSetClip_v8,
    &::cudnnSetRNNDataDescriptor,
    &::cudnnSetTensorNdDescriptor,
    &::cudnnGetTensorNdDescriptor,
    &::cudnnGetRNNTempSpaceSizes,
    &::cudnnGetRNNWeightSpaceSize,
    &::cudnnGetRNNWeightParams,
    &::cudnnRNNForward,
    &::cudnnRNNBackwardData_v8,
    &::cudnnRNNBackwardWeights_v8,
    &load_cublas,
    &run_kernel,
};
#pragma GCC diagnostic pop

std::atomic<const CallTable*> g_installed{&kLibraries};

}  // namespace

const CallTable& calls() {
  return *g_installed.load(std::memory_order_acquire);
}

const CallTable& library_calls() {
  return kLibraries;
}

const CallTable* install_calls(const CallTable* table) {
  return g_installed.exchange(table != nullptr ? table : &kLibraries, std::memory_order_acq_rel);
}

}  // namespace rnnx::cuda
