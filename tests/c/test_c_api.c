/* The C API, from C: cross-checks the cpu backend against the reference backend through
 * rnnx.h alone (LSTM with projection, 2 layers, bidirectional, ragged batch-first; GRU
 * packed; RNN-ReLU float32), then every error path: each null argument, invalid config
 * values, bad shapes, buffers too small, unknown weight names, LSTM-only tensors for other
 * cells, versioned structs, destroy(NULL), the thread-local last-error message, and the
 * empty batch (B = 0) as a no-op.
 * Math mode: round trip, refusal of bad values (setter and environment variable), and a
 * cross-check with ALLOW_CONVERSION under the bf16 tolerance.
 * Prints one line per check and "N passed, N failed"; exits non-zero on any failure. */
#define _POSIX_C_SOURCE 200112L /* setenv, unsetenv */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rnnx/rnnx.h" /* first: the header must stand on its own */

static int g_passed = 0;
static int g_failed = 0;

static void report(int ok, const char* name, const char* detail) {
  if (ok) {
    ++g_passed;
    printf("ok   %s\n", name);
  } else {
    ++g_failed;
    printf("FAIL %s: %s\n", name, detail ? detail : "");
  }
}

/* The status must be `want`; on failure the message must contain `substr` (when given),
 * on success it must be empty. */
static void expect_status(rnnx_status_t got, rnnx_status_t want, const char* substr,
                          const char* name) {
  const char* msg = rnnx_get_last_error_message();
  char detail[1024], line[1024];
  int ok = got == want;
  if (ok && want == RNNX_STATUS_SUCCESS) ok = msg[0] == '\0';
  if (ok && want != RNNX_STATUS_SUCCESS) {
    ok = msg[0] != '\0' && (substr == NULL || strstr(msg, substr) != NULL);
  }
  snprintf(detail, sizeof detail, "got %s, message \"%s\"", rnnx_status_string(got), msg);
  if (want == RNNX_STATUS_SUCCESS) {
    snprintf(line, sizeof line, "%s", name);
  } else {
    snprintf(line, sizeof line, "%s -> %s \"%s\"", name, rnnx_status_string(want),
             substr ? substr : "");
  }
  report(ok, line, detail);
}

#define CHECK(call, want, substr) expect_status((call), (want), (substr), #call)
#define CHECK_OK(call) expect_status((call), RNNX_STATUS_SUCCESS, NULL, #call)
#define CHECK_NULL_ARG(call, substr) \
  expect_status((call), RNNX_STATUS_INVALID_ARGUMENT, (substr), #call)
#define CHECK_TRUE(cond, what) report((cond) != 0, (what), "false: " #cond)

/* ---- Data ---------------------------------------------------------------------------- */

/* splitmix64, uniform in [lo, hi). */
static double uniform(uint64_t* state, double lo, double hi) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return lo + (hi - lo) * (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

/* Tensors in the plan's dtype, read and written as double. */
static double get_el(const void* p, int64_t i, int f64) {
  return f64 ? ((const double*)p)[i] : (double)((const float*)p)[i];
}
static void set_el(void* p, int64_t i, int f64, double v) {
  if (f64) {
    ((double*)p)[i] = v;
  } else {
    ((float*)p)[i] = (float)v;
  }
}
static void* alloc_tensor(int64_t n, int f64) {
  return calloc((size_t)(n > 0 ? n : 1), f64 ? sizeof(double) : sizeof(float));
}
static void fill(void* p, int64_t n, int f64, uint64_t seed, double scale) {
  int64_t i;
  for (i = 0; i < n; ++i) set_el(p, i, f64, uniform(&seed, -scale, scale));
}

/* Whether row r of a padded x or y is padding (t >= lengths[b]). */
static int is_padding(const rnnx_sequence_desc_t* d, int64_t r) {
  int64_t t, b;
  if (d->layout == RNNX_LAYOUT_PACKED || d->lengths == NULL) return 0;
  if (d->layout == RNNX_LAYOUT_TIME_MAJOR) {
    t = r / d->batch;
    b = r % d->batch;
  } else {
    b = r / d->max_seq_len;
    t = r % d->max_seq_len;
  }
  return t >= d->lengths[b];
}

/* The tolerance formula of the C++ tests (tests/test_util.hpp): the longest chain of
 * roundings an element goes through, times the type's epsilon. A forward element sums
 * over the widest layer input, the state, the biases, the projection and a few ulps of
 * activation per step, over T + L steps; backward adds the gate rows per step and the
 * weight-gradient sums over all T*B positions. */
static double tolerance(rnnx_config_t c, int64_t T, int64_t B, int backward) {
  const double kActivationUlps = 8, kBiases = 2, kSafety = 2;
  rnnx_cell_t cell;
  rnnx_dtype_t dtype;
  int64_t I, H, P, L;
  int bidir;
  double width, steps, depth, gates, tol;
  rnnx_math_mode_t math;
  rnnx_config_get_cell(c, &cell);
  rnnx_config_get_dtype(c, &dtype);
  rnnx_config_get_input_size(c, &I);
  rnnx_config_get_hidden_size(c, &H);
  rnnx_config_get_proj_size(c, &P);
  rnnx_config_get_num_layers(c, &L);
  rnnx_config_get_bidirectional(c, &bidir);
  gates = cell == RNNX_CELL_LSTM ? 4 : cell == RNNX_CELL_GRU ? 3 : 1;
  width = (double)(P > 0 ? P : H);
  steps = (double)(T + L);
  depth = ((double)I > (bidir ? 2 : 1) * width ? (double)I : (bidir ? 2 : 1) * width) + width +
          kBiases + (P > 0 ? (double)H : 0.0) + kActivationUlps;
  depth *= steps;
  if (backward) depth += gates * (double)H * steps + (double)(T * B);
  tol = kSafety * depth * (dtype == RNNX_DTYPE_FLOAT32 ? FLT_EPSILON : DBL_EPSILON);
  /* Math mode ALLOW_CONVERSION (float32): every product carries a bf16 rounding, relative
   * 2^-8, adding up like a random walk over the terms (test_util.hpp derives it). */
  rnnx_config_get_math_mode(c, &math);
  if (dtype == RNNX_DTYPE_FLOAT32 && math == RNNX_MATH_MODE_ALLOW_CONVERSION) {
    tol += 6.0 * sqrt(depth / (double)H) / 256.0;
  }
  return tol;
}

/* |got - want| <= tol * (max(1, max|want|) + |want|), as the C++ tests compare. */
static void expect_near(const char* label, const char* what, const void* got, const void* want,
                        int64_t n, int f64, double tol) {
  double scale = 1.0, worst = 0.0;
  int64_t i, bad = -1;
  char name[256], detail[256];
  for (i = 0; i < n; ++i) {
    const double w = fabs(get_el(want, i, f64));
    if (w > scale) scale = w;
  }
  for (i = 0; i < n; ++i) {
    const double g = get_el(got, i, f64), w = get_el(want, i, f64);
    double err = fabs(g - w) / (scale + fabs(w));
    if (err != err) err = INFINITY; /* NaN where the reference has a number, or vice versa */
    if (err > tol && bad < 0) bad = i;
    if (err > worst) worst = err;
  }
  snprintf(name, sizeof name,
           "%s: %s (%" PRId64 " elements) matches the reference backend (worst %.2g, tol %.2g)",
           label, what, n, worst, tol);
  detail[0] = '\0';
  if (bad >= 0) {
    snprintf(detail, sizeof detail, "element %" PRId64 ": %.17g vs %.17g", bad,
             get_el(got, bad, f64), get_el(want, bad, f64));
  }
  report(bad < 0, name, detail);
}

/* ---- The cross-check -------------------------------------------------------------------- */

enum { kRef = 0, kCpu = 1 };

typedef struct Tensors {
  void *y, *hy, *cy, *dx, *dh0, *dc0, *dw;
} Tensors;

/* Weights through the name queries: every parameter by name, built from the PyTorch naming
 * scheme here, must exist with the shape the contract gives, tile the flat buffer without
 * gaps in PyTorch's order, and agree with the enumeration by index. */
static void fill_weights(const char* label, rnnx_plan_t plan, rnnx_config_t cfg, void* w, int f64) {
  static const char* const kinds[] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr"};
  rnnx_cell_t cell;
  int64_t I, H, P, L, numel, count, l, expect_offset = 0, index = 0;
  int bidir, bias, d, k, ok_names = 1, ok_shapes = 1;
  char name[64], check[256], detail[256] = "";
  rnnx_config_get_cell(cfg, &cell);
  rnnx_config_get_input_size(cfg, &I);
  rnnx_config_get_hidden_size(cfg, &H);
  rnnx_config_get_proj_size(cfg, &P);
  rnnx_config_get_num_layers(cfg, &L);
  rnnx_config_get_bidirectional(cfg, &bidir);
  rnnx_config_get_bias(cfg, &bias);
  rnnx_plan_get_weights_numel(plan, &numel);
  rnnx_plan_get_weight_param_count(plan, &count);
  {
    const int64_t G = cell == RNNX_CELL_LSTM ? 4 : cell == RNNX_CELL_GRU ? 3 : 1;
    const int64_t Pp = P > 0 ? P : H, D = bidir ? 2 : 1;
    for (l = 0; l < L; ++l) {
      for (d = 0; d < D; ++d) {
        for (k = 0; k < 5; ++k) {
          int64_t offset = -1, rows = -1, cols = -1, want_rows, want_cols, i;
          const char* by_index_name = NULL;
          int64_t o2 = -2, r2 = -2, c2 = -2;
          if ((k == 2 || k == 3) && !bias) continue;
          if (k == 4 && P == 0) continue;
          snprintf(name, sizeof name, "%s_l%" PRId64 "%s", kinds[k], l, d ? "_reverse" : "");
          want_rows = k == 4 ? P : G * H;
          want_cols = k == 0 ? (l == 0 ? I : D * Pp) : k == 1 ? Pp : k == 4 ? H : 1;
          if (rnnx_plan_get_weight_param(plan, name, &offset, &rows, &cols) !=
              RNNX_STATUS_SUCCESS) {
            ok_names = 0;
            snprintf(detail, sizeof detail, "%s: %s", name, rnnx_get_last_error_message());
            continue;
          }
          rnnx_plan_get_weight_param_by_index(plan, index, &by_index_name, &o2, &r2, &c2);
          if (offset != expect_offset || rows != want_rows || cols != want_cols ||
              by_index_name == NULL || strcmp(by_index_name, name) != 0 || o2 != offset ||
              r2 != rows || c2 != cols) {
            ok_shapes = 0;
            snprintf(detail, sizeof detail,
                     "%s: offset %" PRId64 " [%" PRId64 ", %" PRId64 "], want offset %" PRId64
                     " [%" PRId64 ", %" PRId64 "]; index %" PRId64 " is %s",
                     name, offset, rows, cols, expect_offset, want_rows, want_cols, index,
                     by_index_name ? by_index_name : "(none)");
          }
          /* PyTorch's init: uniform(-1/sqrt(H), 1/sqrt(H)), a stream per parameter. */
          for (i = 0; i < rows * cols && offset + i < numel; ++i) {
            uint64_t s = 1000003u * (uint64_t)(index + 1) + (uint64_t)i;
            set_el(w, offset + i, f64, uniform(&s, -1.0, 1.0) / sqrt((double)H));
          }
          expect_offset += rows * cols;
          ++index;
        }
      }
    }
  }
  snprintf(check, sizeof check, "%s: every PyTorch parameter name resolves", label);
  report(ok_names, check, detail);
  snprintf(check, sizeof check, "%s: parameters have PyTorch's shapes and order", label);
  report(ok_shapes, check, detail);
  snprintf(check, sizeof check,
           "%s: parameters tile the flat buffer (%" PRId64 " of %" PRId64 " elements, %" PRId64
           " of %" PRId64 " names)",
           label, expect_offset, numel, index, count);
  report(expect_offset == numel && index == count, check, "gap, overlap or extra parameter");
}

static void crosscheck(const char* label, rnnx_config_t cfg, const rnnx_sequence_desc_t* desc) {
  rnnx_plan_t plan[2] = {NULL, NULL};
  Tensors out[2];
  rnnx_cell_t cell;
  rnnx_dtype_t dtype;
  double padding_fill;
  int64_t x_n, y_n, h_n, c_n, w_n, T, B, rows, width, n;
  void *x, *h0, *c0 = NULL, *dy, *dhy, *dcy = NULL, *w;
  void* reserve[2] = {NULL, NULL};
  int f64, lstm, k;
  char name[256], detail[256];
  const char* impl = NULL;

  rnnx_config_get_cell(cfg, &cell);
  rnnx_config_get_dtype(cfg, &dtype);
  rnnx_config_get_padding_fill(cfg, &padding_fill);
  f64 = dtype == RNNX_DTYPE_FLOAT64;
  lstm = cell == RNNX_CELL_LSTM;

  for (k = 0; k < 2; ++k) {
    const rnnx_backend_t backend = k == kRef ? RNNX_BACKEND_REFERENCE : RNNX_BACKEND_CPU;
    snprintf(name, sizeof name, "%s: rnnx_plan_create on the %s backend", label,
             k == kRef ? "reference" : "cpu");
    expect_status(rnnx_plan_create(&plan[k], cfg, desc, backend, 0), RNNX_STATUS_SUCCESS, NULL,
                  name);
    if (plan[k] == NULL) {
      rnnx_plan_destroy(plan[0]);
      return;
    }
  }
  rnnx_plan_get_impl_name(plan[kRef], &impl);
  snprintf(name, sizeof name, "%s: reference impl_name is \"reference\"", label);
  report(strcmp(impl, "reference") == 0, name, impl);
  rnnx_plan_get_impl_name(plan[kCpu], &impl);
  snprintf(name, sizeof name, "%s: cpu impl_name \"%s\" starts with \"cpu\"", label, impl);
  report(strncmp(impl, "cpu", 3) == 0, name, impl);

  rnnx_plan_get_x_numel(plan[kRef], &x_n);
  rnnx_plan_get_y_numel(plan[kRef], &y_n);
  rnnx_plan_get_h_numel(plan[kRef], &h_n);
  rnnx_plan_get_c_numel(plan[kRef], &c_n);
  rnnx_plan_get_weights_numel(plan[kRef], &w_n);
  rnnx_plan_get_max_seq_len(plan[kRef], &T);
  rnnx_plan_get_batch(plan[kRef], &B);
  {
    int64_t x2, y2, h2, c2, w2;
    rnnx_plan_get_x_numel(plan[kCpu], &x2);
    rnnx_plan_get_y_numel(plan[kCpu], &y2);
    rnnx_plan_get_h_numel(plan[kCpu], &h2);
    rnnx_plan_get_c_numel(plan[kCpu], &c2);
    rnnx_plan_get_weights_numel(plan[kCpu], &w2);
    snprintf(name, sizeof name, "%s: both backends report the same element counts", label);
    report(x2 == x_n && y2 == y_n && h2 == h_n && c2 == c_n && w2 == w_n, name, "differ");
    snprintf(name, sizeof name, "%s: c_numel is %s", label, lstm ? "positive (LSTM)" : "0");
    report(lstm ? c_n > 0 : c_n == 0, name, "wrong c_numel");
  }
  rows = desc->layout == RNNX_LAYOUT_PACKED ? 0 : T * B;
  if (desc->layout == RNNX_LAYOUT_PACKED) rnnx_plan_get_tokens(plan[kRef], &rows);
  width = y_n / rows;

  w = alloc_tensor(w_n, f64);
  fill_weights(label, plan[kRef], cfg, w, f64);

  /* Inputs; padding rows of x and dy hold NaN, which the contract says is never read. */
  x = alloc_tensor(x_n, f64);
  dy = alloc_tensor(y_n, f64);
  h0 = alloc_tensor(h_n, f64);
  dhy = alloc_tensor(h_n, f64);
  fill(x, x_n, f64, 11, 1.0);
  fill(dy, y_n, f64, 12, 1.0);
  fill(h0, h_n, f64, 13, 0.5);
  fill(dhy, h_n, f64, 14, 1.0);
  for (n = 0; n < rows; ++n) {
    if (is_padding(desc, n)) {
      int64_t j;
      for (j = 0; j < x_n / rows; ++j) set_el(x, n * (x_n / rows) + j, f64, NAN);
      for (j = 0; j < width; ++j) set_el(dy, n * width + j, f64, NAN);
    }
  }
  if (lstm) {
    c0 = alloc_tensor(c_n, f64);
    dcy = alloc_tensor(c_n, f64);
    fill(c0, c_n, f64, 15, 0.5);
    fill(dcy, c_n, f64, 16, 1.0);
  }

  for (k = 0; k < 2; ++k) {
    rnnx_forward_args_t fa = rnnx_forward_args_init();
    rnnx_backward_args_t ba = rnnx_backward_args_init();
    size_t fws_size = 0, bws_size = 0, reserve_size = 0;
    void *fws, *bws;
    const char* backend = k == kRef ? "reference" : "cpu";
    rnnx_plan_get_workspace_size(plan[k], RNNX_PHASE_FORWARD_TRAINING, &fws_size);
    rnnx_plan_get_workspace_size(plan[k], RNNX_PHASE_BACKWARD, &bws_size);
    rnnx_plan_get_reserve_size(plan[k], &reserve_size);
    fws = malloc(fws_size + 1);
    bws = malloc(bws_size + 1);
    reserve[k] = malloc(reserve_size);
    out[k].y = alloc_tensor(y_n, f64);
    out[k].hy = alloc_tensor(h_n, f64);
    out[k].cy = lstm ? alloc_tensor(c_n, f64) : NULL;
    out[k].dx = alloc_tensor(x_n, f64);
    out[k].dh0 = alloc_tensor(h_n, f64);
    out[k].dc0 = lstm ? alloc_tensor(c_n, f64) : NULL;
    out[k].dw = alloc_tensor(w_n, f64);
    fill(out[k].dx, x_n, f64, 99, 100.0); /* garbage that backward must overwrite */

    fa.x = x;
    fa.h0 = h0;
    fa.c0 = c0;
    fa.weights = w;
    fa.y = out[k].y;
    fa.hy = out[k].hy;
    fa.cy = out[k].cy;
    fa.training = 1;
    fa.dropout_counter = 7;
    fa.workspace = fws_size ? fws : NULL;
    fa.workspace_size = fws_size;
    fa.reserve = reserve[k];
    fa.reserve_size = reserve_size;
    snprintf(name, sizeof name,
             "%s: training forward on %s with caller workspace (%zu B) and "
             "reserve (%zu B)",
             label, backend, fws_size, reserve_size);
    expect_status(rnnx_plan_forward(plan[k], &fa), RNNX_STATUS_SUCCESS, NULL, name);

    ba.x = x;
    ba.h0 = h0;
    ba.c0 = c0;
    ba.weights = w;
    ba.dy = dy;
    ba.dhy = dhy;
    ba.dcy = dcy;
    ba.dx = out[k].dx;
    ba.dh0 = out[k].dh0;
    ba.dc0 = out[k].dc0;
    ba.dweights = out[k].dw;
    ba.workspace = bws_size ? bws : NULL;
    ba.workspace_size = bws_size;
    ba.reserve = reserve[k];
    ba.reserve_size = reserve_size;
    snprintf(name, sizeof name, "%s: backward on %s with caller workspace (%zu B)", label, backend,
             bws_size);
    expect_status(rnnx_plan_backward(plan[k], &ba), RNNX_STATUS_SUCCESS, NULL, name);

    if (k == kCpu) {
      /* Accumulate: a second backward adds the same gradient again. */
      void* dw2 = alloc_tensor(w_n, f64);
      memcpy(dw2, out[k].dw, (size_t)w_n * (f64 ? 8 : 4));
      ba.dweights = dw2;
      ba.weight_grad_mode = RNNX_GRAD_MODE_ACCUMULATE;
      snprintf(name, sizeof name, "%s: backward on cpu with RNNX_GRAD_MODE_ACCUMULATE", label);
      expect_status(rnnx_plan_backward(plan[k], &ba), RNNX_STATUS_SUCCESS, NULL, name);
      for (n = 0; n < w_n; ++n) set_el(dw2, n, f64, 0.5 * get_el(dw2, n, f64));
      expect_near(label, "dweights accumulated twice, halved", dw2, out[kRef].dw, w_n, f64,
                  tolerance(cfg, T, B, 1));
      free(dw2);
    }
    free(fws);
    free(bws);
  }

  expect_near(label, "y", out[kCpu].y, out[kRef].y, y_n, f64, tolerance(cfg, T, B, 0));
  expect_near(label, "hy", out[kCpu].hy, out[kRef].hy, h_n, f64, tolerance(cfg, T, B, 0));
  if (lstm) expect_near(label, "cy", out[kCpu].cy, out[kRef].cy, c_n, f64, tolerance(cfg, T, B, 0));
  expect_near(label, "dx", out[kCpu].dx, out[kRef].dx, x_n, f64, tolerance(cfg, T, B, 1));
  expect_near(label, "dh0", out[kCpu].dh0, out[kRef].dh0, h_n, f64, tolerance(cfg, T, B, 1));
  if (lstm) {
    expect_near(label, "dc0", out[kCpu].dc0, out[kRef].dc0, c_n, f64, tolerance(cfg, T, B, 1));
  }
  expect_near(label, "dweights", out[kCpu].dw, out[kRef].dw, w_n, f64, tolerance(cfg, T, B, 1));

  /* The padding contract, on both backends: y holds padding_fill, dx holds 0. */
  for (k = 0; k < 2; ++k) {
    int64_t pad_rows = 0, bad = 0, j;
    for (n = 0; n < rows; ++n) {
      if (!is_padding(desc, n)) continue;
      ++pad_rows;
      for (j = 0; j < width; ++j) bad += get_el(out[k].y, n * width + j, f64) != padding_fill;
      for (j = 0; j < x_n / rows; ++j) bad += get_el(out[k].dx, n * (x_n / rows) + j, f64) != 0.0;
    }
    if (pad_rows == 0) continue;
    snprintf(name, sizeof name,
             "%s: %s writes padding_fill to y and 0 to dx at %" PRId64 " padding rows", label,
             k == kRef ? "reference" : "cpu", pad_rows);
    snprintf(detail, sizeof detail, "%" PRId64 " wrong elements", bad);
    report(bad == 0, name, detail);
  }

  /* The clip setters reach the kernels: y (the last layer's r_t) and cy stay within the
   * bounds, and some elements sit exactly on one (the data are scaled so that they do). */
  {
    int enabled[2];
    double lo[2], hi[2];
    const void* t[2];
    int64_t t_n[2], kk;
    rnnx_config_get_proj_clip(cfg, &enabled[0], &lo[0], &hi[0]);
    rnnx_config_get_cell_clip(cfg, &enabled[1], &lo[1], &hi[1]);
    t[0] = out[kCpu].y;
    t_n[0] = y_n;
    t[1] = out[kCpu].cy;
    t_n[1] = c_n;
    for (kk = 0; kk < 2; ++kk) {
      int64_t outside = 0, on_bound = 0;
      if (!enabled[kk]) continue;
      for (n = 0; n < t_n[kk]; ++n) {
        const double v = get_el(t[kk], n, f64);
        if (kk == 0 && is_padding(desc, n / width)) continue;
        outside += v < lo[kk] || v > hi[kk];
        on_bound += v == lo[kk] || v == hi[kk];
      }
      snprintf(name, sizeof name, "%s: %s within %s [%g, %g], %" PRId64 " elements on a bound",
               label, kk == 0 ? "y" : "cy", kk == 0 ? "proj_clip" : "cell_clip", lo[kk], hi[kk],
               on_bound);
      snprintf(detail, sizeof detail, "%" PRId64 " outside", outside);
      report(outside == 0 && on_bound > 0, name, detail);
    }
  }

  /* A sequence of length 0 leaves its state as it was: hy = h0, cy = c0. Both are
   * [L*D, B, width], so element (r, b, j) sits at (r*B + b)*width + j. */
  if (desc->layout != RNNX_LAYOUT_PACKED && desc->lengths != NULL) {
    int64_t L, b, r, j, bad = 0, empty = 0;
    int bidir;
    rnnx_config_get_num_layers(cfg, &L);
    rnnx_config_get_bidirectional(cfg, &bidir);
    for (b = 0; b < B; ++b) {
      if (desc->lengths[b] != 0) continue;
      ++empty;
      for (k = 0; k < 2; ++k) {
        const int64_t LD = L * (bidir ? 2 : 1), hw = h_n / (LD * B), cw = c_n / (LD * B);
        for (r = 0; r < LD; ++r) {
          for (j = 0; j < hw; ++j) {
            const int64_t e = (r * B + b) * hw + j;
            bad += get_el(out[k].hy, e, f64) != get_el(h0, e, f64);
          }
          for (j = 0; lstm && j < cw; ++j) {
            const int64_t e = (r * B + b) * cw + j;
            bad += get_el(out[k].cy, e, f64) != get_el(c0, e, f64);
          }
        }
      }
    }
    if (empty > 0) {
      snprintf(name, sizeof name, "%s: %" PRId64 " sequence(s) of length 0 give hy = h0%s", label,
               empty, lstm ? ", cy = c0" : "");
      snprintf(detail, sizeof detail, "%" PRId64 " elements differ", bad);
      report(bad == 0, name, detail);
    }
  }

  /* Inference forward (no dropout, no reserve) with its own workspace size. */
  {
    void* y_inf[2];
    for (k = 0; k < 2; ++k) {
      rnnx_forward_args_t fa = rnnx_forward_args_init();
      size_t ws_size = 0;
      void* ws;
      rnnx_plan_get_workspace_size(plan[k], RNNX_PHASE_FORWARD_INFERENCE, &ws_size);
      ws = malloc(ws_size + 1);
      y_inf[k] = alloc_tensor(y_n, f64);
      fa.x = x;
      fa.h0 = h0;
      fa.c0 = c0;
      fa.weights = w;
      fa.y = y_inf[k];
      fa.workspace = ws_size ? ws : NULL;
      fa.workspace_size = ws_size;
      snprintf(name, sizeof name, "%s: inference forward on %s (workspace %zu B)", label,
               k == kRef ? "reference" : "cpu", ws_size);
      expect_status(rnnx_plan_forward(plan[k], &fa), RNNX_STATUS_SUCCESS, NULL, name);
      free(ws);
    }
    expect_near(label, "inference y", y_inf[kCpu], y_inf[kRef], y_n, f64, tolerance(cfg, T, B, 0));
    free(y_inf[0]);
    free(y_inf[1]);
  }

  for (k = 0; k < 2; ++k) {
    free(out[k].y);
    free(out[k].hy);
    free(out[k].cy);
    free(out[k].dx);
    free(out[k].dh0);
    free(out[k].dc0);
    free(out[k].dw);
    free(reserve[k]);
    CHECK_OK(rnnx_plan_destroy(plan[k]));
  }
  free(x);
  free(h0);
  free(c0);
  free(dy);
  free(dhy);
  free(dcy);
  free(w);
}

static rnnx_config_t lstmp_config(rnnx_dtype_t dtype) {
  rnnx_config_t c = NULL;
  rnnx_config_create(&c);
  rnnx_config_set_cell(c, RNNX_CELL_LSTM);
  rnnx_config_set_input_size(c, 5);
  rnnx_config_set_hidden_size(c, 7);
  rnnx_config_set_proj_size(c, 3);
  rnnx_config_set_num_layers(c, 2);
  rnnx_config_set_bidirectional(c, 1);
  rnnx_config_set_dtype(c, dtype);
  return c;
}

static void test_crosschecks(void) {
  static const int64_t lengths[4] = {4, 0, 6, 2};
  static const int64_t batch_sizes[4] = {3, 3, 2, 1};
  static const int64_t sorted_indices[3] = {2, 0, 1};
  rnnx_config_t c = lstmp_config(RNNX_DTYPE_FLOAT64);
  rnnx_sequence_desc_t d = rnnx_sequence_desc_padded(6, 4, lengths, 1);
  /* Clipping, dropout and padding_fill all go through the C setters. */
  CHECK_OK(rnnx_config_set_cell_clip(c, 1, -0.5, 0.6));
  CHECK_OK(rnnx_config_set_proj_clip(c, 1, -0.1, 0.12));
  CHECK_OK(rnnx_config_set_clip_nan_policy(c, RNNX_NAN_POLICY_REPLACE));
  CHECK_OK(rnnx_config_set_dropout(c, 0.25));
  CHECK_OK(rnnx_config_set_seed(c, 1234));
  CHECK_OK(rnnx_config_set_padding_fill(c, -2.5));
  crosscheck("lstm_l2_bidir_p3_f64_batch-first_len-mixed", c, &d);
  {
    /* The problem name is the C++ API's; the plan outlives its config. */
    rnnx_plan_t p = NULL;
    const char* problem = NULL;
    CHECK_OK(rnnx_plan_create(&p, c, &d, RNNX_BACKEND_CPU, 1));
    CHECK_OK(rnnx_config_destroy(c));
    CHECK_OK(rnnx_plan_get_problem_name(p, &problem));
    report(problem != NULL && strstr(problem, "lstm_l2_bidir_t6_b4_i5_h7_p3") == problem,
           "problem_name starts with lstm_l2_bidir_t6_b4_i5_h7_p3", problem);
    {
      int64_t tokens = 0;
      CHECK_OK(rnnx_plan_get_tokens(p, &tokens));
      report(tokens == 12, "tokens == sum of lengths (12)", "wrong token count");
    }
    CHECK_OK(rnnx_plan_destroy(p));
  }

  c = NULL;
  rnnx_config_create(&c);
  rnnx_config_set_cell(c, RNNX_CELL_GRU);
  rnnx_config_set_gru_linear_before_reset(c, 0);
  rnnx_config_set_bias(c, 0);
  rnnx_config_set_input_size(c, 4);
  rnnx_config_set_hidden_size(c, 5);
  rnnx_config_set_dtype(c, RNNX_DTYPE_FLOAT64);
  d = rnnx_sequence_desc_packed(batch_sizes, 4, sorted_indices);
  crosscheck("gru-orig_l1_uni_nobias_f64_packed", c, &d);
  rnnx_config_destroy(c);

  c = NULL;
  rnnx_config_create(&c);
  rnnx_config_set_cell(c, RNNX_CELL_RNN_RELU);
  rnnx_config_set_input_size(c, 3);
  rnnx_config_set_hidden_size(c, 4);
  rnnx_config_set_bidirectional(c, 1);
  rnnx_config_set_dtype(c, RNNX_DTYPE_FLOAT32);
  d = rnnx_sequence_desc_padded(3, 2, NULL, 0);
  crosscheck("rnn_relu_l1_bidir_f32_time-major_len-full", c, &d);
  rnnx_config_destroy(c);
}

/* ---- Math mode ------------------------------------------------------------------------ */

static void test_math_mode(void) {
  static const int64_t lengths[3] = {5, 2, 4};
  const char* var = "RNNX_TENSOR_OP_MATH_ALLOW_CONVERSION";
  const rnnx_sequence_desc_t d = rnnx_sequence_desc_padded(5, 3, lengths, 0);
  rnnx_config_t c = NULL;
  rnnx_plan_t plan = NULL;
  rnnx_math_mode_t math = RNNX_MATH_MODE_FP32;
  const char* saved = getenv(var);
  char* old = saved ? strcpy((char*)malloc(strlen(saved) + 1), saved) : NULL;

  unsetenv(var);
  rnnx_config_create(&c);
  CHECK_OK(rnnx_config_get_math_mode(c, &math));
  CHECK_TRUE(math == RNNX_MATH_MODE_FROM_ENVIRONMENT, "math mode default FROM_ENVIRONMENT");
  CHECK_OK(rnnx_config_set_math_mode(c, RNNX_MATH_MODE_ALLOW_CONVERSION));
  CHECK_OK(rnnx_config_get_math_mode(c, &math));
  CHECK_TRUE(math == RNNX_MATH_MODE_ALLOW_CONVERSION, "math mode round trip");
  CHECK(rnnx_config_set_math_mode(c, (rnnx_math_mode_t)9), RNNX_STATUS_INVALID_ARGUMENT,
        "math (= 9)");
  rnnx_config_get_math_mode(c, &math);
  CHECK_TRUE(math == RNNX_MATH_MODE_ALLOW_CONVERSION, "refused set_math_mode changes nothing");
  CHECK_NULL_ARG(rnnx_config_set_math_mode(NULL, RNNX_MATH_MODE_FP32), "config is null");
  CHECK_NULL_ARG(rnnx_config_get_math_mode(c, NULL), "math is null");

  /* ALLOW_CONVERSION against the reference (bf16 GEMMs where the CPU has them). */
  rnnx_config_set_cell(c, RNNX_CELL_LSTM);
  rnnx_config_set_input_size(c, 19);
  rnnx_config_set_hidden_size(c, 21);
  rnnx_config_set_num_layers(c, 2);
  rnnx_config_set_bidirectional(c, 1);
  crosscheck("lstm_l2_bidir_f32_allow-conversion", c, &d);

  /* INT8: a round trip, and a demand refused where it cannot run as asked: a training plan
   * (the default purpose) by name; an inference plan runs or names the CPU's lack. */
  {
    rnnx_plan_options_t o = rnnx_plan_options_init();
    rnnx_status_t st;
    CHECK_OK(rnnx_config_set_math_mode(c, RNNX_MATH_MODE_INT8));
    CHECK_OK(rnnx_config_get_math_mode(c, &math));
    CHECK_TRUE(math == RNNX_MATH_MODE_INT8, "math mode int8 round trip");
    CHECK(rnnx_plan_create(&plan, c, &d, RNNX_BACKEND_CPU, 0), RNNX_STATUS_INVALID_ARGUMENT,
          "math (= int8) runs inference only");
    CHECK_TRUE(plan == NULL, "refused int8 plan is NULL");
    o.purpose = RNNX_PLAN_PURPOSE_INFERENCE;
    o.cpu_choices = "time_loop=auto input_projection=auto gemm=auto";
    st = rnnx_plan_create_with_options(&plan, c, &d, &o);
    CHECK_TRUE(st == RNNX_STATUS_SUCCESS || st == RNNX_STATUS_UNSUPPORTED,
               "an int8 inference plan runs, or is refused for the CPU");
    if (st == RNNX_STATUS_UNSUPPORTED) {
      CHECK_TRUE(strstr(rnnx_get_last_error_message(), "needs AVX512-VNNI") != NULL,
                 "the refusal names VNNI");
    }
    rnnx_plan_destroy(plan);
    plan = NULL;
  }

  /* FROM_ENVIRONMENT with a value other than 0 or 1: plan creation refuses it. */
  CHECK_OK(rnnx_config_set_math_mode(c, RNNX_MATH_MODE_FROM_ENVIRONMENT));
  setenv(var, "on", 1);
  CHECK(rnnx_plan_create(&plan, c, &d, RNNX_BACKEND_CPU, 0), RNNX_STATUS_INVALID_ARGUMENT,
        "RNNX_TENSOR_OP_MATH_ALLOW_CONVERSION (= \"on\")");
  CHECK_TRUE(plan == NULL, "refused plan is NULL");
  setenv(var, "1", 1);
  CHECK_OK(rnnx_plan_create(&plan, c, &d, RNNX_BACKEND_CPU, 0));
  rnnx_plan_destroy(plan);
  if (old) {
    setenv(var, old, 1);
    free(old);
  } else {
    unsetenv(var);
  }
  rnnx_config_destroy(c);
}

/* ---- Plan options: purpose, and the refusals of a bad options struct ------------------- */

static void test_plan_options(void) {
  static const int64_t lengths[2] = {3, 1};
  rnnx_config_t c = lstmp_config(RNNX_DTYPE_FLOAT32);
  rnnx_sequence_desc_t d = rnnx_sequence_desc_padded(3, 2, lengths, 0);
  rnnx_plan_options_t o = rnnx_plan_options_init();
  rnnx_plan_t p = NULL;
  int64_t x_n, y_n, w_n;
  size_t reserve_size;
  float *x, *y, *w;
  char* reserve;
  rnnx_forward_args_t fa = rnnx_forward_args_init();
  rnnx_backward_args_t ba = rnnx_backward_args_init();

  /* The defaults are rnnx_plan_create's: a training plan that runs a training step. */
  CHECK_OK(rnnx_plan_create_with_options(&p, c, &d, &o));
  rnnx_plan_destroy(p);
  o.purpose = RNNX_PLAN_PURPOSE_INFERENCE;
  o.num_threads = 1;
  CHECK_OK(rnnx_plan_create_with_options(&p, c, &d, &o));
  if (p == NULL) {
    rnnx_config_destroy(c);
    return;
  }
  rnnx_plan_get_x_numel(p, &x_n);
  rnnx_plan_get_y_numel(p, &y_n);
  rnnx_plan_get_weights_numel(p, &w_n);
  rnnx_plan_get_reserve_size(p, &reserve_size);
  x = (float*)calloc((size_t)x_n, sizeof(float));
  y = (float*)malloc((size_t)y_n * sizeof(float));
  w = (float*)calloc((size_t)w_n, sizeof(float));
  reserve = (char*)malloc(reserve_size);
  fa.x = x;
  fa.weights = w;
  fa.y = y;
  CHECK_OK(rnnx_plan_forward(p, &fa));
  fa.training = 1;
  fa.reserve = reserve;
  fa.reserve_size = reserve_size;
  CHECK(rnnx_plan_forward(p, &fa), RNNX_STATUS_INVALID_ARGUMENT, "built for inference");
  ba.x = x;
  ba.weights = w;
  ba.reserve = reserve;
  ba.reserve_size = reserve_size;
  CHECK(rnnx_plan_backward(p, &ba), RNNX_STATUS_INVALID_ARGUMENT, "built for inference");
  rnnx_plan_destroy(p);
  free(x);
  free(y);
  free(w);
  free(reserve);

  /* Each argument and field refused by name. */
  o = rnnx_plan_options_init();
  CHECK_NULL_ARG(rnnx_plan_create_with_options(&p, c, &d, NULL),
                 "rnnx_plan_create_with_options: options is null");
  CHECK_TRUE(p == NULL, "refused plan is NULL");
  o.purpose = (rnnx_plan_purpose_t)7;
  CHECK(rnnx_plan_create_with_options(&p, c, &d, &o), RNNX_STATUS_INVALID_ARGUMENT,
        "options->purpose (= 7)");
  o = rnnx_plan_options_init();
  o.backend = (rnnx_backend_t)9;
  CHECK(rnnx_plan_create_with_options(&p, c, &d, &o), RNNX_STATUS_INVALID_ARGUMENT, "(= 9)");
  o = rnnx_plan_options_init();
  o.num_threads = -2;
  CHECK(rnnx_plan_create_with_options(&p, c, &d, &o), RNNX_STATUS_INVALID_ARGUMENT,
        "num_threads (= -2)");
  o = rnnx_plan_options_init();
  o.reserved0 = 1;
  CHECK(rnnx_plan_create_with_options(&p, c, &d, &o), RNNX_STATUS_UNSUPPORTED,
        "options->reserved0");
  o = rnnx_plan_options_init();
  o.struct_size = 8;
  CHECK(rnnx_plan_create_with_options(&p, c, &d, &o), RNNX_STATUS_INVALID_ARGUMENT,
        "options->struct_size (= 8)");

  /* Version 2: the cpu backend's choices, shown by the plan's impl name; a caller of
   * version 1 (struct_size without them) gets none. */
  o = rnnx_plan_options_init();
  o.cpu_choices = "isa=scalar gemm=plain time_loop=per-step";
  CHECK_OK(rnnx_plan_create_with_options(&p, c, &d, &o));
  if (p != NULL) {
    const char* impl = NULL;
    CHECK_OK(rnnx_plan_get_impl_name(p, &impl));
    CHECK_TRUE(impl != NULL && strncmp(impl, "cpu:scalar/plain", 16) == 0,
               "the cpu choices decide what runs");
    rnnx_plan_destroy(p);
    p = NULL;
  }
  o.struct_size = offsetof(rnnx_plan_options_t, cpu_choices);
  CHECK_OK(rnnx_plan_create_with_options(&p, c, &d, &o));
  rnnx_plan_destroy(p);
  p = NULL;
  o = rnnx_plan_options_init();
  o.cpu_choices = "gemm=fast";
  CHECK(rnnx_plan_create_with_options(&p, c, &d, &o), RNNX_STATUS_INVALID_ARGUMENT,
        "cpu choice gemm (= \"fast\")");
  o.cpu_choices = "loop=team";
  CHECK(rnnx_plan_create_with_options(&p, c, &d, &o), RNNX_STATUS_INVALID_ARGUMENT,
        "\"loop\" is not a choice of the cpu backend");
  o.cpu_choices = "gemm=plain";
  o.backend = RNNX_BACKEND_REFERENCE;
  CHECK(rnnx_plan_create_with_options(&p, c, &d, &o), RNNX_STATUS_INVALID_ARGUMENT,
        "are for backend cpu, not reference");
  CHECK_TRUE(p == NULL, "refused plan is NULL");
  rnnx_config_destroy(c);
}

/* ---- Version, status, config round trip -------------------------------------------------- */

static void test_version_and_status(void) {
  int major = -1, minor = -1, patch = -1;
  CHECK_OK(rnnx_get_version(&major, &minor, &patch));
  report(major == RNNX_TEST_VERSION_MAJOR && minor == RNNX_TEST_VERSION_MINOR &&
             patch == RNNX_TEST_VERSION_PATCH,
         "rnnx_get_version matches the project version", "version differs");
  CHECK_NULL_ARG(rnnx_get_version(NULL, &minor, &patch), "rnnx_get_version: major is null");
  CHECK_NULL_ARG(rnnx_get_version(&major, NULL, &patch), "minor is null");
  CHECK_NULL_ARG(rnnx_get_version(&major, &minor, NULL), "patch is null");

  report(strcmp(rnnx_status_string(RNNX_STATUS_SUCCESS), "success") == 0, "status string success",
         "");
  report(strcmp(rnnx_status_string(RNNX_STATUS_INVALID_ARGUMENT), "invalid_argument") == 0,
         "status string invalid_argument", "");
  report(strcmp(rnnx_status_string(RNNX_STATUS_UNSUPPORTED), "unsupported") == 0,
         "status string unsupported", "");
  report(strcmp(rnnx_status_string(RNNX_STATUS_INTERNAL), "internal") == 0,
         "status string internal", "");
  report(strcmp(rnnx_status_string(RNNX_STATUS_OUT_OF_MEMORY), "out_of_memory") == 0,
         "status string out_of_memory", "");
  report(strcmp(rnnx_status_string((rnnx_status_t)99), "unknown") == 0,
         "status string of an unknown value is \"unknown\"", "");
}

static void test_config_round_trip(void) {
  rnnx_config_t c = NULL;
  rnnx_cell_t cell;
  rnnx_dtype_t dtype;
  rnnx_nan_policy_t policy;
  int64_t v;
  int b, enabled;
  double lo, hi, dv;
  uint64_t seed;
  CHECK_OK(rnnx_config_create(&c));
  if (c == NULL) return;
  /* The C++ defaults. */
  rnnx_config_get_cell(c, &cell);
  CHECK_TRUE(cell == RNNX_CELL_LSTM, "default cell");
  rnnx_config_get_num_layers(c, &v);
  CHECK_TRUE(v == 1, "default num_layers");
  rnnx_config_get_bias(c, &b);
  CHECK_TRUE(b == 1, "default bias");
  rnnx_config_get_gru_linear_before_reset(c, &b);
  CHECK_TRUE(b == 1, "default gru_linear_before_reset");
  rnnx_config_get_dtype(c, &dtype);
  CHECK_TRUE(dtype == RNNX_DTYPE_FLOAT32, "default dtype");
  CHECK(rnnx_config_validate(c), RNNX_STATUS_INVALID_ARGUMENT, "input_size (= 0)");

  /* Every field, set and read back. */
  CHECK_OK(rnnx_config_set_cell(c, RNNX_CELL_GRU));
  CHECK_OK(rnnx_config_get_cell(c, &cell));
  CHECK_TRUE(cell == RNNX_CELL_GRU, "cell round trip");
  CHECK_OK(rnnx_config_set_input_size(c, 17));
  CHECK_OK(rnnx_config_get_input_size(c, &v));
  CHECK_TRUE(v == 17, "input_size round trip");
  CHECK_OK(rnnx_config_set_hidden_size(c, 37));
  CHECK_OK(rnnx_config_get_hidden_size(c, &v));
  CHECK_TRUE(v == 37, "hidden_size round trip");
  CHECK_OK(rnnx_config_set_proj_size(c, 5));
  CHECK_OK(rnnx_config_get_proj_size(c, &v));
  CHECK_TRUE(v == 5, "proj_size round trip");
  CHECK_OK(rnnx_config_set_num_layers(c, 3));
  CHECK_OK(rnnx_config_get_num_layers(c, &v));
  CHECK_TRUE(v == 3, "num_layers round trip");
  CHECK_OK(rnnx_config_set_bidirectional(c, 42));
  CHECK_OK(rnnx_config_get_bidirectional(c, &b));
  CHECK_TRUE(b == 1, "bidirectional round trip (nonzero reads back as 1)");
  CHECK_OK(rnnx_config_set_bias(c, 0));
  CHECK_OK(rnnx_config_get_bias(c, &b));
  CHECK_TRUE(b == 0, "bias round trip");
  CHECK_OK(rnnx_config_set_gru_linear_before_reset(c, 0));
  CHECK_OK(rnnx_config_get_gru_linear_before_reset(c, &b));
  CHECK_TRUE(b == 0, "gru_linear_before_reset round trip");
  CHECK_OK(rnnx_config_set_cell_clip(c, 1, -2.5, 3.5));
  CHECK_OK(rnnx_config_get_cell_clip(c, &enabled, &lo, &hi));
  CHECK_TRUE(enabled == 1 && lo == -2.5 && hi == 3.5, "cell_clip round trip");
  CHECK_OK(rnnx_config_set_proj_clip(c, 1, -0.25, 0.75));
  CHECK_OK(rnnx_config_get_proj_clip(c, &enabled, &lo, &hi));
  CHECK_TRUE(enabled == 1 && lo == -0.25 && hi == 0.75, "proj_clip round trip");
  CHECK_OK(rnnx_config_set_clip_nan_policy(c, RNNX_NAN_POLICY_REPLACE));
  CHECK_OK(rnnx_config_get_clip_nan_policy(c, &policy));
  CHECK_TRUE(policy == RNNX_NAN_POLICY_REPLACE, "clip_nan_policy round trip");
  CHECK_OK(rnnx_config_set_dropout(c, 0.125));
  CHECK_OK(rnnx_config_get_dropout(c, &dv));
  CHECK_TRUE(dv == 0.125, "dropout round trip");
  CHECK_OK(rnnx_config_set_seed(c, UINT64_C(0xFEEDFACECAFEBEEF)));
  CHECK_OK(rnnx_config_get_seed(c, &seed));
  CHECK_TRUE(seed == UINT64_C(0xFEEDFACECAFEBEEF), "seed round trip (all 64 bits)");
  CHECK_OK(rnnx_config_set_dtype(c, RNNX_DTYPE_FLOAT64));
  CHECK_OK(rnnx_config_get_dtype(c, &dtype));
  CHECK_TRUE(dtype == RNNX_DTYPE_FLOAT64, "dtype round trip");
  CHECK_OK(rnnx_config_set_dtype(c, RNNX_DTYPE_FLOAT16));
  CHECK_OK(rnnx_config_get_dtype(c, &dtype));
  CHECK_TRUE(dtype == RNNX_DTYPE_FLOAT16, "float16 round trip");
  CHECK_OK(rnnx_config_set_dtype(c, RNNX_DTYPE_FLOAT64));
  CHECK_OK(rnnx_config_set_padding_fill(c, -7.25));
  CHECK_OK(rnnx_config_get_padding_fill(c, &dv));
  CHECK_TRUE(dv == -7.25, "padding_fill round trip");

  /* Any field by name, as text: the typed setters' values read back, and the other way. */
  {
    char text[1024];
    size_t n = 0;
    CHECK_OK(rnnx_config_get_field(c, "padding_fill", text, sizeof text, &n));
    CHECK_TRUE(strcmp(text, "-7.25") == 0 && n == 5, "padding_fill as text");
    CHECK_OK(rnnx_config_get_field(c, "cell_clip", text, sizeof text, NULL));
    CHECK_TRUE(strcmp(text, "-2.5:3.5") == 0, "cell_clip as text");
    CHECK_OK(rnnx_config_get_field(c, "seed", text, sizeof text, NULL));
    CHECK_TRUE(strcmp(text, "18369614221190020847") == 0, "seed as text (all 64 bits)");
    CHECK_OK(rnnx_config_set_field(c, "hidden_size", "41"));
    CHECK_OK(rnnx_config_get_hidden_size(c, &v));
    CHECK_TRUE(v == 41, "hidden_size set by name");
    CHECK_OK(rnnx_config_set_field(c, "input_forget", "true"));
    CHECK_OK(rnnx_config_get_input_forget(c, &b));
    CHECK_TRUE(b == 1, "input_forget set by name");
    CHECK_OK(rnnx_config_set_field(c, "activations", "Sigmoid(0,0),Tanh(0,0),Tanh(0,0)"));
    CHECK_OK(rnnx_config_get_field(c, "activations", text, sizeof text, NULL));
    CHECK_TRUE(strcmp(text, "Sigmoid(0,0),Tanh(0,0),Tanh(0,0)") == 0, "activations by name");
    /* The whole config; its length alone first. */
    CHECK_OK(rnnx_config_get_field(c, NULL, NULL, 0, &n));
    CHECK_OK(rnnx_config_get_field(c, NULL, text, sizeof text, NULL));
    CHECK_TRUE(
        strlen(text) == n && strncmp(text, "cell=gru input_size=17 hidden_size=41 ", 38) == 0,
        "the whole config as text");
    CHECK(rnnx_config_get_field(c, NULL, text, n, NULL), RNNX_STATUS_INVALID_ARGUMENT,
          "must be at least");
    CHECK(rnnx_config_set_field(c, "hiden_size", "4"), RNNX_STATUS_INVALID_ARGUMENT,
          "\"hiden_size\" is not a field of rnnx::Config");
    CHECK(rnnx_config_set_field(c, "hidden_size", "4.5"), RNNX_STATUS_INVALID_ARGUMENT,
          "hidden_size (= \"4.5\") must be a 64-bit integer");
    CHECK(rnnx_config_set_field(c, NULL, "4"), RNNX_STATUS_INVALID_ARGUMENT, "field is null");
    CHECK_OK(rnnx_config_get_hidden_size(c, &v));
    CHECK_TRUE(v == 41, "a refused set leaves the field as it was");
  }
  CHECK_OK(rnnx_config_destroy(c));
}

/* ---- Every null argument ------------------------------------------------------------------ */

static void test_null_arguments(void) {
  rnnx_config_t c = lstmp_config(RNNX_DTYPE_FLOAT32);
  rnnx_sequence_desc_t d = rnnx_sequence_desc_padded(3, 2, NULL, 0);
  rnnx_plan_t p = NULL;
  rnnx_cell_t cell;
  rnnx_dtype_t dtype;
  rnnx_nan_policy_t policy;
  int64_t v, offset, rows, cols;
  int b;
  double lo, hi, dv;
  uint64_t seed;
  size_t bytes;
  const char* s;

  CHECK_NULL_ARG(rnnx_config_create(NULL), "rnnx_config_create: config is null");
  CHECK_NULL_ARG(rnnx_config_validate(NULL), "rnnx_config_validate: config is null");

  CHECK_NULL_ARG(rnnx_config_set_cell(NULL, RNNX_CELL_GRU), "rnnx_config_set_cell: config is null");
  CHECK_NULL_ARG(rnnx_config_set_input_size(NULL, 1), "rnnx_config_set_input_size: config is null");
  CHECK_NULL_ARG(rnnx_config_set_hidden_size(NULL, 1), "config is null");
  CHECK_NULL_ARG(rnnx_config_set_proj_size(NULL, 1), "config is null");
  CHECK_NULL_ARG(rnnx_config_set_num_layers(NULL, 1), "config is null");
  CHECK_NULL_ARG(rnnx_config_set_bidirectional(NULL, 1), "config is null");
  CHECK_NULL_ARG(rnnx_config_set_bias(NULL, 1), "config is null");
  CHECK_NULL_ARG(rnnx_config_set_gru_linear_before_reset(NULL, 1), "config is null");
  CHECK_NULL_ARG(rnnx_config_set_cell_clip(NULL, 1, -1, 1), "config is null");
  CHECK_NULL_ARG(rnnx_config_set_proj_clip(NULL, 1, -1, 1), "config is null");
  CHECK_NULL_ARG(rnnx_config_set_clip_nan_policy(NULL, RNNX_NAN_POLICY_REPLACE), "config is null");
  CHECK_NULL_ARG(rnnx_config_set_dropout(NULL, 0.5), "config is null");
  CHECK_NULL_ARG(rnnx_config_set_seed(NULL, 1), "config is null");
  CHECK_NULL_ARG(rnnx_config_set_dtype(NULL, RNNX_DTYPE_FLOAT64), "config is null");
  CHECK_NULL_ARG(rnnx_config_set_padding_fill(NULL, 1.0), "config is null");

  CHECK_NULL_ARG(rnnx_config_get_cell(NULL, &cell), "rnnx_config_get_cell: config is null");
  CHECK_NULL_ARG(rnnx_config_get_cell(c, NULL), "rnnx_config_get_cell: cell is null");
  CHECK_NULL_ARG(rnnx_config_get_input_size(NULL, &v), "config is null");
  CHECK_NULL_ARG(rnnx_config_get_input_size(c, NULL), "input_size is null");
  CHECK_NULL_ARG(rnnx_config_get_hidden_size(NULL, &v), "config is null");
  CHECK_NULL_ARG(rnnx_config_get_hidden_size(c, NULL), "hidden_size is null");
  CHECK_NULL_ARG(rnnx_config_get_proj_size(NULL, &v), "config is null");
  CHECK_NULL_ARG(rnnx_config_get_proj_size(c, NULL), "proj_size is null");
  CHECK_NULL_ARG(rnnx_config_get_num_layers(NULL, &v), "config is null");
  CHECK_NULL_ARG(rnnx_config_get_num_layers(c, NULL), "num_layers is null");
  CHECK_NULL_ARG(rnnx_config_get_bidirectional(NULL, &b), "config is null");
  CHECK_NULL_ARG(rnnx_config_get_bidirectional(c, NULL), "bidirectional is null");
  CHECK_NULL_ARG(rnnx_config_get_bias(NULL, &b), "config is null");
  CHECK_NULL_ARG(rnnx_config_get_bias(c, NULL), "bias is null");
  CHECK_NULL_ARG(rnnx_config_get_gru_linear_before_reset(NULL, &b), "config is null");
  CHECK_NULL_ARG(rnnx_config_get_gru_linear_before_reset(c, NULL), "linear_before_reset is null");
  CHECK_NULL_ARG(rnnx_config_get_cell_clip(NULL, &b, &lo, &hi), "config is null");
  CHECK_NULL_ARG(rnnx_config_get_cell_clip(c, NULL, &lo, &hi), "enabled is null");
  CHECK_NULL_ARG(rnnx_config_get_cell_clip(c, &b, NULL, &hi), "lo is null");
  CHECK_NULL_ARG(rnnx_config_get_cell_clip(c, &b, &lo, NULL), "hi is null");
  CHECK_NULL_ARG(rnnx_config_get_proj_clip(NULL, &b, &lo, &hi), "config is null");
  CHECK_NULL_ARG(rnnx_config_get_proj_clip(c, NULL, &lo, &hi), "enabled is null");
  CHECK_NULL_ARG(rnnx_config_get_proj_clip(c, &b, NULL, &hi), "lo is null");
  CHECK_NULL_ARG(rnnx_config_get_proj_clip(c, &b, &lo, NULL), "hi is null");
  CHECK_NULL_ARG(rnnx_config_get_clip_nan_policy(NULL, &policy), "config is null");
  CHECK_NULL_ARG(rnnx_config_get_clip_nan_policy(c, NULL), "policy is null");
  CHECK_NULL_ARG(rnnx_config_get_dropout(NULL, &dv), "config is null");
  CHECK_NULL_ARG(rnnx_config_get_dropout(c, NULL), "dropout is null");
  CHECK_NULL_ARG(rnnx_config_get_seed(NULL, &seed), "config is null");
  CHECK_NULL_ARG(rnnx_config_get_seed(c, NULL), "seed is null");
  CHECK_NULL_ARG(rnnx_config_get_dtype(NULL, &dtype), "config is null");
  CHECK_NULL_ARG(rnnx_config_get_dtype(c, NULL), "dtype is null");
  CHECK_NULL_ARG(rnnx_config_get_padding_fill(NULL, &dv), "config is null");
  CHECK_NULL_ARG(rnnx_config_get_padding_fill(c, NULL), "padding_fill is null");
  {
    char text[8];
    CHECK_NULL_ARG(rnnx_config_set_field(NULL, "seed", "1"), "config is null");
    CHECK_NULL_ARG(rnnx_config_set_field(c, "seed", NULL), "value is null");
    CHECK_NULL_ARG(rnnx_config_get_field(NULL, "seed", text, sizeof text, NULL), "config is null");
    CHECK_NULL_ARG(rnnx_config_get_field(c, "seed", NULL, sizeof text, NULL), "value is null");
  }

  CHECK_NULL_ARG(rnnx_plan_create(NULL, c, &d, RNNX_BACKEND_CPU, 0),
                 "rnnx_plan_create: plan is null");
  p = (rnnx_plan_t)(void*)&d; /* not NULL: a failed create must set NULL */
  CHECK_NULL_ARG(rnnx_plan_create(&p, NULL, &d, RNNX_BACKEND_CPU, 0),
                 "rnnx_plan_create: config is null");
  CHECK_TRUE(p == NULL, "failed rnnx_plan_create leaves plan NULL");
  CHECK_NULL_ARG(rnnx_plan_create(&p, c, NULL, RNNX_BACKEND_CPU, 0),
                 "rnnx_plan_create: shape is null");

  CHECK_OK(rnnx_plan_create(&p, c, &d, RNNX_BACKEND_CPU, 0));
  if (p == NULL) {
    rnnx_config_destroy(c);
    return;
  }
  CHECK_NULL_ARG(rnnx_plan_get_workspace_size(NULL, RNNX_PHASE_BACKWARD, &bytes), "plan is null");
  CHECK_NULL_ARG(rnnx_plan_get_workspace_size(p, RNNX_PHASE_BACKWARD, NULL),
                 "rnnx_plan_get_workspace_size: bytes is null");
  CHECK_NULL_ARG(rnnx_plan_get_reserve_size(NULL, &bytes),
                 "rnnx_plan_get_reserve_size: plan is null");
  CHECK_NULL_ARG(rnnx_plan_get_reserve_size(p, NULL), "bytes is null");
  CHECK_NULL_ARG(rnnx_plan_get_buffer_alignment(NULL, &bytes),
                 "rnnx_plan_get_buffer_alignment: plan is null");
  CHECK_NULL_ARG(rnnx_plan_get_buffer_alignment(p, NULL), "bytes is null");
  CHECK_OK(rnnx_plan_get_buffer_alignment(p, &bytes));
  CHECK_TRUE(bytes == 8, "a cpu plan's workspace and reserve alignment is 8 bytes");
  CHECK_NULL_ARG(rnnx_plan_get_max_seq_len(NULL, &v), "plan is null");
  CHECK_NULL_ARG(rnnx_plan_get_max_seq_len(p, NULL), "max_seq_len is null");
  CHECK_NULL_ARG(rnnx_plan_get_batch(NULL, &v), "plan is null");
  CHECK_NULL_ARG(rnnx_plan_get_batch(p, NULL), "batch is null");
  CHECK_NULL_ARG(rnnx_plan_get_tokens(NULL, &v), "plan is null");
  CHECK_NULL_ARG(rnnx_plan_get_tokens(p, NULL), "tokens is null");
  CHECK_NULL_ARG(rnnx_plan_get_x_numel(NULL, &v), "plan is null");
  CHECK_NULL_ARG(rnnx_plan_get_x_numel(p, NULL), "rnnx_plan_get_x_numel: numel is null");
  CHECK_NULL_ARG(rnnx_plan_get_y_numel(NULL, &v), "plan is null");
  CHECK_NULL_ARG(rnnx_plan_get_y_numel(p, NULL), "numel is null");
  CHECK_NULL_ARG(rnnx_plan_get_h_numel(NULL, &v), "plan is null");
  CHECK_NULL_ARG(rnnx_plan_get_h_numel(p, NULL), "numel is null");
  CHECK_NULL_ARG(rnnx_plan_get_c_numel(NULL, &v), "plan is null");
  CHECK_NULL_ARG(rnnx_plan_get_c_numel(p, NULL), "numel is null");
  CHECK_NULL_ARG(rnnx_plan_get_weights_numel(NULL, &v), "plan is null");
  CHECK_NULL_ARG(rnnx_plan_get_weights_numel(p, NULL), "numel is null");
  CHECK_NULL_ARG(rnnx_plan_get_impl_name(NULL, &s), "plan is null");
  CHECK_NULL_ARG(rnnx_plan_get_impl_name(p, NULL), "rnnx_plan_get_impl_name: name is null");
  CHECK_NULL_ARG(rnnx_plan_get_problem_name(NULL, &s), "plan is null");
  CHECK_NULL_ARG(rnnx_plan_get_problem_name(p, NULL), "name is null");
  CHECK_NULL_ARG(rnnx_plan_get_weight_param_count(NULL, &v), "plan is null");
  CHECK_NULL_ARG(rnnx_plan_get_weight_param_count(p, NULL), "count is null");
  CHECK_NULL_ARG(rnnx_plan_get_weight_param(NULL, "weight_ih_l0", &offset, &rows, &cols),
                 "plan is null");
  CHECK_NULL_ARG(rnnx_plan_get_weight_param(p, NULL, &offset, &rows, &cols),
                 "rnnx_plan_get_weight_param: name is null");
  CHECK_NULL_ARG(rnnx_plan_get_weight_param(p, "weight_ih_l0", NULL, &rows, &cols),
                 "offset is null");
  CHECK_NULL_ARG(rnnx_plan_get_weight_param(p, "weight_ih_l0", &offset, NULL, &cols),
                 "rows is null");
  CHECK_NULL_ARG(rnnx_plan_get_weight_param(p, "weight_ih_l0", &offset, &rows, NULL),
                 "cols is null");
  CHECK_NULL_ARG(rnnx_plan_get_weight_param_by_index(NULL, 0, &s, &offset, &rows, &cols),
                 "plan is null");
  CHECK_NULL_ARG(rnnx_plan_get_weight_param_by_index(p, 0, NULL, &offset, &rows, &cols),
                 "rnnx_plan_get_weight_param_by_index: name is null");
  CHECK_NULL_ARG(rnnx_plan_get_weight_param_by_index(p, 0, &s, NULL, &rows, &cols),
                 "offset is null");
  CHECK_NULL_ARG(rnnx_plan_get_weight_param_by_index(p, 0, &s, &offset, NULL, &cols),
                 "rows is null");
  CHECK_NULL_ARG(rnnx_plan_get_weight_param_by_index(p, 0, &s, &offset, &rows, NULL),
                 "cols is null");

  {
    /* Null tensors inside the args structs; the C++ API's messages name them. */
    float x[3 * 2 * 5], y[3 * 2 * 6], *w;
    int64_t w_n = 0;
    size_t reserve_size = 0;
    void* reserve;
    rnnx_forward_args_t fa = rnnx_forward_args_init();
    rnnx_backward_args_t ba = rnnx_backward_args_init();
    rnnx_plan_get_weights_numel(p, &w_n);
    rnnx_plan_get_reserve_size(p, &reserve_size);
    w = (float*)calloc((size_t)w_n, sizeof(float));
    reserve = calloc(reserve_size, 1);
    memset(x, 0, sizeof x);
    CHECK_NULL_ARG(rnnx_plan_forward(NULL, &fa), "rnnx_plan_forward: plan is null");
    CHECK_NULL_ARG(rnnx_plan_forward(p, NULL), "rnnx_plan_forward: args is null");
    fa.weights = w;
    fa.y = y;
    CHECK_NULL_ARG(rnnx_plan_forward(p, &fa), "x is null");
    fa.x = x;
    fa.weights = NULL;
    CHECK_NULL_ARG(rnnx_plan_forward(p, &fa), "weights is null");
    fa.weights = w;
    fa.y = NULL;
    CHECK_NULL_ARG(rnnx_plan_forward(p, &fa), "y is null");
    fa.y = y;
    fa.training = 1;
    CHECK_NULL_ARG(rnnx_plan_forward(p, &fa), "reserve is null");
    fa.reserve = reserve;
    fa.reserve_size = reserve_size;
    CHECK_OK(rnnx_plan_forward(p, &fa));

    CHECK_NULL_ARG(rnnx_plan_backward(NULL, &ba), "rnnx_plan_backward: plan is null");
    CHECK_NULL_ARG(rnnx_plan_backward(p, NULL), "rnnx_plan_backward: args is null");
    ba.weights = w;
    ba.reserve = reserve;
    ba.reserve_size = reserve_size;
    CHECK_NULL_ARG(rnnx_plan_backward(p, &ba), "x is null");
    ba.x = x;
    ba.weights = NULL;
    CHECK_NULL_ARG(rnnx_plan_backward(p, &ba), "weights is null");
    ba.weights = w;
    ba.reserve = NULL;
    CHECK_NULL_ARG(rnnx_plan_backward(p, &ba), "reserve is null");
    ba.reserve = reserve;
    CHECK_OK(rnnx_plan_backward(p, &ba)); /* every output optional: computes nothing visible */
    free(w);
    free(reserve);
  }
  CHECK_OK(rnnx_plan_destroy(p));
  CHECK_OK(rnnx_config_destroy(c));
}

/* ---- Invalid config values ---------------------------------------------------------------- */

typedef struct ConfigCase {
  const char* name;
  const char* message;
  void (*mutate)(rnnx_config_t);
} ConfigCase;

static void m_input_0(rnnx_config_t c) {
  rnnx_config_set_input_size(c, 0);
}
static void m_hidden_neg(rnnx_config_t c) {
  rnnx_config_set_hidden_size(c, -1);
}
static void m_layers_0(rnnx_config_t c) {
  rnnx_config_set_num_layers(c, 0);
}
static void m_proj_neg(rnnx_config_t c) {
  rnnx_config_set_proj_size(c, -2);
}
static void m_proj_eq_hidden(rnnx_config_t c) {
  rnnx_config_set_proj_size(c, 7);
}
static void m_proj_on_gru(rnnx_config_t c) {
  rnnx_config_set_cell(c, RNNX_CELL_GRU);
}
static void m_cell_clip_on_rnn(rnnx_config_t c) {
  rnnx_config_set_proj_size(c, 0);
  rnnx_config_set_cell(c, RNNX_CELL_RNN_TANH);
  rnnx_config_set_cell_clip(c, 1, -1, 1);
}
static void m_cell_clip_lo_hi(rnnx_config_t c) {
  rnnx_config_set_cell_clip(c, 1, 2, 1);
}
static void m_cell_clip_nan(rnnx_config_t c) {
  rnnx_config_set_cell_clip(c, 1, NAN, 1);
}
static void m_proj_clip_no_proj(rnnx_config_t c) {
  rnnx_config_set_proj_size(c, 0);
  rnnx_config_set_proj_clip(c, 1, -1, 1);
}
static void m_dropout_big(rnnx_config_t c) {
  rnnx_config_set_dropout(c, 1.5);
}
static void m_dropout_neg(rnnx_config_t c) {
  rnnx_config_set_dropout(c, -0.1);
}
static void m_dropout_nan(rnnx_config_t c) {
  rnnx_config_set_dropout(c, NAN);
}
static void m_overflow(rnnx_config_t c) {
  rnnx_config_set_proj_size(c, 0);
  rnnx_config_set_hidden_size(c, INT64_C(1) << 40);
  rnnx_config_set_input_size(c, INT64_C(1) << 40);
}

static void test_invalid_config(void) {
  static const ConfigCase cases[] = {
      {"input_size 0", "input_size (= 0)", m_input_0},
      {"hidden_size -1", "hidden_size (= -1)", m_hidden_neg},
      {"num_layers 0", "num_layers (= 0)", m_layers_0},
      {"proj_size -2", "proj_size (= -2)", m_proj_neg},
      {"proj_size == hidden_size", "hidden_size (= 7)", m_proj_eq_hidden},
      {"proj_size on GRU", "proj_size (= 3)", m_proj_on_gru},
      {"cell_clip on RNN", "cell_clip", m_cell_clip_on_rnn},
      {"cell_clip lo > hi", "cell_clip lo", m_cell_clip_lo_hi},
      {"cell_clip NaN bound", "cell_clip bounds must not be NaN", m_cell_clip_nan},
      {"proj_clip without projection", "proj_clip", m_proj_clip_no_proj},
      {"dropout 1.5", "dropout (=", m_dropout_big},
      {"dropout -0.1", "dropout (=", m_dropout_neg},
      {"dropout NaN", "dropout (=", m_dropout_nan},
      {"sizes that overflow int64", "overflow", m_overflow},
  };
  const rnnx_sequence_desc_t d = rnnx_sequence_desc_padded(3, 2, NULL, 0);
  size_t i;
  char name[256];
  rnnx_config_t c = lstmp_config(RNNX_DTYPE_FLOAT32);
  rnnx_cell_t cell = RNNX_CELL_GRU;
  rnnx_dtype_t dtype = RNNX_DTYPE_FLOAT64;
  rnnx_nan_policy_t policy = RNNX_NAN_POLICY_REPLACE;

  /* Enum values outside their enum are refused by the setter, which changes nothing. */
  CHECK(rnnx_config_set_cell(c, (rnnx_cell_t)9), RNNX_STATUS_INVALID_ARGUMENT,
        "rnnx_config_set_cell: cell (= 9) is not an rnnx_cell_t value");
  rnnx_config_get_cell(c, &cell);
  CHECK_TRUE(cell == RNNX_CELL_LSTM, "refused set_cell leaves the cell unchanged");
  CHECK(rnnx_config_set_dtype(c, (rnnx_dtype_t)5), RNNX_STATUS_INVALID_ARGUMENT, "dtype (= 5)");
  rnnx_config_get_dtype(c, &dtype);
  CHECK_TRUE(dtype == RNNX_DTYPE_FLOAT32, "refused set_dtype leaves the dtype unchanged");
  CHECK(rnnx_config_set_clip_nan_policy(c, (rnnx_nan_policy_t)-1), RNNX_STATUS_INVALID_ARGUMENT,
        "policy (= -1)");
  rnnx_config_get_clip_nan_policy(c, &policy);
  CHECK_TRUE(policy == RNNX_NAN_POLICY_PROPAGATE,
             "refused set_clip_nan_policy leaves it unchanged");
  CHECK_OK(rnnx_config_validate(c));
  rnnx_config_destroy(c);

  /* Values checked with the whole config, by validate and by plan creation alike. */
  for (i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    rnnx_plan_t p = (rnnx_plan_t)&name; /* not NULL: a failed create must set NULL */
    c = lstmp_config(RNNX_DTYPE_FLOAT32);
    cases[i].mutate(c);
    snprintf(name, sizeof name, "rnnx_config_validate refuses %s", cases[i].name);
    expect_status(rnnx_config_validate(c), RNNX_STATUS_INVALID_ARGUMENT, cases[i].message, name);
    snprintf(name, sizeof name, "rnnx_plan_create refuses %s", cases[i].name);
    expect_status(rnnx_plan_create(&p, c, &d, RNNX_BACKEND_CPU, 0), RNNX_STATUS_INVALID_ARGUMENT,
                  cases[i].message, name);
    snprintf(name, sizeof name, "rnnx_plan_create refusing %s sets the plan to NULL",
             cases[i].name);
    report(p == NULL, name, "plan not NULL");
    rnnx_config_destroy(c);
  }

  /* Plan options. */
  {
    rnnx_plan_t p = NULL;
    c = lstmp_config(RNNX_DTYPE_FLOAT32);
    CHECK(rnnx_plan_create(&p, c, &d, (rnnx_backend_t)7, 0), RNNX_STATUS_INVALID_ARGUMENT,
          "backend (= 7)");
    /* The cuda backend: refused as unsupported, naming it, by a build without it ("backend
       (= cuda) is not in this build") and on a machine without a GPU ("backend cuda: no
       CUDA device"); built where both are there. */
    {
      const rnnx_status_t st = rnnx_plan_create(&p, c, &d, RNNX_BACKEND_CUDA, 0);
      if (st == RNNX_STATUS_SUCCESS) {
        CHECK_TRUE(p != NULL, "cuda plan built on a machine with a GPU");
        rnnx_plan_destroy(p);
        p = NULL;
      } else {
        CHECK(st, RNNX_STATUS_UNSUPPORTED, "cuda");
        CHECK_TRUE(p == NULL, "refused cuda plan is NULL");
      }
    }
    /* Backend plugins (rnnx/plugin.hpp): the caller's mistakes, named. */
    {
      rnnx_backend_t b = RNNX_BACKEND_REFERENCE;
      CHECK(rnnx_load_backend_plugin(NULL, &b), RNNX_STATUS_INVALID_ARGUMENT, "path");
      CHECK(rnnx_load_backend_plugin("/nonexistent/librnnx_cuda.so", &b),
            RNNX_STATUS_INVALID_ARGUMENT, "/nonexistent/librnnx_cuda.so: cannot load it");
      CHECK_TRUE(b == RNNX_BACKEND_REFERENCE, "refused plugin leaves backend untouched");
      CHECK(rnnx_register_backend_plugin(RNNX_BACKEND_CPU, "/x/librnnx_cpu.so"),
            RNNX_STATUS_INVALID_ARGUMENT, "built into this librnnx");
      CHECK(rnnx_register_backend_plugin((rnnx_backend_t)7, "/x/y.so"),
            RNNX_STATUS_INVALID_ARGUMENT, "backend (= 7)");
      CHECK(rnnx_register_backend_plugin(RNNX_BACKEND_CUDA, NULL), RNNX_STATUS_INVALID_ARGUMENT,
            "path");
    }
    CHECK(rnnx_plan_create(&p, c, &d, RNNX_BACKEND_CPU, -1), RNNX_STATUS_INVALID_ARGUMENT,
          "num_threads (= -1)");
    CHECK_OK(rnnx_plan_create(&p, c, &d, RNNX_BACKEND_CPU, 0));
    {
      size_t bytes = 12345;
      CHECK(rnnx_plan_get_workspace_size(p, (rnnx_phase_t)3, &bytes), RNNX_STATUS_INVALID_ARGUMENT,
            "phase (= 3)");
      CHECK_TRUE(bytes == 12345, "refused phase leaves bytes untouched");
    }
    rnnx_plan_destroy(p);
    rnnx_config_destroy(c);
  }
}

/* ---- Bad shapes ----------------------------------------------------------------------------- */

static void expect_bad_shape(rnnx_config_t c, const rnnx_sequence_desc_t* d, rnnx_status_t want,
                             const char* message, const char* what) {
  char name[256];
  rnnx_plan_t p = (rnnx_plan_t)&name;
  snprintf(name, sizeof name, "rnnx_plan_create refuses %s", what);
  expect_status(rnnx_plan_create(&p, c, d, RNNX_BACKEND_CPU, 0), want, message, name);
  if (p != NULL) {
    report(0, name, "plan not NULL after refusal");
  }
}

static void test_bad_shapes(void) {
  static const int64_t too_long[4] = {4, 7, 6, 2};
  static const int64_t negative[4] = {-1, 0, 6, 2};
  static const int64_t increasing[2] = {2, 3};
  static const int64_t zero_step[2] = {2, 0};
  static const int64_t bs[3] = {3, 2, 1};
  static const int64_t not_perm[3] = {0, 0, 1};
  static const int64_t out_of_range[3] = {0, 3, 1};
  rnnx_config_t c = lstmp_config(RNNX_DTYPE_FLOAT32);
  rnnx_sequence_desc_t d;
  unsigned char big[sizeof(rnnx_sequence_desc_t) + 16];

  d = rnnx_sequence_desc_padded(6, 4, too_long, 0);
  expect_bad_shape(c, &d, RNNX_STATUS_INVALID_ARGUMENT, "lengths[1] (= 7)", "a length above T");
  d = rnnx_sequence_desc_padded(6, 4, negative, 1);
  expect_bad_shape(c, &d, RNNX_STATUS_INVALID_ARGUMENT, "lengths[0] (= -1)", "a negative length");
  d = rnnx_sequence_desc_padded(0, 4, too_long, 0);
  expect_bad_shape(c, &d, RNNX_STATUS_INVALID_ARGUMENT, "max_seq_len (= 0)", "T = 0");
  d = rnnx_sequence_desc_padded(6, -1, NULL, 0);
  expect_bad_shape(c, &d, RNNX_STATUS_INVALID_ARGUMENT, "batch (= -1)", "B = -1");
  d = rnnx_sequence_desc_padded(0, 0, NULL, 0);
  expect_bad_shape(c, &d, RNNX_STATUS_INVALID_ARGUMENT, "max_seq_len (= 0)", "T = 0, B = 0");
  d = rnnx_sequence_desc_packed(NULL, 0, NULL);
  expect_bad_shape(c, &d, RNNX_STATUS_INVALID_ARGUMENT, "batch_sizes is empty",
                   "packed without steps");
  d = rnnx_sequence_desc_padded(INT64_C(1) << 40, INT64_C(1) << 40, too_long, 0);
  expect_bad_shape(c, &d, RNNX_STATUS_INVALID_ARGUMENT, "overflows", "T * B that overflows");
  d = rnnx_sequence_desc_padded(6, 4, NULL, 0);
  d.layout = 9;
  expect_bad_shape(c, &d, RNNX_STATUS_INVALID_ARGUMENT, "shape->layout (= 9)", "an unknown layout");

  d = rnnx_sequence_desc_packed(increasing, 2, NULL);
  expect_bad_shape(c, &d, RNNX_STATUS_INVALID_ARGUMENT, "non-increasing", "increasing batch_sizes");
  d = rnnx_sequence_desc_packed(zero_step, 2, NULL);
  expect_bad_shape(c, &d, RNNX_STATUS_INVALID_ARGUMENT, "batch_sizes[1] (= 0)",
                   "a zero batch size");
  d = rnnx_sequence_desc_packed(bs, 0, NULL);
  expect_bad_shape(c, &d, RNNX_STATUS_INVALID_ARGUMENT, "batch_sizes is empty", "num_steps = 0");
  d = rnnx_sequence_desc_packed(bs, -1, NULL);
  expect_bad_shape(c, &d, RNNX_STATUS_INVALID_ARGUMENT, "num_steps (= -1)", "num_steps = -1");
  d = rnnx_sequence_desc_packed(NULL, 3, NULL);
  expect_bad_shape(c, &d, RNNX_STATUS_INVALID_ARGUMENT, "shape->batch_sizes is null",
                   "null batch_sizes");
  d = rnnx_sequence_desc_packed(bs, 3, not_perm);
  expect_bad_shape(c, &d, RNNX_STATUS_INVALID_ARGUMENT, "sorted_indices is not a permutation",
                   "repeated sorted_indices");
  d = rnnx_sequence_desc_packed(bs, 3, out_of_range);
  expect_bad_shape(c, &d, RNNX_STATUS_INVALID_ARGUMENT, "sorted_indices[1] = 3",
                   "sorted_indices out of range");

  /* Versioned struct: too small, newer with unknown fields set, reserved field set. */
  d = rnnx_sequence_desc_padded(6, 4, NULL, 0);
  d.struct_size = 0;
  expect_bad_shape(c, &d, RNNX_STATUS_INVALID_ARGUMENT, "shape->struct_size (= 0)",
                   "struct_size 0");
  d.struct_size = sizeof(d) - 8;
  expect_bad_shape(c, &d, RNNX_STATUS_INVALID_ARGUMENT, "is smaller than the struct",
                   "struct_size below the first version");
  d = rnnx_sequence_desc_padded(6, 4, NULL, 0);
  d.reserved0 = 3;
  expect_bad_shape(c, &d, RNNX_STATUS_UNSUPPORTED, "shape->reserved0 (= 3)",
                   "a reserved field set");
  memset(big, 0, sizeof big);
  d = rnnx_sequence_desc_padded(6, 4, NULL, 0);
  d.struct_size = sizeof big;
  memcpy(big, &d, sizeof d);
  {
    rnnx_plan_t p = NULL;
    CHECK_OK(rnnx_plan_create(&p, c, (const rnnx_sequence_desc_t*)(const void*)big,
                              RNNX_BACKEND_CPU, 0));
    rnnx_plan_destroy(p);
  }
  big[sizeof d + 5] = 1;
  expect_bad_shape(c, (const rnnx_sequence_desc_t*)(const void*)big, RNNX_STATUS_UNSUPPORTED,
                   "is larger than this version of rnnx knows",
                   "a newer struct with an unknown field set");
  rnnx_config_destroy(c);
}

/* ---- Execution errors: buffers too small, LSTM-only tensors, versioned args --------------- */

static int all_equal(const float* p, size_t n, float v) {
  size_t i;
  for (i = 0; i < n; ++i)
    if (p[i] != v) return 0;
  return 1;
}

static void test_execution_errors(void) {
  static const int64_t lengths[2] = {3, 1};
  const float kSentinel = 12345.0f;
  rnnx_config_t c = lstmp_config(RNNX_DTYPE_FLOAT32);
  rnnx_sequence_desc_t d = rnnx_sequence_desc_padded(3, 2, lengths, 0);
  rnnx_plan_t p = NULL;
  int64_t x_n, y_n, h_n, c_n, w_n, count = 0, offset = -7, rows = -7, cols = -7;
  size_t fws_size, bws_size, reserve_size, i;
  float *x, *y, *w, *hy, *dx, *dw;
  char *fws, *bws, *reserve, *xbytes;
  const char* s = NULL;
  rnnx_forward_args_t fa = rnnx_forward_args_init();
  rnnx_backward_args_t ba = rnnx_backward_args_init();
  unsigned char big[sizeof(rnnx_forward_args_t) + 16];

  CHECK_OK(rnnx_plan_create(&p, c, &d, RNNX_BACKEND_CPU, 0));
  rnnx_config_destroy(c);
  if (p == NULL) return;
  rnnx_plan_get_x_numel(p, &x_n);
  rnnx_plan_get_y_numel(p, &y_n);
  rnnx_plan_get_h_numel(p, &h_n);
  rnnx_plan_get_c_numel(p, &c_n);
  rnnx_plan_get_weights_numel(p, &w_n);
  rnnx_plan_get_workspace_size(p, RNNX_PHASE_FORWARD_TRAINING, &fws_size);
  rnnx_plan_get_workspace_size(p, RNNX_PHASE_BACKWARD, &bws_size);
  rnnx_plan_get_reserve_size(p, &reserve_size);
  CHECK_TRUE(fws_size > 0 && bws_size > 0 && reserve_size > 64,
             "cpu plan needs a workspace and a reserve");
  x = (float*)calloc((size_t)x_n, sizeof(float));
  xbytes = (char*)calloc((size_t)x_n + 1, sizeof(float));
  y = (float*)malloc((size_t)y_n * sizeof(float));
  hy = (float*)malloc((size_t)h_n * sizeof(float));
  dx = (float*)malloc((size_t)x_n * sizeof(float));
  dw = (float*)malloc((size_t)w_n * sizeof(float));
  w = (float*)calloc((size_t)w_n, sizeof(float));
  fws = (char*)malloc(fws_size);
  bws = (char*)malloc(bws_size);
  reserve = (char*)calloc(reserve_size, 1);
  for (i = 0; i < (size_t)y_n; ++i) y[i] = kSentinel;
  for (i = 0; i < (size_t)h_n; ++i) hy[i] = kSentinel;
  for (i = 0; i < (size_t)x_n; ++i) dx[i] = kSentinel;
  for (i = 0; i < (size_t)w_n; ++i) dw[i] = kSentinel;

  fa.x = x;
  fa.weights = w;
  fa.y = y;
  fa.hy = hy;
  fa.training = 1;
  fa.workspace = fws;
  fa.workspace_size = fws_size - 1;
  fa.reserve = reserve;
  fa.reserve_size = reserve_size;
  CHECK(rnnx_plan_forward(p, &fa), RNNX_STATUS_INVALID_ARGUMENT, "workspace_size (=");
  fa.workspace_size = fws_size;
  fa.reserve_size = reserve_size - 1;
  CHECK(rnnx_plan_forward(p, &fa), RNNX_STATUS_INVALID_ARGUMENT, "reserve_size (=");
  fa.reserve_size = reserve_size;
  fa.x = xbytes + 1;
  CHECK(rnnx_plan_forward(p, &fa), RNNX_STATUS_INVALID_ARGUMENT, "must be aligned");
  fa.x = x;
  fa.reserved0 = 1;
  CHECK(rnnx_plan_forward(p, &fa), RNNX_STATUS_UNSUPPORTED, "args->reserved0 (= 1)");
  fa.reserved0 = 0;
  fa.struct_size = 0;
  CHECK(rnnx_plan_forward(p, &fa), RNNX_STATUS_INVALID_ARGUMENT, "args->struct_size (= 0)");
  fa.struct_size = (size_t)-1;
  CHECK(rnnx_plan_forward(p, &fa), RNNX_STATUS_INVALID_ARGUMENT,
        "is not the size of any version of the struct");
  fa.struct_size = sizeof big;
  memset(big, 0, sizeof big);
  memcpy(big, &fa, sizeof fa);
  big[sizeof fa + 3] = 1;
  CHECK(rnnx_plan_forward(p, (const rnnx_forward_args_t*)(const void*)big), RNNX_STATUS_UNSUPPORTED,
        "is larger than this version of rnnx knows");
  report(all_equal(y, (size_t)y_n, kSentinel) && all_equal(hy, (size_t)h_n, kSentinel),
         "refused forwards wrote nothing to y and hy", "an output changed");
  big[sizeof fa + 3] = 0;
  CHECK_OK(rnnx_plan_forward(p, (const rnnx_forward_args_t*)(const void*)big));
  fa.struct_size = sizeof fa;
  /* Version 1 of the struct (before `stream`) is still accepted; a stream is refused by the
   * cpu backend, which runs on the calling thread. */
  fa.struct_size = offsetof(rnnx_forward_args_t, stream);
  fa.stream = (void*)&g_passed;
  CHECK_OK(rnnx_plan_forward(p, &fa));
  fa.struct_size = sizeof fa;
  CHECK(rnnx_plan_forward(p, &fa), RNNX_STATUS_INVALID_ARGUMENT, "forward: stream (=");
  fa.stream = NULL;

  /* Backward: a reserve that no forward wrote, then buffers too small. */
  {
    char* fresh = (char*)calloc(reserve_size, 1);
    ba.x = x;
    ba.weights = w;
    ba.dx = dx;
    ba.dweights = dw;
    ba.workspace = bws;
    ba.workspace_size = bws_size;
    ba.reserve = fresh;
    ba.reserve_size = reserve_size;
    CHECK(rnnx_plan_backward(p, &ba), RNNX_STATUS_INVALID_ARGUMENT,
          "reserve was not written by a training forward of this plan");
    free(fresh);
  }
  ba.reserve = reserve;
  ba.reserve_size = reserve_size - 1;
  CHECK(rnnx_plan_backward(p, &ba), RNNX_STATUS_INVALID_ARGUMENT, "reserve_size (=");
  ba.reserve_size = reserve_size;
  ba.workspace_size = bws_size - 1;
  CHECK(rnnx_plan_backward(p, &ba), RNNX_STATUS_INVALID_ARGUMENT, "workspace_size (=");
  ba.workspace_size = bws_size;
  ba.weight_grad_mode = 5;
  CHECK(rnnx_plan_backward(p, &ba), RNNX_STATUS_INVALID_ARGUMENT, "args->weight_grad_mode (= 5)");
  ba.weight_grad_mode = RNNX_GRAD_MODE_OVERWRITE;
  ba.reserved0 = -1;
  CHECK(rnnx_plan_backward(p, &ba), RNNX_STATUS_UNSUPPORTED, "args->reserved0 (= -1)");
  ba.reserved0 = 0;
  ba.struct_size = 4;
  CHECK(rnnx_plan_backward(p, &ba), RNNX_STATUS_INVALID_ARGUMENT, "args->struct_size (= 4)");
  ba.struct_size = sizeof ba;
  ba.stream = (void*)&g_passed;
  CHECK(rnnx_plan_backward(p, &ba), RNNX_STATUS_INVALID_ARGUMENT, "backward: stream (=");
  ba.stream = NULL;
  report(all_equal(dx, (size_t)x_n, kSentinel) && all_equal(dw, (size_t)w_n, kSentinel),
         "refused backwards wrote nothing to dx and dweights", "an output changed");
  CHECK_OK(rnnx_plan_backward(p, &ba));

  /* Own workspace: a NULL workspace makes the plan allocate its own. */
  fa.workspace = NULL;
  fa.workspace_size = 0;
  CHECK_OK(rnnx_plan_forward(p, &fa));

  /* Weight names. */
  CHECK(rnnx_plan_get_weight_param(p, "weight_hh_l2", &offset, &rows, &cols),
        RNNX_STATUS_INVALID_ARGUMENT, "no weight named 'weight_hh_l2'");
  CHECK(rnnx_plan_get_weight_param(p, "bias_ih_l0_forward", &offset, &rows, &cols),
        RNNX_STATUS_INVALID_ARGUMENT, "bias_ih_l0_forward");
  CHECK(rnnx_plan_get_weight_param(p, "", &offset, &rows, &cols), RNNX_STATUS_INVALID_ARGUMENT,
        "no weight named ''");
  CHECK_TRUE(offset == -7 && rows == -7 && cols == -7, "unknown names leave the outputs untouched");
  CHECK_OK(rnnx_plan_get_weight_param_count(p, &count));
  CHECK(rnnx_plan_get_weight_param_by_index(p, -1, &s, &offset, &rows, &cols),
        RNNX_STATUS_INVALID_ARGUMENT, "index (= -1) must be in [0, count (= 20))");
  CHECK(rnnx_plan_get_weight_param_by_index(p, count, &s, &offset, &rows, &cols),
        RNNX_STATUS_INVALID_ARGUMENT, "index (= 20)");
  CHECK_OK(rnnx_plan_get_weight_param_by_index(p, count - 1, &s, &offset, &rows, &cols));
  report(s != NULL && strcmp(s, "weight_hr_l1_reverse") == 0,
         "the last parameter of a 2-layer bidirectional LSTMP is weight_hr_l1_reverse", s);

  rnnx_plan_destroy(p);
  free(x);
  free(xbytes);
  free(y);
  free(hy);
  free(dx);
  free(dw);
  free(w);
  free(fws);
  free(bws);
  free(reserve);
}

static const char* empty_label(const char* label, char* buf, const char* check) {
  snprintf(buf, 192, "%s: %s", label, check);
  return buf;
}

/* An empty batch (B = 0) is a valid no-op on both backends and in both padded layouts:
 * empty tensors (NULL), no workspace, a header-only reserve that still ties the backward to
 * its training forward; overwritten weight gradients become 0, accumulated ones are kept,
 * and nothing else is written. */
static void test_empty_batch(void) {
  static const rnnx_backend_t backends[2] = {RNNX_BACKEND_REFERENCE, RNNX_BACKEND_CPU};
  const float kSentinel = 12345.0f;
  int k, batch_first;
  for (k = 0; k < 2; ++k) {
    for (batch_first = 0; batch_first < 2; ++batch_first) {
      rnnx_config_t c = lstmp_config(RNNX_DTYPE_FLOAT32);
      rnnx_sequence_desc_t d = rnnx_sequence_desc_padded(4, 0, NULL, batch_first);
      rnnx_plan_t p = NULL;
      int64_t x_n = -1, y_n = -1, h_n = -1, c_n = -1, w_n = 0, b_n = -1, tokens = -1, i;
      size_t fws = 1, fws_inf = 1, bws = 1, reserve_size = 0;
      float *w, *dw, *kept, one_y = kSentinel, one_hy = kSentinel, one_dx = kSentinel;
      char* reserve;
      char label[64], what[192];
      int ok;
      rnnx_forward_args_t fa = rnnx_forward_args_init();
      rnnx_backward_args_t ba = rnnx_backward_args_init();

      snprintf(label, sizeof label, "empty batch (%s, %s)", k ? "cpu" : "reference",
               batch_first ? "batch-first" : "time-major");
      CHECK_OK(rnnx_plan_create(&p, c, &d, backends[k], 0));
      rnnx_config_destroy(c);
      if (p == NULL) continue;
      CHECK_OK(rnnx_plan_get_batch(p, &b_n));
      CHECK_OK(rnnx_plan_get_tokens(p, &tokens));
      rnnx_plan_get_x_numel(p, &x_n);
      rnnx_plan_get_y_numel(p, &y_n);
      rnnx_plan_get_h_numel(p, &h_n);
      rnnx_plan_get_c_numel(p, &c_n);
      rnnx_plan_get_weights_numel(p, &w_n);
      CHECK_OK(rnnx_plan_get_workspace_size(p, RNNX_PHASE_FORWARD_INFERENCE, &fws_inf));
      CHECK_OK(rnnx_plan_get_workspace_size(p, RNNX_PHASE_FORWARD_TRAINING, &fws));
      CHECK_OK(rnnx_plan_get_workspace_size(p, RNNX_PHASE_BACKWARD, &bws));
      CHECK_OK(rnnx_plan_get_reserve_size(p, &reserve_size));
      ok = b_n == 0 && tokens == 0 && x_n == 0 && y_n == 0 && h_n == 0 && c_n == 0 && w_n > 0;
      report(ok, empty_label(label, what, "B, tokens, sequence and state numel 0, weights > 0"),
             "a size is wrong");
      report(fws_inf == 0 && fws == 0 && bws == 0 && reserve_size > 0 && reserve_size <= 64,
             empty_label(label, what, "no workspace, a reserve of at most its 64-byte header"),
             "a workspace or reserve size is wrong");

      w = (float*)calloc((size_t)w_n, sizeof(float));
      dw = (float*)malloc((size_t)w_n * sizeof(float));
      kept = (float*)malloc((size_t)w_n * sizeof(float));
      reserve = (char*)calloc(reserve_size, 1);
      for (i = 0; i < w_n; ++i) dw[i] = kept[i] = (float)i * 0.25f;

      /* Inference with NULL x and y, then a backward: refused, the reserve is unmarked. */
      fa.weights = w;
      CHECK_OK(rnnx_plan_forward(p, &fa));
      ba.weights = w;
      ba.dweights = dw;
      ba.weight_grad_mode = RNNX_GRAD_MODE_ACCUMULATE;
      ba.reserve = reserve;
      ba.reserve_size = reserve_size;
      CHECK(rnnx_plan_backward(p, &ba), RNNX_STATUS_INVALID_ARGUMENT,
            "reserve was not written by a training forward of this plan");
      /* NULL stays refused where the tensor has elements. */
      fa.weights = NULL;
      CHECK(rnnx_plan_forward(p, &fa), RNNX_STATUS_INVALID_ARGUMENT, "forward: weights is null");
      fa.weights = w;
      fa.training = 1;
      CHECK(rnnx_plan_forward(p, &fa), RNNX_STATUS_INVALID_ARGUMENT,
            "forward (training): reserve is null");

      /* Training forward into one-element sentinels (non-NULL but empty tensors). */
      fa.y = &one_y;
      fa.hy = &one_hy;
      fa.reserve = reserve;
      fa.reserve_size = reserve_size;
      CHECK_OK(rnnx_plan_forward(p, &fa));
      report(one_y == kSentinel && one_hy == kSentinel,
             empty_label(label, what, "training forward writes nothing"), "y or hy changed");

      /* Accumulate keeps dweights; overwrite zeroes it; dx is not written. */
      ba.dx = &one_dx;
      CHECK_OK(rnnx_plan_backward(p, &ba));
      report(memcmp(dw, kept, (size_t)w_n * sizeof(float)) == 0 && one_dx == kSentinel,
             empty_label(label, what, "accumulate keeps dweights, dx untouched"),
             "dweights or dx changed");
      ba.weight_grad_mode = RNNX_GRAD_MODE_OVERWRITE;
      ba.dx = NULL;
      CHECK_OK(rnnx_plan_backward(p, &ba));
      ok = 1;
      for (i = 0; i < w_n; ++i) ok = ok && dw[i] == 0.0f;
      report(ok, empty_label(label, what, "overwrite zeroes dweights"),
             "a dweights entry is not 0");

      rnnx_plan_destroy(p);
      free(w);
      free(dw);
      free(kept);
      free(reserve);
    }
  }
}

/* c0, cy, dcy, dc0 belong to LSTM; given to a GRU plan they are refused. */
static void test_lstm_only_tensors(void) {
  rnnx_config_t c = NULL;
  rnnx_sequence_desc_t d = rnnx_sequence_desc_padded(2, 2, NULL, 0);
  rnnx_plan_t p = NULL;
  int64_t w_n = 0, c_n = -1, offset, rows, cols;
  size_t reserve_size = 0;
  double x[2 * 2 * 3], y[2 * 2 * 4], h[2 * 4], cstate[2 * 4], *w;
  void* reserve;
  rnnx_forward_args_t fa = rnnx_forward_args_init();
  rnnx_backward_args_t ba = rnnx_backward_args_init();

  rnnx_config_create(&c);
  rnnx_config_set_cell(c, RNNX_CELL_GRU);
  rnnx_config_set_input_size(c, 3);
  rnnx_config_set_hidden_size(c, 4);
  rnnx_config_set_dtype(c, RNNX_DTYPE_FLOAT64);
  CHECK_OK(rnnx_plan_create(&p, c, &d, RNNX_BACKEND_REFERENCE, 0));
  rnnx_config_destroy(c);
  if (p == NULL) return;
  memset(x, 0, sizeof x);
  memset(h, 0, sizeof h);
  memset(cstate, 0, sizeof cstate);
  CHECK_OK(rnnx_plan_get_c_numel(p, &c_n));
  CHECK_TRUE(c_n == 0, "GRU plan has c_numel 0");
  CHECK(rnnx_plan_get_weight_param(p, "weight_hr_l0", &offset, &rows, &cols),
        RNNX_STATUS_INVALID_ARGUMENT, "no weight named 'weight_hr_l0'");
  rnnx_plan_get_weights_numel(p, &w_n);
  rnnx_plan_get_reserve_size(p, &reserve_size);
  w = (double*)calloc((size_t)w_n, sizeof(double));
  reserve = calloc(reserve_size, 1);
  fa.x = x;
  fa.weights = w;
  fa.y = y;
  fa.training = 1;
  fa.reserve = reserve;
  fa.reserve_size = reserve_size;
  fa.c0 = cstate;
  CHECK(rnnx_plan_forward(p, &fa), RNNX_STATUS_INVALID_ARGUMENT, "c0 given but cell is gru");
  fa.c0 = NULL;
  fa.cy = cstate;
  CHECK(rnnx_plan_forward(p, &fa), RNNX_STATUS_INVALID_ARGUMENT, "cy given but cell is gru");
  fa.cy = NULL;
  CHECK_OK(rnnx_plan_forward(p, &fa));
  ba.x = x;
  ba.weights = w;
  ba.reserve = reserve;
  ba.reserve_size = reserve_size;
  ba.dh0 = h;
  ba.c0 = cstate;
  CHECK(rnnx_plan_backward(p, &ba), RNNX_STATUS_INVALID_ARGUMENT,
        "c0/dcy/dc0 given but cell is gru");
  ba.c0 = NULL;
  ba.dcy = cstate;
  CHECK(rnnx_plan_backward(p, &ba), RNNX_STATUS_INVALID_ARGUMENT,
        "c0/dcy/dc0 given but cell is gru");
  ba.dcy = NULL;
  ba.dc0 = cstate;
  CHECK(rnnx_plan_backward(p, &ba), RNNX_STATUS_INVALID_ARGUMENT,
        "c0/dcy/dc0 given but cell is gru");
  ba.dc0 = NULL;
  CHECK_OK(rnnx_plan_backward(p, &ba));
  rnnx_plan_destroy(p);
  free(w);
  free(reserve);
}

/* ---- destroy(NULL), and the last-error message's lifecycle ------------------------------- */

static void* other_thread(void* arg) {
  char* result = (char*)arg;
  const char* before = rnnx_get_last_error_message();
  int64_t v;
  /* A fresh thread sees no error, and its own error stays its own. */
  strcpy(result, before[0] == '\0' ? "clean" : "dirty");
  rnnx_config_get_input_size(NULL, &v);
  strcat(result,
         strstr(rnnx_get_last_error_message(), "rnnx_config_get_input_size") ? ",own" : ",other");
  return NULL;
}

static void test_last_error(void) {
  rnnx_config_t c = NULL;
  pthread_t thread;
  char result[64] = "";
  int64_t v;
  const char* msg;

  CHECK_OK(rnnx_config_destroy(NULL));
  CHECK_OK(rnnx_plan_destroy(NULL));

  CHECK(rnnx_config_get_hidden_size(NULL, &v), RNNX_STATUS_INVALID_ARGUMENT,
        "rnnx_config_get_hidden_size: config is null");
  msg = rnnx_get_last_error_message();
  report(
      strcmp(rnnx_status_string(RNNX_STATUS_INTERNAL), "internal") == 0 &&
          strcmp(rnnx_get_last_error_message(), "rnnx_config_get_hidden_size: config is null") == 0,
      "rnnx_status_string and reading the message do not change the message", msg);
  report(
      pthread_create(&thread, NULL, other_thread, result) == 0 && pthread_join(thread, NULL) == 0,
      "second thread ran", "pthread failed");
  report(strcmp(result, "clean,own") == 0, "the last-error message is per thread", result);
  report(strcmp(rnnx_get_last_error_message(), "rnnx_config_get_hidden_size: config is null") == 0,
         "another thread's error leaves this thread's message alone",
         rnnx_get_last_error_message());
  CHECK_OK(rnnx_config_create(&c)); /* CHECK_OK also checks that success clears the message */
  rnnx_config_destroy(c);
}

/* ONNX's options: setters round-trip, bad values are refused, both backends run them
 * (the cpu on its generic step kernels), and ONNX weights import by gate. */
static void test_onnx_options(void) {
  rnnx_config_t c = NULL;
  rnnx_plan_t plan = NULL;
  int flag = 0;
  double v = 0.0;
  int64_t n = 0;
  CHECK_OK(rnnx_config_create(&c));
  CHECK_OK(rnnx_config_set_cell(c, RNNX_CELL_LSTM));
  CHECK_OK(rnnx_config_set_input_size(c, 2));
  CHECK_OK(rnnx_config_set_hidden_size(c, 3));
  CHECK_OK(rnnx_config_set_dtype(c, RNNX_DTYPE_FLOAT64));
  CHECK_OK(rnnx_config_set_peephole(c, 1));
  CHECK_OK(rnnx_config_get_peephole(c, &flag));
  CHECK_TRUE(flag == 1, "peephole round-trips");
  CHECK_OK(rnnx_config_set_input_forget(c, 1));
  CHECK_OK(rnnx_config_get_input_forget(c, &flag));
  CHECK_TRUE(flag == 1, "input_forget round-trips");
  CHECK_OK(rnnx_config_set_gate_clip(c, 2.5));
  CHECK_OK(rnnx_config_get_gate_clip(c, &v));
  CHECK_TRUE(v == 2.5, "gate_clip round-trips");
  CHECK_OK(rnnx_config_set_reverse(c, 1));
  CHECK_OK(rnnx_config_get_reverse(c, &flag));
  CHECK_TRUE(flag == 1, "reverse round-trips");
  {
    const rnnx_activation_t kinds[3] = {RNNX_ACTIVATION_HARD_SIGMOID, RNNX_ACTIVATION_TANH,
                                        RNNX_ACTIVATION_LEAKY_RELU};
    rnnx_activation_t got[3];
    double alpha[3], beta[3];
    CHECK_OK(rnnx_config_set_activations(c, kinds, NULL, NULL, 3));
    CHECK_OK(rnnx_config_get_activations(c, got, alpha, beta, 3, &n));
    CHECK_TRUE(n == 3 && got[0] == RNNX_ACTIVATION_HARD_SIGMOID && alpha[0] == 0.2 &&
                   beta[0] == 0.5 && got[2] == RNNX_ACTIVATION_LEAKY_RELU && alpha[2] == 0.01,
               "activations round-trip with ONNX's default alpha/beta");
    rnnx_activation_t bad[1] = {(rnnx_activation_t)42};
    CHECK(rnnx_config_set_activations(c, bad, NULL, NULL, 1), RNNX_STATUS_INVALID_ARGUMENT,
          "kinds[0] (= 42)");
    CHECK(rnnx_config_set_activations(c, NULL, NULL, NULL, 2), RNNX_STATUS_INVALID_ARGUMENT,
          "kinds is null");
    CHECK_OK(rnnx_config_validate(c));
  }
  CHECK_OK(rnnx_config_set_gate_clip(c, -1.0));
  CHECK(rnnx_config_validate(c), RNNX_STATUS_INVALID_ARGUMENT, "gate_clip (= -1");
  CHECK_OK(rnnx_config_set_gate_clip(c, 0.0));
  {
    rnnx_sequence_desc_t shape = rnnx_sequence_desc_padded(2, 1, NULL, 0);
    CHECK_OK(rnnx_plan_create(&plan, c, &shape, RNNX_BACKEND_CPU, 0));
    {
      const char* impl = NULL;
      CHECK_OK(rnnx_plan_get_impl_name(plan, &impl));
      CHECK_TRUE(impl != NULL && strstr(impl, "/onnx-cell") != NULL,
                 "the cpu runs ONNX options (onnx-cell)");
    }
    rnnx_plan_destroy(plan);
    plan = NULL;
    CHECK_OK(rnnx_plan_create(&plan, c, &shape, RNNX_BACKEND_REFERENCE, 0));
    /* W [1, 12, 2], R [1, 12, 3], P [1, 9]: rnnx's f block (gate 1) is ONNX's gate 2. */
    double W[24], R[36], P[9], w[128];
    int64_t off = 0, rows = 0, cols = 0, k;
    for (k = 0; k < 24; ++k) W[k] = (double)k;
    for (k = 0; k < 36; ++k) R[k] = 100.0 + (double)k;
    for (k = 0; k < 9; ++k) P[k] = 200.0 + (double)k;
    CHECK_OK(rnnx_plan_get_weights_numel(plan, &n));
    CHECK_TRUE(n <= 128, "weights fit the test buffer");
    if (n > 128) {
      rnnx_plan_destroy(plan);
      rnnx_config_destroy(c);
      return;
    }
    CHECK_OK(rnnx_plan_import_onnx_layer(plan, 0, W, R, NULL, P, w));
    CHECK_OK(rnnx_plan_get_weight_param(plan, "weight_ih_l0", &off, &rows, &cols));
    CHECK_TRUE(w[off + 1 * 3 * 2] == W[2 * 3 * 2], "ONNX gate f lands in rnnx's block 1");
    CHECK_OK(rnnx_plan_get_weight_param(plan, "weight_peephole_l0", &off, &rows, &cols));
    CHECK_TRUE(w[off + 3] == P[6] && w[off + 6] == P[3], "peepholes i,o,f become i,f,o");
    CHECK(rnnx_plan_import_onnx_layer(plan, 0, NULL, R, NULL, NULL, w),
          RNNX_STATUS_INVALID_ARGUMENT, "W is null");
    CHECK(rnnx_plan_import_onnx_layer(plan, 3, W, R, NULL, NULL, w), RNNX_STATUS_INVALID_ARGUMENT,
          "layer (= 3)");
    rnnx_plan_destroy(plan);
  }
  rnnx_config_destroy(c);
}

/* 16-bit data through the C API: the dtype round-trips, and a cpu and a reference plan run
 * the same tensors (their bits as uint16_t) to nearly the same 16-bit outputs. */
static float bf16_to_float(uint16_t bits) {
  const uint32_t u = (uint32_t)bits << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Normal float16 values and zero only (what the test writes and what |y| < 1 gives back,
 * subnormals included through ldexp). */
static float f16_to_float(uint16_t bits) {
  const int exp = (bits >> 10) & 0x1f, mant = bits & 0x3ff;
  const float v = exp == 0 ? ldexpf((float)mant, -24) : ldexpf((float)(mant | 0x400), exp - 25);
  return bits & 0x8000 ? -v : v;
}

static void test_16bit(rnnx_dtype_t want_dtype) {
  enum { T = 3, B = 2, I = 3, H = 4 };
  const int bf16 = want_dtype == RNNX_DTYPE_BFLOAT16;
  const char* label = bf16 ? "bfloat16" : "float16";
  const int64_t lengths[B] = {3, 2};
  rnnx_config_t c = NULL;
  rnnx_dtype_t dtype = RNNX_DTYPE_FLOAT32;
  rnnx_plan_t plans[2] = {NULL, NULL};
  const rnnx_backend_t backends[2] = {RNNX_BACKEND_CPU, RNNX_BACKEND_REFERENCE};
  uint16_t x[T * B * I], y[2][T * B * H];
  uint16_t* w = NULL;
  int64_t w_n = 0;
  size_t i;
  int k;
  char what[96];
  rnnx_sequence_desc_t d = rnnx_sequence_desc_padded(T, B, lengths, 0);
  CHECK_OK(rnnx_config_create(&c));
  rnnx_config_set_cell(c, RNNX_CELL_LSTM);
  rnnx_config_set_input_size(c, I);
  rnnx_config_set_hidden_size(c, H);
  CHECK_OK(rnnx_config_set_dtype(c, want_dtype));
  rnnx_config_get_dtype(c, &dtype);
  snprintf(what, sizeof what, "dtype %s round-trips", label);
  CHECK_TRUE(dtype == want_dtype, what);
  for (k = 0; k < 2; ++k) CHECK_OK(rnnx_plan_create(&plans[k], c, &d, backends[k], 0));
  rnnx_config_destroy(c);
  if (plans[0] == NULL || plans[1] == NULL) return;
  {
    const char* impl = NULL;
    rnnx_plan_get_impl_name(plans[0], &impl);
    snprintf(what, sizeof what, "%s cpu plan runs the 16-bit data path", label);
    CHECK_TRUE(impl != NULL && strstr(impl, bf16 ? "/bf16-data" : "/f16-data") != NULL, what);
  }
  rnnx_plan_get_weights_numel(plans[0], &w_n);
  w = (uint16_t*)malloc((size_t)w_n * sizeof *w);
  /* Weights and inputs of a few distinct values: w in {0.0625, 0.125, 0.25}, x in {0.5, -1}. */
  for (i = 0; i < (size_t)w_n; ++i) {
    w[i] = bf16 ? (uint16_t)(0x3D80 + 0x80 * (i % 3)) : (uint16_t)(0x2C00 + 0x400 * (i % 3));
  }
  for (i = 0; i < T * B * I; ++i)
    x[i] = i % 2 ? (bf16 ? 0xBF80 : 0xBC00) : (bf16 ? 0x3F00 : 0x3800);
  for (k = 0; k < 2; ++k) {
    rnnx_forward_args_t a = rnnx_forward_args_init();
    a.x = x;
    a.weights = w;
    a.y = y[k];
    CHECK_OK(rnnx_plan_forward(plans[k], &a));
  }
  {
    double worst = 0.0, largest = 0.0;
    for (i = 0; i < T * B * H; ++i) {
      const double a = bf16 ? bf16_to_float(y[0][i]) : f16_to_float(y[0][i]);
      const double b = bf16 ? bf16_to_float(y[1][i]) : f16_to_float(y[1][i]);
      if (fabs(a - b) > worst) worst = fabs(a - b);
      if (fabs(b) > largest) largest = fabs(b);
    }
    /* |y| < 1: a few 16-bit ulps (2^-8 or 2^-11 relative) at most. */
    snprintf(what, sizeof what, "%s: cpu and reference agree", label);
    report(worst <= (bf16 ? 0.02 : 0.004) && largest > 0.05, what,
           "outputs differ by more than a few ulps (or are all near zero)");
  }
  free(w);
  for (k = 0; k < 2; ++k) rnnx_plan_destroy(plans[k]);
}

/* A network made once, called with three batches of other lengths: each gives the bits of
 * a plan of its shape (training forward and backward); a backward on another shape's reserve
 * is refused; a bad phase or shape names the argument; NULL options are the defaults. */
static void test_network(void) {
  static const int64_t lens[3][3] = {{4, 1, 3}, {2, 4, 0}, {4, 4, 4}};
  rnnx_config_t c = lstmp_config(RNNX_DTYPE_FLOAT32);
  rnnx_plan_options_t o = rnnx_plan_options_init();
  rnnx_network_t net = NULL;
  int64_t w_n = 0, k;
  float* w;
  o.num_threads = 2;
  o.cpu_choices = "search=off";
  CHECK_NULL_ARG(rnnx_network_create(NULL, c, &o), "network");
  CHECK_OK(rnnx_network_create(&net, c, NULL));
  CHECK_OK(rnnx_network_destroy(net));
  CHECK_OK(rnnx_network_destroy(NULL));
  CHECK_OK(rnnx_network_create(&net, c, &o));
  if (net == NULL) {
    rnnx_config_destroy(c);
    return;
  }
  CHECK_OK(rnnx_network_get_weights_numel(net, &w_n));
  w = (float*)malloc((size_t)w_n * sizeof(float));
  fill(w, w_n, 0, 5, 0.3);
  for (k = 0; k < 3; ++k) {
    const rnnx_sequence_desc_t d = rnnx_sequence_desc_padded(4, 3, lens[k], 0);
    rnnx_plan_t plan = NULL;
    int64_t x_n, y_n, h_n, c_n;
    size_t rs = 0, plan_rs = 0, ws = 0, plan_ws = 0, r;
    float *x, *dy, *out[2][4];
    char* reserve[2];
    int v, same = 1;
    char what[96];
    CHECK_OK(rnnx_plan_create_with_options(&plan, c, &d, &o));
    if (plan == NULL) break;
    rnnx_plan_get_x_numel(plan, &x_n);
    rnnx_plan_get_y_numel(plan, &y_n);
    rnnx_plan_get_h_numel(plan, &h_n);
    rnnx_plan_get_c_numel(plan, &c_n);
    rnnx_plan_get_reserve_size(plan, &plan_rs);
    rnnx_plan_get_workspace_size(plan, RNNX_PHASE_BACKWARD, &plan_ws);
    CHECK_OK(rnnx_network_get_reserve_size(net, &d, &rs));
    CHECK_OK(rnnx_network_get_workspace_size(net, &d, RNNX_PHASE_BACKWARD, &ws));
    snprintf(what, sizeof what, "network batch %d: the plan's sizes", (int)k);
    CHECK_TRUE(rs == plan_rs && ws == plan_ws, what);
    x = (float*)malloc((size_t)x_n * sizeof(float));
    dy = (float*)malloc((size_t)y_n * sizeof(float));
    fill(x, x_n, 0, 11 + (uint64_t)k, 1.0);
    fill(dy, y_n, 0, 21 + (uint64_t)k, 1.0);
    for (v = 0; v < 2; ++v) { /* v = 0: the network, 1: the plan */
      rnnx_forward_args_t fa = rnnx_forward_args_init();
      rnnx_backward_args_t ba = rnnx_backward_args_init();
      out[v][0] = (float*)calloc((size_t)y_n, sizeof(float));
      out[v][1] = (float*)calloc((size_t)h_n, sizeof(float));
      out[v][2] = (float*)calloc((size_t)x_n, sizeof(float));
      out[v][3] = (float*)calloc((size_t)w_n, sizeof(float));
      reserve[v] = (char*)calloc(rs, 1);
      fa.x = x;
      fa.weights = w;
      fa.y = out[v][0];
      fa.hy = out[v][1];
      fa.training = 1;
      fa.reserve = reserve[v];
      fa.reserve_size = rs;
      ba.x = x;
      ba.weights = w;
      ba.dy = dy;
      ba.dx = out[v][2];
      ba.dweights = out[v][3];
      ba.reserve = reserve[v];
      ba.reserve_size = rs;
      if (v == 0) {
        CHECK_OK(rnnx_network_forward(net, &d, &fa));
        CHECK_OK(rnnx_network_backward(net, &d, &ba));
      } else {
        CHECK_OK(rnnx_plan_forward(plan, &fa));
        CHECK_OK(rnnx_plan_backward(plan, &ba));
      }
    }
    same = memcmp(out[0][0], out[1][0], (size_t)y_n * sizeof(float)) == 0 &&
           memcmp(out[0][1], out[1][1], (size_t)h_n * sizeof(float)) == 0 &&
           memcmp(out[0][2], out[1][2], (size_t)x_n * sizeof(float)) == 0 &&
           memcmp(out[0][3], out[1][3], (size_t)w_n * sizeof(float)) == 0;
    snprintf(what, sizeof what, "network batch %d: the plan's bits", (int)k);
    CHECK_TRUE(same && !all_equal(out[0][3], (size_t)w_n, 0.0f), what);
    {
      /* Inference calls with a weights version (the third on the network's kept copy): the
       * bits of the training forward's y, as every call without one. */
      rnnx_forward_args_t fa = rnnx_forward_args_init();
      float* y = (float*)calloc((size_t)y_n, sizeof(float));
      int call, kept_same = 1;
      fa.x = x;
      fa.weights = w;
      fa.y = y;
      fa.weights_version = 7;
      for (call = 0; call < 3; ++call) {
        CHECK_OK(rnnx_network_forward(net, &d, &fa));
        kept_same = kept_same && memcmp(y, out[0][0], (size_t)y_n * sizeof(float)) == 0;
      }
      snprintf(what, sizeof what, "network batch %d: weights_version calls give the same y",
               (int)k);
      CHECK_TRUE(kept_same, what);
      free(y);
    }
    if (k > 0) {
      /* The reserve of this batch on the previous batch's shape: refused. */
      const rnnx_sequence_desc_t prev = rnnx_sequence_desc_padded(4, 3, lens[k - 1], 0);
      rnnx_backward_args_t ba = rnnx_backward_args_init();
      size_t prev_rs = 0;
      rnnx_network_get_reserve_size(net, &prev, &prev_rs);
      ba.x = x;
      ba.weights = w;
      ba.dy = dy;
      ba.reserve = reserve[0];
      ba.reserve_size = rs;
      if (prev_rs <= rs) {
        CHECK(rnnx_network_backward(net, &prev, &ba), RNNX_STATUS_INVALID_ARGUMENT,
              "reserve was not written");
      }
    }
    for (v = 0; v < 2; ++v) {
      for (r = 0; r < 4; ++r) free(out[v][r]);
      free(reserve[v]);
    }
    free(x);
    free(dy);
    rnnx_plan_destroy(plan);
  }
  {
    const rnnx_sequence_desc_t d = rnnx_sequence_desc_padded(4, 3, lens[0], 0);
    const int64_t bad[3] = {4, 5, 1};
    const rnnx_sequence_desc_t b = rnnx_sequence_desc_padded(4, 3, bad, 0);
    size_t bytes = 0;
    CHECK(rnnx_network_get_workspace_size(net, &d, (rnnx_phase_t)7, &bytes),
          RNNX_STATUS_INVALID_ARGUMENT, "phase");
    CHECK(rnnx_network_get_reserve_size(net, &b, &bytes), RNNX_STATUS_INVALID_ARGUMENT,
          "lengths[1] (= 5)");
    CHECK_NULL_ARG(rnnx_network_get_reserve_size(net, NULL, &bytes), "shape");
    CHECK_NULL_ARG(rnnx_network_get_reserve_size(NULL, &d, &bytes), "network");
  }
  free(w);
  rnnx_network_destroy(net);
  rnnx_config_destroy(c);
}

int main(void) {
  test_version_and_status();
  test_onnx_options();
  test_config_round_trip();
  test_crosschecks();
  test_math_mode();
  test_null_arguments();
  test_invalid_config();
  test_bad_shapes();
  test_execution_errors();
  test_plan_options();
  test_network();
  test_empty_batch();
  test_lstm_only_tensors();
  test_last_error();
  test_16bit(RNNX_DTYPE_BFLOAT16);
  test_16bit(RNNX_DTYPE_FLOAT16);
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
