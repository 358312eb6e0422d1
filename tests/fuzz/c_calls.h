/* C wrappers of the C API's enum-taking entry points, for fuzz_c_api.cpp (c_calls.c says why). */
#ifndef RNNX_FUZZ_C_CALLS_H
#define RNNX_FUZZ_C_CALLS_H

#include "rnnx/rnnx.h"

#ifdef __cplusplus
extern "C" {
#endif

rnnx_status_t fuzz_config_set_cell(rnnx_config_t c, int v);
rnnx_status_t fuzz_config_set_clip_nan_policy(rnnx_config_t c, int v);
rnnx_status_t fuzz_config_set_dtype(rnnx_config_t c, int v);
rnnx_status_t fuzz_config_set_math_mode(rnnx_config_t c, int v);
rnnx_status_t fuzz_config_set_activations(rnnx_config_t c, const int* kinds, const double* alpha,
                                          const double* beta, int64_t count);
rnnx_status_t fuzz_network_create(rnnx_network_t* network, rnnx_config_t c, int backend,
                                  int threads);
rnnx_status_t fuzz_plan_create(rnnx_plan_t* plan, rnnx_config_t c,
                               const rnnx_sequence_desc_t* shape, int backend, int threads);

#ifdef __cplusplus
}
#endif

#endif
