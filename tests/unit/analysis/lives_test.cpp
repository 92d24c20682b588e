// The lives and curves the analysis keeps for the drawings (lives.h) must agree with the report's
// numbers, computed in the same replay: peak and live at exit per device, live at each
// iteration's end, what was live at an OOM, host memory's peak.
#include "analysis/lives.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "analysis/analysis.h"
#include "analysis/capture_builder.h"

namespace gpuleak::testing {
namespace {

using Kind = format::Kind;

analysis::Analysis with_lives(const format::Capture &c) {
  analysis::AnalysisOptions options;
  options.record_lives = true;
  return analysis::analyze(c, options);
}

// A curve's value just after position p - 1 was applied (before p).
uint64_t value_before(const analysis::LiveCurve &c, uint32_t p) {
  auto it = std::lower_bound(c.positions.begin(), c.positions.end(), p);
  return it == c.positions.begin() ? 0 : c.bytes[it - c.positions.begin() - 1];
}

void expect_agrees(const format::Capture &c) {
  const analysis::Analysis a = with_lives(c);
  ASSERT_TRUE(a.lives);
  const analysis::Lives &l = *a.lives;
  EXPECT_EQ(l.size(), c.memory.size());
  ASSERT_EQ(l.devices.size(), a.devices.size());
  for (size_t d = 0; d < l.devices.size(); ++d) {
    const analysis::LiveCurve &curve = l.devices[d].live;
    EXPECT_EQ(l.devices[d].device, a.devices[d].index);
    EXPECT_EQ(curve.peak, a.devices[d].peak_live_bytes) << "device " << a.devices[d].index;
    EXPECT_EQ(*std::max_element(curve.bytes.begin(), curve.bytes.end()), curve.peak);
    EXPECT_EQ(curve.last(), a.devices[d].live_at_exit_bytes);
    ASSERT_NE(curve.peak_position, analysis::kStillAlive);
    EXPECT_EQ(value_before(curve, curve.peak_position + 1), curve.peak);
    EXPECT_LT(value_before(curve, curve.peak_position), curve.peak);  // first reached there
    EXPECT_TRUE(std::is_sorted(curve.positions.begin(), curve.positions.end()));
    EXPECT_EQ(std::adjacent_find(curve.positions.begin(), curve.positions.end()), curve.positions.end());
    // The live allocations at the end sum to the curve's last value.
    uint64_t live = 0;
    for (uint32_t i : l.live_before(l.size(), a.devices[d].index)) live += l.lives[i].size;
    EXPECT_EQ(live, curve.last());
  }
  EXPECT_EQ(l.host.peak, a.accounting.host_pinned_peak_bytes);
  EXPECT_EQ(l.host.last(), a.accounting.host_pinned_live_at_exit_bytes);
  for (size_t i = 0; i < a.iterations.size(); ++i) {
    const auto &it = a.iterations[i];
    const uint32_t end = l.position_at(c.header.monotonic_ns + it.end_ns + 1);
    for (size_t d = 0; d < a.devices.size(); ++d)
      EXPECT_EQ(value_before(l.devices[d].live, end), a.iteration_device(i, d).live_end_bytes) << it.index;
  }
  for (const auto &oom : a.ooms) {
    const uint32_t p = l.position_at(c.header.monotonic_ns + oom.t_ns);
    uint64_t live = 0;
    for (uint32_t i : l.live_before(p, oom.device)) live += l.lives[i].size;
    EXPECT_EQ(live, oom.live_bytes);
  }
}

TEST(Lives, AgreeWithTheReportOnAMarkedLoopWithAnOom) {
  CaptureBuilder b;
  b.device(0, "Fake GPU", 1ull << 30);
  for (int i = 0; i < 12; ++i) {
    b.begin("train");
    uint64_t tmp = b.alloc(4 * kMiB, 1);
    b.alloc(1 * kMiB, 2);  // the leak: never freed
    b.free(tmp);
    b.end("train");
  }
  b.failed_alloc(2ull << 30, 4);
  b.oom(2ull << 30, 100 * kMiB, 1ull << 30, 4);
  expect_agrees(b.capture);
}

TEST(Lives, AgreeOnEveryKindOfMemoryAndEveryWayOfReleasingIt) {
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

  const analysis::Analysis a = with_lives(b.capture);
  // The VMM allocation is charged to the site that mapped it.
  int mapped_sites = 0;
  for (const auto &l : a.lives->lives) mapped_sites += l.site.stack_id == 7;
  EXPECT_EQ(mapped_sites, 6);
  for (const auto &l : a.lives->lives) EXPECT_NE(l.site.stack_id, 6u);
  EXPECT_EQ(a.lives->host.peak, 6 * kMiB);
}

// A framework allocator's blocks (format 1.3) lie inside segments the device counts already: the
// device's curve stays the segments', the blocks have their own, and per tensor the blocks stand
// in for the segments.
TEST(Lives, BlocksInsideSegmentsAreNotCountedTwice) {
  CaptureBuilder b;
  b.device(0, "a", 1ull << 30);
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

  const analysis::Analysis a = with_lives(b.capture);
  const analysis::Lives &l = *a.lives;
  EXPECT_EQ(l.devices[0].live.peak, 6 * 20 * kMiB);
  EXPECT_EQ(l.host.peak, 0u);
  EXPECT_TRUE(l.host.empty());
  uint64_t device = 0, tensors = 0;
  for (uint32_t i : l.live_before(l.size(), 0)) device += l.lives[i].size;
  for (uint32_t i : l.live_before(l.size(), 0, /*per_tensor=*/true)) {
    EXPECT_TRUE(l.lives[i].pool_block);
    tensors += l.lives[i].size;
  }
  EXPECT_EQ(device, 6 * 20 * kMiB);
  EXPECT_EQ(tensors, 6 * kMiB);
  // The tensors' own curve: at most the kept ones and one scratch.
  EXPECT_EQ(l.devices[0].blocks.peak, 6 * kMiB + 4 * kMiB);  // the last iteration: six kept, then its scratch
  EXPECT_EQ(l.devices[0].blocks.last(), 6 * kMiB);
}

TEST(Lives, FollowEffectiveTimeOrderNotFileOrder) {
  CaptureBuilder b;
  uint64_t p = b.alloc(kMiB, 1);
  b.free(p);
  b.alloc(2 * kMiB, 2);
  std::swap(b.capture.memory[1], b.capture.memory[2]);  // a thread's buffer drained late
  expect_agrees(b.capture);
  const analysis::Analysis a = with_lives(b.capture);
  EXPECT_EQ(a.lives->devices[0].live.peak, 2 * kMiB);  // file order would say 3 MiB: both live at once
  // Position 1 is the free, which the file holds at index 2.
  ASSERT_EQ(a.lives->record_of.size(), 3u);
  EXPECT_EQ(a.lives->record(1), 2u);
  EXPECT_EQ(b.capture.memory[a.lives->record(1)].op, static_cast<uint8_t>(format::Op::kFree));
  EXPECT_TRUE(with_lives(CaptureBuilder().capture).lives->record_of.empty());
}

// One position that ends an allocation and makes another (its address handed out again): one
// entry in the curve, the value once both are applied.
TEST(Lives, OneCurveEntryPerPosition) {
  CaptureBuilder b;
  b.alloc(4 * kMiB, 1, Kind::kDevice, 0, 0xdead0000);
  b.alloc(kMiB, 2, Kind::kDevice, 0, 0xdead0000);  // its free was never seen
  const analysis::Analysis a = with_lives(b.capture);
  const analysis::LiveCurve &c = a.lives->devices[0].live;
  EXPECT_EQ(c.positions, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(c.bytes, (std::vector<uint64_t>{4 * kMiB, kMiB}));
  EXPECT_EQ(c.peak, 4 * kMiB);
  EXPECT_EQ(c.peak_position, 0u);
}

// Drawings made from an analysis that kept no lives get the same ones (lives_of).
TEST(Lives, LivesOfAnAnalysisWithoutThemAreTheSame) {
  CaptureBuilder b;
  for (int i = 0; i < 5; ++i) b.alloc(kMiB, 1);
  const analysis::Analysis plain = analysis::analyze(b.capture);
  EXPECT_FALSE(plain.lives);
  const auto lives = analysis::lives_of(b.capture, plain);
  ASSERT_TRUE(lives);
  EXPECT_EQ(lives->devices[0].live.peak, plain.devices[0].peak_live_bytes);
  const analysis::Analysis kept = with_lives(b.capture);
  EXPECT_EQ(analysis::lives_of(b.capture, kept).get(), kept.lives.get());  // no second analysis
}

}  // namespace
}  // namespace gpuleak::testing
