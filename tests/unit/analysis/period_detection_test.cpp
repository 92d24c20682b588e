// Automatic iterations: the period of the allocation call-site sequence.
#include <gtest/gtest.h>

#include "analysis/analysis.h"
#include "analysis/capture_builder.h"

namespace gpuleak::analysis {
namespace {

using testing::CaptureBuilder;
using testing::kMiB;

TEST(PeriodDetection, LoopAfterWarmupPrefixAndBeforeTailLeaks) {
  CaptureBuilder b;
  b.alloc(100 * kMiB, 10);  // weights
  b.alloc(50 * kMiB, 11);
  b.free(b.alloc(8 * kMiB, 12));
  for (int i = 0; i < 20; ++i) {
    uint64_t t = b.alloc(64 * kMiB, 2);
    b.alloc(1 * kMiB, 7);  // kept forever
    b.free(t);
  }
  b.free(b.alloc(8 * kMiB, 50));  // tail
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.iteration_source, IterationSource::kAuto);
  EXPECT_EQ(a.primary_loop, "auto");
  ASSERT_EQ(a.iterations.size(), 20u);
  EXPECT_EQ(a.iterations[0].start_ns, 5000u);  // the 5th record: the loop's first allocation
  EXPECT_EQ(a.iterations[0].end_ns, 7000u);
  EXPECT_EQ(a.iteration_device(19, 0).live_end_bytes, 170 * kMiB);
  EXPECT_EQ(a.verdict, Verdict::kLeak);
  ASSERT_EQ(a.leaks.size(), 1u);
  EXPECT_EQ(a.leaks[0].site.stack_id, 7u);
  EXPECT_DOUBLE_EQ(a.leaks[0].bytes_per_iteration, 1.0 * kMiB);
  EXPECT_EQ(a.leaks[0].live_count, 20u);
  EXPECT_EQ(a.leaks[0].first_iteration, 0u);
}

TEST(PeriodDetection, NoPeriodIsInconclusiveWithLiveAtExit) {
  CaptureBuilder b;
  std::vector<uint64_t> p;
  for (uint32_t i = 1; i <= 10; ++i) p.push_back(b.alloc(i * kMiB, i));
  b.free(p[9]);  // site 10
  b.free(p[3]);  // site 4
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.iteration_source, IterationSource::kNone);
  EXPECT_EQ(a.verdict, Verdict::kInconclusive);
  EXPECT_TRUE(a.iterations.empty());
  EXPECT_TRUE(a.leaks.empty());
  ASSERT_EQ(a.live_at_exit.size(), 8u);
  EXPECT_EQ(a.live_at_exit_sites, 8u);
  EXPECT_EQ(a.live_at_exit[0].site.stack_id, 9u);
  EXPECT_EQ(a.live_at_exit[0].live_bytes, 9 * kMiB);
  EXPECT_EQ(a.live_at_exit[0].live_count, 1u);
  EXPECT_EQ(a.live_at_exit[7].site.stack_id, 1u);
  EXPECT_EQ(a.devices[0].verdict, Verdict::kInconclusive);
}

// Seen on the H200 (tests/gpu/async_pools.cu): four buffers allocated in a set-up loop, freed
// together, then unrelated work. The burst repeats, but it is not the program's loop.
TEST(PeriodDetection, SetUpBurstIsNotALoop) {
  CaptureBuilder b;
  std::vector<uint64_t> burst;
  for (int i = 0; i < 4; ++i) burst.push_back(b.alloc(1 * kMiB + 4096 * i, 3));
  for (uint64_t p : burst) b.free(p);
  for (uint32_t site = 20; site < 27; ++site) b.free(b.alloc(2 * kMiB, site));
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.iteration_source, IterationSource::kNone);
  EXPECT_TRUE(a.leaks.empty());
  EXPECT_NE(a.verdict, Verdict::kLeak);
}

TEST(PeriodDetection, NothingAllocatedIsClean) {
  CaptureBuilder b;
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.iteration_source, IterationSource::kNone);
  EXPECT_EQ(a.verdict, Verdict::kClean);
  EXPECT_TRUE(a.devices.empty());

  b.failed_alloc(1 * kMiB, 1);  // asked, never got
  a = analyze(b.capture);
  EXPECT_EQ(a.verdict, Verdict::kClean);
  ASSERT_EQ(a.devices.size(), 1u);
  EXPECT_EQ(a.devices[0].verdict, Verdict::kClean);
}

TEST(PeriodDetection, SiteRepeatedInsideThePeriodDoesNotCut) {
  CaptureBuilder b;
  for (int i = 0; i < 10; ++i) {
    uint64_t x = b.alloc(1 * kMiB, 1);
    uint64_t y = b.alloc(1 * kMiB, 1);
    uint64_t z = b.alloc(2 * kMiB, 3);
    b.free(x);
    b.free(y);
    b.free(z);
  }
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.iteration_source, IterationSource::kAuto);
  ASSERT_EQ(a.iterations.size(), 10u);
  EXPECT_EQ(a.iterations[0].start_ns, 1000u);  // after the frees, not at the site seen once
  EXPECT_EQ(a.iterations[9].end_ns, 60000u);
  EXPECT_EQ(a.verdict, Verdict::kClean);
}

TEST(PeriodDetection, IterationsEndWhereTheTemporariesAreGone) {
  CaptureBuilder b;
  for (int i = 0; i < 12; ++i) {
    uint64_t x = b.alloc(16 * kMiB, 1);  // site 1 twice per period: not an anchor
    uint64_t y = b.alloc(16 * kMiB, 1);
    b.alloc(1 * kMiB, 2);  // the only site seen once per period
    b.free(x);
    b.free(y);
  }
  Analysis a = analyze(b.capture);
  ASSERT_EQ(a.iterations.size(), 12u);
  EXPECT_EQ(a.iterations[0].start_ns, 1000u);
  EXPECT_EQ(a.iteration_device(3, 0).live_end_bytes, 4 * kMiB);  // no temporary counted
  EXPECT_EQ(a.iteration_device(3, 0).peak_bytes, 36 * kMiB);
  ASSERT_EQ(a.leaks.size(), 1u);
  EXPECT_EQ(a.leaks[0].site.stack_id, 2u);
}

TEST(PeriodDetection, TooFewRepetitionsIsNone) {
  CaptureBuilder b;
  for (int i = 0; i < 3; ++i) {
    uint64_t t = b.alloc(4 * kMiB, 1);
    b.alloc(1 * kMiB, 2);
    b.free(t);
  }
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.iteration_source, IterationSource::kNone);
  EXPECT_EQ(a.verdict, Verdict::kInconclusive);
  AnalysisOptions o;
  o.min_auto_repetitions = 3;
  EXPECT_EQ(analyze(b.capture, o).iteration_source, IterationSource::kAuto);
}

TEST(PeriodDetection, AnIterationWithOneExtraAllocationKeepsTheLoop) {
  CaptureBuilder b;
  for (int i = 0; i < 30; ++i) {
    uint64_t t = b.alloc(4 * kMiB, 1);
    b.alloc(1 * kMiB, 2);
    if (i == 15) b.free(b.alloc(1 * kMiB, 99));  // a log step
    b.free(t);
  }
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.iteration_source, IterationSource::kAuto);
  EXPECT_EQ(a.primary_iterations, 30u);
  ASSERT_EQ(a.leaks.size(), 1u);
  EXPECT_EQ(a.leaks[0].site.stack_id, 2u);
  EXPECT_EQ(a.leaks[0].live_count, 30u);
}

TEST(PeriodDetection, EveryAllocationFromOneSite) {
  CaptureBuilder b;
  for (int i = 0; i < 10; ++i) b.alloc(2 * kMiB, 5);
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.iteration_source, IterationSource::kAuto);
  ASSERT_EQ(a.iterations.size(), 10u);
  EXPECT_EQ(a.iteration_device(4, 0).live_end_bytes, 10 * kMiB);
  ASSERT_EQ(a.leaks.size(), 1u);
  EXPECT_DOUBLE_EQ(a.leaks[0].bytes_per_iteration, 2.0 * kMiB);
}

}  // namespace
}  // namespace gpuleak::analysis
