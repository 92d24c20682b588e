// Iterations from the Python frames (python_loop_detection.cpp): loops whose allocation sequence
// differs from step to step, found from the lines of the user's own frame.
#include <gtest/gtest.h>

#include "analysis/analysis.h"
#include "analysis/capture_builder.h"

namespace gpuleak::analysis {
namespace {

using testing::CaptureBuilder;
using testing::kMiB;
using Frames = std::vector<CaptureBuilder::PyFrame>;

// A fixed pseudo-random sequence (no std:: distribution: the same on every standard library).
struct Lcg {
  uint64_t x = 12345;
  uint32_t next(uint32_t n) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(x >> 33) % n;
  }
};

// train.py: main() allocates weights at line 10, then loops: line 20 (the batch), a random subset
// of lines 21..23 (one through augment() in aug.py, itself picking a random line) allocate
// temporaries of random sizes, line 24 the loss, and line 30 keeps `kept` bytes per step (0:
// nothing kept). A step always allocates at its first and a later line: two passes in a row at
// one line only would read as one. Everything freed at the end of
// its step but the kept ones. Native stacks are one per line, so sites follow lines.
struct IrregularLoop {
  CaptureBuilder b;
  uint32_t py(uint32_t main_line, const char *inner_file = nullptr, const char *inner_fn = nullptr,
              uint32_t inner_line = 0) {
    Frames f = {{"/home/u/train.py", "<module>", 99}, {"/home/u/train.py", "main", main_line}};
    if (inner_file) f.push_back({inner_file, inner_fn, inner_line});
    // Library frames below the user's: torch's own loops must not be taken for the program's.
    f.push_back({"/usr/lib/python3/dist-packages/torch/nn/modules/container.py", "Sequential.forward",
                 static_cast<uint32_t>(200 + inner_line % 3)});
    return b.py_stack(f);
  }
  void run(int steps, uint64_t kept) {
    const uint32_t weights = py(10);
    for (int i = 0; i < 3; ++i) b.alloc(8 * kMiB, 1, CaptureBuilder::Kind::kDevice, 0, 0, weights);
    Lcg r;
    for (int step = 0; step < steps; ++step) {
      std::vector<uint64_t> temps;
      for (uint32_t line = 20; line <= 23; ++line) {
        // Data-dependent: this op does not run this step (line 20, the batch, always does: a step
        // that allocates nothing cannot be seen).
        if (line > 20 && r.next(3) == 0) continue;
        const uint32_t repeat = 1 + r.next(3);
        for (uint32_t k = 0; k < repeat; ++k) {
          uint32_t stack = line == 22 ? py(22, "/home/u/aug.py", "augment", 5 + r.next(2)) : py(line);
          temps.push_back(b.alloc((1 + r.next(16)) * 65536, line, CaptureBuilder::Kind::kDevice, 0, 0, stack));
        }
      }
      temps.push_back(b.alloc(4096, 24, CaptureBuilder::Kind::kDevice, 0, 0, py(24)));  // the loss
      if (kept) b.alloc(kept, 30, CaptureBuilder::Kind::kDevice, 0, 0, py(30));
      for (uint64_t t : temps) b.free(t);
    }
  }
};

TEST(PythonLoop, IrregularLoopLeaksAtTheRightRate) {
  IrregularLoop l;
  l.run(40, 1 * kMiB);
  Analysis a = analyze(l.b.capture);
  EXPECT_EQ(a.iteration_source, IterationSource::kPythonLoop);
  EXPECT_EQ(a.primary_loop, "main (train.py:20)");
  EXPECT_EQ(a.primary_iterations, 40u);
  EXPECT_EQ(a.verdict, Verdict::kLeak);
  ASSERT_EQ(a.leaks.size(), 1u);
  EXPECT_EQ(a.leaks[0].site.stack_id, 30u);
  EXPECT_DOUBLE_EQ(a.leaks[0].bytes_per_iteration, 1.0 * kMiB);
  EXPECT_EQ(a.leaks[0].live_count, 40u);
}

TEST(PythonLoop, CleanIrregularLoopStaysClean) {
  IrregularLoop l;
  l.run(40, 0);
  Analysis a = analyze(l.b.capture);
  EXPECT_EQ(a.iteration_source, IterationSource::kPythonLoop);
  EXPECT_EQ(a.primary_iterations, 40u);
  EXPECT_EQ(a.verdict, Verdict::kClean);
  EXPECT_TRUE(a.leaks.empty());
}

// The weights (line 10) come before the loop and belong to no iteration: the first iteration
// starts at the loop's first allocation, and the one after the loop (line 40) ends the last.
TEST(PythonLoop, SetupBeforeAndCodeAfterTheLoopAreOutside) {
  IrregularLoop l;
  l.run(12, 1 * kMiB);
  const uint64_t after = l.b.now();
  l.b.free(l.b.alloc(64 * kMiB, 40, CaptureBuilder::Kind::kDevice, 0, 0, l.py(40)));
  Analysis a = analyze(l.b.capture);
  ASSERT_EQ(a.primary_iterations, 12u);
  EXPECT_EQ(a.iterations.front().start_ns, 4000u);  // the 4th record: after the three weights
  EXPECT_LE(a.iterations.back().end_ns + l.b.capture.header.monotonic_ns, after);
  for (size_t i = 0; i < a.iterations.size(); ++i) EXPECT_LT(a.iteration_device(i, 0).peak_bytes, 64 * kMiB);
}

// A loop nested in the step (micro-batches in train_step) is not the iteration: the outer loop,
// which nearly every allocation also goes through, has fewer passes.
TEST(PythonLoop, OuterLoopWinsOverANestedOne) {
  CaptureBuilder b;
  auto py = [&](uint32_t main_line, uint32_t step_line) {
    Frames f = {{"/home/u/train.py", "main", main_line}};
    if (step_line) f.push_back({"/home/u/train.py", "train_step", step_line});
    return b.py_stack(f);
  };
  for (int step = 0; step < 20; ++step) {
    uint64_t batch = b.alloc(4 * kMiB, 1, CaptureBuilder::Kind::kDevice, 0, 0, py(50, 0));
    for (int micro = 0; micro < 4; ++micro) {
      uint64_t x = b.alloc(1 * kMiB, 2, CaptureBuilder::Kind::kDevice, 0, 0, py(51, 5));
      uint64_t y = b.alloc(1 * kMiB, 3, CaptureBuilder::Kind::kDevice, 0, 0, py(51, 6 + micro % 2));
      b.free(x), b.free(y);
    }
    b.alloc(4096, 4, CaptureBuilder::Kind::kDevice, 0, 0, py(52, 0));  // kept
    b.free(batch);
  }
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.iteration_source, IterationSource::kPythonLoop);
  EXPECT_EQ(a.primary_loop, "main (train.py:50)");
  EXPECT_EQ(a.primary_iterations, 20u);
  ASSERT_EQ(a.leaks.size(), 1u);
  EXPECT_DOUBLE_EQ(a.leaks[0].bytes_per_iteration, 4096.0);
}

// Only library frames change line: not the program's loop, and without a user loop the
// sequence's period is used as before.
TEST(PythonLoop, LibraryLoopsAreNotCandidates) {
  CaptureBuilder b;
  auto py = [&](uint32_t lib_line) {
    return b.py_stack(
        {{"/home/u/train.py", "main", 7},
         {"/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", "Module._call_impl", lib_line}});
  };
  for (int step = 0; step < 10; ++step) {
    uint64_t t = b.alloc(1 * kMiB, 1, CaptureBuilder::Kind::kDevice, 0, 0, py(100));
    b.alloc(4096, 2, CaptureBuilder::Kind::kDevice, 0, 0, py(101));
    b.free(t);
  }
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.iteration_source, IterationSource::kAuto);
  EXPECT_EQ(a.primary_iterations, 10u);
}

// CuPy with its pool: what reaches CUDA is the pool's growth, so no loop is looked for without
// marks (no rate per pool chunk), and the note says how to see arrays: under `gpuleak run`, where
// they are seen inside the pool by default (issue #27), never by turning the pool off. With the pool off
// (gpuleak run --cupy per-array, recorded as GPULEAK_CUPY), the loop is found again.
TEST(PythonLoop, NoUnmarkedLoopWhenAFrameworkPoolHidesObjects) {
  auto build = [](const std::string &env) {
    IrregularLoop l;
    l.b.py_stack({{"/opt/venv/lib/python3.12/site-packages/cupy/_core/core.py", "ndarray.__init__", 1}});
    l.run(20, 1 * kMiB);
    l.b.capture.run.emplace();
    l.b.capture.run->allocator = format::AllocatorSettings::parse(env);
    return analyze(l.b.capture);
  };
  Analysis pool = build("");
  EXPECT_EQ(pool.iteration_source, IterationSource::kNone);
  EXPECT_EQ(pool.verdict, Verdict::kInconclusive);
  EXPECT_EQ(pool.allocator_mode.text(), "pool (CuPy's memory pool)");
  EXPECT_NE(pool.allocator_note.find("every array is seen inside the pool"), std::string::npos) << pool.allocator_note;
  EXPECT_EQ(pool.allocator_note.find("--cupy per-array"), std::string::npos) << pool.allocator_note;
  Analysis per_array = build("GPULEAK_CUPY=per-array");
  EXPECT_EQ(per_array.iteration_source, IterationSource::kPythonLoop);
  EXPECT_EQ(per_array.allocator_mode.text(), "per-array (CuPy without its memory pool)");
  EXPECT_TRUE(per_array.allocator_note.empty());
  EXPECT_EQ(per_array.verdict, Verdict::kLeak);
}

// Marks are the program's own word: the Python loop is only looked for without them.
TEST(PythonLoop, MarksWin) {
  IrregularLoop l;
  l.b.begin("train");
  l.run(6, 1 * kMiB);
  l.b.end("train");
  Analysis a = analyze(l.b.capture);
  EXPECT_EQ(a.iteration_source, IterationSource::kApi);
  EXPECT_EQ(a.primary_iterations, 1u);
}

}  // namespace
}  // namespace gpuleak::analysis
