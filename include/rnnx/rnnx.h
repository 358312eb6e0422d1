/* rnnx C API: a stable C ABI over the C++ API (rnnx/rnnx.hpp), in the style of cuDNN and
 * oneDNN: opaque handles for a config and a plan, plain structs for the sequence shape and
 * the call arguments, status codes, and a thread-local message for the last error.
 * Pure C99; includes only <stddef.h> and <stdint.h>. See docs/c_api.md.
 *
 * Error model. Every function that returns rnnx_status_t
 *   - catches every C++ exception inside rnnx; none ever crosses this boundary,
 *   - returns RNNX_STATUS_INVALID_ARGUMENT for input that breaks the contract (a null
 *     handle or pointer, a value out of range, a buffer too small), RNNX_STATUS_UNSUPPORTED
 *     for valid input that this build or backend cannot run, RNNX_STATUS_OUT_OF_MEMORY when
 *     an allocation fails and RNNX_STATUS_INTERNAL for a bug in rnnx or in a library it calls,
 *   - sets this thread's last-error message: the error's text on failure, the empty
 *     string on success. The text names the argument and its values: the C++ API's
 *     rnnx::Error text unchanged, or, for what the C layer checks itself (null handles and
 *     pointers, enum values, struct_size), "<function>: <argument> ...",
 *   - when it refuses its input, writes nothing (no out-parameter, no tensor), except
 *     that a failed *_create sets its handle to NULL.
 * Nothing aborts on bad input. Handles that were never created or were destroyed cannot be
 * detected; passing one is undefined behaviour, as with free().
 *
 * Tensors are dense, in the config's dtype, laid out as in the C++ API (PyTorch's
 * conventions; L layers, D = 2 if bidirectional else 1, H hidden, P' = proj_size or H):
 *   x  [T, B, I] time-major, [B, T, I] batch-first, or packed rows [tokens, I]
 *   y  [T, B, D*P'] (or batch-first, or packed [tokens, D*P'])
 *   h0, hy [L*D, B, P']   c0, cy [L*D, B, H] (LSTM)   weights: the flat buffer whose
 *   parameters rnnx_plan_get_weight_param() names.
 * Each tensor must be aligned to its element size; workspace and reserve to 8 bytes
 * (64 recommended) on the host backends, to 256 on cuda (whichever path runs the plan).
 * A plan may be executed by one thread at a time; distinct plans may
 * run concurrently. */
#ifndef RNNX_RNNX_H
#define RNNX_RNNX_H

#include <stddef.h>
#include <stdint.h>

#include "rnnx/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Status and errors ------------------------------------------------------------ */

/* The values mirror rnnx::Status and never change. */
typedef enum rnnx_status {
  RNNX_STATUS_SUCCESS = 0,
  RNNX_STATUS_INVALID_ARGUMENT = 1, /* the caller's input breaks the contract */
  RNNX_STATUS_UNSUPPORTED = 2,      /* valid input that this backend or build cannot run */
  RNNX_STATUS_INTERNAL = 3,         /* a bug in rnnx or a failure of a library it calls */
  RNNX_STATUS_OUT_OF_MEMORY = 4
} rnnx_status_t;

/* A static name for a status ("success", "invalid_argument", ...); "unknown" for a value
 * outside the enum. Never NULL; does not touch the last-error message. */
RNNX_API const char* rnnx_status_string(rnnx_status_t status);

/* The message of the last rnnx call on this thread that returned a status: its error text,
 * or "" if it succeeded (or no such call was made yet). Never NULL. The pointer stays
 * valid until the next rnnx call on this thread; copy the text to keep it. */
RNNX_API const char* rnnx_get_last_error_message(void);

/* The library's version (the one linked at run time, not the header's). */
RNNX_API rnnx_status_t rnnx_get_version(int* major, int* minor, int* patch);

/* ---- Enumerations (values are part of the ABI and never change) ------------------- */

typedef enum rnnx_cell {
  RNNX_CELL_RNN_TANH = 0,
  RNNX_CELL_RNN_RELU = 1,
  RNNX_CELL_LSTM = 2, /* gates i, f, g, o */
  RNNX_CELL_GRU = 3   /* gates r, z, n */
} rnnx_cell_t;

typedef enum rnnx_dtype {
  RNNX_DTYPE_FLOAT32 = 0,
  RNNX_DTYPE_FLOAT64 = 1,
  RNNX_DTYPE_BFLOAT16 = 2, /* bf16 storage; computed in float32 (cpu) or double (reference) */
  RNNX_DTYPE_FLOAT16 = 3   /* IEEE half storage; computed in float32 (cpu, cuda) or double */
} rnnx_dtype_t;

/* What a clamp (cell_clip, proj_clip) does with NaN (cuDNN's clipNanOpt):
 * PROPAGATE keeps NaN (its gradient passes through); REPLACE turns it into the upper
 * bound hi, with zero gradient like any other clipped element. */
typedef enum rnnx_nan_policy {
  RNNX_NAN_POLICY_PROPAGATE = 0,
  RNNX_NAN_POLICY_REPLACE = 1
} rnnx_nan_policy_t;

/* Math mode of the GEMMs (rnnx::MathMode, cuDNN's CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION):
 * FROM_ENVIRONMENT reads RNNX_TENSOR_OP_MATH_ALLOW_CONVERSION when a plan is created ("1"
 * = ALLOW_CONVERSION, "0" or unset = FP32, anything else: INVALID_ARGUMENT);
 * ALLOW_CONVERSION lets FLOAT32 plans run their matrix products in bf16 with float32
 * accumulation where the CPU has AVX512-BF16 (README, "Math mode"). FLOAT64 ignores it. */
typedef enum rnnx_math_mode {
  RNNX_MATH_MODE_FROM_ENVIRONMENT = 0,
  RNNX_MATH_MODE_FP32 = 1,
  RNNX_MATH_MODE_ALLOW_CONVERSION = 2,
  RNNX_MATH_MODE_INT8 = 3 /* inference in int8 dynamic quantisation (rnnx::MathMode::int8) */
} rnnx_math_mode_t;

typedef enum rnnx_layout {
  RNNX_LAYOUT_TIME_MAJOR = 0,  /* x [T, B, I] */
  RNNX_LAYOUT_BATCH_FIRST = 1, /* x [B, T, I] */
  RNNX_LAYOUT_PACKED = 2       /* PyTorch's PackedSequence: rows step by step */
} rnnx_layout_t;

typedef enum rnnx_backend {
  RNNX_BACKEND_REFERENCE = 0, /* the oracle: plain loops in double, slow on purpose */
  RNNX_BACKEND_CPU = 1,       /* the fast CPU backend */
  RNNX_BACKEND_CUDA = 2       /* NVIDIA GPUs; RNNX_STATUS_UNSUPPORTED in a build without it */
} rnnx_backend_t;

/* Backend plugins (rnnx/plugin.hpp, docs/packaging.md): a backend this library was built
 * without, from a shared library such as the rnnx-cuda wheel's librnnx_cuda.so. A plan on
 * such a backend finds its plugin by itself (registered path, RNNX_<BACKEND>_PLUGIN,
 * librnnx_<backend>.so beside librnnx); these calls name it explicitly.
 * rnnx_load_backend_plugin loads `path` now and stores the backend it brings in *backend
 * (may be NULL); RNNX_STATUS_INVALID_ARGUMENT, naming the path and the reason, when it cannot
 * be loaded, is no plugin, or was built for another plugin ABI or rnnx version.
 * rnnx_register_backend_plugin records where `backend`'s plugin is, loaded on first use. */
RNNX_API rnnx_status_t rnnx_load_backend_plugin(const char* path, rnnx_backend_t* backend);
RNNX_API rnnx_status_t rnnx_register_backend_plugin(rnnx_backend_t backend, const char* path);

/* What a plan is built for (rnnx::PlanPurpose): its algorithm search measures that. */
typedef enum rnnx_plan_purpose {
  RNNX_PLAN_PURPOSE_TRAINING = 0, /* training forwards, their backwards, inference forwards */
  RNNX_PLAN_PURPOSE_INFERENCE = 1 /* inference forwards only (the others are refused) */
} rnnx_plan_purpose_t;

/* Which call a workspace is for. */
typedef enum rnnx_phase {
  RNNX_PHASE_FORWARD_INFERENCE = 0,
  RNNX_PHASE_FORWARD_TRAINING = 1,
  RNNX_PHASE_BACKWARD = 2
} rnnx_phase_t;

typedef enum rnnx_grad_mode {
  RNNX_GRAD_MODE_OVERWRITE = 0, /* dweights = gradient */
  RNNX_GRAD_MODE_ACCUMULATE = 1 /* dweights += gradient */
} rnnx_grad_mode_t;

/* ---- Config: the problem description (rnnx::Config) ------------------------------ */

typedef struct rnnx_config* rnnx_config_t;

/* A config with the C++ defaults: LSTM, input_size = hidden_size = 0 (to be set),
 * proj_size 0, 1 layer, unidirectional, with bias, GRU linear-before-reset, no clipping,
 * NaN policy PROPAGATE, dropout 0, seed 0, FLOAT32, padding_fill 0, math mode
 * FROM_ENVIRONMENT. */
RNNX_API rnnx_status_t rnnx_config_create(rnnx_config_t* config);
/* Destroying NULL is a no-op that succeeds. A plan keeps its own copy of the config, so a
 * config may be destroyed as soon as its plans are created. */
RNNX_API rnnx_status_t rnnx_config_destroy(rnnx_config_t config);
/* Checks everything rnnx_plan_create would check about the config alone. */
RNNX_API rnnx_status_t rnnx_config_validate(rnnx_config_t config);

/* Setters store the value; enum values outside their enum are refused at once, every other
 * value is checked (with the other fields) by rnnx_config_validate / rnnx_plan_create.
 * Booleans are int: 0 is false, anything else true. Getters return 0 or 1. */
RNNX_API rnnx_status_t rnnx_config_set_cell(rnnx_config_t config, rnnx_cell_t cell);
RNNX_API rnnx_status_t rnnx_config_get_cell(rnnx_config_t config, rnnx_cell_t* cell);
RNNX_API rnnx_status_t rnnx_config_set_input_size(rnnx_config_t config, int64_t input_size);
RNNX_API rnnx_status_t rnnx_config_get_input_size(rnnx_config_t config, int64_t* input_size);
RNNX_API rnnx_status_t rnnx_config_set_hidden_size(rnnx_config_t config, int64_t hidden_size);
RNNX_API rnnx_status_t rnnx_config_get_hidden_size(rnnx_config_t config, int64_t* hidden_size);
/* LSTM only; 0 = no projection, else 0 < proj_size < hidden_size. */
RNNX_API rnnx_status_t rnnx_config_set_proj_size(rnnx_config_t config, int64_t proj_size);
RNNX_API rnnx_status_t rnnx_config_get_proj_size(rnnx_config_t config, int64_t* proj_size);
RNNX_API rnnx_status_t rnnx_config_set_num_layers(rnnx_config_t config, int64_t num_layers);
RNNX_API rnnx_status_t rnnx_config_get_num_layers(rnnx_config_t config, int64_t* num_layers);
RNNX_API rnnx_status_t rnnx_config_set_bidirectional(rnnx_config_t config, int bidirectional);
RNNX_API rnnx_status_t rnnx_config_get_bidirectional(rnnx_config_t config, int* bidirectional);
RNNX_API rnnx_status_t rnnx_config_set_bias(rnnx_config_t config, int bias);
RNNX_API rnnx_status_t rnnx_config_get_bias(rnnx_config_t config, int* bias);
/* GRU variant: 1 = cuDNN/PyTorch "linear before reset" (default), 0 = original GRU
 * (ONNX's default, linear_before_reset = 0). */
RNNX_API rnnx_status_t rnnx_config_set_gru_linear_before_reset(rnnx_config_t config,
                                                               int linear_before_reset);
RNNX_API rnnx_status_t rnnx_config_get_gru_linear_before_reset(rnnx_config_t config,
                                                               int* linear_before_reset);
/* LSTM: clamp c_t to [lo, hi] after c_t = f*c + i*g, every step. */
RNNX_API rnnx_status_t rnnx_config_set_cell_clip(rnnx_config_t config, int enabled, double lo,
                                                 double hi);
RNNX_API rnnx_status_t rnnx_config_get_cell_clip(rnnx_config_t config, int* enabled, double* lo,
                                                 double* hi);
/* LSTM with projection: clamp r_t = W_hr h_t to [lo, hi]. */
RNNX_API rnnx_status_t rnnx_config_set_proj_clip(rnnx_config_t config, int enabled, double lo,
                                                 double hi);
RNNX_API rnnx_status_t rnnx_config_get_proj_clip(rnnx_config_t config, int* enabled, double* lo,
                                                 double* hi);
RNNX_API rnnx_status_t rnnx_config_set_clip_nan_policy(rnnx_config_t config,
                                                       rnnx_nan_policy_t policy);
RNNX_API rnnx_status_t rnnx_config_get_clip_nan_policy(rnnx_config_t config,
                                                       rnnx_nan_policy_t* policy);
/* Dropout probability in [0, 1] on the outputs of every layer but the last (training
 * only, inverted scaling); seed keys its counter-based generator. */
RNNX_API rnnx_status_t rnnx_config_set_dropout(rnnx_config_t config, double dropout);
RNNX_API rnnx_status_t rnnx_config_get_dropout(rnnx_config_t config, double* dropout);
RNNX_API rnnx_status_t rnnx_config_set_seed(rnnx_config_t config, uint64_t seed);
RNNX_API rnnx_status_t rnnx_config_get_seed(rnnx_config_t config, uint64_t* seed);
RNNX_API rnnx_status_t rnnx_config_set_dtype(rnnx_config_t config, rnnx_dtype_t dtype);
RNNX_API rnnx_status_t rnnx_config_get_dtype(rnnx_config_t config, rnnx_dtype_t* dtype);
/* Default RNNX_MATH_MODE_FROM_ENVIRONMENT. */
RNNX_API rnnx_status_t rnnx_config_set_math_mode(rnnx_config_t config, rnnx_math_mode_t math);
RNNX_API rnnx_status_t rnnx_config_get_math_mode(rnnx_config_t config, rnnx_math_mode_t* math);
/* The value written to y at positions t >= lengths[b]. */
RNNX_API rnnx_status_t rnnx_config_set_padding_fill(rnnx_config_t config, double padding_fill);
RNNX_API rnnx_status_t rnnx_config_get_padding_fill(rnnx_config_t config, double* padding_fill);

/* ONNX's cell options (docs/math.md); both backends run them.
 * reverse: one direction that runs from each sequence's end (not with bidirectional).
 * peephole: LSTM peepholes, parameters weight_peephole_l{k} [3H] in order i, f, o.
 * gate_clip: > 0 clamps every gate pre-activation to [-gate_clip, gate_clip]; 0 = off.
 * input_forget: LSTM f = 1 - i. */
RNNX_API rnnx_status_t rnnx_config_set_reverse(rnnx_config_t config, int reverse);
RNNX_API rnnx_status_t rnnx_config_get_reverse(rnnx_config_t config, int* reverse);
RNNX_API rnnx_status_t rnnx_config_set_peephole(rnnx_config_t config, int peephole);
RNNX_API rnnx_status_t rnnx_config_get_peephole(rnnx_config_t config, int* peephole);
RNNX_API rnnx_status_t rnnx_config_set_gate_clip(rnnx_config_t config, double gate_clip);
RNNX_API rnnx_status_t rnnx_config_get_gate_clip(rnnx_config_t config, double* gate_clip);
RNNX_API rnnx_status_t rnnx_config_set_input_forget(rnnx_config_t config, int input_forget);
RNNX_API rnnx_status_t rnnx_config_get_input_forget(rnnx_config_t config, int* input_forget);

/* Any field by its name, as text (the field table of rnnx/config_fields.hpp: every field of
 * the config, those added after this version of the header too): enums by name ("lstm",
 * "float64", "replace", "fp32"), "true"/"false", integers, reals in their shortest exact form
 * (and "nan", "inf", "-inf"), a clip "off" or "lo:hi", activations "default" or
 * "Sigmoid(0,0),Tanh(0,0),...". A bad name or value is refused naming both; the config is
 * then unchanged. get writes the text with its terminating NUL into value (size bytes);
 * field NULL gives the whole config, "cell=lstm input_size=... activations=default". *length
 * (may be NULL) receives the text's length without the NUL; value may be NULL with size 0 to
 * ask for it; a size that is too small is refused naming the size needed. */
RNNX_API rnnx_status_t rnnx_config_set_field(rnnx_config_t config, const char* field,
                                             const char* value);
RNNX_API rnnx_status_t rnnx_config_get_field(rnnx_config_t config, const char* field, char* value,
                                             size_t size, size_t* length);

/* ONNX's activation functions, with alpha/beta as in ONNX. */
typedef enum rnnx_activation {
  RNNX_ACTIVATION_SIGMOID = 0,
  RNNX_ACTIVATION_TANH = 1,
  RNNX_ACTIVATION_RELU = 2,
  RNNX_ACTIVATION_AFFINE = 3,           /* alpha*x + beta */
  RNNX_ACTIVATION_LEAKY_RELU = 4,       /* alpha (default 0.01) */
  RNNX_ACTIVATION_THRESHOLDED_RELU = 5, /* alpha (default 1) */
  RNNX_ACTIVATION_SCALED_TANH = 6,      /* alpha*tanh(beta*x) */
  RNNX_ACTIVATION_HARD_SIGMOID = 7,     /* min(max(alpha*x + beta, 0), 1), 0.2 / 0.5 */
  RNNX_ACTIVATION_ELU = 8,              /* alpha (default 1) */
  RNNX_ACTIVATION_SOFTSIGN = 9,
  RNNX_ACTIVATION_SOFTPLUS = 10
} rnnx_activation_t;

/* count activations (LSTM f,g,h; GRU f,g; RNN f; per direction or for all directions;
 * 0 restores the defaults). alpha and beta may be NULL: ONNX's defaults per function. */
RNNX_API rnnx_status_t rnnx_config_set_activations(rnnx_config_t config,
                                                   const rnnx_activation_t* kinds,
                                                   const double* alpha, const double* beta,
                                                   int64_t count);
/* Writes up to `capacity` entries (any pointer may be NULL when capacity is 0) and the
 * number set in *count. */
RNNX_API rnnx_status_t rnnx_config_get_activations(rnnx_config_t config, rnnx_activation_t* kinds,
                                                   double* alpha, double* beta, int64_t capacity,
                                                   int64_t* count);

/* ---- Sequence description (rnnx::SequenceShape) ----------------------------------- */

/* Plain values; the arrays belong to the caller and are copied by rnnx_plan_create.
 * struct_size must be set to sizeof(rnnx_sequence_desc_t) (the helpers below do it), so
 * that later versions can add fields at the end.
 *   padded (TIME_MAJOR, BATCH_FIRST): max_seq_len T >= 1, batch B >= 0 (0: an empty
 *     batch, a no-op), lengths [B] in 0..T in any order, or NULL for all T. batch_sizes,
 *     num_steps, sorted_indices ignored.
 *   PACKED: batch_sizes [num_steps], non-increasing and >= 1; sorted_indices
 *     [batch_sizes[0]] (sorted position -> original batch index) or NULL for the identity.
 *     max_seq_len, batch and lengths ignored (T = num_steps, B = batch_sizes[0]). */
typedef struct rnnx_sequence_desc {
  size_t struct_size;
  int32_t layout;    /* rnnx_layout_t */
  int32_t reserved0; /* must be 0 */
  int64_t max_seq_len;
  int64_t batch;
  const int64_t* lengths;
  const int64_t* batch_sizes;
  int64_t num_steps;
  const int64_t* sorted_indices;
} rnnx_sequence_desc_t;

static inline rnnx_sequence_desc_t rnnx_sequence_desc_padded(int64_t max_seq_len, int64_t batch,
                                                             const int64_t* lengths,
                                                             int batch_first) {
  rnnx_sequence_desc_t d;
  d.struct_size = sizeof(d);
  d.layout = batch_first ? RNNX_LAYOUT_BATCH_FIRST : RNNX_LAYOUT_TIME_MAJOR;
  d.reserved0 = 0;
  d.max_seq_len = max_seq_len;
  d.batch = batch;
  d.lengths = lengths;
  d.batch_sizes = NULL;
  d.num_steps = 0;
  d.sorted_indices = NULL;
  return d;
}

static inline rnnx_sequence_desc_t rnnx_sequence_desc_packed(const int64_t* batch_sizes,
                                                             int64_t num_steps,
                                                             const int64_t* sorted_indices) {
  rnnx_sequence_desc_t d;
  d.struct_size = sizeof(d);
  d.layout = RNNX_LAYOUT_PACKED;
  d.reserved0 = 0;
  d.max_seq_len = 0;
  d.batch = 0;
  d.lengths = NULL;
  d.batch_sizes = batch_sizes;
  d.num_steps = num_steps;
  d.sorted_indices = sorted_indices;
  return d;
}

/* ---- Call arguments (rnnx::ForwardArgs, rnnx::BackwardArgs) ------------------------ */

/* struct_size comes first and must be sizeof(the struct) as the caller's header defines
 * it; the *_init helpers set it and clear everything else. A library that is newer than
 * the caller's header treats the fields it did not know as zero; one that is older
 * accepts a larger struct only if the fields it does not know are all zero
 * (RNNX_STATUS_UNSUPPORTED otherwise; the same for a nonzero reserved field). A
 * struct_size below the size of the first version (this one), or 4 KiB above the
 * library's, is INVALID_ARGUMENT. The same rules hold for rnnx_sequence_desc_t. Pointer
 * rules are those of the C++ API. */
typedef struct rnnx_forward_args {
  size_t struct_size;
  const void* x;       /* required */
  const void* h0;      /* optional, zeros when NULL */
  const void* c0;      /* optional (LSTM only), zeros when NULL */
  const void* weights; /* required */
  void* y;             /* required */
  void* hy;            /* optional output */
  void* cy;            /* optional output (LSTM only) */
  int32_t training;    /* nonzero: keep what backward needs in reserve */
  int32_t reserved0;   /* must be 0 */
  /* The dropout mask is a pure function of (seed, dropout_counter, layer, position); a
   * framework advances the counter once per training call. */
  uint64_t dropout_counter;
  void* workspace; /* NULL: the plan uses (and keeps) its own */
  size_t workspace_size;
  void* reserve; /* required when training */
  size_t reserve_size;
  /* Version 2. The stream a device backend runs the call on (a cudaStream_t; NULL: its
   * default stream); host backends (reference, cpu) run on the calling thread and refuse
   * one (RNNX_STATUS_INVALID_ARGUMENT). */
  void* stream;
  /* Version 3. The weights' version (rnnx::ForwardArgs::weights_version): 0 = unknown (the
   * weights are prepared at every call); otherwise a number the caller changes whenever the
   * values at `weights` change, so that a network keeps what it prepares from them (the cpu's
   * packed recurrent weights, cuDNN's weight space in an inference call on the cuda
   * backend) from one call to the next. */
  uint64_t weights_version;
} rnnx_forward_args_t;

typedef struct rnnx_backward_args {
  size_t struct_size;
  const void* x;            /* required */
  const void* h0;           /* as given to the forward */
  const void* c0;           /* as given to the forward (LSTM only) */
  const void* weights;      /* required */
  const void* dy;           /* optional, zero when NULL */
  const void* dhy;          /* optional, zero when NULL */
  const void* dcy;          /* optional (LSTM only), zero when NULL */
  void* dx;                 /* optional output */
  void* dh0;                /* optional output */
  void* dc0;                /* optional output (LSTM only) */
  void* dweights;           /* optional output, flat layout */
  int32_t weight_grad_mode; /* rnnx_grad_mode_t */
  int32_t reserved0;        /* must be 0 */
  void* workspace;          /* NULL: the plan uses (and keeps) its own */
  size_t workspace_size;
  const void* reserve; /* required: what the training forward of this batch kept */
  size_t reserve_size;
  void* stream; /* version 2: as in rnnx_forward_args_t */
} rnnx_backward_args_t;

static inline rnnx_forward_args_t rnnx_forward_args_init(void) {
  rnnx_forward_args_t a;
  a.struct_size = sizeof(a);
  a.x = NULL;
  a.h0 = NULL;
  a.c0 = NULL;
  a.weights = NULL;
  a.y = NULL;
  a.hy = NULL;
  a.cy = NULL;
  a.training = 0;
  a.reserved0 = 0;
  a.dropout_counter = 0;
  a.workspace = NULL;
  a.workspace_size = 0;
  a.reserve = NULL;
  a.reserve_size = 0;
  a.stream = NULL;
  a.weights_version = 0;
  return a;
}

static inline rnnx_backward_args_t rnnx_backward_args_init(void) {
  rnnx_backward_args_t a;
  a.struct_size = sizeof(a);
  a.x = NULL;
  a.h0 = NULL;
  a.c0 = NULL;
  a.weights = NULL;
  a.dy = NULL;
  a.dhy = NULL;
  a.dcy = NULL;
  a.dx = NULL;
  a.dh0 = NULL;
  a.dc0 = NULL;
  a.dweights = NULL;
  a.weight_grad_mode = RNNX_GRAD_MODE_OVERWRITE;
  a.reserved0 = 0;
  a.workspace = NULL;
  a.workspace_size = 0;
  a.reserve = NULL;
  a.reserve_size = 0;
  a.stream = NULL;
  return a;
}

/* ---- Plan (rnnx::Plan) ------------------------------------------------------------- */

typedef struct rnnx_plan* rnnx_plan_t;

/* Validates the config and the shape, computes the schedule and the buffer sizes, picks
 * the implementation. num_threads 0 = the default (rnnx::max_threads()). On failure *plan is NULL.
 */
RNNX_API rnnx_status_t rnnx_plan_create(rnnx_plan_t* plan, rnnx_config_t config,
                                        const rnnx_sequence_desc_t* shape, rnnx_backend_t backend,
                                        int num_threads);
/* rnnx_plan_create with every option of rnnx::PlanOptions. struct_size rules: those of
 * rnnx_forward_args_t; rnnx_plan_options_init() gives the defaults (cpu, the
 * default thread count, built for training). */
typedef struct rnnx_plan_options {
  size_t struct_size;
  rnnx_backend_t backend;
  int32_t num_threads; /* 0 = the default: OMP_NUM_THREADS, else the CPUs */
  rnnx_plan_purpose_t purpose;
  int32_t reserved0; /* must be 0 */
  /* Version 2: the cpu backend's choices for this plan as text, "isa=avx2 gemm=packed"
   * (rnnx::CpuChoices: isa, gemm, time_loop, directions, input_projection, search; each
   * overrides its environment variable, "auto" = automatic); NULL or "" = none. Any choice on
   * another backend is refused. */
  const char* cpu_choices;
} rnnx_plan_options_t;

static inline rnnx_plan_options_t rnnx_plan_options_init(void) {
  rnnx_plan_options_t o;
  o.struct_size = sizeof(o);
  o.backend = RNNX_BACKEND_CPU;
  o.num_threads = 0;
  o.purpose = RNNX_PLAN_PURPOSE_TRAINING;
  o.reserved0 = 0;
  o.cpu_choices = NULL;
  return o;
}

RNNX_API rnnx_status_t rnnx_plan_create_with_options(rnnx_plan_t* plan, rnnx_config_t config,
                                                     const rnnx_sequence_desc_t* shape,
                                                     const rnnx_plan_options_t* options);
/* Destroying NULL is a no-op that succeeds. */
RNNX_API rnnx_status_t rnnx_plan_destroy(rnnx_plan_t plan);

/* Bytes of scratch one call needs (may be 0), and of the reserve a training forward fills
 * and the backward of the same batch reads. */
RNNX_API rnnx_status_t rnnx_plan_get_workspace_size(rnnx_plan_t plan, rnnx_phase_t phase,
                                                    size_t* bytes);
RNNX_API rnnx_status_t rnnx_plan_get_reserve_size(rnnx_plan_t plan, size_t* bytes);
/* What the workspace and reserve must be aligned to (bytes): 8 on the host backends, 256 on
 * cuda; a misaligned one is refused naming it. */
RNNX_API rnnx_status_t rnnx_plan_get_buffer_alignment(rnnx_plan_t plan, size_t* bytes);

/* T of the padded tensors (packed: num_steps), B, and the real tokens (sum of lengths). */
RNNX_API rnnx_status_t rnnx_plan_get_max_seq_len(rnnx_plan_t plan, int64_t* max_seq_len);
RNNX_API rnnx_status_t rnnx_plan_get_batch(rnnx_plan_t plan, int64_t* batch);
RNNX_API rnnx_status_t rnnx_plan_get_tokens(rnnx_plan_t plan, int64_t* tokens);
/* Element counts, for allocation: x and dx, y and dy, h0/hy/dh0/dhy, c0/cy/dc0/dcy (0 unless
 * LSTM), weights and dweights. */
RNNX_API rnnx_status_t rnnx_plan_get_x_numel(rnnx_plan_t plan, int64_t* numel);
RNNX_API rnnx_status_t rnnx_plan_get_y_numel(rnnx_plan_t plan, int64_t* numel);
RNNX_API rnnx_status_t rnnx_plan_get_h_numel(rnnx_plan_t plan, int64_t* numel);
RNNX_API rnnx_status_t rnnx_plan_get_c_numel(rnnx_plan_t plan, int64_t* numel);
RNNX_API rnnx_status_t rnnx_plan_get_weights_numel(rnnx_plan_t plan, int64_t* numel);

/* What runs ("reference", "cpu:avx512/onednn-sgemm", ...) and the printable problem name
 * ("lstm_l2_bidir_t7_b3_i17_h34_p0_len-mixed"). The strings belong to the plan and stay
 * valid until it is destroyed. */
RNNX_API rnnx_status_t rnnx_plan_get_impl_name(rnnx_plan_t plan, const char** name);
RNNX_API rnnx_status_t rnnx_plan_get_problem_name(rnnx_plan_t plan, const char** name);

/* The weight buffer holds PyTorch's parameters, for each layer k and direction (suffix ""
 * or "_reverse"), in this order: weight_ih_l{k} [G*H, I_k], weight_hh_l{k} [G*H, P'],
 * bias_ih_l{k} [G*H], bias_hh_l{k} [G*H] (with bias), weight_hr_l{k} [P', H] (with
 * projection); G = 1 (RNN), 4 (LSTM, gates i,f,g,o), 3 (GRU, gates r,z,n); I_0 =
 * input_size, I_k = D*P' for k > 0. Each is dense row-major, cols = 1 for biases; offsets
 * are in elements. An unknown name is INVALID_ARGUMENT. */
RNNX_API rnnx_status_t rnnx_plan_get_weight_param(rnnx_plan_t plan, const char* name,
                                                  int64_t* offset, int64_t* rows, int64_t* cols);
RNNX_API rnnx_status_t rnnx_plan_get_weight_param_count(rnnx_plan_t plan, int64_t* count);
/* One layer's ONNX tensors W [D, G*H, I], R [D, G*H, H], B [D, 2*G*H] (NULL: zeros),
 * P [D, 3H] (NULL: zeros), float64, ONNX gate orders (LSTM i,o,f,c; GRU z,r,h; peepholes
 * i,o,f), into the plan's flat weight buffer `weights` (the plan's dtype). */
RNNX_API rnnx_status_t rnnx_plan_import_onnx_layer(rnnx_plan_t plan, int64_t layer, const double* W,
                                                   const double* R, const double* B,
                                                   const double* P, void* weights);
/* index in [0, count); *name belongs to the plan and stays valid until it is destroyed. */
RNNX_API rnnx_status_t rnnx_plan_get_weight_param_by_index(rnnx_plan_t plan, int64_t index,
                                                           const char** name, int64_t* offset,
                                                           int64_t* rows, int64_t* cols);

/* Execute on caller buffers. With a workspace of rnnx_plan_get_workspace_size() bytes no
 * allocation happens. Refused arguments leave every output untouched. */
RNNX_API rnnx_status_t rnnx_plan_forward(rnnx_plan_t plan, const rnnx_forward_args_t* args);
RNNX_API rnnx_status_t rnnx_plan_backward(rnnx_plan_t plan, const rnnx_backward_args_t* args);

/* ---- Network (rnnx::Network) ------------------------------------------------------- */

/* A network is made once for a config and options (NULL: rnnx_plan_options_init()'s
 * defaults); each call names its batch's shape. The config-level work (validation, weight
 * layout, the cpu's algorithm spaces, the search's choice per size class) is done once, and a
 * new set of lengths costs its schedule only: with the caller's workspace, a call on the cpu
 * backend allocates nothing once the network has run a batch of at least as many steps and
 * sequences. Sizes are asked per shape; a call's buffers are those of a plan of the same
 * config and shape, with the same results. Several threads may call one network at once. A
 * backward needs the reserve of a training forward of the same network and shape. */
typedef struct rnnx_network* rnnx_network_t;

RNNX_API rnnx_status_t rnnx_network_create(rnnx_network_t* network, rnnx_config_t config,
                                           const rnnx_plan_options_t* options);
/* Destroying NULL is a no-op that succeeds; no call of the network may be running. */
RNNX_API rnnx_status_t rnnx_network_destroy(rnnx_network_t network);
RNNX_API rnnx_status_t rnnx_network_get_workspace_size(rnnx_network_t network,
                                                       const rnnx_sequence_desc_t* shape,
                                                       rnnx_phase_t phase, size_t* bytes);
RNNX_API rnnx_status_t rnnx_network_get_reserve_size(rnnx_network_t network,
                                                     const rnnx_sequence_desc_t* shape,
                                                     size_t* bytes);
RNNX_API rnnx_status_t rnnx_network_get_weights_numel(rnnx_network_t network, int64_t* numel);
RNNX_API rnnx_status_t rnnx_network_forward(rnnx_network_t network,
                                            const rnnx_sequence_desc_t* shape,
                                            const rnnx_forward_args_t* args);
RNNX_API rnnx_status_t rnnx_network_backward(rnnx_network_t network,
                                             const rnnx_sequence_desc_t* shape,
                                             const rnnx_backward_args_t* args);

#ifdef __cplusplus
}
#endif

#endif /* RNNX_RNNX_H */
