/* The C boundary between librnnx and a backend plugin (a shared library that brings a
 * backend librnnx was built without: librnnx_cuda.so, docs/packaging.md). The two sides may
 * be built with different C++ standard libraries (the wheel's librnnx with static libc++,
 * the plugin with nvcc and g++), so only C types cross: no std:: type, no exception, no C++
 * object. Every call that can fail returns a status (rnnx::Status's values) and, when not
 * RNNX_PLUGIN_OK, fills the message buffer; the loader turns that into rnnx::Error.
 *
 * The plugin exports one symbol, RNNX_PLUGIN_ENTRY_SYMBOL, returning its table. The table's
 * first two members never move: the loader reads abi_version and rnnx_version before
 * anything else, and refuses a plugin that differs in either (enums cross as their integer
 * values, which only the same rnnx version guarantees). Any change to this file that is not
 * a comment raises RNNX_PLUGIN_ABI_VERSION. */
#ifndef RNNX_CORE_BACKEND_PLUGIN_ABI_H
#define RNNX_CORE_BACKEND_PLUGIN_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RNNX_PLUGIN_ABI_VERSION 1u
#define RNNX_PLUGIN_ENTRY_SYMBOL "rnnx_backend_plugin_entry"
#define RNNX_PLUGIN_OK 0

/* An error's text; the plugin truncates what does not fit. */
typedef struct rnnx_plugin_error {
  char message[2048];
} rnnx_plugin_error;

/* What a plan is built from, as PlanContext holds it on the loader's side: the plugin
 * rebuilds the schedule and the weight layout with its own copy of core. Enums are the
 * integer values of rnnx's enums; texts are rnnx's own text forms (to_string(Config),
 * to_string(CpuChoices)). Arrays are read during plan_create only. */
typedef struct rnnx_plugin_plan_desc {
  const char* config; /* to_string(Config): every field, exact */
  int32_t layout;     /* rnnx::Layout */
  int64_t max_seq_len;
  int64_t batch;
  const int64_t* lengths;
  size_t num_lengths;
  const int64_t* batch_sizes;
  size_t num_batch_sizes;
  const int64_t* sorted_indices;
  size_t num_sorted_indices;
  int32_t backend; /* rnnx::Backend */
  int32_t num_threads;
  int32_t purpose;         /* rnnx::PlanPurpose */
  const char* cpu_choices; /* to_string(CpuChoices) */
  int32_t math;            /* rnnx::MathMode, resolved by the loader's side */
} rnnx_plugin_plan_desc;

/* rnnx::ForwardArgs and rnnx::BackwardArgs, member for member. */
typedef struct rnnx_plugin_forward_args {
  const void* x;
  const void* h0;
  const void* c0;
  const void* weights;
  void* y;
  void* hy;
  void* cy;
  int32_t training;
  uint64_t dropout_counter;
  void* workspace;
  size_t workspace_size;
  void* reserve;
  size_t reserve_size;
  void* stream;
} rnnx_plugin_forward_args;

typedef struct rnnx_plugin_backward_args {
  const void* x;
  const void* h0;
  const void* c0;
  const void* weights;
  const void* dy;
  const void* dhy;
  const void* dcy;
  void* dx;
  void* dh0;
  void* dc0;
  void* dweights;
  int32_t weight_grad_mode; /* rnnx::GradMode */
  void* workspace;
  size_t workspace_size;
  const void* reserve;
  size_t reserve_size;
  void* stream;
} rnnx_plugin_backward_args;

typedef struct rnnx_plugin_sizes {
  size_t forward_workspace_inference;
  size_t forward_workspace_training;
  size_t backward_workspace;
  size_t reserve;
} rnnx_plugin_sizes;

typedef struct rnnx_backend_plugin {
  uint32_t abi_version;     /* RNNX_PLUGIN_ABI_VERSION of the plugin's build */
  const char* rnnx_version; /* RNNX_VERSION_STRING of the plugin's build */
  const char* backend;      /* the backend's name: "cuda" */
  const char* built_with;   /* compilers and libraries, for build_info() */
  int32_t takes_stream;     /* BackendImpl::takes_stream() */
  int32_t on_device;        /* core::Memory::on_device() */

  /* What the backend's run-time libraries say about themselves (versions, where they were
   * loaded from), for build_info(). */
  int32_t (*describe)(char* text, size_t size, rnnx_plugin_error* error);

  /* A plan: an opaque handle owned by the plugin. */
  int32_t (*plan_create)(const rnnx_plugin_plan_desc* desc, void** plan, rnnx_plugin_error* error);
  void (*plan_destroy)(void* plan);
  int32_t (*plan_name)(void* plan, char* text, size_t size, rnnx_plugin_error* error);
  int32_t (*plan_sizes)(void* plan, rnnx_plugin_sizes* sizes, rnnx_plugin_error* error);
  int32_t (*plan_forward)(void* plan, const rnnx_plugin_forward_args* args, void* workspace,
                          rnnx_plugin_error* error);
  int32_t (*plan_backward)(void* plan, const rnnx_plugin_backward_args* args, void* workspace,
                           uint64_t dropout_counter, rnnx_plugin_error* error);

  /* The backend's memory (core::Memory); `what` and `part` name the buffer in an error. */
  int32_t (*memory_allocate)(size_t bytes, const char* what, const char* part, void** out,
                             rnnx_plugin_error* error);
  void (*memory_free)(void* p);
  int32_t (*memory_zero)(void* dst, size_t bytes, void* stream, rnnx_plugin_error* error);
  int32_t (*memory_copy_from_host)(void* dst, const void* host_src, size_t bytes, void* stream,
                                   rnnx_plugin_error* error);
  int32_t (*memory_copy_to_host)(void* host_dst, const void* src, size_t bytes, void* stream,
                                 rnnx_plugin_error* error);
  int32_t (*memory_wait)(void* stream, rnnx_plugin_error* error);
} rnnx_backend_plugin;

typedef const rnnx_backend_plugin* (*rnnx_backend_plugin_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* RNNX_CORE_BACKEND_PLUGIN_ABI_H */
