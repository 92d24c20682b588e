// The hard cases of issue #3, one test each: a spike, a leak every 3rd iteration, a leak that
// starts at iteration 50, a leak beside a plateau, two leaks of different rates, several devices,
// several threads marking iterations. Expected values are worked out by hand from the pattern.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

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

CaptureBuilder loop(int n, const std::function<void(CaptureBuilder &, int)> &body) {
  CaptureBuilder b;
  b.device(0, "Fake GPU", 80'000 * kMiB);
  return train_loop(n, body, std::move(b));
}

const Leak *leak_at(const Analysis &a, uint32_t stack, int device = 0) {
  for (const Leak &l : a.leaks)
    if (l.site.stack_id == stack && l.device == device) return &l;
  return nullptr;
}

TEST(HardCases, OneSpikeMovesNeitherTheRateNorTheConfidence) {
  uint64_t spike = 0;
  CaptureBuilder b = loop(30, [&](CaptureBuilder &b, int i) {
    b.alloc(1 * kMiB, 7);
    if (i == 17) spike = b.alloc(2000 * kMiB, 7);  // live at the end of iteration 17 only
    if (i == 18) b.free(spike);
  });
  Analysis a = analyze(b.capture);
  ASSERT_EQ(a.leaks.size(), 1u);
  const Leak &l = a.leaks[0];
  EXPECT_EQ(l.site.stack_id, 7u);
  EXPECT_DOUBLE_EQ(l.bytes_per_iteration, 1.0 * kMiB);
  EXPECT_DOUBLE_EQ(l.fit_quality, 1.0);
  EXPECT_DOUBLE_EQ(l.confidence, 27.0 / 29.0);
  // Least squares would have been thrown: a different slope and a poor R^2.
  double ls = least_squares_slope(l.live_by_iteration, a.warmup_iterations);
  EXPECT_GT(std::abs(ls - 1.0 * kMiB), 0.2 * kMiB);
  EXPECT_LT(l.r2, 0.6);
  EXPECT_DOUBLE_EQ(a.devices[0].growth_bytes_per_iteration, 1.0 * kMiB);
  ASSERT_TRUE(a.devices[0].forecast.has_value());
  EXPECT_DOUBLE_EQ(a.devices[0].forecast->bytes_per_iteration, 1.0 * kMiB);
}

TEST(HardCases, SpikeOnACleanDeviceIsNotGrowth) {
  uint64_t spike = 0;
  CaptureBuilder b = loop(30, [&](CaptureBuilder &b, int i) {
    if (i == 20) spike = b.alloc(4000 * kMiB, 8);
    if (i == 21) b.free(spike);
  });
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.verdict, Verdict::kClean);
  EXPECT_DOUBLE_EQ(a.devices[0].growth_bytes_per_iteration, 0.0);
  EXPECT_DOUBLE_EQ(a.devices[0].growth_fit_quality, 0.0);
}

TEST(HardCases, LeakEveryThirdIteration) {
  CaptureBuilder b = loop(30, [](CaptureBuilder &b, int i) {
    if (i % 3 == 0) b.alloc(3 * kMiB, 7);
  });
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.verdict, Verdict::kLeak);
  ASSERT_EQ(a.leaks.size(), 1u);
  const Leak &l = a.leaks[0];
  EXPECT_NEAR(l.bytes_per_iteration, 1.0 * kMiB, 0.05 * kMiB);
  EXPECT_EQ(l.live_count, 10u);
  EXPECT_EQ(l.live_bytes, 30 * kMiB);
  EXPECT_GT(l.fit_quality, 0.9);
  EXPECT_EQ(l.first_iteration, 3u);  // the first post-warm-up iteration (3) that kept one
}

TEST(HardCases, LeakThatStartsAtIteration50) {
  CaptureBuilder b = loop(100, [](CaptureBuilder &b, int i) {
    if (i >= 50) b.alloc(1 * kMiB, 7);
  });
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.warmup_iterations, 5u);
  ASSERT_EQ(a.leaks.size(), 1u);
  const Leak &l = a.leaks[0];
  EXPECT_EQ(l.first_iteration, 50u);
  EXPECT_DOUBLE_EQ(l.bytes_per_iteration, 1.0 * kMiB);  // its rate since it began, not diluted
  EXPECT_EQ(l.live_count, 50u);
  EXPECT_GT(l.confidence, 0.6);
  // The device's slope over the whole window is diluted; the forecast takes the leak's rate.
  EXPECT_LT(a.devices[0].growth_bytes_per_iteration, 1.0 * kMiB);
  ASSERT_TRUE(a.devices[0].forecast.has_value());
  EXPECT_DOUBLE_EQ(a.devices[0].forecast->bytes_per_iteration, 1.0 * kMiB);
}

TEST(HardCases, LeakAndPlateauInTheSameRun) {
  CaptureBuilder b = loop(40, [](CaptureBuilder &b, int i) {
    b.alloc(1 * kMiB, 7);               // leaks every iteration
    if (i < 20) b.alloc(16 * kMiB, 9);  // a cache that fills up, then stays
  });
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.verdict, Verdict::kLeak);
  ASSERT_EQ(a.leaks.size(), 1u);
  EXPECT_EQ(a.leaks[0].site.stack_id, 7u);
  EXPECT_DOUBLE_EQ(a.leaks[0].bytes_per_iteration, 1.0 * kMiB);
  EXPECT_EQ(leak_at(a, 9), nullptr);
}

TEST(HardCases, TwoLeakingSitesOfDifferentRates) {
  CaptureBuilder b = loop(20, [](CaptureBuilder &b, int i) {
    b.alloc(4 * kMiB, 7);
    if (i % 2 == 0) b.alloc(1 * kMiB, 8);
    b.alloc(512 * 1024, 8);
  });
  Analysis a = analyze(b.capture);
  ASSERT_EQ(a.leaks.size(), 2u);
  EXPECT_EQ(a.leaks[0].site.stack_id, 7u);  // largest rate first
  EXPECT_DOUBLE_EQ(a.leaks[0].bytes_per_iteration, 4.0 * kMiB);
  EXPECT_EQ(a.leaks[1].site.stack_id, 8u);
  EXPECT_NEAR(a.leaks[1].bytes_per_iteration, 1.0 * kMiB, 0.05 * kMiB);
  EXPECT_EQ(a.leaks[1].live_count, 30u);
  ASSERT_TRUE(a.devices[0].forecast.has_value());
  EXPECT_NEAR(a.devices[0].forecast->bytes_per_iteration, 5.0 * kMiB, 0.05 * kMiB);
}

TEST(HardCases, SeveralDevicesEachWithItsOwnVerdict) {
  // The same code on four devices: leaks on 0, clean on 1, leaks faster on 2 (a pool), and on 3
  // a pool that swaps its one block for a bigger one each step (growth, not a leak).
  uint64_t block = 0;
  CaptureBuilder c = loop(20, [&](CaptureBuilder &c, int i) {
    c.alloc(1 * kMiB, 7, Kind::kDevice, 0);
    c.free(c.alloc(8 * kMiB, 7, Kind::kDevice, 1), Kind::kDevice, 1);
    c.alloc(2 * kMiB, 7, Kind::kAsync, 2);
    uint64_t bigger = c.alloc(static_cast<uint64_t>(i + 1) * kMiB, 5, Kind::kDevice, 3);
    if (block) c.free(block, Kind::kDevice, 3);
    block = bigger;
  });
  Analysis a = analyze(c.capture);
  ASSERT_EQ(a.devices.size(), 4u);
  EXPECT_EQ(a.devices[0].verdict, Verdict::kLeak);
  EXPECT_EQ(a.devices[1].verdict, Verdict::kClean);
  EXPECT_EQ(a.devices[2].verdict, Verdict::kLeak);
  EXPECT_EQ(a.devices[3].verdict, Verdict::kGrowth);
  EXPECT_EQ(a.verdict, Verdict::kLeak);
  ASSERT_EQ(a.leaks.size(), 2u);
  EXPECT_EQ(a.leaks[0].device, 2);
  EXPECT_DOUBLE_EQ(a.leaks[0].bytes_per_iteration, 2.0 * kMiB);
  EXPECT_EQ(a.leaks[1].device, 0);
  EXPECT_DOUBLE_EQ(a.leaks[1].bytes_per_iteration, 1.0 * kMiB);
  EXPECT_DOUBLE_EQ(a.devices[3].growth_bytes_per_iteration, 1.0 * kMiB);
}

TEST(HardCases, IterationsMarkedByTwoThreadsInTurn) {
  // A pipeline whose steps run on alternating threads: thread 1 marks even steps, thread 2 odd ones.
  CaptureBuilder b;
  b.alloc(256 * kMiB, 1);
  for (int i = 0; i < 24; ++i) {
    uint32_t tid = 1 + i % 2;
    b.begin("train", tid);
    b.free(b.alloc(64 * kMiB, 2));
    b.alloc(1 * kMiB, 7);
    b.end("", tid);
  }
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.primary_loop, "train");
  EXPECT_EQ(a.primary_iterations, 24u);
  ASSERT_EQ(a.leaks.size(), 1u);
  EXPECT_DOUBLE_EQ(a.leaks[0].bytes_per_iteration, 1.0 * kMiB);
  EXPECT_EQ(a.leaks[0].live_count, 24u);
}

TEST(HardCases, TwoThreadsMarkingTwoLoopsAtOnce) {
  // Thread 1 trains; thread 2 marks a prefetch loop of its own, overlapping the training steps.
  // The loop with the most iterations is primary; the other's marks do not cut its iterations.
  CaptureBuilder b;
  b.alloc(256 * kMiB, 1);
  for (int i = 0; i < 30; ++i) {
    b.begin("train", 1);
    if (i % 3 == 0) b.begin("prefetch", 2);
    b.free(b.alloc(64 * kMiB, 2));
    b.alloc(2 * kMiB, 7);
    if (i % 3 == 2) b.end("prefetch", 2);
    b.end("train", 1);
  }
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.primary_loop, "train");
  EXPECT_EQ(a.primary_iterations, 30u);
  size_t prefetch = 0;
  for (const Iteration &it : a.iterations) prefetch += it.loop == "prefetch";
  EXPECT_EQ(prefetch, 10u);
  ASSERT_EQ(a.leaks.size(), 1u);
  EXPECT_DOUBLE_EQ(a.leaks[0].bytes_per_iteration, 2.0 * kMiB);
  EXPECT_EQ(a.leaks[0].first_iteration, 0u);
}

TEST(HardCases, PyTorchLoadedWithItsDefaultAllocatorMeansSegments) {
  // Seen on the H200: a short PyTorch run has few segments beside cuBLAS's own odd-sized blocks,
  // so the 2 MiB rule alone misses it; libc10_cuda.so in the process says whose allocator it is.
  auto build = [](const std::string &env) {
    CaptureBuilder b;
    format::Module torch;
    torch.path = "/venv/lib/python3.12/site-packages/torch/lib/libc10_cuda.so";
    b.capture.modules.push_back(torch);
    format::RunInfo run;
    run.allocator = format::AllocatorSettings::parse(env);
    b.capture.run = run;
    for (int i = 0; i < 4; ++i) b.alloc(3 * 1000 * 1000 + i, 1);  // cuBLAS workspaces
    for (int i = 0; i < 20; ++i) {
      b.begin("step");
      if (i % 5 == 0) b.alloc(20 * kMiB, 2);
      b.end();
    }
    return analyze(b.capture);
  };
  Analysis cached = build("");
  EXPECT_EQ(cached.allocator_mode.text(), "segments (PyTorch's caching allocator)");
  EXPECT_NE(cached.allocator_note.find("may be hidden"), std::string::npos) << cached.allocator_note;
  Analysis per_tensor = build("PYTORCH_NO_CUDA_MEMORY_CACHING=1");
  EXPECT_EQ(per_tensor.allocator_mode.text(), "per-allocation");
  EXPECT_EQ(per_tensor.allocator_note, "");
}

TEST(HardCases, CachingAllocatorSegmentsGetTheNoteThatALeakMayHide) {
  // PyTorch's default allocator: 2 MiB segments, plus one odd-sized block from another library.
  CaptureBuilder seg;
  seg.alloc(3 * 1000 * 1000, 1);
  for (int i = 0; i < 20; ++i) {
    seg.begin("step");
    seg.alloc(2 * kMiB, 2);
    seg.end();
  }
  Analysis a = analyze(seg.capture);
  EXPECT_EQ(a.allocator_mode.text(), "segments (a caching allocator: every block a multiple of 2 MiB)");
  EXPECT_NE(a.allocator_note.find("may be hidden"), std::string::npos) << a.allocator_note;
  EXPECT_NE(a.allocator_note.find("--torch per-tensor"), std::string::npos) << a.allocator_note;
  // Per-tensor allocations of any size: no note.
  CaptureBuilder tensors = loop(20, [](CaptureBuilder &b, int) { b.alloc(4, 7); });
  Analysis t = analyze(tensors.capture);
  EXPECT_EQ(t.allocator_mode.text(), "per-allocation");
  EXPECT_EQ(t.allocator_note, "");
  // Per-tensor 2 MiB activations, allocated and freed every step: not segments.
  CaptureBuilder acts = loop(20, [](CaptureBuilder &b, int) {
    for (int k = 0; k < 4; ++k) b.free(b.alloc(2 * kMiB, 8));
    b.alloc(4, 7);
  });
  EXPECT_EQ(analyze(acts.capture).allocator_note, "");
}

TEST(HardCases, LiveCountedAtTheLastIterationEvenWhenFreedAtExit) {
  std::vector<uint64_t> kept;
  CaptureBuilder b = loop(20, [&](CaptureBuilder &b, int) { kept.push_back(b.alloc(1 * kMiB, 7)); });
  for (uint64_t p : kept) b.free(p);  // an interpreter tearing down its objects at exit
  Analysis a = analyze(b.capture);
  ASSERT_EQ(a.leaks.size(), 1u);
  EXPECT_EQ(a.leaks[0].live_bytes, 20 * kMiB);
  EXPECT_EQ(a.leaks[0].live_count, 20u);
  EXPECT_EQ(a.leaks[0].live_at_exit_bytes, 0u);
  EXPECT_EQ(a.leaks[0].live_at_exit_count, 0u);
}

TEST(HardCases, LiveAtExitKeptApartFromLiveAtTheLastIteration) {
  CaptureBuilder b = loop(20, [](CaptureBuilder &b, int) { b.alloc(1 * kMiB, 7); });
  b.alloc(5 * kMiB, 7);  // after the loop, same site
  Analysis a = analyze(b.capture);
  ASSERT_EQ(a.leaks.size(), 1u);
  EXPECT_EQ(a.leaks[0].live_bytes, 20 * kMiB);
  EXPECT_EQ(a.leaks[0].live_at_exit_bytes, 25 * kMiB);
  EXPECT_EQ(a.leaks[0].live_at_exit_count, 21u);
}

}  // namespace
}  // namespace gpuleak::analysis
