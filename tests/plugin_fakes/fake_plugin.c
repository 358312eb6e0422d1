/* Fake backend plugins for tests/test_backend_plugin.cpp: each build of this file breaks one
 * rule of the loader (src/core/backend_plugin.cpp) or, with FAKE_BACKEND "cuda" and the right
 * versions, is accepted and refuses every plan as a GPU-less machine's plugin does, so that
 * the suite sees an error cross the C boundary. Built as C: the boundary is C. */
#include <stdio.h>
#include <string.h>

#include "core/backend_plugin_abi.h"

#ifndef FAKE_ABI_VERSION
#define FAKE_ABI_VERSION RNNX_PLUGIN_ABI_VERSION
#endif
#ifndef FAKE_RNNX_VERSION
#define FAKE_RNNX_VERSION RNNX_TEST_VERSION
#endif
#ifndef FAKE_BACKEND
#define FAKE_BACKEND "cuda"
#endif

static int32_t fail(rnnx_plugin_error* error, const char* message) {
  snprintf(error->message, sizeof error->message, "%s", message);
  return 2; /* rnnx::Status::unsupported */
}

#ifdef FAKE_NEEDS_DEPENDENCY
/* A use, so that the linker keeps the dependency (Debian links --as-needed). */
int rnnx_fake_dependency(void);
#else
static int rnnx_fake_dependency(void) {
  return 0;
}
#endif

static int32_t describe(char* text, size_t size, rnnx_plugin_error* error) {
  (void)error;
  (void)rnnx_fake_dependency();
  snprintf(text, size, "fake libraries 1.2.3");
  return RNNX_PLUGIN_OK;
}

static int32_t plan_create(const rnnx_plugin_plan_desc* desc, void** plan,
                           rnnx_plugin_error* error) {
  (void)plan;
  /* What crossed, so the suite can check it arrived: the config's text and the lengths. */
  char message[1024];
  snprintf(message, sizeof message,
           "backend cuda: no CUDA device (fake plugin; config %.600s; %zu lengths, first %lld)",
           desc->config, desc->num_lengths,
           desc->num_lengths > 0 ? (long long)desc->lengths[0] : -1LL);
  return fail(error, message);
}

static void plan_destroy(void* plan) {
  (void)plan;
}

static int32_t memory_allocate(size_t bytes, const char* what, const char* part, void** out,
                               rnnx_plugin_error* error) {
  (void)bytes, (void)what, (void)part, (void)out;
  return fail(error, "fake plugin: no memory");
}

static void memory_free(void* p) {
  (void)p;
}

/* The functions a plan never reaches here (plan_create refuses) stay NULL. */
static const rnnx_backend_plugin table = {
    .abi_version = FAKE_ABI_VERSION,
    .rnnx_version = FAKE_RNNX_VERSION,
    .backend = FAKE_BACKEND,
    .built_with = "fake plugin",
    .takes_stream = 1,
    .on_device = 1,
    .describe = &describe,
    .plan_create = &plan_create,
    .plan_destroy = &plan_destroy,
    .memory_allocate = &memory_allocate,
    .memory_free = &memory_free,
};

__attribute__((visibility("default"))) const rnnx_backend_plugin* rnnx_backend_plugin_entry(void) {
  return &table;
}
