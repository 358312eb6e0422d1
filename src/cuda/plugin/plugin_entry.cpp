// The cuda backend as a backend plugin (librnnx_cuda.so; core/backend_plugin_abi.h): the one
// exported function hands librnnx a table of C functions over this library's own copy of
// core and the cuda backend. Each function catches everything: an rnnx::Error crosses as its
// status and message, std::bad_alloc as out_of_memory, anything else as internal.
#include <atomic>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/backend_plugin_abi.h"
#include "core/backend_registry.hpp"
#include "core/schedule.hpp"
#include "cuda/cuda_api.hpp"
#include "cuda/plugin/plugin_describe.hpp"
#include "rnnx/config_fields.hpp"
#include "rnnx/error.hpp"
#include "rnnx/version.hpp"

namespace rnnx::cuda {
namespace {

void put(char* out, size_t size, const std::string& text) {
  if (size == 0) return;
  const size_t n = text.size() < size - 1 ? text.size() : size - 1;
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

// Runs f, turning what it throws into a status and a message.
template <typename F>
int32_t guarded(rnnx_plugin_error* error, F&& f) noexcept {
  try {
    f();
    return RNNX_PLUGIN_OK;
  } catch (const Error& e) {
    put(error->message, sizeof error->message, e.what());
    return static_cast<int32_t>(e.code());
  } catch (const std::bad_alloc&) {
    put(error->message, sizeof error->message, "backend cuda (plugin): out of host memory");
    return static_cast<int32_t>(Status::out_of_memory);
  } catch (const std::exception& e) {
    put(error->message, sizeof error->message, std::string("backend cuda (plugin): ") + e.what());
  } catch (...) {
    put(error->message, sizeof error->message, "backend cuda (plugin): unknown exception");
  }
  return static_cast<int32_t>(Status::internal);
}

// A plan as the plugin keeps it: the context rebuilt from what crossed, and the backend built
// on it (which keeps a reference to the context, so both live here together).
struct PluginPlan {
  PlanContext ctx;
  std::unique_ptr<BackendImpl> impl;
};

std::vector<int64_t> span(const int64_t* p, size_t n) {
  return p == nullptr ? std::vector<int64_t>{} : std::vector<int64_t>(p, p + n);
}

int32_t plan_create(const rnnx_plugin_plan_desc* d, void** plan, rnnx_plugin_error* error) {
  return guarded(error, [&] {
    SequenceShape shape;
    shape.layout = static_cast<Layout>(d->layout);
    shape.max_seq_len = d->max_seq_len;
    shape.batch = d->batch;
    shape.lengths = span(d->lengths, d->num_lengths);
    shape.batch_sizes = span(d->batch_sizes, d->num_batch_sizes);
    shape.sorted_indices = span(d->sorted_indices, d->num_sorted_indices);
    PlanOptions options;
    options.backend = static_cast<Backend>(d->backend);
    options.num_threads = d->num_threads;
    options.purpose = static_cast<PlanPurpose>(d->purpose);
    options.cpu = cpu_choices_from_string(d->cpu_choices);
    const Config config = config_from_string(d->config);
    auto p = std::make_unique<PluginPlan>(
        PluginPlan{PlanContext{config, shape, core::make_schedule(shape), WeightLayout(config),
                               options, static_cast<MathMode>(d->math)},
                   nullptr});
    p->impl = core::make_backend(p->ctx);
    *plan = p.release();
  });
}

PluginPlan& of(void* plan) {
  return *static_cast<PluginPlan*>(plan);
}

void plan_destroy(void* plan) {
  delete static_cast<PluginPlan*>(plan);
}

int32_t plan_name(void* plan, char* text, size_t size, rnnx_plugin_error* error) {
  return guarded(error, [&] { put(text, size, of(plan).impl->name()); });
}

int32_t plan_sizes(void* plan, rnnx_plugin_sizes* s, rnnx_plugin_error* error) {
  return guarded(error, [&] {
    const BackendImpl& impl = *of(plan).impl;
    s->forward_workspace_inference = impl.forward_workspace_size(false);
    s->forward_workspace_training = impl.forward_workspace_size(true);
    s->backward_workspace = impl.backward_workspace_size();
    s->reserve = impl.reserve_size();
  });
}

int32_t plan_forward(void* plan, const rnnx_plugin_forward_args* a, void* workspace,
                     rnnx_plugin_error* error) {
  return guarded(error, [&] {
    ForwardArgs f;
    f.x = a->x;
    f.h0 = a->h0;
    f.c0 = a->c0;
    f.weights = a->weights;
    f.y = a->y;
    f.hy = a->hy;
    f.cy = a->cy;
    f.training = a->training != 0;
    f.dropout_counter = a->dropout_counter;
    f.workspace = a->workspace;
    f.workspace_size = a->workspace_size;
    f.reserve = a->reserve;
    f.reserve_size = a->reserve_size;
    f.stream = a->stream;
    of(plan).impl->forward(f, workspace);
  });
}

int32_t plan_backward(void* plan, const rnnx_plugin_backward_args* a, void* workspace,
                      uint64_t dropout_counter, rnnx_plugin_error* error) {
  return guarded(error, [&] {
    BackwardArgs b;
    b.x = a->x;
    b.h0 = a->h0;
    b.c0 = a->c0;
    b.weights = a->weights;
    b.dy = a->dy;
    b.dhy = a->dhy;
    b.dcy = a->dcy;
    b.dx = a->dx;
    b.dh0 = a->dh0;
    b.dc0 = a->dc0;
    b.dweights = a->dweights;
    b.weight_grad_mode = static_cast<GradMode>(a->weight_grad_mode);
    b.workspace = a->workspace;
    b.workspace_size = a->workspace_size;
    b.reserve = a->reserve;
    b.reserve_size = a->reserve_size;
    b.stream = a->stream;
    of(plan).impl->backward(b, workspace, dropout_counter);
  });
}

// device_memory()'s buffers cross as raw pointers; every one is freed by the same function,
// which the first allocation tells (atomic: several threads may allocate at once).
std::atomic<void (*)(void*)> g_free_device{nullptr};

int32_t memory_allocate(size_t bytes, const char* what, const char* part, void** out,
                        rnnx_plugin_error* error) {
  return guarded(error, [&] {
    core::Buffer b = device_memory().allocate(bytes, what, part);
    g_free_device.store(b.get_deleter().release);
    *out = b.release();
  });
}

void memory_free(void* p) {
  void (*release)(void*) = g_free_device.load();
  if (p != nullptr && release != nullptr) release(p);
}

int32_t memory_zero(void* dst, size_t bytes, void* stream, rnnx_plugin_error* error) {
  return guarded(error, [&] { device_memory().zero(dst, bytes, stream); });
}

int32_t memory_copy_from_host(void* dst, const void* src, size_t bytes, void* stream,
                              rnnx_plugin_error* error) {
  return guarded(error, [&] { device_memory().copy_from_host(dst, src, bytes, stream); });
}

int32_t memory_copy_to_host(void* dst, const void* src, size_t bytes, void* stream,
                            rnnx_plugin_error* error) {
  return guarded(error, [&] { device_memory().copy_to_host(dst, src, bytes, stream); });
}

int32_t memory_wait(void* stream, rnnx_plugin_error* error) {
  return guarded(error, [&] { device_memory().wait(stream); });
}

int32_t describe(char* text, size_t size, rnnx_plugin_error* error) {
  return guarded(error, [&] { put(text, size, describe_libraries()); });
}

#if defined(__clang__)
#define RNNX_PLUGIN_COMPILER "clang " __clang_version__
#else
#define RNNX_PLUGIN_COMPILER "g++ " __VERSION__
#endif

const rnnx_backend_plugin kTable = {
    .abi_version = RNNX_PLUGIN_ABI_VERSION,
    .rnnx_version = RNNX_VERSION_STRING,
    .backend = "cuda",
    .built_with = "plugin built by " RNNX_PLUGIN_COMPILER,
    .takes_stream = 1,  // calls run on the caller's CUDA stream
    .on_device = 1,
    .describe = &describe,
    .plan_create = &plan_create,
    .plan_destroy = &plan_destroy,
    .plan_name = &plan_name,
    .plan_sizes = &plan_sizes,
    .plan_forward = &plan_forward,
    .plan_backward = &plan_backward,
    .memory_allocate = &memory_allocate,
    .memory_free = &memory_free,
    .memory_zero = &memory_zero,
    .memory_copy_from_host = &memory_copy_from_host,
    .memory_copy_to_host = &memory_copy_to_host,
    .memory_wait = &memory_wait,
};

}  // namespace
}  // namespace rnnx::cuda

// The one symbol the plugin exports (cmake/librnnx_cuda.map).
extern "C" __attribute__((visibility("default"))) const rnnx_backend_plugin*
rnnx_backend_plugin_entry(void) {
  return &rnnx::cuda::kTable;
}
