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

struct SelfTime {
  std::atomic<uint64_t> records{0}, record_ticks{0};
  std::atomic<uint64_t> frees{0}, free_ticks{0};  // both halves of a free hook's recording
  std::atomic<uint64_t> unwinds{0}, unwind_ticks{0}, memo_hits{0}, frames{0};
  // The memo's misses that took a proof (the slow cursor, stack_memo.h).
  std::atomic<uint64_t> proofs{0}, proof_ticks{0};
  std::atomic<uint64_t> python_walks{0}, python_ticks{0};
};

// Adds the ticks since it was made to `ticks` (and one to `count`) when it goes, if `on`.
class SelfTimer {
 public:
  SelfTimer(bool on, std::atomic<uint64_t> *count, std::atomic<uint64_t> *ticks)
      : count_(on ? count : nullptr), ticks_(ticks), start_(on ? detail::ticks() : 0) {}
  ~SelfTimer() {
    if (!count_) return;
    ticks_->fetch_add(detail::ticks() - start_, std::memory_order_relaxed);
    count_->fetch_add(1, std::memory_order_relaxed);
  }
  SelfTimer(const SelfTimer &) = delete;
  SelfTimer &operator=(const SelfTimer &) = delete;

 private:
  std::atomic<uint64_t> *count_;
  std::atomic<uint64_t> *ticks_;
  uint64_t start_;
};

// The exit line ("gpuleak: own time in the hooks (GPULEAK_SELF_TIME): ..."). Async-signal-safe.
void say_self_time(const SelfTime &t, const char *unwinder);

}  // namespace gpuleak::core
