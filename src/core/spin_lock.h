// A lock for critical sections of a few dozen instructions on the hot path (a live-table probe):
// cheaper than a pthread mutex when uncontended, and it yields the CPU instead of spinning long
// when the holder was preempted.
#pragma once

#include <sched.h>

#include <atomic>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace gpuleak::core {

class SpinLock {
 public:
  void lock() {
    while (held_.exchange(true, std::memory_order_acquire)) {
      for (int spins = 0; held_.load(std::memory_order_relaxed); ++spins) {
        if (spins < 64) {
#if defined(__x86_64__)
          _mm_pause();
#endif
        } else {
          sched_yield();
        }
      }
    }
  }
  void unlock() { held_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> held_{false};
};

}  // namespace gpuleak::core
