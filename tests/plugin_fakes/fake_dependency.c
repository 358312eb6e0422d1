/* A library without the plugin entry (tests/test_backend_plugin.cpp: "not an rnnx backend
 * plugin"), and the dependency that the fake plugin needing_missing cannot find at run time. */
__attribute__((visibility("default"))) int rnnx_fake_dependency(void) {
  return 1;
}
