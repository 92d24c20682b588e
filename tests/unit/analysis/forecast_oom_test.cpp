// Forecasts (when a leaking device runs out) and out-of-memory events.
#include <gtest/gtest.h>

#include "analysis/analysis.h"
#include "analysis/capture_builder.h"

namespace gpuleak::analysis {
namespace {

using format::Kind;
using testing::CaptureBuilder;
using testing::kMiB;

// 100 MiB before the loop, then `n` iterations of 0.25 s that keep `kept` bytes each.
CaptureBuilder leaking(int n, uint64_t kept, bool with_device = true) {
  CaptureBuilder b;
  if (with_device) b.device(0, "Fake GPU", 1024 * kMiB);
  b.alloc(100 * kMiB, 1);
  for (int i = 0; i < n; ++i) {
    b.begin("step");
    b.advance(249'996'000);  // with the 4 records of 1000 ns: 250 ms per iteration
    uint64_t t = b.alloc(64 * kMiB, 2);
    if (kept) b.alloc(kept, 3);
    b.free(t);
    b.end();
  }
  return b;
}

TEST(Forecast, IterationsAndSecondsLeftAtTheFittedRate) {
  Analysis a = analyze(leaking(20, 1 * kMiB).capture);
  ASSERT_EQ(a.devices.size(), 1u);
  const DeviceSummary &d = a.devices[0];
  EXPECT_EQ(d.name, "Fake GPU");
  EXPECT_EQ(d.total_bytes, 1024 * kMiB);
  ASSERT_TRUE(d.forecast.has_value());
  EXPECT_DOUBLE_EQ(d.forecast->bytes_per_iteration, 1.0 * kMiB);
  EXPECT_EQ(d.forecast->iterations_left, 904u);     // (1024 - 120) MiB at 1 MiB per iteration
  EXPECT_EQ(d.forecast->held_elsewhere_bytes, 0u);  // no NVML reading
  EXPECT_DOUBLE_EQ(d.forecast->seconds_left, 904 * 0.25);
}

// NVML's reading at exit: what the CUDA context and other processes hold is not free.
TEST(Forecast, WhatElseHoldsTheDeviceIsNotFree) {
  CaptureBuilder b = leaking(20, 1 * kMiB);
  // This process: 120 MiB tracked + 44 MiB untracked (the context); the device: 264 MiB in use.
  b.usage(164 * kMiB, 120 * kMiB, 0, format::kUsageAtExit | format::kUsageProcessKnown).device_used_bytes = 264 * kMiB;
  Analysis a = analyze(b.capture);
  ASSERT_TRUE(a.devices[0].forecast.has_value());
  EXPECT_EQ(a.devices[0].forecast->held_elsewhere_bytes, 144 * kMiB);  // 44 untracked + 100 another process's
  EXPECT_EQ(a.devices[0].forecast->iterations_left, 760u);             // (1024 - 144 - 120) MiB at 1 MiB

  // NVML did not list this process (a container): the device's usage less the tracked live bytes.
  CaptureBuilder c = leaking(20, 1 * kMiB);
  c.usage(0, 120 * kMiB, 0, format::kUsageAtExit).device_used_bytes = 300 * kMiB;
  a = analyze(c.capture);
  ASSERT_TRUE(a.devices[0].forecast.has_value());
  EXPECT_EQ(a.devices[0].forecast->held_elsewhere_bytes, 180 * kMiB);
  EXPECT_EQ(a.devices[0].forecast->iterations_left, 724u);
}

TEST(Forecast, NoneWithoutTheDeviceSize) {
  Analysis a = analyze(leaking(20, 1 * kMiB, /*with_device=*/false).capture);
  EXPECT_EQ(a.devices[0].verdict, Verdict::kLeak);
  EXPECT_FALSE(a.devices[0].forecast.has_value());
}

TEST(Forecast, NoneWhenClean) {
  Analysis a = analyze(leaking(20, 0).capture);
  EXPECT_EQ(a.devices[0].verdict, Verdict::kClean);
  EXPECT_FALSE(a.devices[0].forecast.has_value());
}

TEST(Forecast, ZeroLeftWhenAlreadyFull) {
  CaptureBuilder b = leaking(20, 1 * kMiB);
  b.capture.devices[0].total_bytes = 110 * kMiB;
  Analysis a = analyze(b.capture);
  ASSERT_TRUE(a.devices[0].forecast.has_value());
  EXPECT_EQ(a.devices[0].forecast->iterations_left, 0u);
  EXPECT_DOUBLE_EQ(a.devices[0].forecast->seconds_left, 0.0);
}

TEST(Oom, LiveBySiteHistoryAndRecovery) {
  CaptureBuilder b;
  b.device(0, "Fake GPU", 400 * kMiB);
  for (int i = 0; i < 3; ++i) b.alloc(100 * kMiB, 1);
  uint64_t small = b.alloc(50 * kMiB, 2);
  b.alloc(8 * kMiB, 9, Kind::kDevice, 1);  // another device: not in this OOM
  b.failed_alloc(1024 * kMiB, 3);
  b.oom(1024 * kMiB, 10 * kMiB, 400 * kMiB, 3);
  b.free(small);
  b.alloc(10 * kMiB, 4);  // the retry after freeing the cache works
  Analysis a = analyze(b.capture);
  ASSERT_EQ(a.ooms.size(), 1u);
  const OomEvent &e = a.ooms[0];
  EXPECT_EQ(e.t_ns, 7000u);
  EXPECT_EQ(e.device, 0);
  EXPECT_EQ(e.requested, 1024 * kMiB);
  EXPECT_EQ(e.free_bytes, 10 * kMiB);
  EXPECT_EQ(e.total_bytes, 400 * kMiB);
  EXPECT_EQ(e.site.stack_id, 3u);
  EXPECT_EQ(e.live_bytes, 350 * kMiB);
  EXPECT_EQ(e.live_count, 4u);
  ASSERT_EQ(e.live_by_site.size(), 2u);
  EXPECT_EQ(e.live_by_site[0].site.stack_id, 1u);
  EXPECT_EQ(e.live_by_site[0].bytes, 300 * kMiB);
  EXPECT_EQ(e.live_by_site[0].count, 3u);
  EXPECT_EQ(e.live_by_site[1].site.stack_id, 2u);
  EXPECT_EQ(e.live_by_site[1].bytes, 50 * kMiB);
  ASSERT_EQ(e.history.size(), 5u);  // device 0's four allocations and the failed request
  EXPECT_EQ(e.history[0].size, 100 * kMiB);
  EXPECT_EQ(e.history[0].t_ns, 1000u);
  EXPECT_EQ(e.history[4].result, 2);
  EXPECT_EQ(e.history[4].op, static_cast<uint8_t>(format::Op::kAlloc));
  EXPECT_TRUE(e.recovered);
  EXPECT_EQ(a.accounting.failed_allocations, 1u);
}

TEST(Oom, NewestFirstUnrecoveredAndHistoryCapped) {
  CaptureBuilder b;
  std::vector<uint64_t> p;
  for (int i = 0; i < 40; ++i) p.push_back(b.alloc(1 * kMiB, 1 + i % 3));
  b.failed_alloc(512 * kMiB, 5);
  b.oom(512 * kMiB, 0, 0, 5);
  b.free(p[0]);
  b.failed_alloc(256 * kMiB, 6);
  b.oom(256 * kMiB, 0, 0, 6);
  Analysis a = analyze(b.capture);
  ASSERT_EQ(a.ooms.size(), 2u);
  EXPECT_EQ(a.ooms[0].requested, 256 * kMiB);  // newest first
  EXPECT_EQ(a.ooms[0].live_count, 39u);
  EXPECT_EQ(a.ooms[1].requested, 512 * kMiB);
  EXPECT_EQ(a.ooms[1].live_count, 40u);
  EXPECT_FALSE(a.ooms[0].recovered);
  EXPECT_FALSE(a.ooms[1].recovered);
  EXPECT_EQ(a.ooms[1].history.size(), 32u);
  EXPECT_EQ(a.ooms[1].history.back().result, 2);
  ASSERT_EQ(a.ooms[1].live_by_site.size(), 3u);
  EXPECT_EQ(a.ooms[1].live_by_site[0].count, 14u);  // sites 1: 14, 2: 13, 3: 13 blocks

  AnalysisOptions o;
  o.max_oom_events = 1;
  o.oom_top_sites = 1;
  Analysis capped = analyze(b.capture, o);
  ASSERT_EQ(capped.ooms.size(), 1u);
  EXPECT_EQ(capped.ooms[0].requested, 256 * kMiB);
  EXPECT_EQ(capped.ooms[0].live_by_site.size(), 1u);
}

TEST(Oom, OtherDevicesAllocationDoesNotCountAsRecovery) {
  CaptureBuilder b;
  b.alloc(10 * kMiB, 1, Kind::kDevice, 1);
  b.failed_alloc(64 * kMiB, 2, 1);
  b.oom(64 * kMiB, 0, 0, 2, 1);
  b.alloc(1 * kMiB, 3, Kind::kDevice, 0);
  Analysis a = analyze(b.capture);
  ASSERT_EQ(a.ooms.size(), 1u);
  EXPECT_EQ(a.ooms[0].device, 1);
  EXPECT_EQ(a.ooms[0].live_bytes, 10 * kMiB);
  EXPECT_FALSE(a.ooms[0].recovered);
}

}  // namespace
}  // namespace gpuleak::analysis
