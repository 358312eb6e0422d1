// A fake GPU behind the cuda backend's call table (src/cuda/call_table.hpp): host memory,
// handles and descriptors that remember what was set on them, cuDNN's documented weight
// space, every call recorded by name, no kernel run. With it CI, which has no GPU, runs the
// backend's host side: the sequence of calls a ragged training step makes (what it
// allocates, creates and waits for), leaks, and every failing call reported by name.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace rnnx_test {

class FakeDevice {
 public:
  FakeDevice();  // installs its table; one at a time
  ~FakeDevice();
  FakeDevice(const FakeDevice&) = delete;
  FakeDevice& operator=(const FakeDevice&) = delete;

  // Every call (kernels as "kernel:<name>", cuBLAS's as "cublas<Name>") in order, since
  // construction or the last clear_log().
  const std::vector<std::string>& log() const;
  void clear_log();
  // The weight space each cudnnRNNForward in the log was given, in order.
  std::vector<const void*> weight_spaces() const;
  // How many times each was called in the log.
  std::map<std::string, int64_t> counts() const;
  // Device memory and handles (cuDNN's, streams, events, descriptors) alive now.
  int64_t live_allocations() const;
  int64_t live_objects() const;
  // The call with this index in the log (counting from now) fails with the library's
  // error status; -1: none. Calls that return no status cannot fail.
  void fail_at(int64_t index);
  // Whether cudaStreamIsCapturing says every stream is capturing (a CUDA graph).
  void capturing(bool on);
  // Whether cudaEventQuery says cudaErrorNotReady (a device behind the host), else success.
  void events_pending(bool pending);
  // Problems the fake saw (a free of memory it never gave, a copy outside an allocation).
  const std::vector<std::string>& misuse() const;
};

// Whether the call `name` returns a status the backend must check: everything but kernel
// launches (their status is the next cudaGetLastError's) and cudaGetLastError itself.
bool returns_checked_status(const std::string& name);
// Whether `name` releases something (cudaFree, the destroyers): run by destructors, which
// cannot throw, so a failure is reported on stderr and counted (rnnx::cuda::check_release).
bool is_release(const std::string& name);

}  // namespace rnnx_test
