// Fragmentation from NVML's samples (advice_reserve.cpp): a pool that keeps memory far above what
// the program has live and recently needed gets the finding; a pool holding its own per-iteration
// peak, a released warm-up spike and a reserve seen by too few samples get none.
#include <gtest/gtest.h>

#include <algorithm>

#include "analysis/advice_checks.h"
#include "analysis/analysis.h"
#include "analysis/capture_builder.h"

namespace gpuleak::analysis {
namespace {

using checks::evidence;
using checks::saving;
using testing::CaptureBuilder;
using testing::kMiB;

constexpr uint64_t kContext = 300 * kMiB;  // what the process uses beyond any allocation
constexpr uint64_t kMs = 1'000'000;

// A stream-ordered pool in front of the device: what the process uses is the context plus what
// the pool holds; a keeping pool (release threshold UINT64_MAX) holds its high-water mark until
// trimmed, a releasing one only what is live.
struct Pool {
  CaptureBuilder b;
  bool keep = true;
  uint64_t live = 0, held = 0;
  uint64_t modules = 0;  // kernels loaded so far (lazily, at first use)

  uint64_t alloc(uint64_t size, uint32_t stack) {
    live += size;
    held = std::max(held, live);
    return b.alloc(size, stack, format::Kind::kAsync);
  }
  void free(uint64_t p, uint64_t size) {
    b.free(p, format::Kind::kAsync);
    live -= size;
    if (!keep) held = live;
  }
  void trim() { held = live; }
  void sample() { b.usage(kContext + modules + held, live); }
};

// Weights, then `n` iterations of loop "train", each allocating and freeing `transient` over
// 10 ms; every 5th iteration a sample inside it (the transient live), between all the others one
// after it. extra(pool, i) runs before iteration i's body.
Pool run_loop(int n, uint64_t transient, bool keep, void (*extra)(Pool &, int) = nullptr) {
  Pool pool;
  pool.keep = keep;
  pool.alloc(16 * kMiB, 1);
  for (int i = 0; i < n; ++i) {
    pool.b.begin("train");
    if (extra) extra(pool, i);
    uint64_t t = pool.alloc(transient, 2);
    pool.b.advance(10 * kMs);
    if (i % 5 == 0) pool.sample();
    pool.free(t, transient);
    pool.b.end();
    if (i % 5 != 0) pool.sample();
  }
  return pool;
}

// A 2 GiB burst early in iteration 10 (late in iteration 36), allocated and freed at once.
void burst_at_10(Pool &pool, int i) {
  if (i != 10) return;
  uint64_t p = pool.alloc(2048 * kMiB, 3);
  pool.b.advance(kMs);
  pool.free(p, 2048 * kMiB);
}
void burst_at_1(Pool &pool, int i) {
  if (i != 1) return;
  uint64_t p = pool.alloc(2048 * kMiB, 3);
  pool.free(p, 2048 * kMiB);
}
void burst_at_10_then_trim(Pool &pool, int i) {
  burst_at_10(pool, i);
  if (i == 10) pool.trim();
}
void burst_at_36(Pool &pool, int i) {
  if (i != 36) return;
  uint64_t p = pool.alloc(2048 * kMiB, 3);
  pool.free(p, 2048 * kMiB);
}

std::vector<const Advice *> reserve_findings(const Analysis &a) {
  std::vector<const Advice *> out;
  for (const Advice &x : a.advice)
    if (x.kind == AdviceKind::kFragmentation && !x.has_site) out.push_back(&x);
  return out;
}

TEST(AdviceReserve, PoolKeepingAnEarlyBurstFarAboveLive) {
  Pool pool = run_loop(40, 64 * kMiB, true, burst_at_10);
  Analysis a = analyze(pool.b.capture);
  auto found = reserve_findings(a);
  ASSERT_EQ(found.size(), 1u) << checks::kinds(a);
  const Advice &f = *found[0];
  EXPECT_EQ(f.device, 0);
  // Baseline: the context (the samples inside an iteration see the transient live, not held).
  EXPECT_EQ(evidence(f, "baseline_bytes"), static_cast<double>(kContext));
  // The pool holds weights + burst; the last iterations needed weights + one transient.
  EXPECT_EQ(evidence(f, "reserve_bytes"), static_cast<double>((16 + 2048) * kMiB));
  EXPECT_EQ(evidence(f, "window_peak_bytes"), static_cast<double>((16 + 64) * kMiB));
  EXPECT_EQ(evidence(f, "reserve_above_peak_bytes"), static_cast<double>(1984 * kMiB));
  EXPECT_EQ(evidence(f, "process_used_bytes"), static_cast<double>(kContext + 2064 * kMiB));
  EXPECT_GE(evidence(f, "samples_count"), 20.0);
  EXPECT_GT(evidence(f, "held_ns"), 200.0 * kMs);
  EXPECT_GT(evidence(f, "t_ns"), 100.0 * kMs);
  EXPECT_EQ(saving(f, "bytes"), static_cast<double>(1984 * kMiB));
  EXPECT_NE(f.message.find("cudaMemPoolTrimTo"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("1.9 GiB"), std::string::npos) << f.message;
}

TEST(AdviceReserve, TrimmedAfterTheBurstGetsNothing) {
  Pool pool = run_loop(40, 64 * kMiB, true, burst_at_10_then_trim);
  Analysis a = analyze(pool.b.capture);
  EXPECT_TRUE(reserve_findings(a).empty()) << checks::kinds(a);
}

TEST(AdviceReserve, SteadyPoolHoldingItsPerIterationPeakGetsNothing) {
  // 1 GiB needed inside every iteration, 16 MiB live between them: the pool holding 1 GiB is far
  // above live at most samples, but exactly what the loop needs every iteration.
  Pool pool = run_loop(40, 1024 * kMiB, true);
  Analysis a = analyze(pool.b.capture);
  EXPECT_TRUE(reserve_findings(a).empty()) << checks::kinds(a);
  EXPECT_TRUE(a.advice.empty()) << checks::kinds(a);
}

TEST(AdviceReserve, ReleasedSpikeGetsNothing) {
  for (auto extra : {burst_at_1, burst_at_10}) {  // in the warm-up, and later
    Pool pool = run_loop(40, 64 * kMiB, false, extra);
    Analysis a = analyze(pool.b.capture);
    EXPECT_TRUE(reserve_findings(a).empty()) << checks::kinds(a);
  }
}

// 400 MiB of kernels loaded lazily in the third iteration (of 4 warm-up ones): part of the
// baseline, like the context, not a reserve.
void modules_at_first_use(Pool &pool, int i) {
  if (i == 2) pool.modules = 400 * kMiB;
}

TEST(AdviceReserve, KernelsLoadedDuringTheWarmupAreBaseline) {
  Pool pool = run_loop(40, 64 * kMiB, false, modules_at_first_use);
  Analysis a = analyze(pool.b.capture);
  EXPECT_EQ(a.warmup_iterations, 4u);
  EXPECT_TRUE(reserve_findings(a).empty()) << checks::kinds(a);
  // Without a warm-up the samples of the first two iterations, before the kernels, set the
  // baseline: the kernels then read as a reserve.
  AnalysisOptions no_warmup;
  no_warmup.warmup_iterations = 0;
  EXPECT_EQ(reserve_findings(analyze(pool.b.capture, no_warmup)).size(), 1u);
}

// Kernels loaded as the warm-up ends: the samples before it used less than the baseline, which
// is no reserve at all (on the H200 such samples read as 16 EiB reserved before this was fixed).
void modules_as_the_warmup_ends(Pool &pool, int i) {
  if (i == 4) pool.modules = 400 * kMiB;
}

TEST(AdviceReserve, UsingLessThanTheBaselineIsNoReserve) {
  Pool pool = run_loop(40, 64 * kMiB, false, modules_as_the_warmup_ends);
  Analysis a = analyze(pool.b.capture);
  EXPECT_EQ(a.warmup_iterations, 4u);
  EXPECT_TRUE(reserve_findings(a).empty()) << checks::kinds(a);
}

TEST(AdviceReserve, TooFewSamplesGetNothing) {
  // Kept from iteration 36 on: over at the samples after 38 and 39 only (the windows of the
  // samples after 36 and 37 still hold the burst).
  Pool pool = run_loop(40, 64 * kMiB, true, burst_at_36);
  EXPECT_TRUE(reserve_findings(analyze(pool.b.capture)).empty());
  AnalysisOptions two;
  two.advice.reserve_min_samples = 2;
  EXPECT_EQ(reserve_findings(analyze(pool.b.capture, two)).size(), 1u);
}

TEST(AdviceReserve, ThresholdsAreOptions) {
  Pool pool = run_loop(40, 64 * kMiB, true, burst_at_10);
  AnalysisOptions high;
  high.advice.reserve_min_bytes = 4096 * kMiB;
  EXPECT_TRUE(reserve_findings(analyze(pool.b.capture, high)).empty());
  AnalysisOptions share;
  share.advice.reserve_min_share = 30;  // 30 x the 80 MiB peak: more than the excess
  EXPECT_TRUE(reserve_findings(analyze(pool.b.capture, share)).empty());
  AnalysisOptions off;
  off.advice.reserve_min_samples = 0;
  EXPECT_TRUE(reserve_findings(analyze(pool.b.capture, off)).empty());
}

TEST(AdviceReserve, WithoutIterationsTheLastSecondIsTheWindow) {
  Pool pool;
  pool.alloc(16 * kMiB, 1);
  for (int i = 0; i < 4; ++i) pool.sample(), pool.b.advance(250 * kMs);
  uint64_t p = pool.alloc(1024 * kMiB, 3);
  pool.b.advance(100 * kMs);
  pool.free(p, 1024 * kMiB);
  pool.sample();
  for (int i = 0; i < 8; ++i) pool.b.advance(250 * kMs), pool.sample();
  Analysis a = analyze(pool.b.capture);
  auto found = reserve_findings(a);
  ASSERT_EQ(found.size(), 1u) << checks::kinds(a);
  EXPECT_EQ(evidence(*found[0], "window_peak_bytes"), static_cast<double>(16 * kMiB));
  // Within a second of the burst the window still holds it: 4 of the 9 samples after it.
  EXPECT_EQ(evidence(*found[0], "samples_count"), 5.0);
}

TEST(AdviceReserve, SamplesWithoutTheProcessAreIgnoredAndTheReportKeepsTheExitReading) {
  Pool pool = run_loop(40, 64 * kMiB, true, burst_at_10);
  for (auto &u : pool.b.capture.device_usage) u.flags &= ~format::kUsageProcessKnown;
  pool.b.usage(kContext + 100 * kMiB, 16 * kMiB, 0, format::kUsageAtExit | format::kUsageProcessKnown);
  pool.b.usage(kContext + 999 * kMiB, 16 * kMiB);  // a sample drained after the exit reading
  Analysis a = analyze(pool.b.capture);
  EXPECT_TRUE(reserve_findings(a).empty()) << checks::kinds(a);
  ASSERT_EQ(a.devices.size(), 1u);
  EXPECT_EQ(a.devices[0].nvml_process_used_bytes, kContext + 100 * kMiB);
  EXPECT_EQ(a.devices[0].untracked_bytes, kContext + 84 * kMiB);
}

}  // namespace
}  // namespace gpuleak::analysis
