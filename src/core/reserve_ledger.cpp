// The host-side ledger of the reserves written in device memory (reserve_ledger.hpp).
#include "core/reserve_ledger.hpp"

#include <iterator>

namespace rnnx::core {

ReserveLedger& ReserveLedger::instance() {
  static ReserveLedger ledger;
  return ledger;
}

void ReserveLedger::forget_locked(uintptr_t begin, uintptr_t end) {
  // The records are disjoint and ordered by start, so those that overlap [begin, end) are
  // the last one starting before `begin` (if it reaches past it) and those starting inside.
  auto it = entries_.lower_bound(begin);
  if (it != entries_.begin()) {
    const auto before = std::prev(it);
    if (before->first + before->second.bytes > begin) it = before;
  }
  while (it != entries_.end() && it->first < end) it = entries_.erase(it);
}

void ReserveLedger::forget(const void* reserve, size_t bytes) {
  const auto begin = reinterpret_cast<uintptr_t>(reserve);
  const std::lock_guard<std::mutex> lock(mutex_);
  forget_locked(begin, begin + (bytes == 0 ? 1 : bytes));
}

void ReserveLedger::record(const void* reserve, size_t bytes, uint64_t plan_id,
                           uint64_t dropout_counter) {
  const auto begin = reinterpret_cast<uintptr_t>(reserve);
  const std::lock_guard<std::mutex> lock(mutex_);
  forget_locked(begin, begin + (bytes == 0 ? 1 : bytes));
  entries_[begin] = Entry{bytes == 0 ? 1 : bytes, plan_id, dropout_counter};
}

std::optional<ReserveLedger::Entry> ReserveLedger::find(const void* reserve) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto it = entries_.find(reinterpret_cast<uintptr_t>(reserve));
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

size_t ReserveLedger::size() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

}  // namespace rnnx::core
