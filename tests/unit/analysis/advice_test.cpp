// Loop advice (advice*.cpp): each kind on the pattern it is there for, and the look-alikes that
// must get no advice (a big but stable pool, a double buffer, a one-off warm-up allocation, a
// clean loop with preallocated buffers).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>

#include "analysis/advice_checks.h"
#include "analysis/analysis.h"
#include "analysis/capture_builder.h"

namespace gpuleak::analysis {
namespace {

using checks::evidence;
using checks::expect_consistent;
using checks::kinds;
using checks::saving;
using format::Kind;
using testing::CaptureBuilder;
using testing::kMiB;

// Weights before the loop, then `n` iterations of loop "train" running body(b, i).
CaptureBuilder loop(int n, const std::function<void(CaptureBuilder &, int)> &body, uint64_t weights = 16 * kMiB) {
  CaptureBuilder b;
  b.alloc(weights, 1);
  for (int i = 0; i < n; ++i) {
    b.begin("train");
    body(b, i);
    b.end();
  }
  return b;
}

// An allocation and its free, each taking `ns` inside the call.
uint64_t timed_alloc(CaptureBuilder &b, uint64_t size, uint32_t stack, uint32_t ns) {
  uint64_t p = b.alloc(size, stack);
  b.capture.memory.back().duration_ns = ns;
  return p;
}
void timed_free(CaptureBuilder &b, uint64_t p, uint32_t ns, uint32_t free_stack = 0) {
  format::MemoryRecord &r = b.free(p);
  r.duration_ns = ns;
  r.stack_id = free_stack;
}

std::vector<const Advice *> of_kind(const Analysis &a, AdviceKind kind) {
  std::vector<const Advice *> out;
  for (const Advice &x : a.advice)
    if (x.kind == kind) out.push_back(&x);
  return out;
}

TEST(Advice, CleanLoopWithPreallocatedBuffersGetsNoAdvice) {
  CaptureBuilder b;
  b.device(0, "H200", 1ull << 30);
  b.alloc(16 * kMiB, 1);
  uint64_t in = b.alloc(64 * kMiB, 2), outb = b.alloc(64 * kMiB, 3);
  for (int i = 0; i < 20; ++i) {
    b.begin("train");
    b.advance(1'000'000);  // the work
    b.end();
  }
  b.free(in);
  b.free(outb);
  Analysis a = analyze(b.capture);
  EXPECT_EQ(a.primary_iterations, 20u);
  EXPECT_TRUE(a.advice.empty()) << kinds(a);
}

// Preallocated buffers filling 90 % of the device are a sizing choice, not a loop problem.
TEST(Advice, CleanLoopOnAFullDeviceGetsNoAdvice) {
  CaptureBuilder b;
  b.device(0, "H200", 100 * kMiB);
  b.alloc(20 * kMiB, 1);
  b.alloc(70 * kMiB, 2);  // an arena, made once
  for (int i = 0; i < 20; ++i) {
    b.begin("train");
    b.advance(1'000'000);
    b.end();
  }
  Analysis a = analyze(b.capture);
  EXPECT_TRUE(a.advice.empty()) << kinds(a);
}

TEST(Advice, ChurnOfOneTemporaryPerIteration) {
  CaptureBuilder b = loop(12, [](CaptureBuilder &b, int) {
    uint64_t t = timed_alloc(b, 4 * kMiB, 7, 30'000);
    timed_free(b, t, 20'000);
  });
  Analysis a = analyze(b.capture);
  auto churn = of_kind(a, AdviceKind::kChurn);
  ASSERT_EQ(churn.size(), 1u) << kinds(a);
  const Advice &c = *churn[0];
  EXPECT_TRUE(c.has_site);
  EXPECT_EQ(c.site.stack_id, 7u);
  EXPECT_EQ(evidence(c, "allocs_per_iteration"), 1);
  EXPECT_EQ(evidence(c, "bytes_per_iteration"), 4.0 * kMiB);
  EXPECT_EQ(evidence(c, "alloc_time_ns_per_iteration"), 30'000);
  EXPECT_EQ(evidence(c, "free_time_ns_per_iteration"), 20'000);
  EXPECT_EQ(evidence(c, "iterations_with_pattern"), 11);  // 12 less one warm-up
  EXPECT_EQ(saving(c, "time_ns_per_iteration"), 50'000);
  EXPECT_NE(c.message.find("allocate it once before the loop and reuse it"), std::string::npos) << c.message;
  EXPECT_NE(c.message.find("4.0 MiB"), std::string::npos) << c.message;
  EXPECT_TRUE(of_kind(a, AdviceKind::kCacheThrash).empty()) << kinds(a);
  EXPECT_TRUE(of_kind(a, AdviceKind::kLateRelease).empty()) << kinds(a);
}

TEST(Advice, ChurnNeedsBoundedSizesAndMostIterations) {
  // Sizes growing 1 MiB -> 12 MiB: no single buffer to preallocate.
  Analysis growing = analyze(loop(12, [](CaptureBuilder &b, int i) { b.free(b.alloc((i + 1) * kMiB, 7)); }).capture);
  EXPECT_TRUE(of_kind(growing, AdviceKind::kChurn).empty()) << kinds(growing);
  // Every third iteration only.
  Analysis rare = analyze(loop(12, [](CaptureBuilder &b, int i) {
                            if (i % 3 == 0) b.free(b.alloc(kMiB, 7));
                          }).capture);
  EXPECT_TRUE(of_kind(rare, AdviceKind::kChurn).empty()) << kinds(rare);
}

TEST(Advice, OneOffWarmupAllocationIsNoChurnNorLateRelease) {
  Analysis a = analyze(loop(12, [](CaptureBuilder &b, int i) {
                         if (i == 0) b.free(b.alloc(32 * kMiB, 7));  // a workspace probed once
                         if (i == 1) b.alloc(8 * kMiB, 8);           // kept for the whole run
                         b.advance(100'000);
                       }).capture);
  EXPECT_TRUE(a.advice.empty()) << kinds(a);
}

// A stream-ordered pool's reuse is by design: however long its calls take, no churn.
TEST(Advice, StreamOrderedChurnIsByDesign) {
  auto run = [](uint32_t ns) {
    return analyze(loop(12, [ns](CaptureBuilder &b, int) {
                     uint64_t p = b.alloc(kMiB, 7, Kind::kAsync);
                     b.capture.memory.back().duration_ns = ns;
                     b.free(p, Kind::kAsync).duration_ns = ns;
                   }).capture);
  };
  EXPECT_TRUE(of_kind(run(500), AdviceKind::kChurn).empty());
  EXPECT_TRUE(of_kind(run(50'000), AdviceKind::kChurn).empty());
}

// A churning temporary costing 30 + 20 us per iteration, in iterations of `iteration_ns`.
Analysis churn_in(uint64_t iteration_ns, double min_saving_share = AdviceOptions{}.min_saving_share) {
  CaptureBuilder b = loop(12, [iteration_ns](CaptureBuilder &b, int) {
    uint64_t t = timed_alloc(b, 4 * kMiB, 7, 30'000);
    b.advance(iteration_ns);
    timed_free(b, t, 20'000);
  });
  AnalysisOptions o;
  o.advice.min_saving_share = min_saving_share;
  return analyze(b.capture, o);
}

// 50 us of a 1 ms iteration (5 %) is worth saying; of a 10 ms one (0.5 %) it is not, unless the
// threshold is lowered.
TEST(Advice, FindingsBelowTheMinimumSavingAreDropped) {
  EXPECT_EQ(of_kind(churn_in(1'000'000), AdviceKind::kChurn).size(), 1u);
  EXPECT_TRUE(of_kind(churn_in(10'000'000), AdviceKind::kChurn).empty());
  EXPECT_EQ(of_kind(churn_in(10'000'000, 0.001), AdviceKind::kChurn).size(), 1u);
}

// The same churn at three call sites: inside PyTorch's allocator only (libc10_cuda.so, reached
// from an autograd thread without Python), the same native frames under the user's Python line,
// and the user's own executable. Only the first names nothing the user can change.
TEST(Advice, FindingsAtFrameworkInternalsOnlyAreDropped) {
  CaptureBuilder b = loop(12, [](CaptureBuilder &b, int) {
    for (uint32_t stack : {100u, 101u, 102u}) {
      uint64_t t = timed_alloc(b, 4 * kMiB, stack, 30'000);
      if (stack == 101) b.capture.memory.back().py_stack_id = 900;
      timed_free(b, t, 20'000);
    }
  });
  auto module = [&](const std::string &path, uint64_t lo) {
    format::Module m;
    m.path = path;
    m.segments = {{lo, lo + 0x100000}};
    b.capture.modules.push_back(m);
  };
  module("/opt/venv/lib/python3.12/site-packages/torch/lib/libc10_cuda.so", 0x10000000);
  module("/usr/lib/x86_64-linux-gnu/libcudart.so.13", 0x20000000);
  module("/home/u/build/train_app", 0x30000000);
  auto native = [&](uint32_t id, std::vector<uint64_t> frames) {
    format::Stack s;
    s.frames = std::move(frames);
    b.capture.stacks[id] = s;
  };
  native(100, {0x20000100, 0x10000200, 0x10000300});  // cudaMalloc <- NativeCachingAllocator::...
  native(101, {0x20000100, 0x10000200, 0x10000300});
  native(102, {0x20000100, 0x30000400});  // cudaMalloc <- the user's executable
  format::Stack py;
  py.kind = format::StackKind::kPython;
  py.frames = {static_cast<uint64_t>(b.str("/home/u/train.py")) << 32 | b.str("main"), 42};
  b.capture.stacks[900] = py;

  std::vector<uint32_t> sites;
  const Analysis a = analyze(b.capture);
  for (const Advice *x : of_kind(a, AdviceKind::kChurn)) sites.push_back(x->site.stack_id);
  std::sort(sites.begin(), sites.end());
  EXPECT_EQ(sites, (std::vector<uint32_t>{101, 102}));

  AnalysisOptions all;
  all.advice.require_user_frame = false;
  EXPECT_EQ(of_kind(analyze(b.capture, all), AdviceKind::kChurn).size(), 3u);
}

// 12 iterations next to 4 MiB of weights, each allocating eight 2 MiB cache blocks (site 3, 40 us
// each), then `release(builder, blocks)`.
Analysis cache_loop(const std::function<void(CaptureBuilder &, const std::vector<uint64_t> &)> &release) {
  return analyze(loop(
                     12,
                     [&](CaptureBuilder &b, int) {
                       std::vector<uint64_t> blocks;
                       for (int k = 0; k < 8; ++k) blocks.push_back(timed_alloc(b, 2 * kMiB, 3, 40'000));
                       release(b, blocks);
                     },
                     /*weights=*/4 * kMiB)
                     .capture);
}

// The whole cache released at the end of each iteration (empty_cache()) and allocated again.
TEST(Advice, CacheThrashWhenTheCacheIsEmptiedEveryIteration) {
  Analysis a = cache_loop([](CaptureBuilder &b, const std::vector<uint64_t> &blocks) {
    for (uint64_t p : blocks) timed_free(b, p, 30'000, /*free_stack=*/9);
  });
  auto thrash = of_kind(a, AdviceKind::kCacheThrash);
  ASSERT_EQ(thrash.size(), 1u) << kinds(a);
  const Advice &t = *thrash[0];
  EXPECT_EQ(t.site.stack_id, 3u);  // where the cache is refilled
  EXPECT_EQ(evidence(t, "blocks_freed_per_iteration"), 8);
  EXPECT_EQ(evidence(t, "bytes_freed_per_iteration"), 16.0 * kMiB);
  EXPECT_EQ(evidence(t, "blocks_reallocated_per_iteration"), 8);
  EXPECT_EQ(saving(t, "time_ns_per_iteration"), 8 * 70'000);
  EXPECT_NE(t.message.find("empty_cache"), std::string::npos);
  // The blocks are the thrash's, not churn on top of it.
  EXPECT_TRUE(of_kind(a, AdviceKind::kChurn).empty()) << kinds(a);
}

// torch.cuda.empty_cache() every step, as many tutorials teach: gpuleak's Python hook marks the
// call's line just before the frees, and the finding leads with that line, its segments and its
// cost as a share of the step (issue #28).
TEST(Advice, EmptyCacheEveryStepIsNamedAtItsLine) {
  Analysis a = cache_loop([](CaptureBuilder &b, const std::vector<uint64_t> &blocks) {
    b.advance(2'000'000);  // the step's work: 2 ms
    b.mark(std::string(kEmptyCacheMark) + "/home/ana/proj/train.py:34");
    for (uint64_t p : blocks) timed_free(b, p, 30'000);
  });
  auto thrash = of_kind(a, AdviceKind::kCacheThrash);
  ASSERT_EQ(thrash.size(), 1u) << kinds(a);
  const Advice &t = *thrash[0];
  EXPECT_EQ(t.change_call, "torch.cuda.empty_cache()");
  EXPECT_EQ(t.change_file, "/home/ana/proj/train.py");
  EXPECT_EQ(t.change_line, 34u);
  EXPECT_EQ(saving(t, "time_ns_per_iteration"), 8 * 70'000);
  const double step = evidence(t, "step_ns");
  EXPECT_GT(step, 2'000'000);
  char share[16];
  std::snprintf(share, sizeof share, "%.0f %%", 100.0 * 8 * 70'000 / step);
  EXPECT_EQ(t.message.rfind("torch.cuda.empty_cache() at train.py:34 returns 8 segments (16.0 MiB) to CUDA every "
                            "iteration, and the next iteration maps them again: 560.0 us, " +
                                std::string(share) + " of the median step",
                            0),
            0u)
      << t.message;
  // Without the mark (a native program, plain LD_PRELOAD): the burst is still said, with no line.
  Analysis bare = cache_loop([](CaptureBuilder &b, const std::vector<uint64_t> &blocks) {
    for (uint64_t p : blocks) timed_free(b, p, 30'000);
  });
  ASSERT_EQ(of_kind(bare, AdviceKind::kCacheThrash).size(), 1u);
  EXPECT_EQ(of_kind(bare, AdviceKind::kCacheThrash)[0]->change_line, 0u);
  // A mark in another iteration, or another label, says nothing about these bursts.
  Analysis elsewhere = cache_loop([](CaptureBuilder &b, const std::vector<uint64_t> &blocks) {
    b.mark("checkpoint saved at /home/ana/proj/train.py:50");
    for (uint64_t p : blocks) timed_free(b, p, 30'000);
  });
  EXPECT_EQ(of_kind(elsewhere, AdviceKind::kCacheThrash)[0]->change_line, 0u);
}

// A leaking loop run until the device is full: the leak is the finding. "Chunk the batch" or
// "shrink what the largest sites keep" beside it would send the user elsewhere.
TEST(Advice, NoPeakAdviceOnALeakingDevice) {
  CaptureBuilder b;
  b.device(0, "H200", 100 * kMiB);
  b.alloc(10 * kMiB, 1);
  for (int i = 0; i < 16; ++i) {
    b.begin("train");
    b.alloc(5 * kMiB, 2);  // kept every step: 80 MiB after 16
    b.free(b.alloc(4 * kMiB, 3));
    if (i == 15) {  // and the 17th 5 MiB no longer fits
      b.failed_alloc(12 * kMiB, 2);
      b.oom(12 * kMiB, 10 * kMiB, 100 * kMiB, 2);
    }
    b.end();
  }
  Analysis a = analyze(b.capture);
  ASSERT_FALSE(a.leaks.empty());
  ASSERT_EQ(a.devices[0].verdict, Verdict::kLeak);
  EXPECT_TRUE(of_kind(a, AdviceKind::kPeakComposition).empty()) << kinds(a);
}

// A leaking PyTorch loop seen per tensor: a tensor kept every step, the caching allocator mapping
// a new 2 MiB segment for it every step (a synchronous cudaMalloc of 300 us in a 1 ms step), and
// the step's temporaries handed out and taken back. The leak is the finding; the segments' calls
// are the leak's doing and the hand-outs wait for nothing: no advice at all (issue #28).
TEST(Advice, NoAdviceOnALeakingPyTorchLoop) {
  CaptureBuilder b = loop(16, [](CaptureBuilder &b, int) {
    timed_alloc(b, 2 * kMiB, 3, 300'000);    // the segment
    b.alloc(2 * kMiB, 4, Kind::kPoolBlock);  // the kept tensor
    uint64_t t = b.alloc(kMiB, 5, Kind::kPoolBlock);
    b.advance(700'000);
    b.free(t, Kind::kPoolBlock);
  });
  const Analysis a = analyze(b.capture);
  ASSERT_FALSE(a.leaks.empty());
  EXPECT_TRUE(a.advice.empty()) << kinds(a);
}

// --user-code reaches the analysis: a folder the user names is theirs for the advice filter too
// (the same finding at a library's frames is dropped without it).
TEST(Advice, UserCodeRootsReachTheAdviceFilter) {
  CaptureBuilder b = loop(12, [](CaptureBuilder &b, int) {
    uint64_t t = timed_alloc(b, 4 * kMiB, 100, 30'000);
    timed_free(b, t, 20'000);
  });
  format::Module m;
  m.path = "/opt/venv/lib/python3.12/site-packages/mylib/_kernels.so";
  m.segments = {{0x10000000, 0x10100000}};
  b.capture.modules.push_back(m);
  format::Stack s;
  s.frames = {0x10000200};
  b.capture.stacks[100] = s;
  EXPECT_TRUE(of_kind(analyze(b.capture), AdviceKind::kChurn).empty());
  AnalysisOptions mine;
  mine.user_code = {"/opt/venv/lib/python3.12/site-packages/mylib"};
  const Analysis a = analyze(b.capture, mine);
  EXPECT_EQ(of_kind(a, AdviceKind::kChurn).size(), 1u) << kinds(a);
  EXPECT_EQ(a.user_code.roots, mine.user_code);
}

// PyTorch's cudaMallocAsync backend frees each step's tensors together: the blocks go back to
// the stream-ordered pool, which keeps them; nothing is emptied (seen on the H200, run 4).
TEST(Advice, StreamOrderedFreesTogetherAreNoThrash) {
  Analysis a = analyze(loop(
                           12,
                           [](CaptureBuilder &b, int) {
                             std::vector<uint64_t> blocks;
                             for (int k = 0; k < 8; ++k) blocks.push_back(b.alloc(64 * kMiB, 3, Kind::kAsync));
                             for (uint64_t p : blocks) b.free(p, Kind::kAsync).stack_id = 9;
                           },
                           /*weights=*/4 * kMiB)
                           .capture);
  EXPECT_TRUE(of_kind(a, AdviceKind::kCacheThrash).empty()) << kinds(a);
}

TEST(Advice, AFreeOfNothingEndsAReleaseBurst) {
  // A zero-byte allocation freed in the middle of the burst splits it: the first four blocks
  // release too little of what was live (8 of 20 MiB), the last four enough (8 of 12 MiB).
  Analysis a = cache_loop([](CaptureBuilder &b, const std::vector<uint64_t> &blocks) {
    uint64_t nothing = b.alloc(0, 4);
    for (int k = 0; k < 8; ++k) {
      if (k == 4) timed_free(b, nothing, 1'000, /*free_stack=*/9);
      timed_free(b, blocks[k], 30'000, /*free_stack=*/9);
    }
  });
  auto thrash = of_kind(a, AdviceKind::kCacheThrash);
  ASSERT_EQ(thrash.size(), 1u) << kinds(a);
  EXPECT_EQ(evidence(*thrash[0], "blocks_freed_per_iteration"), 4);
  EXPECT_EQ(evidence(*thrash[0], "bytes_freed_per_iteration"), 8.0 * kMiB);
}

TEST(Advice, BigButStablePoolIsNoThrash) {
  CaptureBuilder b;
  std::vector<uint64_t> pool;
  for (int k = 0; k < 16; ++k) pool.push_back(b.alloc(20 * kMiB, 3));  // a caching allocator's pool
  for (int i = 0; i < 12; ++i) {
    b.begin("train");
    b.advance(100'000);
    b.end();
  }
  for (uint64_t p : pool) b.free(p, Kind::kDevice).stack_id = 9;  // emptied once, at exit
  Analysis a = analyze(b.capture);
  EXPECT_TRUE(a.advice.empty()) << kinds(a);
}

TEST(Advice, SmallReleaseBurstsAreNoThrash) {
  // Two small temporaries freed together, next to 256 MiB of weights: churn, never thrash.
  Analysis a = analyze(loop(
                           12,
                           [](CaptureBuilder &b, int) {
                             uint64_t x = timed_alloc(b, kMiB, 3, 30'000), y = timed_alloc(b, kMiB, 3, 30'000);
                             b.free(x).stack_id = 9;
                             b.free(y).stack_id = 9;
                           },
                           256 * kMiB)
                           .capture);
  EXPECT_TRUE(of_kind(a, AdviceKind::kCacheThrash).empty()) << kinds(a);
  EXPECT_EQ(of_kind(a, AdviceKind::kChurn).size(), 1u) << kinds(a);
}

// Each iteration's activation freed in the next one, after the next one's own is made.
TEST(Advice, LateReleaseOneIterationLate) {
  uint64_t prev = 0;
  Analysis a = analyze(loop(12, [&prev](CaptureBuilder &b, int) {
                         uint64_t act = b.alloc(8 * kMiB, 5);
                         if (prev) b.free(prev);
                         prev = act;
                       }).capture);
  auto late = of_kind(a, AdviceKind::kLateRelease);
  ASSERT_EQ(late.size(), 1u) << kinds(a);
  const Advice &l = *late[0];
  EXPECT_EQ(l.site.stack_id, 5u);
  EXPECT_EQ(evidence(l, "max_lag_iterations"), 1);
  EXPECT_EQ(evidence(l, "bytes_per_iteration"), 8.0 * kMiB);
  EXPECT_EQ(evidence(l, "steady_peak_bytes"), 32.0 * kMiB);  // weights + two activations
  EXPECT_EQ(evidence(l, "peak_bytes_if_released"), 24.0 * kMiB);
  EXPECT_EQ(saving(l, "peak_bytes"), 8.0 * kMiB);
  EXPECT_NE(l.message.find("next iteration"), std::string::npos) << l.message;
  EXPECT_TRUE(of_kind(a, AdviceKind::kChurn).empty()) << kinds(a);
  EXPECT_EQ(a.verdict, Verdict::kClean);
}

TEST(Advice, DoubleBufferFreedTwoIterationsLaterIsNotLate) {
  auto run = [](uint32_t max_lag) {
    std::vector<uint64_t> ring;
    CaptureBuilder b = loop(14, [&ring](CaptureBuilder &b, int) {
      ring.push_back(b.alloc(8 * kMiB, 5));
      if (ring.size() > 2) b.free(ring[ring.size() - 3]);
    });
    AnalysisOptions o;
    o.advice.late_max_lag = max_lag;
    return analyze(b.capture, o);
  };
  Analysis by_default = run(1);
  EXPECT_TRUE(of_kind(by_default, AdviceKind::kLateRelease).empty()) << kinds(by_default);
  Analysis wider = run(2);  // the threshold is the user's to widen
  auto late = of_kind(wider, AdviceKind::kLateRelease);
  ASSERT_EQ(late.size(), 1u) << kinds(wider);
  EXPECT_EQ(evidence(*late[0], "max_lag_iterations"), 2);
  EXPECT_EQ(saving(*late[0], "peak_bytes"), 16.0 * kMiB);
}

TEST(Advice, PeakCompositionWhenTheDeviceIsNearlyFull) {
  auto run = [](uint64_t total) {
    CaptureBuilder b = loop(
        8,
        [](CaptureBuilder &b, int) {
          uint64_t keep = b.alloc(2 * kMiB, 4);
          b.free(b.alloc(70 * kMiB, 6));  // the batch's transient
          b.free(keep);
        },
        20 * kMiB);
    b.device(0, "H200", total);
    return analyze(b.capture);
  };
  Analysis full = run(100 * kMiB);
  auto peak = of_kind(full, AdviceKind::kPeakComposition);
  ASSERT_EQ(peak.size(), 1u) << kinds(full);
  const Advice &p = *peak[0];
  EXPECT_EQ(p.site.stack_id, 6u);
  EXPECT_EQ(evidence(p, "peak_bytes"), 92.0 * kMiB);
  EXPECT_EQ(evidence(p, "this_iteration_bytes"), 72.0 * kMiB);
  EXPECT_EQ(evidence(p, "before_loop_bytes"), 20.0 * kMiB);
  EXPECT_EQ(evidence(p, "earlier_iterations_bytes"), 0);
  EXPECT_EQ(evidence(p, "headroom_bytes"), 8.0 * kMiB);
  EXPECT_EQ(saving(p, "peak_bytes"), 35.0 * kMiB);
  // Each iteration's own peak, typically: the same split (the loop is regular).
  EXPECT_EQ(evidence(p, "median_iteration_peak_bytes"), 92.0 * kMiB);
  EXPECT_EQ(evidence(p, "median_iteration_this_iteration_bytes"), 72.0 * kMiB);
  EXPECT_EQ(evidence(p, "median_iteration_earlier_iterations_bytes"), 0);
  EXPECT_EQ(evidence(p, "median_iteration_before_loop_bytes"), 20.0 * kMiB);
  ASSERT_EQ(p.sites.size(), 3u);
  EXPECT_EQ(p.sites[0].site.stack_id, 6u);
  EXPECT_EQ(p.sites[0].this_iteration_bytes, 70 * kMiB);
  EXPECT_EQ(p.sites[1].site.stack_id, 1u);
  EXPECT_EQ(p.sites[1].before_loop_bytes, 20 * kMiB);
  EXPECT_NE(p.message.find("chunk or shrink the batch"), std::string::npos) << p.message;
  expect_consistent(p);
  // The same loop on a roomy device: nothing to say about its peak.
  EXPECT_TRUE(of_kind(run(1ull << 30), AdviceKind::kPeakComposition).empty());
}

// Ages at the peak: the activation kept from the previous iteration is "earlier iterations".
TEST(Advice, PeakCompositionSplitsByAge) {
  uint64_t prev = 0;
  CaptureBuilder b = loop(10, [&prev](CaptureBuilder &b, int) {
    uint64_t act = b.alloc(8 * kMiB, 5);
    b.free(b.alloc(16 * kMiB, 6));
    if (prev) b.free(prev);
    prev = act;
  });
  b.device(0, "H200", 50 * kMiB);
  Analysis a = analyze(b.capture);
  auto peak = of_kind(a, AdviceKind::kPeakComposition);
  ASSERT_EQ(peak.size(), 1u) << kinds(a);
  const Advice &p = *peak[0];
  EXPECT_EQ(p.site.stack_id, 6u);
  EXPECT_EQ(evidence(p, "peak_bytes"), 48.0 * kMiB);
  EXPECT_EQ(evidence(p, "this_iteration_bytes"), 24.0 * kMiB);
  EXPECT_EQ(evidence(p, "earlier_iterations_bytes"), 8.0 * kMiB);
  EXPECT_EQ(evidence(p, "before_loop_bytes"), 16.0 * kMiB);
  EXPECT_EQ(evidence(p, "median_iteration_earlier_iterations_bytes"), 8.0 * kMiB);
  EXPECT_EQ(of_kind(a, AdviceKind::kLateRelease).size(), 1u) << kinds(a);
}

// A device that ran out because one site kept memory from iteration to iteration: the finding
// names that site's share, which its own table shows, instead of "no single site dominating".
// Weights that fill the device, and an out-of-memory failure: the sentence names the site that
// holds most of the peak (a leak filling the device gets no such advice: NoPeakAdviceOnALeakingDevice).
TEST(Advice, PeakCompositionNamesTheSiteThatHoldsMostOfIt) {
  CaptureBuilder b = loop(
      10,
      [](CaptureBuilder &b, int i) {
        b.free(b.alloc(2 * kMiB, 6));
        if (i == 9) {
          b.failed_alloc(16 * kMiB, 6);
          b.oom(16 * kMiB, 8 * kMiB, 90 * kMiB, 6);
        }
      },
      80 * kMiB);
  b.device(0, "H200", 90 * kMiB);
  Analysis a = analyze(b.capture);
  auto peak = of_kind(a, AdviceKind::kPeakComposition);
  ASSERT_EQ(peak.size(), 1u) << kinds(a);
  const Advice &p = *peak[0];
  ASSERT_FALSE(p.sites.empty());
  EXPECT_EQ(p.sites[0].site.stack_id, 1u);
  expect_consistent(p);
  EXPECT_EQ(p.message.find("no single site"), std::string::npos) << p.message;
  EXPECT_NE(p.message.find("This site holds 98 % of it (80.0 MiB, 80.0 MiB of that kept from before the iteration)"),
            std::string::npos)
      << p.message;
  EXPECT_NEAR(evidence(p, "largest_site_share"), 80.0 / 82, 1e-9);
}

TEST(Advice, FragmentationWhenAnAllocationFailsWithEnoughFree) {
  CaptureBuilder b = loop(4, [](CaptureBuilder &, int) {});
  b.failed_alloc(64 * kMiB, 11);
  b.oom(64 * kMiB, 200 * kMiB, 1024 * kMiB, 11);
  b.failed_alloc(512 * kMiB, 12);
  b.oom(512 * kMiB, 200 * kMiB, 1024 * kMiB, 12);  // really out of memory: not fragmentation
  Analysis a = analyze(b.capture);
  auto frag = of_kind(a, AdviceKind::kFragmentation);
  ASSERT_EQ(frag.size(), 1u) << kinds(a);
  EXPECT_EQ(frag[0]->site.stack_id, 11u);
  EXPECT_EQ(evidence(*frag[0], "requested_bytes"), 64.0 * kMiB);
  EXPECT_EQ(evidence(*frag[0], "free_bytes"), 200.0 * kMiB);
  EXPECT_EQ(evidence(*frag[0], "untracked_used_bytes"), (1024.0 - 200 - 16) * kMiB);
}

TEST(Advice, SerializationWhenSynchronousCallsEatTheIteration) {
  auto run = [](uint32_t ns) {
    return analyze(loop(12, [ns](CaptureBuilder &b, int) {
                     uint64_t t = timed_alloc(b, kMiB, 7, ns);
                     b.advance(1'000'000);  // 1 ms of work
                     timed_free(b, t, ns);
                   }).capture);
  };
  Analysis slow = run(200'000);
  auto s = of_kind(slow, AdviceKind::kSerialization);
  ASSERT_EQ(s.size(), 1u) << kinds(slow);
  EXPECT_EQ(evidence(*s[0], "sync_time_ns_per_iteration"), 400'000);
  EXPECT_NEAR(evidence(*s[0], "sync_share"), 400'000.0 / 1'003'000, 1e-3);  // begin, alloc, 1 ms, free, end: 1 us ticks
  EXPECT_EQ(evidence(*s[0], "sync_calls_per_iteration"), 2);
  EXPECT_FALSE(s[0]->has_site);
  expect_consistent(*s[0]);
  EXPECT_TRUE(of_kind(run(2'000), AdviceKind::kSerialization).empty());
}

// Issue #28: a caching allocator's hand-outs (pool blocks) are not calls that wait for the device,
// and a cost gpuleak's own mode created (gpuleak run --cupy per-array: no pool) is not the
// program's: neither gets serialization advice.
TEST(Advice, NoSerializationAdviceOnPoolBlocksOrOnGpuleaksOwnMode) {
  auto body = [](Kind kind) {
    return [kind](CaptureBuilder &b, int) {
      uint64_t p = b.alloc(kMiB, 7, kind);
      b.capture.memory.back().duration_ns = 200'000;
      b.advance(1'000'000);
      b.free(p, kind).duration_ns = 200'000;
    };
  };
  Analysis blocks = analyze(loop(12, body(Kind::kPoolBlock)).capture);
  EXPECT_TRUE(of_kind(blocks, AdviceKind::kSerialization).empty()) << kinds(blocks);
  CaptureBuilder own = loop(12, body(Kind::kDevice));
  format::RunInfo info;
  info.allocator = format::AllocatorSettings::parse("GPULEAK_CUPY=per-array");
  own.capture.run = info;
  Analysis mode = analyze(own.capture);
  EXPECT_TRUE(of_kind(mode, AdviceKind::kSerialization).empty()) << kinds(mode);
  // nor churn: every array its own cudaMalloc/cudaFree is what `--cupy per-array` does
  EXPECT_TRUE(mode.advice.empty()) << kinds(mode);
  EXPECT_FALSE(analyze(loop(12, body(Kind::kDevice)).capture).advice.empty());  // the same loop on its own
}

// The share, the call time and the iteration time printed are the same iteration's: three
// independent medians printed "66 % of the median iteration (600.0 us of 1.0 ms)".
TEST(Advice, SerializationNumbersAreOneIterations) {
  // Three kinds of iteration: (time in calls, work) = (200 us, 0.3 ms), (600 us, 2 ms), (1 ms, 1 ms).
  const uint32_t call_ns[] = {100'000, 300'000, 500'000};
  const uint64_t work_ns[] = {300'000, 2'000'000, 1'000'000};
  Analysis a = analyze(loop(12, [&](CaptureBuilder &b, int i) {
                         uint64_t t = timed_alloc(b, kMiB, 7, call_ns[i % 3]);
                         b.advance(work_ns[i % 3]);
                         timed_free(b, t, call_ns[i % 3]);
                       }).capture);
  auto s = of_kind(a, AdviceKind::kSerialization);
  ASSERT_EQ(s.size(), 1u) << kinds(a);
  expect_consistent(*s[0]);
  EXPECT_EQ(evidence(*s[0], "sync_time_ns_per_iteration"), 200'000);
  EXPECT_NE(s[0]->message.find("take 66 % of the median iteration (200.0 us of 303.0 us)"), std::string::npos)
      << s[0]->message;
}

// Calls that add up to more than the iteration (threads at once): "all of it", never "100 % (X of
// less than X)", and the saving is at most the iteration.
TEST(Advice, SerializationLongerThanTheIterationSaysSo) {
  Analysis a = analyze(loop(12, [](CaptureBuilder &b, int) {
                         uint64_t t = timed_alloc(b, kMiB, 7, 2'000'000);
                         b.advance(1'000'000);
                         timed_free(b, t, 2'000'000);
                       }).capture);
  auto s = of_kind(a, AdviceKind::kSerialization);
  ASSERT_EQ(s.size(), 1u) << kinds(a);
  expect_consistent(*s[0]);
  EXPECT_NE(s[0]->message.find("take all of the median iteration (4.0 ms of calls, on several threads at once, in "
                               "1.0 ms)"),
            std::string::npos)
      << s[0]->message;
  EXPECT_LE(saving(*s[0], "time_ns_per_iteration"), evidence(*s[0], "iteration_ns"));
}

TEST(Advice, CanBeTurnedOffAndNeedsIterations) {
  CaptureBuilder b = loop(12, [](CaptureBuilder &b, int) { timed_free(b, timed_alloc(b, kMiB, 7, 30'000), 20'000); });
  AnalysisOptions off;
  off.advice.enabled = false;
  EXPECT_TRUE(analyze(b.capture, off).advice.empty());
  EXPECT_FALSE(analyze(b.capture).advice.empty());
  CaptureBuilder few = loop(3, [](CaptureBuilder &b, int) { b.free(b.alloc(kMiB, 7)); });
  EXPECT_TRUE(analyze(few.capture).advice.empty()) << "2 post-warm-up iterations prove nothing";
}

}  // namespace
}  // namespace gpuleak::analysis
