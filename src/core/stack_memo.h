// Per-thread memo of whole native stacks: what makes 32-frame native stacks affordable on every
// allocation of a training loop.
//
// A training loop calls the allocator from the same place, at the same stack depth, over and over.
// The unwinder's answer is a pure function of where it starts (the stack and frame-pointer
// registers) and of the stack slots it reads on the way (each return address, and each frame
// pointer that places a caller's frame). So when a thread is back at a stack pointer it unwound
// from before, and every such slot still holds the value it held then, the unwind would find the
// same frames: the stack id found then is the answer, after two loads per frame instead of an
// unwind and a hash lookup of the frames.
//
// A call path is memoized the second time its stack pointer is seen (the first time costs only the
// ordinary unwind), through StackCapture::capture_with_proof, which is several times slower. Many
// call paths may reach the allocator at one stack pointer (a framework's ops through one dispatcher:
// the frames differ, their sizes not), so a stack pointer keeps a proof per path, up to kPathsPerSp;
// a lookup checks them in turn and each wrong one fails at its first differing slot. The memo is
// bounded per thread (entries and slots); when full, it starts over. Only slots inside the thread's
// own stack are trusted; a thread running on another stack (a signal stack, a coroutine) is never
// memoized. Limits: registers other than the stack and frame pointers are assumed not to place
// frames (true of compiler-generated unwind tables on x86-64).
#pragma once

#include <cstdint>

#include "core/stack_capture.h"

namespace gpuleak::core {

class StackMemo {
 public:
  // The calling thread's memo for stacks of `max_frames`, created on first use; its entries belong
  // to `owner` (the recorder's state: a fork child's new state starts afresh). nullptr when it
  // cannot be made (no memory, no stack bounds).
  static StackMemo *for_thread(const void *owner, unsigned max_frames);
  ~StackMemo();

  // The stack id remembered for this stack pointer (and frame pointer, where it matters), when
  // every slot of its proof still holds; else 0, with *proof set up for capture_with_proof when
  // this stack pointer was seen before without one (nullptr: use the ordinary capture).
  uint32_t find(uintptr_t sp, uintptr_t bp, bool python, StackProof **proof);
  // Records the outcome of a capture from (sp, bp): `proof` the one find() handed out, or nullptr.
  void remember(uintptr_t sp, uintptr_t bp, bool python, const StackProof *proof, uint32_t stack_id);

 private:
  struct Entry;
  struct Bucket;
  Bucket &bucket_for(uintptr_t sp);
  bool holds(const Entry &e, uintptr_t sp, uintptr_t bp, bool python) const;  // its proof still holds
  void held(Bucket &b, int32_t entry);  // after `entry` held: the next lookup tries its successor first
  void clear();
  const void *owner_ = nullptr;
  uintptr_t stack_low_ = 0, stack_end_ = 0;  // the thread's own stack
  unsigned slots_per_proof_ = 0;             // the most one proof can hold
  Bucket *buckets_ = nullptr;
  Entry *entries_ = nullptr;
  unsigned entries_used_ = 0;
  StackSlot *slots_ = nullptr;  // the entries' proofs, one after another; then one scratch proof
  unsigned slots_used_ = 0;
  StackProof scratch_;
};

}  // namespace gpuleak::core
