// The ledger: which records change live memory, in which address space, in which order.
#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "analysis/analysis.h"
#include "analysis/capture_builder.h"

namespace gpuleak::analysis {
namespace {

using format::Kind;
using format::Op;
using testing::CaptureBuilder;
using testing::kMiB;

TEST(Ledger, FailedAllocationIsNotLive) {
  CaptureBuilder b;
  b.alloc(1 * kMiB, 1);
  b.failed_alloc(2 * kMiB, 2);
  Analysis a = analyze(b.capture);
  ASSERT_EQ(a.devices.size(), 1u);
  EXPECT_EQ(a.devices[0].peak_live_bytes, 1 * kMiB);
  EXPECT_EQ(a.devices[0].live_at_exit_bytes, 1 * kMiB);
  EXPECT_EQ(a.devices[0].alloc_count, 1u);
  EXPECT_EQ(a.accounting.failed_allocations, 1u);
  EXPECT_EQ(a.accounting.allocations, 1u);
}

TEST(Ledger, HostPinnedKeptApartFromDeviceLive) {
  CaptureBuilder b;
  b.alloc(1 * kMiB, 1);
  uint64_t pinned = b.alloc(4 * kMiB, 2, Kind::kHostPinned);
  b.alloc(2 * kMiB, 3, Kind::kHostRegistered);
  b.free(pinned, Kind::kHostPinned);
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.devices[0].peak_live_bytes, 1 * kMiB);
  EXPECT_EQ(a.devices[0].live_at_exit_bytes, 1 * kMiB);
  EXPECT_EQ(a.accounting.host_pinned_peak_bytes, 6 * kMiB);
  EXPECT_EQ(a.accounting.host_pinned_live_at_exit_bytes, 2 * kMiB);
  EXPECT_EQ(a.accounting.allocations, 3u);
  EXPECT_EQ(a.accounting.frees, 1u);
  ASSERT_EQ(a.live_at_exit.size(), 1u);  // device memory only
  EXPECT_EQ(a.live_at_exit[0].site.stack_id, 1u);
}

TEST(Ledger, GraphReservationsAreNotLive) {
  CaptureBuilder b;
  uint64_t g = b.alloc(8 * kMiB, 1);
  b.capture.memory.back().flags = format::kFlagGraphReservation;
  b.alloc(1 * kMiB, 2);
  b.free(g).flags = format::kFlagGraphReservation;
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.devices[0].peak_live_bytes, 1 * kMiB);
  EXPECT_EQ(a.accounting.graph_reservations, 1u);
  EXPECT_EQ(a.accounting.unmatched_frees, 0u);
  EXPECT_EQ(a.accounting.allocations, 1u);
}

TEST(Ledger, VmmCountedFromCreateToReleaseAndChargedToTheMapSite) {
  CaptureBuilder b;
  b.begin("step");
  b.alloc(2 * kMiB, 20, Kind::kVmm, 0, /*address=*/0x55);
  b.op(Op::kReserve, Kind::kVirtual).size = 64 * kMiB;
  b.map(0x7000, 0x55, 2 * kMiB, 21);
  b.end();
  b.begin("step");
  b.op(Op::kUnmap, Kind::kVmm).address = 0x7000;
  b.end();
  b.begin("step");
  b.free(0x55, Kind::kVmm);
  b.op(Op::kReleaseVa, Kind::kVirtual);
  b.end();
  b.begin("step");
  b.alloc(4 * kMiB, 30, Kind::kVmm, 0, 0x66);
  b.map(0x9000, 0x66, 4 * kMiB, 31);
  // A device pointer with the same value as the handle lives in another address space.
  b.alloc(1 * kMiB, 40, Kind::kDevice, 0, 0x66);
  b.free(0x66, Kind::kDevice);
  b.end();
  Analysis a = analyze(b.capture);
  ASSERT_EQ(a.iterations.size(), 4u);
  EXPECT_EQ(a.iteration_device(0, 0).live_end_bytes, 2 * kMiB);
  EXPECT_EQ(a.iteration_device(1, 0).live_end_bytes, 2 * kMiB);  // unmapped, not released
  EXPECT_EQ(a.iteration_device(2, 0).live_end_bytes, 0u);
  EXPECT_EQ(a.iteration_device(2, 0).freed_bytes, 2 * kMiB);
  EXPECT_EQ(a.iteration_device(3, 0).live_end_bytes, 4 * kMiB);
  EXPECT_EQ(a.iteration_device(3, 0).peak_bytes, 5 * kMiB);
  EXPECT_EQ(a.devices[0].live_at_exit_bytes, 4 * kMiB);
  ASSERT_EQ(a.live_at_exit.size(), 1u);
  EXPECT_EQ(a.live_at_exit[0].site.stack_id, 31u);
  EXPECT_EQ(a.live_at_exit[0].live_bytes, 4 * kMiB);
  EXPECT_EQ(a.accounting.not_owned, 0u);  // a reservation is an op, not an allocation
}

TEST(Ledger, UnmatchedFreeIsCountedAndIgnored) {
  CaptureBuilder b;
  b.alloc(3 * kMiB, 1);
  b.free(0xdead0000);
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.accounting.unmatched_frees, 1u);
  EXPECT_EQ(a.accounting.frees, 0u);
  EXPECT_EQ(a.devices[0].live_at_exit_bytes, 3 * kMiB);
}

TEST(Ledger, ContextResetDropsOnlyItsDevice) {
  CaptureBuilder b;
  b.alloc(3 * kMiB, 1, Kind::kDevice, 0);
  b.alloc(5 * kMiB, 1, Kind::kDevice, 1);
  b.op(Op::kContextReset, Kind::kUnknown, 0);
  Analysis a = analyze(b.capture);
  ASSERT_EQ(a.devices.size(), 2u);
  EXPECT_EQ(a.devices[0].live_at_exit_bytes, 0u);
  EXPECT_EQ(a.devices[0].peak_live_bytes, 3 * kMiB);
  EXPECT_EQ(a.devices[1].live_at_exit_bytes, 5 * kMiB);
  EXPECT_EQ(a.accounting.context_resets, 1u);
}

TEST(Ledger, InterleavedThreadsAreReplayedInTimeOrder) {
  CaptureBuilder b;
  // Thread 2's free reached the file before thread 1's allocation record.
  uint64_t p = 0x7000000;
  b.free(p).ts_ns = 2000;
  b.alloc(1 * kMiB, 1, Kind::kDevice, 0, p);
  b.capture.memory.back().ts_ns = 1000;
  b.capture.header.monotonic_ns = 0;
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.accounting.unmatched_frees, 0u);
  EXPECT_EQ(a.accounting.frees, 1u);
  EXPECT_EQ(a.devices[0].live_at_exit_bytes, 0u);
  EXPECT_EQ(a.devices[0].peak_live_bytes, 1 * kMiB);
  EXPECT_EQ(a.duration_ns, 2000u);
}

TEST(Ledger, UnknownDeviceCountsAsDeviceZero) {
  CaptureBuilder b;
  b.alloc(1 * kMiB, 1, Kind::kDevice, -1);
  Analysis a = analyze(b.capture);
  ASSERT_EQ(a.devices.size(), 1u);
  EXPECT_EQ(a.devices[0].index, 0);
  EXPECT_EQ(a.devices[0].live_at_exit_bytes, 1 * kMiB);
}

TEST(Ledger, FreeRecordedOnAnotherDeviceStillMatches) {
  CaptureBuilder b;
  uint64_t p = b.alloc(2 * kMiB, 1, Kind::kDevice, 1);
  b.free(p, Kind::kDevice, 0);
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.accounting.unmatched_frees, 0u);
  ASSERT_EQ(a.devices.size(), 2u);
  EXPECT_EQ(a.devices[1].live_at_exit_bytes, 0u);
}

TEST(Ledger, FreeOfUnknownKindMatchesAnySpace) {
  CaptureBuilder b;
  uint64_t p = b.alloc(2 * kMiB, 1, Kind::kHostPinned);
  b.free(p, Kind::kUnknown);
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.accounting.frees, 1u);
  EXPECT_EQ(a.accounting.host_pinned_live_at_exit_bytes, 0u);
}

TEST(Ledger, ImportedMemoryIsNotOwned) {
  CaptureBuilder b;
  uint64_t p = b.alloc(16 * kMiB, 1, Kind::kImported);
  b.free(p, Kind::kImported);
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.devices[0].peak_live_bytes, 0u);
  EXPECT_EQ(a.accounting.not_owned, 1u);
  EXPECT_EQ(a.accounting.unmatched_frees, 0u);
  EXPECT_EQ(a.verdict, Verdict::kClean);  // nothing owned was ever allocated
}

TEST(Ledger, ReusedAddressWithoutFreeEndsTheOldAllocation) {
  CaptureBuilder b;
  b.alloc(1 * kMiB, 1, Kind::kDevice, 0, 0x1000);
  b.alloc(3 * kMiB, 2, Kind::kDevice, 0, 0x1000);  // the free was never seen
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.devices[0].live_at_exit_bytes, 3 * kMiB);
  EXPECT_EQ(a.devices[0].peak_live_bytes, 3 * kMiB);
}

TEST(Ledger, IterationNumbers) {
  CaptureBuilder b;
  b.alloc(10 * kMiB, 1);
  b.begin("step");
  uint64_t t1 = b.alloc(4 * kMiB, 2);
  uint64_t t2 = b.alloc(2 * kMiB, 3);
  b.free(t1);
  b.alloc(1 * kMiB, 4);
  b.free(t2);
  b.end();
  Analysis a = analyze(b.capture);
  ASSERT_EQ(a.iterations.size(), 1u);
  const IterationDevice d = a.iteration_device(0, 0);
  EXPECT_EQ(d.device, 0);
  EXPECT_EQ(d.live_end_bytes, 11 * kMiB);
  EXPECT_EQ(d.peak_bytes, 16 * kMiB);
  EXPECT_EQ(d.allocated_bytes, 7 * kMiB);
  EXPECT_EQ(d.freed_bytes, 6 * kMiB);
  EXPECT_EQ(d.alloc_count, 3u);
  EXPECT_EQ(d.free_count, 2u);
  EXPECT_EQ(a.iterations[0].start_ns, 2000u);  // second record after the start
  EXPECT_EQ(a.iterations[0].end_ns, 8000u);
}

// Untrusted input: any field may hold anything. The analysis must neither crash nor break its
// own invariants (run under the sanitizers in CI).
TEST(Ledger, RandomRecordsNeverBreakTheAnalysis) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 20; ++round) {
    CaptureBuilder b;
    auto pick = [&](uint64_t n) { return rng() % n; };
    for (int i = 0; i < 3000; ++i) {
      format::MemoryRecord &r = b.op(static_cast<Op>(pick(12)), static_cast<Kind>(pick(14)),
                                     static_cast<int16_t>(pick(5) == 0 ? pick(65536) : pick(3)));
      r.address = 0x1000 * pick(64);
      r.aux = 0x1000 * pick(64);
      r.size = pick(4) == 0 ? ~0ull - pick(3) : pick(1 << 24);
      r.stack_id = static_cast<uint32_t>(pick(8));
      r.py_stack_id = static_cast<uint32_t>(pick(3));
      r.result = pick(10) == 0 ? 2 : 0;
      r.flags = static_cast<uint16_t>(pick(8));
      if (pick(20) == 0) r.ts_ns -= pick(100000);  // threads out of order
      if (pick(30) == 0) b.begin(pick(2) ? "train" : "eval", static_cast<uint32_t>(pick(3)));
      if (pick(30) == 0) b.end(pick(3) ? "" : "train", static_cast<uint32_t>(pick(3)));
      if (pick(40) == 0) b.push(pick(2) ? "step" : "x", static_cast<uint32_t>(pick(3)));
      if (pick(40) == 0) b.pop(static_cast<uint32_t>(pick(3)));
      if (pick(200) == 0) b.oom(pick(1 << 30), 0, 0, 1, static_cast<int16_t>(pick(3)));
    }
    b.device(static_cast<int>(pick(4)) - 2, "d", pick(1ull << 40));
    b.device(1 << 30, "huge index", 1);
    Analysis a = analyze(b.capture);
    for (size_t d = 1; d < a.devices.size(); ++d) EXPECT_LT(a.devices[d - 1].index, a.devices[d].index);
    for (size_t i = 0; i < a.iterations.size(); ++i) {
      EXPECT_LE(a.iterations[i].start_ns, a.iterations[i].end_ns);
      const Analysis::Cells active = a.active_devices(i);
      EXPECT_LE(active.size(), a.devices.size());
      for (size_t d = 1; d < active.size(); ++d) EXPECT_LT(active[d - 1].device, active[d].device);
    }
    EXPECT_LE(a.live_at_exit.size(), 100u);
    EXPECT_LE(a.ooms.size(), 16u);
    for (const auto &l : a.leaks) {
      EXPECT_GE(l.confidence, 0.0);
      EXPECT_LE(l.confidence, 1.0);
    }
  }
}

// Catches anything worse than O(n log n) in the hot loops: a million events (interleaved
// threads, so the sort runs) take well under a second; a quadratic step would take hours.
TEST(Ledger, AMillionEventsInSeconds) {
  CaptureBuilder b(1000, 10);
  b.capture.memory.reserve(1'100'000);
  while (b.capture.memory.size() < 1'000'000) {  // 201 records per iteration: 4976 iterations
    b.begin("train");
    std::vector<uint64_t> tmp;
    for (int k = 0; k < 100; ++k) tmp.push_back(b.alloc(4096 * (1 + k % 7), 100 + k % 40, Kind::kAsync));
    b.alloc(1 * kMiB, 7);
    for (uint64_t p : tmp) b.free(p, Kind::kAsync);
    b.end();
  }
  auto &m = b.capture.memory;
  for (size_t i = 0; i + 1 < m.size(); i += 2) std::swap(m[i], m[i + 1]);  // two threads' order
  auto start = std::chrono::steady_clock::now();
  Analysis a = analyze(b.capture);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 10.0);
  EXPECT_EQ(a.primary_iterations, 4976u);
  ASSERT_EQ(a.leaks.size(), 1u);
  EXPECT_EQ(a.leaks[0].live_count, 4976u);
  EXPECT_EQ(a.accounting.unmatched_frees, 0u);
}

}  // namespace
}  // namespace gpuleak::analysis
