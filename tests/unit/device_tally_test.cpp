#include "core/device_tally.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "format/capture_format.h"

namespace gpuleak::core {
namespace {

using format::Kind;
using format::Op;

// One thread's drained bytes: memory records framed as in a capture.
struct Drain {
  std::string bytes;
  Drain &add(uint64_t ts, Op op, Kind kind, uint64_t size, int16_t device = 0, uint16_t flags = 0, int32_t result = 0) {
    format::MemoryRecord r{};
    r.ts_ns = ts;
    r.op = static_cast<uint8_t>(op);
    r.kind = static_cast<uint8_t>(kind);
    r.size = size;
    r.device = device;
    r.flags = flags;
    r.result = result;
    format::RecordHeader h{sizeof r, static_cast<uint16_t>(format::RecordType::kMemory), 0};
    bytes.append(reinterpret_cast<const char *>(&h), sizeof h);
    bytes.append(reinterpret_cast<const char *>(&r), sizeof r);
    return *this;
  }
};

void feed(DeviceTally &t, const std::string &bytes) {
  t.add_drained(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
}

TEST(DeviceTally, CountsLiveAndPeakPerDevice) {
  DeviceTally t;
  feed(t, Drain()
              .add(1, Op::kAlloc, Kind::kDevice, 100)
              .add(2, Op::kAlloc, Kind::kAsync, 50, 1)
              .add(3, Op::kFree, Kind::kDevice, 100)
              .add(4, Op::kAlloc, Kind::kHostPinned, 7)
              .bytes);
  EXPECT_EQ(t.device_live(0), 0u);
  EXPECT_EQ(t.device_peak(0), 100u);
  EXPECT_EQ(t.device_live(1), 50u);
  EXPECT_EQ(t.total_live(), 50u);
  EXPECT_EQ(t.total_peak(), 150u);
  EXPECT_EQ(t.host_live(), 7u);
}

// Two threads' records reach one drain one thread after the other: thread A allocates at 1 and 3,
// thread B frees A's first block at 2. In time order the device never holds more than 100 bytes.
TEST(DeviceTally, CountsOneDrainInTimeOrder) {
  DeviceTally t;
  Drain a, b;
  a.add(1, Op::kAlloc, Kind::kDevice, 100).add(3, Op::kAlloc, Kind::kDevice, 100);
  b.add(2, Op::kFree, Kind::kDevice, 100);
  feed(t, a.bytes + b.bytes);
  EXPECT_EQ(t.device_live(0), 100u);
  EXPECT_EQ(t.device_peak(0), 100u);
  EXPECT_EQ(t.total_peak(), 100u);
}

TEST(DeviceTally, IgnoresWhatTheProgramDoesNotOwn) {
  DeviceTally t;
  feed(t, Drain()
              .add(1, Op::kAlloc, Kind::kAsync, 10, 0, format::kFlagGraphReservation)
              .add(2, Op::kAlloc, Kind::kImported, 20)
              .add(3, Op::kAlloc, Kind::kDevice, 30, 0, 0, 2)  // out of memory
              .add(4, Op::kAlloc, Kind::kDevice, 40)
              .add(5, Op::kFree, Kind::kDevice, 0, 0, format::kFlagUnknownPointer)
              .add(6, Op::kFree, Kind::kDevice, 40, 0, 0, 1)  // the free failed: still live
              .bytes);
  EXPECT_EQ(t.device_live(0), 40u);
  EXPECT_EQ(t.device_peak(0), 40u);
}

TEST(DeviceTally, ContextResetEmptiesItsDevice) {
  DeviceTally t;
  feed(t, Drain()
              .add(1, Op::kAlloc, Kind::kDevice, 10, 0)
              .add(2, Op::kAlloc, Kind::kDevice, 20, 1)
              .add(3, Op::kContextReset, Kind::kDevice, 0, 0)
              .bytes);
  EXPECT_EQ(t.device_live(0), 0u);
  EXPECT_EQ(t.device_live(1), 20u);
  EXPECT_EQ(t.total_live(), 20u);
  EXPECT_EQ(t.total_peak(), 30u);
}

}  // namespace
}  // namespace gpuleak::core
