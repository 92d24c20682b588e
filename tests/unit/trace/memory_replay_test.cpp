// The timeline's replay must agree with the analysis on every number both compute: peak and
// live at exit per device, live at each iteration's end, what was live at an OOM.
#include <gtest/gtest.h>

#include "output/trace/memory_replay.h"
#include "trace_test_support.h"

namespace gpuleak::testing {
namespace {

using output::trace::MemoryReplay;
using Kind = format::Kind;

// Live bytes on `slot` just after position p (p - 1 was applied), from the change list.
uint64_t live_at(const MemoryReplay &r, uint16_t slot, uint32_t p) {
  uint64_t live = 0;
  for (const auto &c : r.changes) {
    if (c.position >= p) break;
    if (c.track == slot) live = c.live;
  }
  return live;
}

void expect_agrees(const format::Capture &c) {
  analysis::AnalysisOptions options;
  options.record_lives = true;
  analysis::Analysis a = analysis::analyze(c, options);
  ASSERT_TRUE(a.lives);
  MemoryReplay r(c, a);
  ASSERT_EQ(r.devices.size(), a.devices.size());
  for (size_t d = 0; d < r.devices.size(); ++d) {
    EXPECT_EQ(r.devices[d], a.devices[d].index);
    EXPECT_EQ(r.peak[d], a.devices[d].peak_live_bytes) << "device " << r.devices[d];
    EXPECT_EQ(live_at(r, static_cast<uint16_t>(d), r.size()), a.devices[d].live_at_exit_bytes);
    EXPECT_EQ(live_at(r, static_cast<uint16_t>(d), r.peak_at[d]), a.devices[d].peak_live_bytes);
  }
  EXPECT_EQ(r.host_peak, a.accounting.host_pinned_peak_bytes);
  for (size_t i = 0; i < a.iterations.size(); ++i) {
    const auto &it = a.iterations[i];
    uint32_t end = r.lower_bound(c.header.monotonic_ns + it.end_ns + 1);
    for (size_t d = 0; d < a.devices.size(); ++d)
      EXPECT_EQ(live_at(r, static_cast<uint16_t>(d), end), a.iteration_device(i, d).live_end_bytes) << it.index;
  }
  for (const auto &oom : a.ooms) {
    uint32_t p = r.lower_bound(c.header.monotonic_ns + oom.t_ns);
    uint64_t live = 0;
    for (uint32_t i : r.live_before(p, oom.device)) live += r.lives[i].size;
    EXPECT_EQ(live, oom.live_bytes);
  }
}

TEST(MemoryReplay, AgreesWithTheAnalysisOnARichCapture) { expect_agrees(rich_capture()); }

TEST(MemoryReplay, AgreesOnEveryKindOfMemoryAndEveryWayOfReleasingIt) {
  CaptureBuilder b;
  b.device(0, "a", 1ull << 30);
  b.device(1, "b", 1ull << 30);
  for (int i = 0; i < 6; ++i) {
    b.begin("step");
    uint64_t d = b.alloc(3 * kMiB, 1, Kind::kDevice, 0);
    uint64_t async = b.alloc(kMiB, 2, Kind::kAsync, 1);
    b.alloc(kMiB, 3, Kind::kHostPinned, -1);   // host: never device live bytes
    b.alloc(5 * kMiB, 4, Kind::kImported, 0);  // not owned
    b.alloc(7 * kMiB, 5, Kind::kDevice, 0);
    b.capture.memory.back().flags = format::kFlagGraphReservation;  // ... but a graph reservation
    b.alloc(2 * kMiB, 6, Kind::kVmm, 0, 0x5000 + i);                // VMM physical, mapped below
    b.map(0x900000000 + i * kMiB, 0x5000 + i, 2 * kMiB, 7);
    b.free(d, Kind::kUnknown, 1);  // kind unknown, freed with device 1 current
    b.free(async, Kind::kAsync, 1);
    b.alloc(kMiB, 8, Kind::kDevice, 0, 0xdead0000);  // same address again: the old one ends
    b.free(0x1234);                                  // unmatched
    b.end("step");
  }
  b.op(format::Op::kContextReset, Kind::kUnknown, 1);
  expect_agrees(b.capture);

  MemoryReplay r(b.capture, analysis::analyze(b.capture));
  // The VMM allocation is charged to the site that mapped it.
  int mapped_sites = 0;
  for (const auto &l : r.lives) mapped_sites += l.stack_id == 7;
  EXPECT_EQ(mapped_sites, 6);
  for (const auto &l : r.lives) EXPECT_NE(l.stack_id, 6u);
}

// A framework allocator's blocks (format 1.3) lie inside segments the device counts already: the
// counters stay the segments', and per tensor the blocks stand in for the segments.
TEST(MemoryReplay, BlocksInsideSegmentsAreNotCountedTwice) {
  CaptureBuilder b;
  b.device(0, "a", 1ull << 30);
  std::vector<uint64_t> kept;
  for (int i = 0; i < 6; ++i) {
    b.begin("step");
    uint64_t segment = b.alloc(20 * kMiB, 1, Kind::kDevice, 0, 0x7e0000000000 + i * 32 * kMiB);
    b.alloc(kMiB, 2, Kind::kPoolBlock, 0, segment);  // at the segment's own address
    uint64_t scratch = b.alloc(4 * kMiB, 3, Kind::kPoolBlock, 0, segment + 8 * kMiB);
    b.free(scratch, Kind::kPoolBlock);
    b.end("step");
  }
  b.oom(64 * kMiB, 0, 1ull << 30, 1);
  expect_agrees(b.capture);

  analysis::AnalysisOptions options;
  options.record_lives = true;
  MemoryReplay r(b.capture, analysis::analyze(b.capture, options));
  EXPECT_EQ(r.peak[0], 6 * 20 * kMiB);
  EXPECT_EQ(r.host_peak, 0u);
  uint64_t device = 0, tensors = 0;
  for (uint32_t i : r.live_before(r.size(), 0)) device += r.lives[i].size;
  for (uint32_t i : r.live_before(r.size(), 0, /*per_tensor=*/true)) {
    EXPECT_TRUE(r.lives[i].pool_block);
    tensors += r.lives[i].size;
  }
  EXPECT_EQ(device, 6 * 20 * kMiB);
  EXPECT_EQ(tensors, 6 * kMiB);
  // The tensors' own counter (track devices + 1 + slot): at most the kept ones and one scratch.
  uint64_t most = 0;
  for (const auto &c : r.changes)
    if (c.track == 2) most = std::max(most, c.live);
  EXPECT_EQ(most, 6 * kMiB + 4 * kMiB);  // the last iteration: six kept, then its scratch
  EXPECT_EQ(live_at(r, 2, r.size()), 6 * kMiB);
}

TEST(MemoryReplay, FollowsEffectiveTimeOrderNotFileOrder) {
  CaptureBuilder b;
  uint64_t p = b.alloc(kMiB, 1);
  b.free(p);
  b.alloc(2 * kMiB, 2);
  std::swap(b.capture.memory[1], b.capture.memory[2]);  // a thread's buffer drained late
  expect_agrees(b.capture);
  MemoryReplay r(b.capture, analysis::analyze(b.capture));
  EXPECT_EQ(r.peak[0], 2 * kMiB);  // file order would say 3 MiB: both allocations live at once
  EXPECT_EQ(r.at(1).op, static_cast<uint8_t>(format::Op::kFree));
}

TEST(MemoryReplay, AFreeNamesTheAllocationItReleased) {
  CaptureBuilder b;
  uint64_t p = b.alloc(kMiB, 42);
  b.free(p);
  MemoryReplay r(b.capture, analysis::analyze(b.capture));
  ASSERT_NE(r.life_of(1), output::trace::kNoEvent);
  EXPECT_EQ(r.lives[r.life_of(1)].stack_id, 42u);
  EXPECT_EQ(r.lives[r.life_of(1)].death, 1u);
}

}  // namespace
}  // namespace gpuleak::testing
