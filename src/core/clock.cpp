#include "core/clock.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>

namespace gpuleak::core {

namespace detail {
TscLine g_line;
}

namespace {

// constant_tsc: the rate does not follow frequency changes; nonstop_tsc: it keeps counting in
// deep idle states. Both are needed for ticks to mean time.
bool tsc_is_invariant() {
#if defined(__x86_64__)
  int fd = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  // The first processor's "flags" line is all we need: read until it is complete (64 KiB at most).
  std::string text;
  char buf[4096];
  size_t at = std::string::npos;
  while (text.size() < 65536) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    at = text.find("\nflags");
    if (at != std::string::npos && text.find('\n', at + 1) != std::string::npos) break;
  }
  close(fd);
  if (at == std::string::npos || text.find('\n', at + 1) == std::string::npos) return false;
  std::string flags = text.substr(at, text.find('\n', at + 1) - at) + " ";
  return flags.find(" constant_tsc ") != std::string::npos && flags.find(" nonstop_tsc ") != std::string::npos;
#else
  return false;
#endif
}

struct Calibration {
  int state = 0;  // 0 not started, 1 anchored, 2 line published, -1 given up (clock_gettime)
  uint64_t tsc0 = 0, ns0 = 0;
  uint64_t last_fit_ns = 0;
  uint64_t last_tsc = 0;   // the latest reading fitted (the TSC must never go back)
  double ns_per_tick = 0;  // the last rate measured over 10 ms or more
};
Calibration g_cal;  // the writer thread's alone

// A TSC reading and the CLOCK_MONOTONIC time of the same moment: the midpoint of the tightest of
// three bracketing pairs of kernel readings.
void sample(uint64_t *tsc, uint64_t *ns) {
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 3; ++i) {
    uint64_t a = monotonic_ns();
    uint64_t t = detail::ticks();
    uint64_t b = monotonic_ns();
    if (b - a < best) {
      best = b - a;
      *tsc = t;
      *ns = a + (b - a) / 2;
    }
  }
}

void publish(uint64_t base_ticks, uint64_t base_ns, uint64_t mult) {
  detail::TscLine &l = detail::g_line;
  uint32_t seq = l.seq.load(std::memory_order_relaxed);
  l.seq.store(seq + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  if (uint64_t m = l.mult.load(std::memory_order_relaxed)) {
    l.prev_base_ticks.store(l.base_ticks.load(std::memory_order_relaxed), std::memory_order_relaxed);
    l.prev_base_ns.store(l.base_ns.load(std::memory_order_relaxed), std::memory_order_relaxed);
    l.prev_mult.store(m, std::memory_order_relaxed);
  }
  l.base_ticks.store(base_ticks, std::memory_order_relaxed);
  l.base_ns.store(base_ns, std::memory_order_relaxed);
  l.mult.store(mult, std::memory_order_relaxed);
  l.seq.store(seq + 2, std::memory_order_release);
}

constexpr uint64_t kFirstFitNs = 10000000;  // 10 ms of anchor before the first line
constexpr uint64_t kRefitNs = 50000000;     // then a new fit every 50 ms
constexpr double kMaxSteer = 5e-4;          // 500 ppm: 0.5 us of correction per ms at most
constexpr int64_t kFarNs = 100000;          // beyond 100 us off: 1 %
constexpr double kFarSteer = 1e-2;
constexpr int64_t kJumpNs = 5000000;  // beyond 5 ms off, a jump (suspend, migration): 10 %
constexpr double kJumpSteer = 0.1;

uint64_t to_mult(double ns_per_tick) { return static_cast<uint64_t>(ns_per_tick * 4294967296.0); }  // 2^32

void give_up(Calibration &c) {
  c.state = -1;
  publish(0, 0, 0);
}

// One step of the fit with a (TSC, CLOCK_MONOTONIC) pair taken now.
void fit(Calibration &c, uint64_t tsc, uint64_t ns) {
  if (c.state < 0) return;
  if (c.state == 0) {
    c.tsc0 = tsc, c.ns0 = ns, c.last_tsc = tsc;
    c.state = 1;
    return;
  }
  if (tsc < c.last_tsc) return give_up(c);  // the TSC went back: it is not one clock
  c.last_tsc = tsc;
  bool has_line = c.state == 2;
  if (ns < (has_line ? c.last_fit_ns + kRefitNs : c.ns0 + kFirstFitNs) || tsc <= c.tsc0) return;
  c.last_fit_ns = ns;
  // The rate over the whole span since the anchor, once it is 10 ms long.
  double rate = 0;
  if (ns - c.ns0 >= kFirstFitNs) {
    rate = static_cast<double>(ns - c.ns0) / static_cast<double>(tsc - c.tsc0);
    if (rate < 0.05 || rate > 10.0) return give_up(c);
  }
  if (!has_line) {  // the first line starts at the kernel's clock itself
    c.ns_per_tick = rate;
    c.state = 2;
    publish(tsc, ns, to_mult(rate));
    return;
  }
  // Continue the current line from where it is now (never a step back), its rate steered so that
  // the distance to the kernel's clock closes over about a second.
  uint64_t here = detail::on_line(detail::read_line(), tsc);
  int64_t error = static_cast<int64_t>(ns - here);
  int64_t distance = error < 0 ? -error : error;
  double limit = distance > kJumpNs ? kJumpSteer : distance > kFarNs ? kFarSteer : kMaxSteer;
  if (distance > kJumpNs) {
    // The kernel's clock leapt ahead (step forward with it), or the line ran ahead of it (slow
    // down until the kernel's clock catches up). The span since the anchor does not measure the
    // rate any more: anchor again, keep the last good rate.
    if (error > 0) here = ns, error = 0;
    c.tsc0 = tsc, c.ns0 = ns;
  } else if (rate > 0) {
    c.ns_per_tick = rate;
  }
  double steer = static_cast<double>(error) / 1e9;
  steer = steer > limit ? limit : steer < -limit ? -limit : steer;
  publish(tsc, here, to_mult(c.ns_per_tick * (1.0 + steer)));
}

}  // namespace

void capture_clock_calibrate() {
  Calibration &c = g_cal;
  if (c.state < 0) return;
  if (c.state == 0 && !tsc_is_invariant()) return give_up(c);
  uint64_t tsc = 0, ns = 0;
  sample(&tsc, &ns);
  fit(c, tsc, ns);
}

void capture_clock_fit_for_test(uint64_t tsc, uint64_t ns) { fit(g_cal, tsc, ns); }

void capture_clock_after_fork() {
  // The child's only thread: the writer may have been inside publish() at the fork, leaving the
  // sequence count odd for good (every reader would wait for it). Start over from clock_gettime.
  std::atomic<uint32_t> &seq = detail::g_line.seq;
  seq.store((seq.load(std::memory_order_relaxed) | 1) + 1, std::memory_order_relaxed);
  publish(0, 0, 0);
  detail::g_line.prev_mult.store(0, std::memory_order_relaxed);  // the parent's lines are not the child's
  g_cal = Calibration{};
}

void capture_clock_reset_for_test() { capture_clock_after_fork(); }

}  // namespace gpuleak::core
