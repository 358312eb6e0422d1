/* README.md, "Using it from C", is this file: an LSTM over a ragged batch through the C
 * ABI, every size queried from the plan, every status checked (a failed call prints the
 * last error message, which names the argument and the values, and stops). Returns 0 only
 * when the forward's outputs are finite and nonzero. */
#include <math.h>
#include <rnnx/rnnx.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Prints the error of a failed call; returns whether it failed. */
static int failed(rnnx_status_t status, const char* call) {
  if (status == RNNX_STATUS_SUCCESS) return 0;
  fprintf(stderr, "rnnx: %s: %s: %s\n", call, rnnx_status_string(status),
          rnnx_get_last_error_message());
  return 1;
}

/* Whether all n floats are finite and one at least is nonzero. */
static int finite_and_nonzero(const float* v, int64_t n) {
  int nonzero = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!isfinite(v[i])) return 0;
    nonzero = nonzero || v[i] != 0.0f;
  }
  return nonzero;
}

int main(void) {
  const int64_t T = 10, B = 4;
  const int64_t lengths[4] = {10, 3, 0, 7}; /* any order, 0 allowed */
  rnnx_config_t cfg = NULL;
  rnnx_plan_t plan = NULL;
  float *x = NULL, *w = NULL, *y = NULL, *hy = NULL, *cy = NULL;
  int64_t nx, ny, nh, nc, nw, off, rows, cols;
  int result = 1;

  if (failed(rnnx_config_create(&cfg), "rnnx_config_create")) return 1;
  if (failed(rnnx_config_set_cell(cfg, RNNX_CELL_LSTM), "set_cell") ||
      failed(rnnx_config_set_input_size(cfg, 128), "set_input_size") ||
      failed(rnnx_config_set_hidden_size(cfg, 256), "set_hidden_size"))
    goto done;
  rnnx_sequence_desc_t shape = rnnx_sequence_desc_padded(T, B, lengths, /*batch_first=*/0);
  if (failed(rnnx_plan_create(&plan, cfg, &shape, RNNX_BACKEND_CPU, 0), "rnnx_plan_create"))
    goto done; /* plan is NULL: nothing to run */

  /* Element counts (float32): x [T,B,I], y [T,B,H], hy [L*D,B,H], cy [L*D,B,H], weights. */
  if (failed(rnnx_plan_get_x_numel(plan, &nx), "x_numel") ||
      failed(rnnx_plan_get_y_numel(plan, &ny), "y_numel") ||
      failed(rnnx_plan_get_h_numel(plan, &nh), "h_numel") ||
      failed(rnnx_plan_get_c_numel(plan, &nc), "c_numel") ||
      failed(rnnx_plan_get_weights_numel(plan, &nw), "weights_numel"))
    goto done;
  x = calloc(nx, sizeof(float));
  w = calloc(nw, sizeof(float));
  y = calloc(ny, sizeof(float));
  hy = calloc(nh, sizeof(float));
  cy = calloc(nc, sizeof(float));
  if (!x || !w || !y || !hy || !cy) goto done;
  for (int64_t i = 0; i < nx; ++i) x[i] = sinf(0.01f * (float)i);
  for (int64_t i = 0; i < nw; ++i) w[i] = 0.05f * cosf(0.7f * (float)i);
  /* PyTorch's parameter names, into one flat buffer: copy a state_dict tensor there */
  if (failed(rnnx_plan_get_weight_param(plan, "weight_hh_l0", &off, &rows, &cols), "param"))
    goto done;
  printf("weight_hh_l0 is [%lld, %lld] at offset %lld\n", (long long)rows, (long long)cols,
         (long long)off);

  rnnx_forward_args_t f = rnnx_forward_args_init();
  f.x = x;
  f.weights = w;
  f.y = y;
  f.hy = hy;
  f.cy = cy;
  if (failed(rnnx_plan_forward(plan, &f), "rnnx_plan_forward")) goto done;
  if (finite_and_nonzero(y, ny) && finite_and_nonzero(hy, nh) && finite_and_nonzero(cy, nc)) {
    printf("ok: y, hy and cy finite and nonzero\n");
    result = 0;
  }

done:
  free(x);
  free(w);
  free(y);
  free(hy);
  free(cy);
  rnnx_plan_destroy(plan);
  rnnx_config_destroy(cfg);
  return result;
}
