// The capture clock: clock_gettime until the writer has fitted the TSC line, then TSC readings on
// that line, which must stay with CLOCK_MONOTONIC and never step back while it is re-fitted.
#include "core/clock.h"

#include <gtest/gtest.h>
#include <time.h>

#include <cstdlib>

namespace gpuleak::core {
namespace {

void sleep_ms(int ms) {
  timespec ts{0, ms * 1000000L};
  nanosleep(&ts, nullptr);
}

// Calibrates as the writer thread does (each wake) until the line exists; false without an
// invariant TSC (or within a second).
bool wait_for_line() {
  for (int i = 0; i < 200; ++i) {
    capture_clock_calibrate();
    if (clock_read().ticks) return true;
    sleep_ms(5);
  }
  return false;
}

TEST(CaptureClock, KernelClockUntilTheLineExists) {
  capture_clock_reset_for_test();
  ClockReading r = clock_read();
  EXPECT_FALSE(r.ticks);
  uint64_t before = monotonic_ns();
  uint64_t now = capture_now_ns();
  EXPECT_GE(now, before);
  EXPECT_LE(now, monotonic_ns());
  // A call timed across the switch to ticks still gets a duration, not a wrapped one.
  CallTime t = call_finish(r, true);
  EXPECT_LT(t.duration_ns, 1000000000ull);
  EXPECT_EQ(t.ts_ns, r.value);
}

TEST(CaptureClock, TscLineFollowsTheKernelClockAndNeverStepsBack) {
  capture_clock_reset_for_test();
  if (!wait_for_line()) GTEST_SKIP() << "no invariant TSC here: the capture clock stays clock_gettime";
  uint64_t last = 0;
  uint64_t worst = 0;
  for (int i = 0; i < 40; ++i) {  // 400 ms: eight re-fits of the line
    capture_clock_calibrate();
    for (int j = 0; j < 1000; ++j) {
      uint64_t a = monotonic_ns();
      uint64_t c = capture_now_ns();
      uint64_t b = monotonic_ns();
      ASSERT_GE(c, last) << "the capture clock stepped back";
      last = c;
      uint64_t off = c < a ? a - c : c > b ? c - b : 0;
      worst = off > worst ? off : worst;
    }
    sleep_ms(10);
  }
  // The line's rate comes from a 10 ms anchor at first, then from the whole run, steered by at
  // most 500 ppm: within 100 us of the kernel's clock over this run even on a loaded machine.
  EXPECT_LT(worst, 100000u) << "worst distance to CLOCK_MONOTONIC: " << worst << " ns";
  ClockReading start = clock_read();
  EXPECT_TRUE(start.ticks);
  sleep_ms(2);
  CallTime t = call_finish(start, false);
  EXPECT_GE(t.duration_ns, 1500000u);
  EXPECT_LT(t.duration_ns, 1000000000u);
  CallTime at_start = call_finish(start, true);
  EXPECT_LE(at_start.ts_ns, t.ts_ns);
  capture_clock_reset_for_test();
}

// The fit itself, fed made-up readings: a 2 GHz TSC (0.5 ns per tick).
constexpr uint64_t kT0 = 1000000000000ull, kN0 = 5000000000000ull;
uint64_t line_at(uint64_t tsc) { return detail::on_line(detail::read_line(), tsc); }

// Each test starts and ends without a line; first_line() fits the first one at 0.5 ns per tick,
// through (kT0 + 20,000,000 ticks, kN0 + 10 ms).
class CaptureClockFit : public ::testing::Test {
 protected:
  void SetUp() override { capture_clock_reset_for_test(); }
  void TearDown() override { capture_clock_reset_for_test(); }
  static void first_line() {
    capture_clock_fit_for_test(kT0, kN0);
    capture_clock_fit_for_test(kT0 + 20000000, kN0 + 10000000);
  }
};

TEST_F(CaptureClockFit, FirstLineAfterTenMillisecondsAtTheMeasuredRate) {
  capture_clock_fit_for_test(kT0, kN0);
  capture_clock_fit_for_test(kT0 + 10000000, kN0 + 5000000);  // 5 ms: too early
  EXPECT_EQ(detail::read_line().mult, 0u);
  capture_clock_fit_for_test(kT0 + 20000000, kN0 + 10000000);
  EXPECT_EQ(detail::read_line().mult, 2147483648u);  // 0.5 * 2^32
  EXPECT_EQ(line_at(kT0 + 20000000), kN0 + 10000000);
  EXPECT_EQ(line_at(kT0 + 20002000), kN0 + 10001000);
  EXPECT_EQ(line_at(kT0 + 19998000), kN0 + 9999000);  // a reading from just before the line
  // Readings on the same rate: the line stays as it is.
  for (uint64_t i = 1; i <= 20; ++i)
    capture_clock_fit_for_test(kT0 + 20000000 + i * 100000000, kN0 + 10000000 + i * 50000000);
  EXPECT_EQ(detail::read_line().mult, 2147483648u);
  EXPECT_EQ(line_at(kT0 + 2020000000), kN0 + 1010000000);
}

// Feeds fits every 50 ms of kernel time from (tsc, ns) on; the TSC runs at 2 GHz. Checks the line
// never goes back at the fit points; returns the final distance line - kernel.
int64_t run_fits(uint64_t tsc, uint64_t ns, int count) {
  uint64_t last = 0;
  for (int i = 0; i < count; ++i, tsc += 100000000, ns += 50000000) {
    capture_clock_fit_for_test(tsc, ns);
    uint64_t v = line_at(tsc);
    EXPECT_GE(v, last) << "fit " << i;
    last = v;
  }
  return static_cast<int64_t>(line_at(tsc)) - static_cast<int64_t>(ns);
}

TEST_F(CaptureClockFit, SteersASmallErrorAwayWithoutAStep) {
  first_line();
  // The kernel's clock runs 20 ppm faster than the first fit said: the line falls behind, and is
  // steered after it by at most 500 ppm, continuously.
  uint64_t tsc = kT0 + 20000000, ns = kN0 + 10000000;
  uint64_t before = line_at(tsc + 100000000);
  for (int i = 0; i < 100; ++i) {
    tsc += 100000000, ns += 50001000;  // 50 ms + 1 us
    capture_clock_fit_for_test(tsc, ns);
    if (i == 0) {
      EXPECT_EQ(line_at(tsc), before) << "the fit moved the line (a step)";
    }
  }
  int64_t error = static_cast<int64_t>(line_at(tsc)) - static_cast<int64_t>(ns);
  EXPECT_LT(error < 0 ? -error : error, 2000) << "line - kernel after 5 s: " << error << " ns";
}

TEST_F(CaptureClockFit, KernelClockJumpsAheadTheLineStepsForward) {
  first_line();
  // A suspend: one second of kernel time with no TSC ticks.
  uint64_t tsc = kT0 + 120000000, ns = kN0 + 60000000 + 1000000000;
  capture_clock_fit_for_test(tsc, ns);
  EXPECT_EQ(line_at(tsc), ns);
  EXPECT_LT(std::llabs(run_fits(tsc + 100000000, ns + 50000000, 40)), 1000);
}

TEST_F(CaptureClockFit, LineAheadOfTheKernelSlowsDownAndNeverStepsBack) {
  first_line();
  // The TSC leaps 100 ms ahead (a migration to a host whose TSC differs): the line is ahead of
  // the kernel's clock and may not step back; it slows down by up to 10 % until it is caught,
  // then closes the rest with a time constant of about a second.
  uint64_t tsc = kT0 + 20000000 + 100000000 + 200000000, ns = kN0 + 10000000 + 50000000;
  int64_t error = run_fits(tsc, ns, 200);  // 10 s
  EXPECT_LT(std::llabs(error), 10000) << "line - kernel after 10 s: " << error << " ns";
  EXPECT_NEAR(static_cast<double>(detail::read_line().mult) / 4294967296.0, 0.5, 0.5 * 1e-3);
}

TEST_F(CaptureClockFit, TscGoingBackEndsTheLine) {
  first_line();
  ASSERT_NE(detail::read_line().mult, 0u);
  capture_clock_fit_for_test(kT0 + 10000000, kN0 + 60000000);
  EXPECT_EQ(detail::read_line().mult, 0u);
  EXPECT_FALSE(clock_read().ticks);
  capture_clock_fit_for_test(kT0 + 300000000, kN0 + 200000000);  // and stays ended
  EXPECT_EQ(detail::read_line().mult, 0u);
}

TEST_F(CaptureClockFit, ACallAcrossTheLineBeingDroppedGetsATimeAndNoDuration) {
  first_line();
  ClockReading start{kT0 + 20002000, true};  // a call entered on the line
  capture_clock_fit_for_test(kT0, kN0);      // the TSC went back: the line is dropped
  ASSERT_EQ(detail::read_line().mult, 0u);
  uint64_t before = monotonic_ns();
  CallTime t = call_finish(start, true);
  EXPECT_EQ(t.duration_ns, 0u);
  EXPECT_GE(t.ts_ns, before);
  EXPECT_LE(t.ts_ns, monotonic_ns());
}

TEST_F(CaptureClockFit, AForkMidPublishDoesNotHangTheChild) {
  first_line();
  ASSERT_NE(detail::read_line().mult, 0u);
  // What a child sees when the writer was between the two sequence stores at the fork.
  detail::g_line.seq.fetch_add(1);
  capture_clock_after_fork();
  EXPECT_EQ(detail::g_line.seq.load() % 2, 0u);
  EXPECT_FALSE(clock_read().ticks);
  EXPECT_EQ(detail::read_line().mult, 0u);  // returns: the count is even again
  uint64_t before = monotonic_ns();
  EXPECT_GE(capture_now_ns(), before);
  // And the child's own writer fits a line again from the start.
  capture_clock_fit_for_test(kT0 + 40000000, kN0 + 20000000);
  capture_clock_fit_for_test(kT0 + 60000000, kN0 + 30000000);
  EXPECT_EQ(detail::read_line().mult, 2147483648u);
}

}  // namespace
}  // namespace gpuleak::core
