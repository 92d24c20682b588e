// The recorder's own live bytes (core/live_tally.h): what the at-exit line, the Stats record and
// the NVML samples say, kept from the drained records with no help from the hooks.
#include "core/live_tally.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace gpuleak::core {
namespace {

using format::Kind;
using format::MemoryRecord;
using format::Op;

constexpr uint8_t kDevicePtr = static_cast<uint8_t>(format::AddressSpace::kDevicePtr) + 1;
constexpr uint8_t kHost = static_cast<uint8_t>(format::AddressSpace::kHost) + 1;

MemoryRecord alloc(uint64_t ts, uint64_t address, uint64_t size, int16_t device = 0, Kind kind = Kind::kDevice,
                   uint8_t space = kDevicePtr) {
  MemoryRecord r{};
  r.ts_ns = ts;
  r.address = address;
  r.size = size;
  r.op = static_cast<uint8_t>(Op::kAlloc);
  r.kind = static_cast<uint8_t>(kind);
  r.device = device;
  r.space = space;
  return r;
}

MemoryRecord free_of(uint64_t ts, uint64_t address, uint8_t space = kDevicePtr) {
  MemoryRecord r{};
  r.ts_ns = ts;
  r.address = address;
  r.op = static_cast<uint8_t>(Op::kFree);
  r.kind = static_cast<uint8_t>(Kind::kDevice);
  r.device = -1;
  r.space = space;
  return r;
}

// One drain's bytes: whole records in capture framing.
std::string drained(std::initializer_list<MemoryRecord> records) {
  std::string out;
  for (const MemoryRecord &r : records) {
    format::RecordHeader h{sizeof r, static_cast<uint16_t>(format::RecordType::kMemory), 0};
    out.append(reinterpret_cast<const char *>(&h), sizeof h);
    out.append(reinterpret_cast<const char *>(&r), sizeof r);
  }
  return out;
}

void feed(LiveTally &t, const std::string &bytes) {
  t.add_drained(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
}

TEST(LiveTally, CountsLiveAndPeakPerDevice) {
  LiveTally t;
  feed(t, drained({alloc(1, 0x1000, 100, 0), alloc(2, 0x2000, 50, 1), alloc(3, 0x3000, 7, 0, Kind::kHostPinned, kHost),
                   free_of(4, 0x1000)}));
  EXPECT_EQ(t.device_live(0), 0u);
  EXPECT_EQ(t.device_peak(0), 100u);
  EXPECT_EQ(t.device_live(1), 50u);
  EXPECT_EQ(t.total_live(), 50u);
  EXPECT_EQ(t.total_peak(), 150u);
  EXPECT_EQ(t.host_live(), 7u);
  EXPECT_EQ(t.live_count(), 2u);
}

TEST(LiveTally, TakesOneDrainInTimeOrder) {
  // Two threads' records, each in its own order, the second thread's free before the first's
  // allocation in time: the peak is the highest point in time order (100), not the drain's order.
  LiveTally t;
  feed(t, drained({alloc(30, 0x2000, 100), alloc(10, 0x1000, 100), free_of(20, 0x1000)}));
  EXPECT_EQ(t.device_peak(0), 100u);
  EXPECT_EQ(t.device_live(0), 100u);
}

TEST(LiveTally, AFreeAppendedAfterTheReuseOfItsAddressIsConsumed) {
  // Thread 1 enters its free of 0x1000 at 20 and appends it after the drain; thread 2 re-uses
  // the address at 30 and that drain takes it. The re-use ends the old allocation; the late free
  // (older than the entry) must not end the new one.
  LiveTally t;
  feed(t, drained({alloc(10, 0x1000, 100)}));
  feed(t, drained({alloc(30, 0x1000, 200)}));
  EXPECT_EQ(t.device_live(0), 200u);
  feed(t, drained({free_of(20, 0x1000)}));
  EXPECT_EQ(t.device_live(0), 200u);
  EXPECT_EQ(t.live_count(), 1u);
  feed(t, drained({free_of(40, 0x1000)}));
  EXPECT_EQ(t.device_live(0), 0u);
  EXPECT_EQ(t.live_count(), 0u);
}

TEST(LiveTally, AnAllocationDrainedAfterANewerOneAtItsAddressEndedBeforeIt) {
  LiveTally t;
  feed(t, drained({alloc(30, 0x1000, 200)}));
  feed(t, drained({alloc(10, 0x1000, 100)}));  // its free (at 20) is still to come
  EXPECT_EQ(t.device_live(0), 200u);
  feed(t, drained({free_of(20, 0x1000)}));
  EXPECT_EQ(t.device_live(0), 200u);
  feed(t, drained({free_of(40, 0x1000)}));
  EXPECT_EQ(t.device_live(0), 0u);
}

TEST(LiveTally, IgnoresWhatTheProgramDoesNotOwn) {
  LiveTally t;
  MemoryRecord graph = alloc(1, 0x1000, 100);
  graph.flags = format::kFlagGraphReservation;
  MemoryRecord failed = alloc(2, 0x2000, 100);
  failed.result = 2;
  MemoryRecord imported = alloc(3, 0x3000, 100, 0, Kind::kImported);
  feed(t, drained({graph, failed, imported, free_of(4, 0x9000)}));
  EXPECT_EQ(t.total_live(), 0u);
  EXPECT_EQ(t.total_peak(), 0u);
}

TEST(LiveTally, AContextResetEmptiesItsDevice) {
  LiveTally t;
  MemoryRecord reset{};
  reset.ts_ns = 3;
  reset.op = static_cast<uint8_t>(Op::kContextReset);
  reset.device = 1;
  feed(t, drained({alloc(1, 0x1000, 100, 1), alloc(2, 0x2000, 30, 0), reset}));
  EXPECT_EQ(t.device_live(1), 0u);
  EXPECT_EQ(t.device_live(0), 30u);
  EXPECT_EQ(t.total_live(), 30u);
  EXPECT_EQ(t.live_count(), 1u);
}

TEST(LiveTally, TheSignalTimePathNeverGrowsItsTable) {
  LiveTally t;
  t.reserve();
  uint64_t made = 0;
  for (uint64_t i = 0; i < 100000; ++i) t.add_now(alloc(i, 0x1000 + i * 64, 1)), made = t.live_count();
  EXPECT_GE(made, 2048u);  // reserve()'s room, at least
  EXPECT_LT(made, 100000u);
  EXPECT_EQ(t.device_live(0), made);
}

}  // namespace
}  // namespace gpuleak::core
