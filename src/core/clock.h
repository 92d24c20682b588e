// The one clock of a capture: CLOCK_MONOTONIC nanoseconds, anchored once per file to
// CLOCK_REALTIME so that processes and ranks merge on one time line.
//
// Reading it costs what the hot path can least afford: on the H200 host clock_gettime takes ~26 ns
// and a bare rdtsc ~16 ns (bench/hook_parts.cpp), and a hooked call needs two readings (its start
// and end: the timestamp and the duration). So where the TSC is invariant (constant_tsc and
// nonstop_tsc) every reading is an rdtsc, turned into CLOCK_MONOTONIC nanoseconds by a line the
// writer thread fits and keeps fitting (capture_clock_calibrate): continuous, steered towards the
// kernel's clock by at most 500 ppm, so it never steps back and stays within microseconds of it.
// Until the line exists (the first 10 ms of the writer), or without such a TSC, readings are
// clock_gettime. Every record's time comes from here, so one thread's records stay in order.
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
// ns = base_ns + (ticks - base_ticks) * mult / 2^32, published under a sequence count (odd while
// the writer changes it). mult == 0: no line yet, read clock_gettime.
struct TscLine {
  std::atomic<uint32_t> seq{0};
  std::atomic<uint64_t> base_ticks{0};
  std::atomic<uint64_t> base_ns{0};
  std::atomic<uint64_t> mult{0};
  // The line before (the last one with a rate): readings left in the rings in raw ticks are
  // converted by the line of their moment (ticks_to_ns), also after a re-fit or a give-up.
  std::atomic<uint64_t> prev_base_ticks{0};
  std::atomic<uint64_t> prev_base_ns{0};
  std::atomic<uint64_t> prev_mult{0};
};
extern TscLine g_line;

inline uint64_t ticks() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return 0;
#endif
}

inline uint64_t scale(uint64_t ticks, uint64_t mult) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(ticks) * mult) >> 32);
}

struct Line {
  uint64_t base_ticks, base_ns, mult;
};
inline Line read_line() {
  for (;;) {
    uint32_t seq = g_line.seq.load(std::memory_order_acquire);
    Line l{g_line.base_ticks.load(std::memory_order_relaxed), g_line.base_ns.load(std::memory_order_relaxed),
           g_line.mult.load(std::memory_order_relaxed)};
    std::atomic_thread_fence(std::memory_order_acquire);
    if (!(seq & 1) && g_line.seq.load(std::memory_order_relaxed) == seq) return l;
  }
}
struct Lines {
  Line now, before;
};
inline Lines read_lines() {
  for (;;) {
    uint32_t seq = g_line.seq.load(std::memory_order_acquire);
    Lines l{{g_line.base_ticks.load(std::memory_order_relaxed), g_line.base_ns.load(std::memory_order_relaxed),
             g_line.mult.load(std::memory_order_relaxed)},
            {g_line.prev_base_ticks.load(std::memory_order_relaxed),
             g_line.prev_base_ns.load(std::memory_order_relaxed), g_line.prev_mult.load(std::memory_order_relaxed)}};
    std::atomic_thread_fence(std::memory_order_acquire);
    if (!(seq & 1) && g_line.seq.load(std::memory_order_relaxed) == seq) return l;
  }
}
inline uint64_t on_line(const Line &l, uint64_t t) {
  // A reading taken on another CPU just before the line was published may fall before its base.
  return t >= l.base_ticks ? l.base_ns + scale(t - l.base_ticks, l.mult) : l.base_ns - scale(l.base_ticks - t, l.mult);
}
}  // namespace detail

// A reading of the capture clock: TSC ticks once the line exists, else nanoseconds.
struct ClockReading {
  uint64_t value = 0;
  bool ticks = false;
};

__attribute__((always_inline)) inline ClockReading clock_read() {
  if (detail::g_line.mult.load(std::memory_order_relaxed)) return {detail::ticks(), true};
  return {monotonic_ns(), false};
}

// A reading in nanoseconds.
__attribute__((always_inline)) inline uint64_t reading_ns(ClockReading r) {
  if (!r.ticks) return r.value;
  detail::Line l = detail::read_line();
  return l.mult ? detail::on_line(l, r.value) : monotonic_ns();  // the line was dropped meanwhile
}

// The capture clock now, in nanoseconds.
inline uint64_t capture_now_ns() { return reading_ns(clock_read()); }

// A hook's tick reading (and a span of ticks), converted later by whoever drains the rings: the
// hot path stores raw ticks and leaves reading the line to the drain, off the program's thread. The line of the
// reading's moment is the newest unless the reading is older than its base (then the one before:
// the line is continuous, so both agree at the base). Spans saturate at UINT32_MAX.
struct TickConversion {
  uint64_t ts_ns;
  uint32_t duration_ns;
};
struct TickLines {
  detail::Lines both{};
  TickConversion convert(uint64_t ts_ticks, uint32_t span_ticks) const {
    bool older = !both.now.mult || (ts_ticks < both.now.base_ticks && both.before.mult);
    const detail::Line &l = older && both.before.mult ? both.before : both.now;
    if (!l.mult) return {monotonic_ns(), 0};  // no line ever: cannot happen for a tick reading
    uint64_t span = span_ticks == UINT32_MAX ? UINT32_MAX : detail::scale(span_ticks, l.mult);
    return {detail::on_line(l, ts_ticks), span > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(span)};
  }
};
inline TickLines tick_lines() { return TickLines{detail::read_lines()}; }
inline TickConversion ticks_to_ns(uint64_t ts_ticks, uint32_t span_ticks) {
  return tick_lines().convert(ts_ticks, span_ticks);
}

// A hooked call's end: its timestamp (the end, or the start with `at_start`) and its duration.
struct CallTime {
  uint64_t ts_ns;
  uint64_t duration_ns;
};
__attribute__((always_inline)) inline CallTime call_finish(ClockReading start, bool at_start) {
  ClockReading end = clock_read();
  if (__builtin_expect(start.ticks && end.ticks, 1)) {  // one conversion, the duration from ticks
    detail::Line l = detail::read_line();
    if (__builtin_expect(l.mult != 0, 1)) {
      uint64_t end_ns = detail::on_line(l, end.value);
      uint64_t d = end.value > start.value ? detail::scale(end.value - start.value, l.mult) : 0;
      return {at_start && d <= end_ns ? end_ns - d : end_ns, d};
    }
  }
  // Before the line, across its publication, or after it was dropped (the TSC misbehaved): both
  // ends in nanoseconds, a tick reading without a line counting as the end (no duration).
  uint64_t end_ns = end.value, start_ns = start.value;
  if (start.ticks || end.ticks) {
    detail::Line l = detail::read_line();
    if (end.ticks) end_ns = l.mult ? detail::on_line(l, end.value) : monotonic_ns();
    if (start.ticks) start_ns = l.mult ? detail::on_line(l, start.value) : end_ns;
  }
  uint64_t d = end_ns > start_ns ? end_ns - start_ns : 0;
  return {at_start ? end_ns - d : end_ns, d};
}

// The writer thread, on each wake: anchors the TSC against CLOCK_MONOTONIC, publishes the line
// 10 ms later, then re-fits it every 50 ms. Gives up for good (readings stay clock_gettime) on a
// TSC that is not invariant or a rate outside 0.05-10 ns per tick.
void capture_clock_calibrate();

// In the child after fork(): no line (readings are clock_gettime) until a writer fits one anew.
void capture_clock_after_fork();

// Tests: one step of the writer's fit with a made-up (TSC, CLOCK_MONOTONIC) pair.
void capture_clock_fit_for_test(uint64_t tsc, uint64_t ns);
// Tests: drops the line (readings fall back to clock_gettime) and forgets the anchor.
void capture_clock_reset_for_test();

}  // namespace gpuleak::core
