// RNNX_HOST_DEVICE marks functions that both the host compiler and nvcc compile (element
// math shared by the CPU, the reference tests and the cuda backend's kernels).
#pragma once

#if defined(__CUDACC__)
#define RNNX_HOST_DEVICE __host__ __device__ inline
#else
#define RNNX_HOST_DEVICE inline
#endif
