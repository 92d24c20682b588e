// Leak, growth, clean, inconclusive: each rule of verdicts.cpp on the pattern it is there for.
#include <gtest/gtest.h>

#include <functional>

#include "analysis/analysis.h"
#include "analysis/capture_builder.h"
#include "analysis/train_loop.h"

namespace gpuleak::analysis {
namespace {

using format::Kind;
using testing::CaptureBuilder;
using testing::kMiB;
using testing::least_squares_slope;
using testing::train_loop;

CaptureBuilder loop(int n, const std::function<void(CaptureBuilder &, int)> &body) { return train_loop(n, body); }

TEST(Verdicts, LeakOfOneMiBPerIteration) {
  CaptureBuilder b = loop(20, [](CaptureBuilder &b, int) { b.alloc(1 * kMiB, 7); });
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.verdict, Verdict::kLeak);
  EXPECT_EQ(a.iteration_source, IterationSource::kApi);
  EXPECT_EQ(a.primary_iterations, 20u);
  EXPECT_EQ(a.warmup_iterations, 2u);
  ASSERT_EQ(a.leaks.size(), 1u);
  const Leak &l = a.leaks[0];
  EXPECT_EQ(l.site.stack_id, 7u);
  EXPECT_EQ(l.device, 0);
  EXPECT_DOUBLE_EQ(l.bytes_per_iteration, 1.0 * kMiB);
  EXPECT_EQ(l.live_bytes, 20 * kMiB);
  EXPECT_EQ(l.live_count, 20u);
  EXPECT_EQ(l.first_iteration, 0u);
  EXPECT_EQ(l.iterations_observed, 18u);
  EXPECT_DOUBLE_EQ(l.r2, 1.0);
  EXPECT_DOUBLE_EQ(l.confidence, 18.0 / 20.0);
  ASSERT_EQ(l.live_by_iteration.size(), 20u);
  EXPECT_EQ(l.live_by_iteration[5], 6 * kMiB);
  EXPECT_EQ(a.devices[0].verdict, Verdict::kLeak);
  EXPECT_DOUBLE_EQ(a.devices[0].growth_bytes_per_iteration, 1.0 * kMiB);
  const IterationDevice it3 = a.iteration_device(3, 0);
  EXPECT_EQ(it3.live_end_bytes, 260 * kMiB);
  EXPECT_EQ(it3.peak_bytes, 324 * kMiB);
  EXPECT_EQ(it3.allocated_bytes, 65 * kMiB);
  EXPECT_EQ(it3.freed_bytes, 64 * kMiB);
}

TEST(Verdicts, WarmupWorkspaceIsClean) {
  CaptureBuilder b = loop(20, [](CaptureBuilder &b, int i) {
    if (i == 0) b.alloc(512 * kMiB, 3);  // lazily created, kept
  });
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.verdict, Verdict::kClean);
  EXPECT_TRUE(a.leaks.empty());
  EXPECT_DOUBLE_EQ(a.devices[0].growth_bytes_per_iteration, 0.0);
}

TEST(Verdicts, OptimizerStateCreatedInTheFirstStepsIsClean) {
  CaptureBuilder b = loop(10, [](CaptureBuilder &b, int i) {
    if (i == 0 || i == 1) {
      b.alloc(100 * kMiB, 4);
      b.alloc(100 * kMiB, 4);
    }
    if (i == 2) b.alloc(100 * kMiB, 4);  // one late buffer, inside the fitted window
  });
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.warmup_iterations, 1u);
  EXPECT_EQ(a.verdict, Verdict::kClean);
  EXPECT_TRUE(a.leaks.empty());
}

TEST(Verdicts, DoubleBufferFreedTwoIterationsLaterIsClean) {
  std::vector<uint64_t> buffers;
  CaptureBuilder b = loop(12, [&](CaptureBuilder &b, int i) {
    buffers.push_back(b.alloc(32 * kMiB, 5));
    if (i >= 2) b.free(buffers[i - 2]);
  });
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.verdict, Verdict::kClean);
  EXPECT_EQ(a.iteration_device(5, 0).live_end_bytes, (256 + 64) * kMiB);
}

TEST(Verdicts, PlateauIsClean) {
  // A cache that fills up for half the run, then stops: a straight line fits it well enough
  // (R^2 ~ 0.75, robust quality ~ 0.7), only the late-slope rule tells it from a leak.
  CaptureBuilder b = loop(20, [](CaptureBuilder &b, int i) {
    if (i < 11) b.alloc(8 * kMiB, 6);
  });
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.verdict, Verdict::kClean);
  EXPECT_TRUE(a.leaks.empty());
  EXPECT_EQ(a.devices[0].verdict, Verdict::kClean);
  EXPECT_GT(a.devices[0].growth_r2, 0.6);
  EXPECT_GT(a.devices[0].growth_fit_quality, 0.6);

  AnalysisOptions o;
  o.min_late_slope_fraction = -1;  // without the rule the count test still holds it back
  EXPECT_EQ(analyze(b.capture, o).verdict, Verdict::kClean);
}

TEST(Verdicts, PoolGrowingBlockByBlockIsGrowthNotLeak) {
  uint64_t block = 0;
  CaptureBuilder b = loop(20, [&](CaptureBuilder &b, int i) {
    uint64_t bigger = b.alloc(static_cast<uint64_t>(i + 1) * 4 * kMiB, 8);
    if (block) b.free(block);
    block = bigger;
  });
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.verdict, Verdict::kGrowth);
  EXPECT_TRUE(a.leaks.empty());
  EXPECT_EQ(a.devices[0].verdict, Verdict::kGrowth);
  EXPECT_DOUBLE_EQ(a.devices[0].growth_bytes_per_iteration, 4.0 * kMiB);
}

TEST(Verdicts, PoolThatBreathesIsGrowthNotLeak) {
  std::vector<uint64_t> prev;
  CaptureBuilder b = loop(20, [&](CaptureBuilder &b, int) {
    std::vector<uint64_t> now;
    for (int k = 0; k < 3; ++k) now.push_back(b.alloc(1 * kMiB, 10));
    if (!prev.empty()) {  // gives back two of the last iteration's three blocks
      b.free(prev[1]);
      b.free(prev[2]);
    }
    prev = now;
  });
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.verdict, Verdict::kGrowth);
  EXPECT_TRUE(a.leaks.empty());

  AnalysisOptions o;
  o.max_survivor_free_fraction = 0.7;  // 34 of 54 survivors freed later: 0.63
  Analysis lenient = analyze(b.capture, o);
  EXPECT_EQ(lenient.verdict, Verdict::kLeak);
  ASSERT_EQ(lenient.leaks.size(), 1u);
  EXPECT_DOUBLE_EQ(lenient.leaks[0].bytes_per_iteration, 1.0 * kMiB);
}

TEST(Verdicts, SawtoothReleasedEveryFewIterationsIsClean) {
  std::vector<uint64_t> held;
  CaptureBuilder b = loop(30, [&](CaptureBuilder &b, int i) {
    held.push_back(b.alloc(1 * kMiB, 11));
    if (i % 5 == 4) {
      for (uint64_t p : held) b.free(p);
      held.clear();
    }
  });
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.verdict, Verdict::kClean);
}

TEST(Verdicts, LeakStartingLateNamesItsFirstIteration) {
  CaptureBuilder b = loop(30, [](CaptureBuilder &b, int i) {
    if (i == 0) b.alloc(32 * kMiB, 9);  // the same site's one-time workspace
    if (i >= 10) b.alloc(2 * kMiB, 9);
  });
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.warmup_iterations, 3u);
  ASSERT_EQ(a.leaks.size(), 1u);
  const Leak &l = a.leaks[0];
  EXPECT_EQ(l.first_iteration, 10u);
  EXPECT_EQ(l.live_count, 21u);
  EXPECT_EQ(l.live_bytes, 72 * kMiB);
  std::vector<double> y;
  for (int j = 0; j < 30; ++j) y.push_back((32.0 + 2.0 * std::max(0, j - 9)) * kMiB);
  // The rate since the leak began (Theil-Sen from iteration 10), not the slope over the whole
  // window that the flat start dilutes.
  EXPECT_LT(least_squares_slope(y, 3), 1.9 * kMiB);
  EXPECT_DOUBLE_EQ(l.bytes_per_iteration, 2.0 * kMiB);
}

TEST(Verdicts, TooFewIterationsIsInconclusive) {
  CaptureBuilder b = loop(3, [](CaptureBuilder &b, int) { b.alloc(1 * kMiB, 7); });
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.verdict, Verdict::kInconclusive);
  EXPECT_TRUE(a.leaks.empty());
  AnalysisOptions o;
  o.warmup_iterations = 0;  // three post-warm-up iterations are enough
  EXPECT_EQ(analyze(b.capture, o).verdict, Verdict::kLeak);
}

TEST(Verdicts, LeakOnOneDeviceOnly) {
  CaptureBuilder b = loop(10, [](CaptureBuilder &b, int) {
    b.alloc(3 * kMiB, 12, Kind::kAsync, 1);
    b.free(b.alloc(1 * kMiB, 13, Kind::kDevice, 0));
  });
  Analysis a = analyze(b.capture);
  ASSERT_EQ(a.devices.size(), 2u);
  EXPECT_EQ(a.devices[0].verdict, Verdict::kClean);
  EXPECT_EQ(a.devices[1].verdict, Verdict::kLeak);
  EXPECT_EQ(a.verdict, Verdict::kLeak);
  ASSERT_EQ(a.leaks.size(), 1u);
  EXPECT_EQ(a.leaks[0].device, 1);
  EXPECT_DOUBLE_EQ(a.leaks[0].bytes_per_iteration, 3.0 * kMiB);
  EXPECT_EQ(a.active_devices(0).size(), 2u);  // both allocated in it
  EXPECT_EQ(a.iteration_device(0, 1).device, 1);
}

TEST(Verdicts, PythonStackSeparatesSitesWithOneNativeStack) {
  CaptureBuilder b = loop(10, [](CaptureBuilder &b, int) {
    b.alloc(1 * kMiB, 20, Kind::kAsync, 0, 0, /*py_stack=*/100);  // kept
    b.free(b.alloc(1 * kMiB, 20, Kind::kAsync, 0, 0, /*py_stack=*/101));
  });
  Analysis a = analyze(b.capture);
  ASSERT_EQ(a.leaks.size(), 1u);
  EXPECT_EQ(a.leaks[0].site.stack_id, 20u);
  EXPECT_EQ(a.leaks[0].site.py_stack_id, 100u);
  EXPECT_EQ(a.leaks[0].live_count, 10u);
}

TEST(Verdicts, TinyLeakAboveOneBytePerIterationIsFound) {
  CaptureBuilder b = loop(40, [](CaptureBuilder &b, int) { b.alloc(512, 14); });
  Analysis a = analyze(b.capture);
  ASSERT_EQ(a.leaks.size(), 1u);
  EXPECT_DOUBLE_EQ(a.leaks[0].bytes_per_iteration, 512.0);
  EXPECT_EQ(a.devices[0].verdict, Verdict::kLeak);
}

}  // namespace
}  // namespace gpuleak::analysis
