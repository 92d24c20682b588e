#include "core/clock.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>

namespace gpuleak::core {

namespace detail {
std::atomic<double> g_ns_per_tick{0};
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

}  // namespace

void call_clock_calibrate() {
  // Writer thread only (a fork child's writer continues from the parent's anchor: same TSC).
  static int state = 0;  // 0 not started, 1 anchored, -1 given up
  static uint64_t tsc0 = 0, ns0 = 0;
  if (state < 0) return;
  if (state == 0) {
    if (!tsc_is_invariant()) {
      state = -1;
      return;
    }
    ns0 = monotonic_ns();
    tsc0 = detail::ticks();
    state = 1;
    return;
  }
  uint64_t ns = monotonic_ns();
  uint64_t tsc = detail::ticks();
  if (ns - ns0 < 10000000ull || tsc <= tsc0) return;
  double ratio = static_cast<double>(ns - ns0) / static_cast<double>(tsc - tsc0);
  if (ratio < 0.05 || ratio > 10.0) {
    state = -1;
    detail::g_ns_per_tick.store(0, std::memory_order_relaxed);
    return;
  }
  detail::g_ns_per_tick.store(ratio, std::memory_order_relaxed);
}

}  // namespace gpuleak::core
