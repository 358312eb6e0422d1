// What ties a backward to its training forward. Every reserve starts with a 64-byte header
// (magic, the plan's fingerprint, the dropout counter) that a backward in host memory reads.
// Reading it from device memory is a synchronising copy (the host stalls until the forward
// has run, at every backward), so for device memory the process also keeps a ledger on the
// host: which reserves the training forwards wrote (start, size) for which plan and counter.
// A backward whose reserve starts where a forward wrote one takes the plan and counter from
// the ledger; one that the ledger does not know (a copy of a reserve at a new address) reads
// the header, as on the host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

namespace rnnx::core {

constexpr uint64_t kReserveMagic = 0x72726e7852535631ull;  // "rrnxRSV1"
struct ReserveHeader {
  uint64_t magic;
  uint64_t plan_id;
  uint64_t dropout_counter;
  uint64_t pad[5];
};
static_assert(sizeof(ReserveHeader) == 64, "header keeps the body 64-byte aligned");

class ReserveLedger {
 public:
  struct Entry {
    size_t bytes = 0;
    uint64_t plan_id = 0;
    uint64_t dropout_counter = 0;
  };
  // The process's ledger (addresses are unique across devices in CUDA's unified addressing).
  static ReserveLedger& instance();

  // A training forward starts writing [reserve, reserve + bytes): what the ledger held there
  // (any record that overlaps the range) is no longer true.
  void forget(const void* reserve, size_t bytes);
  // It finished: the range holds a reserve of `plan_id` made with `dropout_counter`.
  void record(const void* reserve, size_t bytes, uint64_t plan_id, uint64_t dropout_counter);
  // The record of a reserve that starts at `reserve`, if any.
  std::optional<Entry> find(const void* reserve) const;
  size_t size() const;

 private:
  void forget_locked(uintptr_t begin, uintptr_t end);
  mutable std::mutex mutex_;
  std::map<uintptr_t, Entry> entries_;  // by start address; the ranges never overlap
};

}  // namespace rnnx::core
