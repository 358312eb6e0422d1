/* The C API's entry points that take enums, called from C: a C caller may pass any int as
 * an enum, which C++ code cannot do without undefined behaviour (fuzz_c_api.cpp calls these). */
#include "c_calls.h"

rnnx_status_t fuzz_config_set_cell(rnnx_config_t c, int v) {
  return rnnx_config_set_cell(c, v);
}
rnnx_status_t fuzz_config_set_clip_nan_policy(rnnx_config_t c, int v) {
  return rnnx_config_set_clip_nan_policy(c, v);
}
rnnx_status_t fuzz_config_set_dtype(rnnx_config_t c, int v) {
  return rnnx_config_set_dtype(c, v);
}
rnnx_status_t fuzz_config_set_math_mode(rnnx_config_t c, int v) {
  return rnnx_config_set_math_mode(c, v);
}
rnnx_status_t fuzz_config_set_activations(rnnx_config_t c, const int* kinds, const double* alpha,
                                          const double* beta, int64_t count) {
  /* int and the enum have the same size and representation in C (static_assert in c_api). */
  return rnnx_config_set_activations(c, (const rnnx_activation_t*)kinds, alpha, beta, count);
}
rnnx_status_t fuzz_plan_create(rnnx_plan_t* plan, rnnx_config_t c,
                               const rnnx_sequence_desc_t* shape, int backend, int threads) {
  return rnnx_plan_create(plan, c, shape, backend, threads);
}
rnnx_status_t fuzz_network_create(rnnx_network_t* network, rnnx_config_t c, int backend,
                                  int threads) {
  rnnx_plan_options_t o = rnnx_plan_options_init();
  o.backend = backend;
  o.num_threads = threads;
  return rnnx_network_create(network, c, &o);
}
