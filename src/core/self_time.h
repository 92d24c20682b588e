// GPULEAK_SELF_TIME=1: where gpuleak's own time in the hooks goes (allocations' and frees' recording,
// the native unwind, the Python frames), summed over every thread and said in one stderr line at
// exit. For benchmarks on machines without a profiler (the GPU host has no perf): it measures the
// profiler's share of a program's step from inside, free of the run-to-run noise of step times.
// Off, it costs one predictable branch per hook.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/clock.h"

namespace gpuleak::core {

// A count of timed sections and their ticks.
struct SelfCounter {
  std::atomic<uint64_t> count{0}, ticks{0};
};

struct SelfTime {
  SelfCounter records, frees;   // allocation records; both halves of each free's recording
  SelfCounter unwinds, proofs;  // native stacks (memo hits included); the memo's misses with proof
  SelfCounter python;           // Python stacks
  std::atomic<uint64_t> memo_hits{0}, frames{0};
};

// Adds the ticks since it was made to `counter` when it goes, if `on`. Off, it costs a test when
// made and one when it goes (the hot path's cost: docs/benchmarks.md).
class SelfTimer {
 public:
  SelfTimer(bool on, SelfCounter &counter) {
    if (__builtin_expect(on, 0)) {
      counter_ = &counter;
      start_ = detail::ticks();
    }
  }
  ~SelfTimer() {
    if (__builtin_expect(counter_ != nullptr, 0)) {
      counter_->ticks.fetch_add(detail::ticks() - start_, std::memory_order_relaxed);
      counter_->count.fetch_add(1, std::memory_order_relaxed);
    }
  }
  SelfTimer(const SelfTimer &) = delete;
  SelfTimer &operator=(const SelfTimer &) = delete;

 private:
  SelfCounter *counter_ = nullptr;
  uint64_t start_ = 0;
};

// SelfTimer where `kOn`, nothing at all where not: the hot path picks once per hook between its
// timed and untimed copies (recorder.cpp), so that the untimed one pays no test per section.
template <bool kOn>
struct SectionTimer {
  explicit SectionTimer(SelfCounter &) {}
};
template <>
struct SectionTimer<true> : SelfTimer {
  explicit SectionTimer(SelfCounter &counter) : SelfTimer(true, counter) {}
};

// The exit line ("gpuleak: own time in the hooks (GPULEAK_SELF_TIME): ..."). Async-signal-safe.
void say_self_time(const SelfTime &t, const char *unwinder);

}  // namespace gpuleak::core
