// Native call stacks of the thread inside a hook: raw return addresses only (symbolized offline by
// `gpuleak`), taken with libunwind's unw_backtrace and its per-thread cache (~0.2-0.6 us for 16-66
// frames, research/CAPTURE.md 5.1). libunwind is loaded with dlopen so that the preload has no
// link-time dependency a host program could trip over; without it, libgcc's unwinder is used.
#pragma once

#include <cstdint>

namespace gpuleak::core {

class StackCapture {
 public:
  // Loads the unwinder; `own_begin/own_end` bound gpuleak's own code, whose frames are skipped.
  void init(uintptr_t own_begin, uintptr_t own_end);
  // Fills `out` with at most `max_frames` return addresses, innermost first, starting at the first
  // frame outside gpuleak. Returns the number of frames.
  unsigned capture(uint64_t *out, unsigned max_frames) const;
  const char *unwinder_name() const;

 private:
  using Backtrace = int (*)(void **, int);
  Backtrace backtrace_ = nullptr;
  int which_ = 0;  // 0 none, 1 libunwind, 2 libgcc
  uintptr_t own_begin_ = 0, own_end_ = 0;
};

}  // namespace gpuleak::core
