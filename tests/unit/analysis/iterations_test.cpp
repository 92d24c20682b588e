// Iterations from the C API's marks and from NVTX ranges.
#include <gtest/gtest.h>

#include "analysis/analysis.h"
#include "analysis/capture_builder.h"

namespace gpuleak::analysis {
namespace {

using testing::CaptureBuilder;
using testing::kMiB;

void temp(CaptureBuilder &b, uint32_t stack = 2) { b.free(b.alloc(1 * kMiB, stack)); }

TEST(ApiIterations, TrainAndEvalLoopsKeptApart) {
  CaptureBuilder b;
  for (int epoch = 0; epoch < 3; ++epoch) {
    for (int i = 0; i < 5; ++i) {
      b.begin("train");
      temp(b);
      b.end();
    }
    b.begin("eval");
    temp(b, 3);
    b.end("eval");
  }
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.iteration_source, IterationSource::kApi);
  EXPECT_EQ(a.primary_loop, "train");
  EXPECT_EQ(a.primary_iterations, 15u);
  ASSERT_EQ(a.iterations.size(), 18u);
  EXPECT_EQ(a.iterations[5].loop, "eval");
  EXPECT_EQ(a.iterations[5].index, 0u);
  EXPECT_FALSE(a.iterations[5].primary);
  EXPECT_EQ(a.iterations[6].loop, "train");
  EXPECT_EQ(a.iterations[6].index, 5u);
  EXPECT_TRUE(a.iterations[6].primary);
  EXPECT_EQ(a.iterations[17].loop, "eval");
  EXPECT_EQ(a.iterations[17].index, 2u);
  EXPECT_EQ(a.warmup_iterations, 1u);
  EXPECT_EQ(a.verdict, Verdict::kClean);
}

TEST(ApiIterations, UnbalancedBeginClosesAtNextBeginAndAtCaptureEnd) {
  CaptureBuilder b;
  for (int i = 0; i < 3; ++i) {
    b.begin("step");
    b.alloc(1 * kMiB, 5);
  }
  b.advance(5000);
  b.free(b.alloc(1 * kMiB, 6));
  Analysis a = analyze(b.capture);
  ASSERT_EQ(a.iterations.size(), 3u);
  EXPECT_EQ(a.iterations[0].end_ns, a.iterations[1].start_ns);
  EXPECT_EQ(a.iterations[1].end_ns, a.iterations[2].start_ns);
  EXPECT_EQ(a.iterations[2].end_ns, a.duration_ns);
  EXPECT_EQ(a.iteration_device(0, 0).live_end_bytes, 1 * kMiB);
  EXPECT_EQ(a.iteration_device(2, 0).live_end_bytes, 3 * kMiB);
}

TEST(ApiIterations, EndWithoutNameClosesTheInnermostOfItsThread) {
  CaptureBuilder b;
  b.begin("train", 1);
  b.begin("eval", 2);  // begun later, on another thread
  b.end("", 1);        // closes train: its thread's own
  b.end("", 2);
  b.begin("train", 1);
  b.begin("eval", 1);
  b.end("", 1);  // innermost of thread 1: eval
  b.end("", 1);
  b.end("", 1);  // nothing open: ignored
  Analysis a = analyze(b.capture);
  ASSERT_EQ(a.iterations.size(), 4u);
  // One record every 1000 ns from 1000: begin train, begin eval, end, end, begin, begin, end...
  EXPECT_EQ(a.iterations[0].loop, "train");
  EXPECT_EQ(a.iterations[0].end_ns, 3000u);
  EXPECT_EQ(a.iterations[1].loop, "eval");
  EXPECT_EQ(a.iterations[1].end_ns, 4000u);
  EXPECT_EQ(a.iterations[2].loop, "train");
  EXPECT_EQ(a.iterations[2].end_ns, 8000u);
  EXPECT_EQ(a.iterations[3].loop, "eval");
  EXPECT_EQ(a.iterations[3].end_ns, 7000u);
}

TEST(ApiIterations, WinOverNvtx) {
  CaptureBuilder b;
  for (int i = 0; i < 4; ++i) {
    b.push("step");
    b.begin("loop");
    temp(b);
    b.end();
    b.pop();
  }
  b.push("step");
  b.pop();
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.iteration_source, IterationSource::kApi);
  EXPECT_EQ(a.iterations.size(), 4u);
}

TEST(NvtxIterations, NestedRangesUseTheOutermost) {
  CaptureBuilder b;
  for (int i = 0; i < 4; ++i) {
    b.push("step " + std::to_string(i));
    b.push("forward");
    b.push("Step");  // a matching range inside a matching range
    temp(b);
    b.pop();
    b.pop();
    temp(b);
    b.pop();
  }
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.iteration_source, IterationSource::kNvtx);
  ASSERT_EQ(a.iterations.size(), 4u);
  EXPECT_EQ(a.iterations[0].loop, "step");
  EXPECT_EQ(a.iteration_device(0, 0).alloc_count, 2u);
  EXPECT_EQ(a.iterations[3].index, 3u);
}

TEST(NvtxIterations, UnbalancedPopIgnoredAndThreadsKeptApart) {
  CaptureBuilder b;
  b.pop(2);  // nothing pushed on thread 2: ignored
  for (int i = 0; i < 4; ++i) {
    b.push("iteration", 1);
    b.push("data", 2);
    b.alloc(1 * kMiB, 7);
    b.pop(2);  // closes thread 2's "data", not thread 1's step
    b.alloc(1 * kMiB, 8);
    b.pop(1);
  }
  b.pop(1);  // unbalanced again
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.iteration_source, IterationSource::kNvtx);
  ASSERT_EQ(a.iterations.size(), 4u);
  EXPECT_EQ(a.iterations[0].loop, "iteration");
  EXPECT_EQ(a.iteration_device(0, 0).alloc_count, 2u);
  EXPECT_EQ(a.iteration_device(3, 0).live_end_bytes, 8 * kMiB);
}

TEST(NvtxIterations, StartEndRangesPairedById) {
  CaptureBuilder b;
  for (uint64_t i = 0; i < 5; ++i) {
    b.start("train_step " + std::to_string(i), 100 + i, 1);
    temp(b);
    b.end_range(100 + i, 2);  // ended on another thread
  }
  b.end_range(999, 1);  // unknown id: ignored
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.iteration_source, IterationSource::kNvtx);
  ASSERT_EQ(a.iterations.size(), 5u);
  EXPECT_EQ(a.iterations[0].loop, "train_step");
  EXPECT_EQ(a.iterations[0].end_ns - a.iterations[0].start_ns, 3000u);
}

TEST(NvtxIterations, WholeNameMustMatch) {
  CaptureBuilder b;
  for (const char *name : {"my_step", "stepper", "step 1 of 2", "ITERATION#3", "Iter-4", "iteration:5"}) {
    b.push(name);
    temp(b);
    b.pop();
  }
  Analysis a = analyze(b.capture);
  ASSERT_EQ(a.iterations.size(), 3u);
  EXPECT_EQ(a.iterations[0].loop, "iteration");
  EXPECT_EQ(a.iterations[1].loop, "iter");
  EXPECT_EQ(a.iterations[2].loop, "iteration");
  EXPECT_EQ(a.primary_loop, "iteration");
  EXPECT_EQ(a.primary_iterations, 2u);
}

TEST(NvtxIterations, CustomPatternWithoutGroupNamesTheLoopWithoutItsNumber) {
  CaptureBuilder b;
  for (int i = 0; i < 4; ++i) {
    b.push("Batch-" + std::to_string(i));
    temp(b);
    b.pop();
  }
  AnalysisOptions o;
  o.iteration_range_regex = "batch-[0-9]+";
  Analysis a = analyze(b.capture, o);
  ASSERT_EQ(a.iterations.size(), 4u);
  EXPECT_EQ(a.iterations[0].loop, "batch");
  EXPECT_EQ(a.primary_iterations, 4u);
  EXPECT_TRUE(a.warnings.empty());
}

TEST(NvtxIterations, InvalidPatternFallsBackToTheDefault) {
  CaptureBuilder b;
  for (int i = 0; i < 4; ++i) {
    b.push("step");
    temp(b);
    b.pop();
  }
  AnalysisOptions o;
  o.iteration_range_regex = "(unclosed";
  Analysis a = analyze(b.capture, o);
  EXPECT_EQ(a.iterations.size(), 4u);
  ASSERT_EQ(a.warnings.size(), 1u);
  EXPECT_NE(a.warnings[0].find("(unclosed"), std::string::npos);
}

TEST(NvtxIterations, UnclosedRangeEndsWithTheCapture) {
  CaptureBuilder b;
  b.push("step");
  b.alloc(1 * kMiB, 1);
  b.pop();
  b.push("step");
  b.alloc(1 * kMiB, 1);  // killed mid-iteration
  Analysis a = analyze(b.capture);
  ASSERT_EQ(a.iterations.size(), 2u);
  EXPECT_EQ(a.iterations[1].end_ns, a.duration_ns);
  EXPECT_EQ(a.iteration_device(1, 0).live_end_bytes, 2 * kMiB);
}

}  // namespace
}  // namespace gpuleak::analysis
