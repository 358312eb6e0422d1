// Fuzz target: the .npy reader of the rnnx command (tools/rnnx/npy.cpp) on arbitrary bytes:
// truncated, oversized, wrong-dtype, Fortran-order and huge-shape headers. A file it accepts
// must hold exactly shape's elements, convert, and survive a write + read round trip.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz_common.hpp"
#include "npy.hpp"

namespace {

std::string g_round_trip_path;  // one temporary file per process

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  rnnx::fuzz::set_up_process();
  char name[] = "/tmp/rnnx_fuzz_npy_XXXXXX";
  const int fd = mkstemp(name);
  if (fd < 0) rnnx::fuzz::finding("cannot create a temporary file");
  close(fd);
  g_round_trip_path = name;
  std::atexit([] { unlink(g_round_trip_path.c_str()); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rnnx::tool;
  using rnnx::fuzz::finding;
  const std::vector<unsigned char> bytes(data, data + size);
  NpyArray a;
  if (!rnnx::fuzz::refused_cleanly("parse_npy", [&] { a = parse_npy("fuzz.npy", bytes); }))
    return 0;
  const int64_t numel = a.numel();
  if (numel < 0 || static_cast<uint64_t>(numel) * npy_item_size(a.type) != a.data.size()) {
    finding("accepted shape " + shape_string(a.shape) + " does not match " +
            std::to_string(a.data.size()) + " data bytes");
  }
  const std::vector<double> as_double = a.to_double();
  if (static_cast<int64_t>(as_double.size()) != numel) finding("to_double lost elements");
  const bool int_ok = rnnx::fuzz::refused_cleanly("to_int64", [&] { a.to_int64(); });
  if (int_ok == a.is_float()) finding("to_int64 accepted a float array or refused an int one");

  // What was read writes back to the same bytes of data and reads back to the same array.
  rnnx::fuzz::refused_cleanly(
      "write_npy", [&] { write_npy(g_round_trip_path, a.type, a.shape, a.data.data()); });
  NpyArray b;
  if (!rnnx::fuzz::refused_cleanly("read_npy", [&] { b = read_npy(g_round_trip_path); })) {
    finding("a written file was refused on reading");
  }
  if (b.type != a.type || b.shape != a.shape || b.data != a.data) {
    finding("write + read changed the array");
  }
  return 0;
}
