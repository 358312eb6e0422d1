// The host-side ledger of device reserves (core/reserve_ledger.hpp): what a training forward
// records, what a backward finds, and that a forward writing over any part of a recorded
// reserve makes the ledger forget it (so a stale record never vouches for other bytes).
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "core/reserve_ledger.hpp"

namespace rnnx_test {
namespace {

using rnnx::core::ReserveLedger;

// Addresses that no allocation of this process holds (the ledger only compares them).
const char* at(uintptr_t offset) {
  return reinterpret_cast<const char*>(uintptr_t{0x7f0000000000} + offset);
}

TEST(ReserveLedger, FindsWhatAForwardRecordedAtItsStartOnly) {
  ReserveLedger ledger;
  EXPECT_FALSE(ledger.find(at(0)));
  ledger.record(at(0), 1000, 11, 3);
  const auto e = ledger.find(at(0));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->plan_id, 11u);
  EXPECT_EQ(e->dropout_counter, 3u);
  EXPECT_EQ(e->bytes, 1000u);
  EXPECT_FALSE(ledger.find(at(64))) << "inside a reserve is not a reserve";
  ledger.record(at(0), 1000, 11, 4);  // the next step's forward into the same buffer
  EXPECT_EQ(ledger.find(at(0))->dropout_counter, 4u);
  EXPECT_EQ(ledger.size(), 1u);
}

TEST(ReserveLedger, AForwardOverAnyPartForgetsTheRecordsItOverlaps) {
  ReserveLedger ledger;
  ledger.record(at(0), 100, 1, 0);
  ledger.record(at(100), 100, 2, 0);  // adjacent: both stay
  ledger.record(at(300), 100, 3, 0);
  EXPECT_EQ(ledger.size(), 3u);
  ledger.forget(at(150), 200);  // from inside the second into the third
  EXPECT_TRUE(ledger.find(at(0)));
  EXPECT_FALSE(ledger.find(at(100)));
  EXPECT_FALSE(ledger.find(at(300)));
  ledger.record(at(50), 10, 4, 0);  // inside the first: it goes
  EXPECT_FALSE(ledger.find(at(0)));
  EXPECT_EQ(ledger.find(at(50))->plan_id, 4u);
  ledger.forget(at(60), 1);  // just past the end of the record at 50: it stays
  EXPECT_TRUE(ledger.find(at(50)));
  ledger.forget(at(59), 0);  // a forward of an empty batch still owns its first byte
  EXPECT_FALSE(ledger.find(at(59)));
  EXPECT_FALSE(ledger.find(at(50)));
}

// Training threads record and look up their own reserves at once (TSan runs this).
TEST(ReserveLedger, ThreadsRecordAndFindConcurrently) {
  ReserveLedger ledger;
  std::vector<std::thread> threads;
  for (uintptr_t t = 0; t < 4; ++t) {
    threads.emplace_back([&ledger, t] {
      for (uint64_t step = 0; step < 500; ++step) {
        ledger.forget(at(t * 4096), 4096);
        ledger.record(at(t * 4096), 4096, 100 + t, step);
        const auto e = ledger.find(at(t * 4096));
        ASSERT_TRUE(e);
        ASSERT_EQ(e->plan_id, 100 + t);
        ASSERT_EQ(e->dropout_counter, step);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(ledger.size(), 4u);
}

}  // namespace
}  // namespace rnnx_test
