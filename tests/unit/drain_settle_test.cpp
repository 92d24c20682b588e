// The drain's half of a memory record (src/core/drain_settle.cpp), on rings filled by hand: frees
// get their sizes from the live table in time order across threads, and an allocation at the
// address of a free still under way waits, with everything after it in time, for the free.
#include <gtest/gtest.h>

#include <vector>

#include "core/recorder_state.h"

namespace gpuleak::core {
namespace {

using format::Kind;
using format::MemoryRecord;
using format::Op;

constexpr uint64_t kSecond = 1000000000ull;

MemoryRecord record(Op op, uint64_t ts, uint64_t address, uint64_t size, uint16_t ring) {
  MemoryRecord r{};
  r.ts_ns = ts;
  r.address = address;
  r.size = size;
  r.op = static_cast<uint8_t>(op);
  r.kind = static_cast<uint8_t>(Kind::kAsync);
  r.device = op == Op::kFree ? -1 : 0;
  r.reserved = kRingMark | ring | static_cast<uint16_t>(Space::kDevicePtr);
  return r;
}
MemoryRecord alloc(uint64_t ts, uint64_t address, uint64_t size) {
  return record(Op::kAlloc, ts, address, size, kRingInsert | kRingOnDevice);
}
MemoryRecord free_of(uint64_t ts, uint64_t address) { return record(Op::kFree, ts, address, 0, kRingFree); }

void append(ThreadBuffer *b, const MemoryRecord &r) {
  const format::RecordHeader h{sizeof r, static_cast<uint16_t>(format::RecordType::kMemory), 0};
  ASSERT_TRUE(buffer_append(b, &h, sizeof h, &r, sizeof r));
}

// The records a drain lets out of `b`, as the file would get them.
std::vector<MemoryRecord> drained(ThreadBuffer *b) {
  std::vector<MemoryRecord> out;
  buffer_drain_to(b, b->ready, [&](const uint8_t *p, size_t n) {
    for (size_t at = 0; at + sizeof(format::RecordHeader) + sizeof(MemoryRecord) <= n;
         at += sizeof(format::RecordHeader) + sizeof(MemoryRecord)) {
      MemoryRecord r;
      std::memcpy(&r, p + at + sizeof(format::RecordHeader), sizeof r);
      out.push_back(r);
    }
  });
  return out;
}

TEST(DrainSettle, FreesTakeTheirSizesInTimeOrderAcrossThreads) {
  State s;
  ThreadBuffer *a = s.buffers.create(4096, 1);
  ThreadBuffer *b = s.buffers.create(4096, 2);    // the drain meets b's ring first
  const uint64_t t = capture_now_ns() - kSecond;  // long settled
  append(a, alloc(t + 1, 0x1000, 100));
  append(a, free_of(t + 3, 0x1000));  // a frees it; b gets the address at once
  append(b, alloc(t + 4, 0x1000, 7));
  settle_buffers(&s, false);
  std::vector<MemoryRecord> ra = drained(a), rb = drained(b);
  ASSERT_EQ(ra.size(), 2u);
  ASSERT_EQ(rb.size(), 1u);
  EXPECT_EQ(ra[1].size, 100u);
  EXPECT_EQ(s.live.live_count(), 1u);                 // b's allocation, applied after a's free
  for (const auto &r : ra) EXPECT_EQ(r.reserved, 0);  // no ring mark reaches the file
  append(b, free_of(t + 5, 0x1000));
  append(b, free_of(t + 6, 0x9000));  // never seen allocated
  settle_buffers(&s, false);
  rb = drained(b);
  ASSERT_EQ(rb.size(), 2u);
  EXPECT_EQ(rb[0].size, 7u);  // its own allocation's, not the first one's
  EXPECT_EQ(rb[0].device, 0);
  EXPECT_FALSE(rb[0].flags & format::kFlagUnknownPointer);
  EXPECT_TRUE(rb[1].flags & format::kFlagUnknownPointer);
  EXPECT_EQ(rb[1].device, -1);
  EXPECT_EQ(s.live.live_count(), 0u);
}

TEST(DrainSettle, AnAllocationWaitsForAFreeOfItsAddressStillUnderWay) {
  State s;
  ThreadBuffer *a = s.buffers.create(4096, 1);
  ThreadBuffer *b = s.buffers.create(4096, 2);
  ThreadBuffer *c = s.buffers.create(4096, 3);
  const uint64_t t = capture_now_ns() - kSecond;
  append(a, alloc(t + 1, 0x1000, 100));
  settle_buffers(&s, false);
  drained(a);
  // a is inside its free of 0x1000 since t + 50us; b got the address, c works elsewhere.
  a->free_key.store(LiveTable::key_of(Space::kDevicePtr, 0x1000));
  a->free_since.store(encode_free_since(ClockReading{t + 50000, false}));
  append(b, alloc(t + 60000, 0x1000, 7));
  append(c, alloc(t + 40000, 0x5000, 3));  // before b's: goes
  append(c, alloc(t + 70000, 0x6000, 3));  // after b's: waits with it (one cut in time)
  settle_buffers(&s, false);
  EXPECT_TRUE(drained(b).empty());
  EXPECT_EQ(drained(c).size(), 1u);
  // The free's record is in: everything goes, and each free had the right size.
  append(a, free_of(t + 50000, 0x1000));
  a->free_since.store(0);
  append(b, free_of(t + 80000, 0x1000));
  settle_buffers(&s, false);
  std::vector<MemoryRecord> ra = drained(a), rb = drained(b);
  ASSERT_EQ(ra.size(), 1u);
  ASSERT_EQ(rb.size(), 2u);
  EXPECT_EQ(ra[0].size, 100u);
  EXPECT_EQ(rb[1].size, 7u);
  EXPECT_EQ(drained(c).size(), 1u);
}

TEST(DrainSettle, AFreeUnderWayHoldsNothingElse) {
  State s;
  ThreadBuffer *a = s.buffers.create(4096, 1);
  ThreadBuffer *b = s.buffers.create(4096, 2);
  const uint64_t t = capture_now_ns() - kSecond;
  a->free_key.store(LiveTable::key_of(Space::kDevicePtr, 0x1000));
  a->free_since.store(encode_free_since(ClockReading{t, false}));  // a slow free
  for (int i = 0; i < 20; ++i) {
    append(b, alloc(t + 1000 * i + 1, 0x2000, 8));
    append(b, free_of(t + 1000 * i + 2, 0x2000));
  }
  settle_buffers(&s, false);
  std::vector<MemoryRecord> rb = drained(b);
  ASSERT_EQ(rb.size(), 40u);
  EXPECT_EQ(rb[39].size, 8u);
}

TEST(DrainSettle, TheNewestRecordsWaitForTheNextDrainUnlessForced) {
  State s;
  ThreadBuffer *a = s.buffers.create(4096, 1);
  append(a, alloc(capture_now_ns() + kSecond, 0x1000, 100));  // "after" the drain's clock reading
  settle_buffers(&s, false);
  EXPECT_TRUE(drained(a).empty());
  settle_buffers(&s, true);  // exit, OOM, the first allocation: everything there is
  EXPECT_EQ(drained(a).size(), 1u);
}

}  // namespace
}  // namespace gpuleak::core
