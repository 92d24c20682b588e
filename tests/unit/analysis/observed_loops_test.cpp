// Iterations from the observed Python loops (observed_loops.cpp, capture format 1.5): the level
// whose passes explain the memory, its passes cut from the back edges, and what is said when
// nothing is found.
#include <gtest/gtest.h>

#include "analysis/analysis.h"
#include "analysis/capture_builder.h"
#include "format/capture_reader.h"

namespace gpuleak::analysis {
namespace {

using format::LoopKind;
using format::LoopPassOp;
using testing::CaptureBuilder;
using testing::kMiB;
using Frames = std::vector<CaptureBuilder::PyFrame>;

constexpr const char *kServe = "/home/u/serve.py";

// serve.py: main() runs `for r in range(requests)` (lines 30-40, loop 1); each request allocates
// its cache at line 31, then `for t in range(tokens)` (lines 32-36, loop 2, inside loop 1) makes
// one temporary per token at line 33 (through a library frame) and frees it; line 37 keeps
// `per_token` bytes per token when asked; the cache is kept (leak) or freed at line 38.
struct Serve {
  CaptureBuilder b;
  uint32_t at(uint32_t line) {
    return b.py_stack({{kServe, "<module>", 50},
                       {kServe, "main", line},
                       {"/usr/lib/python3/dist-packages/torch/nn/functional.py", "linear", 7}});
  }
  void run(int requests, int tokens, bool keep_cache, uint64_t per_token = 0) {
    b.loop(1, 0, kServe, "main", 30, 40);
    b.loop(2, 1, kServe, "main", 32, 36, 1);
    b.alloc(64 * kMiB, 10, CaptureBuilder::Kind::kDevice, 0, 0, at(20));  // the weights, before the loop
    for (int r = 0; r < requests; ++r) {
      const uint64_t cache = b.alloc(1 * kMiB, 31, CaptureBuilder::Kind::kDevice, 0, 0, at(31));
      for (int t = 0; t < tokens; ++t) {
        const uint64_t logits = b.alloc(256 * 1024, 33, CaptureBuilder::Kind::kDevice, 0, 0, at(33));
        if (per_token) b.alloc(per_token, 37, CaptureBuilder::Kind::kDevice, 0, 0, at(37));
        b.free(logits);
        b.loop_pass(2);
      }
      if (!keep_cache) b.free(cache);
      b.loop_pass(1);
    }
  }
};

TEST(ObservedLoops, ServingLoopIsTheRequestLoopWhenEachRequestKeepsItsCache) {
  Serve s;
  s.run(12, 16, true);
  Analysis a = analyze(s.b.capture);
  EXPECT_EQ(a.iteration_source, IterationSource::kObserved);
  EXPECT_EQ(a.primary_iterations, 12u);
  EXPECT_EQ(a.iteration_choice.summary, "12 passes of the loop at serve.py:30-40");
  EXPECT_EQ(a.iteration_choice.kind, "loop");
  EXPECT_EQ(a.iteration_choice.first_line, 30u);
  EXPECT_EQ(a.iteration_choice.levels, 2u);
  EXPECT_EQ(a.verdict, Verdict::kLeak);
  ASSERT_EQ(a.leaks.size(), 1u);
  EXPECT_EQ(a.leaks[0].site.stack_id, 31u);
  EXPECT_NEAR(a.leaks[0].bytes_per_iteration, 1.0 * kMiB, 0.1 * kMiB);
}

TEST(ObservedLoops, CleanServingLoopTakesTheOuterLevel) {
  Serve s;
  s.run(12, 16, false);
  Analysis a = analyze(s.b.capture);
  EXPECT_EQ(a.iteration_source, IterationSource::kObserved);
  EXPECT_EQ(a.primary_iterations, 12u);
  EXPECT_EQ(a.verdict, Verdict::kClean);
}

TEST(ObservedLoops, WhenBothLevelsKeepAlikeTheOuterOneWins) {
  // Every token keeps 64 KiB: the request loop keeps 16 of them per pass, just as regularly.
  Serve s;
  s.run(12, 16, false, 64 * 1024);
  Analysis a = analyze(s.b.capture);
  EXPECT_EQ(a.primary_iterations, 12u);
  EXPECT_EQ(a.verdict, Verdict::kLeak);
  ASSERT_EQ(a.leaks.size(), 1u);
  EXPECT_EQ(a.leaks[0].site.stack_id, 37u);
  EXPECT_NEAR(a.leaks[0].bytes_per_iteration, 16.0 * 64 * 1024, 0.1 * 16 * 64 * 1024);
}

TEST(ObservedLoops, OneAllocatingLinePerStepIsFoundFromTheBackEdges) {
  // JAX's idiom: the loop body is one call, at one line: the lines never go back.
  CaptureBuilder b;
  b.loop(1, 0, "/home/u/step.py", "main", 12, 13);
  const uint32_t line = b.py_stack({{"/home/u/step.py", "<module>", 40}, {"/home/u/step.py", "main", 13}});
  for (int i = 0; i < 40; ++i) {
    std::vector<uint64_t> temps;
    for (int k = 0; k < i % 4; ++k) temps.push_back(b.alloc(65536, 5, CaptureBuilder::Kind::kDevice, 0, 0, line));
    b.alloc(4 * kMiB, 6, CaptureBuilder::Kind::kDevice, 0, 0, line);  // the kept activation
    for (uint64_t t : temps) b.free(t);
    b.loop_pass(1);
  }
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.iteration_source, IterationSource::kObserved);
  EXPECT_EQ(a.primary_iterations, 40u);
  EXPECT_EQ(a.verdict, Verdict::kLeak);
  ASSERT_EQ(a.leaks.size(), 1u);
  EXPECT_NEAR(a.leaks[0].bytes_per_iteration, 4.0 * kMiB, 0.4 * kMiB);
}

TEST(ObservedLoops, WhileTrueWithABreakKeepsItsLastPass) {
  // 39 back edges; the 40th pass leaves by `break`: it ends at its last allocation in the loop.
  CaptureBuilder b;
  b.loop(1, 0, "/home/u/infer.py", "main", 20, 28);
  const uint32_t line = b.py_stack({{"/home/u/infer.py", "main", 21}});
  for (int i = 0; i < 40; ++i) {
    b.alloc(2 * kMiB, 6, CaptureBuilder::Kind::kDevice, 0, 0, line);
    if (i < 39) b.loop_pass(1);
  }
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.primary_iterations, 40u);
  ASSERT_EQ(a.leaks.size(), 1u);
  EXPECT_NEAR(a.leaks[0].bytes_per_iteration, 2.0 * kMiB, 0.2 * kMiB);
}

TEST(ObservedLoops, ACallbackFromALibraryLoopIsOneIterationPerCall) {
  CaptureBuilder b;
  b.loop(1, 0, "/home/u/model.py", "Model.training_step", 12, 18, 0, LoopKind::kCallback);
  const uint32_t fit = b.py_stack({{"/usr/lib/python3/dist-packages/lightning/fit.py", "fit_loop", 80}});
  const uint32_t step = b.py_stack({{"/usr/lib/python3/dist-packages/lightning/fit.py", "fit_loop", 81},
                                    {"/home/u/model.py", "Model.training_step", 14}});
  const uint32_t keep = b.py_stack({{"/usr/lib/python3/dist-packages/lightning/fit.py", "fit_loop", 81},
                                    {"/home/u/model.py", "Model.training_step", 16}});
  for (int i = 0; i < 30; ++i) {
    const uint64_t batch = b.alloc(kMiB, 3, CaptureBuilder::Kind::kDevice, 0, 0, fit);
    b.loop_pass(1, LoopPassOp::kCallStart);
    const uint64_t loss = b.alloc(4096, 4, CaptureBuilder::Kind::kDevice, 0, 0, step);
    b.alloc(512 * 1024, 7, CaptureBuilder::Kind::kDevice, 0, 0, keep);
    b.loop_pass(1, LoopPassOp::kCallEnd);
    b.free(loss);
    b.free(batch);
  }
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.iteration_source, IterationSource::kObserved);
  EXPECT_EQ(a.primary_iterations, 30u);
  EXPECT_EQ(a.iteration_choice.kind, "callback");
  EXPECT_EQ(a.iteration_choice.summary, "30 calls of Model.training_step at model.py:12-18");
  ASSERT_EQ(a.leaks.size(), 1u);
  EXPECT_EQ(a.leaks[0].site.stack_id, 7u);
  EXPECT_NEAR(a.leaks[0].bytes_per_iteration, 512.0 * 1024, 0.1 * 512 * 1024);
}

// The same handler as captured on the development VM under load (tests/python_frames/
// several_loops.py threads, CPython 3.12.1, the fake CUDA): 48 calls on four workers, each
// keeping 1 MiB at line 78. By time alone its calls kept nothing and the inner loop was taken,
// 147 passes (CI's python_loop.loops_thread_pool failure).
TEST(ObservedLoops, ARecordedThreadPoolRunIsOnePassPerCall) {
  format::Capture capture;
  std::string error;
  ASSERT_TRUE(format::read_capture_file(GPULEAK_SOURCE_DIR "/tests/fixtures/issue33/thread_pool_overlap.gpuleak",
                                        &capture, &error))
      << error;
  Analysis a = analyze(capture);
  EXPECT_EQ(a.iteration_choice.kind, "callback");
  EXPECT_EQ(a.iteration_choice.passes, 48u);
  ASSERT_EQ(a.leaks.size(), 1u);
  EXPECT_NEAR(a.leaks[0].bytes_per_iteration, kMiB, 0.1 * kMiB);  // per call (by the inner loop: a third)
}

TEST(ObservedLoops, APeriodicLeakIsTheStepLoopsNotItsInnerLoops) {
  // Every 10th step keeps 1 MiB; each step runs 4 micro-batches (an inner loop) of temporaries.
  CaptureBuilder b;
  b.loop(1, 0, "/home/u/train.py", "main", 20, 30);
  b.loop(2, 1, "/home/u/train.py", "main", 22, 25, 1);
  const uint32_t micro = b.py_stack({{"/home/u/train.py", "main", 23}});
  const uint32_t keep = b.py_stack({{"/home/u/train.py", "main", 28}});
  for (int step = 0; step < 60; ++step) {
    for (int m = 0; m < 4; ++m) {
      b.free(b.alloc(256 * 1024, 5, CaptureBuilder::Kind::kDevice, 0, 0, micro));
      b.loop_pass(2);
    }
    if (step % 10 == 9) b.alloc(kMiB, 6, CaptureBuilder::Kind::kDevice, 0, 0, keep);
    b.loop_pass(1);
  }
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.iteration_source, IterationSource::kObserved);
  EXPECT_EQ(a.primary_iterations, 60u);
  EXPECT_EQ(a.iteration_choice.first_line, 20u);
  EXPECT_EQ(a.verdict, Verdict::kLeak);
  ASSERT_EQ(a.leaks.size(), 1u);
  EXPECT_EQ(a.leaks[0].site.stack_id, 6u);
  EXPECT_NEAR(a.leaks[0].bytes_per_iteration, 0.1 * kMiB, 0.02 * kMiB);
}

TEST(ObservedLoops, MarksWinOverObservedLoops) {
  Serve s;
  s.b.begin("train");
  s.run(6, 4, true);
  s.b.end();
  Analysis a = analyze(s.b.capture);
  EXPECT_EQ(a.iteration_source, IterationSource::kApi);
}

TEST(ObservedLoops, NothingFoundSaysWhatWasTriedAndSuggestsTheLoop) {
  // One allocating line, three passes observed: too few; the lines never go back.
  CaptureBuilder b;
  b.loop(1, 0, "/home/u/step.py", "main", 12, 13);
  const uint32_t line = b.py_stack({{"/home/u/step.py", "<module>", 40}, {"/home/u/step.py", "main", 13}});
  for (int i = 0; i < 3; ++i) {
    b.alloc(kMiB, 6, CaptureBuilder::Kind::kDevice, 0, 0, line);
    b.loop_pass(1);
  }
  format::Observer o;
  o.method = static_cast<uint32_t>(format::ObserverMethod::kMonitoring);
  o.note = "Python 3.12.1: sys.monitoring tool 3";
  b.capture.observers.push_back(o);
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.iteration_source, IterationSource::kNone);
  EXPECT_TRUE(a.iteration_choice.observed);
  EXPECT_EQ(a.iteration_choice.suggested_loop, "step.py:12");
  ASSERT_GE(a.iteration_choice.tried.size(), 4u);
  EXPECT_EQ(a.iteration_choice.tried[0], "no gpuleak_iteration marks");
  EXPECT_EQ(a.iteration_choice.tried[2], "no observed Python loop or callback ran 4 passes with allocations");
}

TEST(ObservedLoops, WithoutObservationTheSuggestionIsTheBusiestUserLine) {
  CaptureBuilder b;
  const uint32_t line = b.py_stack({{"/home/u/step.py", "<module>", 40}, {"/home/u/step.py", "main", 13}});
  for (int i = 0; i < 3; ++i) b.alloc(kMiB, 6, CaptureBuilder::Kind::kDevice, 0, 0, line);
  format::Observer o;
  o.method = static_cast<uint32_t>(format::ObserverMethod::kUnavailable);
  o.note = "Python 3.11.7: no sys.monitoring (3.12+)";
  b.capture.observers.push_back(o);
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.iteration_source, IterationSource::kNone);
  EXPECT_FALSE(a.iteration_choice.observed);
  EXPECT_EQ(a.iteration_choice.suggested_loop, "step.py:13");
  ASSERT_GE(a.iteration_choice.tried.size(), 3u);
  EXPECT_EQ(a.iteration_choice.tried[2], "Python loops not observed (Python 3.11.7: no sys.monitoring (3.12+))");
}

}  // namespace
}  // namespace gpuleak::analysis
