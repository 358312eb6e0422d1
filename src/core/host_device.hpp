// RNNX_HOST_DEVICE marks functions that both the host compiler and nvcc compile (element
// math shared by the CPU, the reference tests and the cuda backend's kernels).
#pragma once

#if defined(__CUDACC__)
#define RNNX_HOST_DEVICE __host__ __device__ inline
#else
#define RNNX_HOST_DEVICE inline
#endif

// RNNX_ALWAYS_INLINE marks host code that the cpu's kernels of each instruction set compile
// with their own flags (src/cpu/kernels/{scalar,avx2,avx512}.cpp): inlined at every call, it
// leaves no out-of-line copy, which would be one weak symbol for all of those translation
// units, the linker keeping any one of them (an AVX-512 copy run on an AVX2 machine).
#define RNNX_ALWAYS_INLINE __attribute__((always_inline)) inline
