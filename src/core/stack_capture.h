// Native call stacks of the thread inside a hook: raw return addresses only (symbolized offline by
// `gpuleak`), taken with libunwind's unw_backtrace and its per-thread cache (~0.2-0.6 us for 16-66
// frames, research/CAPTURE.md 5.1). libunwind is loaded with dlopen so that the preload has no
// link-time dependency a host program could trip over; without it, libgcc's unwinder is used.
#pragma once

#include <cstdint>

namespace gpuleak::core {

// One stack slot the unwinder read, and what it held.
struct StackSlot {
  uintptr_t address;
  uint64_t value;
};

// What an unwind depended on (stack_memo.h says how it is used). The caller fills `sp`, `bp`,
// `stack_end` and the slot buffer; capture_with_proof() fills the rest.
struct StackProof {
  uintptr_t sp = 0;         // the caller's stack pointer when it decided to unwind
  uintptr_t bp = 0;         // its frame-pointer register at that moment
  uintptr_t stack_end = 0;  // the end of the thread's stack (exclusive)
  StackSlot *slots = nullptr;
  unsigned capacity = 0;
  unsigned count = 0;       // slots filled
  uint16_t upto[128] = {};  // slots filled when frame i (of those returned) had been read
  bool bp_used = false;     // a frame's frame pointer came from `bp` itself
  bool valid = false;       // false: the unwind went where the proof cannot follow (signal frame, ...)

  // Keeps only what decided the first `frames` frames (a stack cut short keeps a shorter proof).
  void keep_frames(unsigned frames) {
    if (frames > 0 && frames <= 128) count = upto[frames - 1];
  }
};

class StackCapture {
 public:
  // Loads the unwinder (libgcc's when `libgcc` or libunwind is missing); `own_begin/own_end` bound
  // gpuleak's own code, whose frames are skipped.
  void init(uintptr_t own_begin, uintptr_t own_end, bool libgcc = false);
  // Fills `out` with at most `max_frames` return addresses, innermost first, starting at the first
  // frame outside gpuleak. Returns the number of frames.
  unsigned capture(uint64_t *out, unsigned max_frames) const;
  // The same frames through libunwind's step-by-step cursor (several times slower than capture()),
  // and, in `proof`, every slot at or above proof->sp that decided one: where each return address
  // was read, and where each frame pointer that points into the stack was restored from. Returns 0
  // when the cursor is not available (libgcc fallback); the proof is then not valid.
  unsigned capture_with_proof(uint64_t *out, unsigned max_frames, StackProof *proof) const;
  const char *unwinder_name() const;

 private:
  using Backtrace = int (*)(void **, int);
  struct Cursor;  // libunwind's step-by-step entry points, when found
  Backtrace backtrace_ = nullptr;
  const Cursor *cursor_ = nullptr;
  int which_ = 0;  // 0 none, 1 libunwind, 2 libgcc
  uintptr_t own_begin_ = 0, own_end_ = 0;
  // The most own frames a capture has skipped (read and raised with relaxed __atomic builtins;
  // copied with the rest into a fork child's state).
  mutable int own_frames_ = 0;
};

}  // namespace gpuleak::core
