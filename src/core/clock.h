// The one clock of a capture: CLOCK_MONOTONIC nanoseconds (vDSO, ~20 ns), anchored once per file
// to CLOCK_REALTIME so that processes and ranks merge on one time line.
//
// Call durations are cheaper: where the TSC is invariant (constant_tsc and nonstop_tsc), a hooked
// call reads it on entry and on exit (a few cycles each) and CLOCK_MONOTONIC only once, for its
// timestamp; the writer thread calibrates ticks to nanoseconds against CLOCK_MONOTONIC
// (call_clock_calibrate). Until it has, or without such a TSC, both ends read CLOCK_MONOTONIC.
#pragma once

#include <atomic>
#include <cstdint>
#include <ctime>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace gpuleak::core {

inline uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

namespace detail {
// Nanoseconds per TSC tick once calibrated; 0 while call durations use CLOCK_MONOTONIC.
extern std::atomic<double> g_ns_per_tick;
inline uint64_t ticks() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return 0;
#endif
}
}  // namespace detail

// Where a hooked call began, in whichever unit call_elapsed_ns() will read it back.
struct CallStart {
  uint64_t value = 0;
  bool tsc = false;
};

inline CallStart call_start() {
  if (detail::g_ns_per_tick.load(std::memory_order_relaxed) > 0) return {detail::ticks(), true};
  return {monotonic_ns(), false};
}

// Nanoseconds since `start`; `now_ns` is the caller's CLOCK_MONOTONIC reading at the end.
inline uint64_t call_elapsed_ns(CallStart start, uint64_t now_ns) {
  if (!start.tsc) return now_ns > start.value ? now_ns - start.value : 0;
  uint64_t t = detail::ticks();
  if (t <= start.value) return 0;
  return static_cast<uint64_t>(static_cast<double>(t - start.value) *
                               detail::g_ns_per_tick.load(std::memory_order_relaxed));
}

// The writer thread, on each wake: anchors the TSC against CLOCK_MONOTONIC and, 10 ms later and
// then on every call, publishes the ratio. Gives up for good on a TSC that is not invariant or a
// ratio outside 0.05-10 ns per tick (a clock that is not what it claims).
void call_clock_calibrate();

}  // namespace gpuleak::core
