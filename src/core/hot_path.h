// The recorder's hot path, inline in every hook (shim/hook.h): the allocation record and the two
// halves of a free, as recorder.h describes record_alloc, begin_free and end_free (whose
// out-of-line definitions, for the C API and the tests, call these). Inline so that what each hook
// knows at compile time (its operation, kind, address space and when it reads the clock) folds
// away and no call frame is built for the common case; out of line, most of a pair's instructions
// were tests of those constants. Everything rare stays out of line: the capture's start, an OOM,
// the native unwind, GPULEAK_SELF_TIME's timed variants, a full ring. A hook only records what it
// saw: pairing a free with its allocation is the reader's (format/free_pairing.h).
#pragma once

#include <cstdint>
#include <cstring>
#include <new>

#include "core/clock.h"
#include "core/recorder.h"
#include "core/recorder_state.h"
#include "core/tls.h"
#include "format/capture_format.h"
#include "format/record_framing.h"

namespace gpuleak::core {

namespace detail {
extern State *g_state;  // recorder.cpp; never freed (recorder_state.h)
// Per-thread: the cudart function the program called (runtime_label_swap), the kernel's id of the
// thread (read once).
extern GPULEAK_SHARED_TLS uint16_t t_runtime_api;
extern GPULEAK_SHARED_TLS uint32_t t_tid;
uint32_t read_tid();
// Out of line, rare or long (recorder.cpp).
uint32_t unwind_stack(State *s, bool has_python);
void record_first_alloc(State *s, const CallFacts &f, Space space);
void record_alloc_timed(State *s, const CallFacts &f, Space space);
PendingFree begin_free_timed(State *s);
void end_free_timed(State *s, PendingFree p, const CallFacts &f, Space space);
void record_oom(State *s, const format::MemoryRecord &r, Counted counted);
}  // namespace detail

namespace hot {

constexpr int32_t kOutOfMemory = 2;  // CUDA_ERROR_OUT_OF_MEMORY

inline bool running(const State *s) {
  return s->phase.load(std::memory_order_acquire) == static_cast<int>(Phase::kRunning);
}

inline uint32_t thread_id() {
  const uint32_t tid = detail::t_tid;
  return __builtin_expect(tid != 0, 1) ? tid : detail::read_tid();
}

// The stack id of the calling hook's caller; 0 with GPULEAK_STACK_DEPTH=0 (no call made).
inline uint32_t capture_stack(State *s, bool has_python = false) {
  return s->config.stack_depth ? detail::unwind_stack(s, has_python) : 0;
}

// A record's time: the call's end, or its start for frees and events (so that a free is ordered
// before the re-use of its address by another thread).
struct RecordTime {
  uint64_t ts;
  uint32_t duration;
  uint8_t ring;  // kRingTicks when ts and duration are TSC ticks
};
inline __attribute__((always_inline)) RecordTime record_time(const CallFacts &f, bool time_at_start) {
  // Tick readings stay ticks, marked for the drain to convert (drain_clock.cpp): no line is read
  // here. The rare reading in nanoseconds (before the line, without an invariant TSC) is stored as
  // it is.
  if (f.timing == Timing::kCall) {
    ClockReading end = clock_read();
    if (__builtin_expect(f.start.ticks && end.ticks, 1)) {
      uint64_t d = end.value > f.start.value ? end.value - f.start.value : 0;
      return {time_at_start ? f.start.value : end.value, d > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(d),
              kRingTicks};
    }
    CallTime t = call_finish(f.start, time_at_start);
    return {t.ts_ns, t.duration_ns > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(t.duration_ns), 0};
  }
  ClockReading once = f.timing == Timing::kStart ? f.start : clock_read();
  return {once.value, 0, once.ticks ? kRingTicks : uint8_t{0}};
}

// Every field of a memory record (it may be written in place in the ring, never zeroed first).
// `space`: the address space the hook knew (frees are paired in it), none for events.
inline __attribute__((always_inline)) void fill_record(format::MemoryRecord &r, const CallFacts &f, const RecordTime &t,
                                                       int16_t device, uint32_t stack_id, uint32_t py_stack_id,
                                                       uint8_t space) {
  const uint16_t runtime_api = detail::t_runtime_api;
  r.ts_ns = t.ts;
  r.address = f.address;
  r.size = f.size;
  r.stream = f.stream;
  r.aux = f.aux;
  r.duration_ns = t.duration;
  r.tid = thread_id();
  r.stack_id = stack_id;
  r.py_stack_id = py_stack_id;
  r.result = f.result;
  r.api = static_cast<uint16_t>(f.api);
  r.runtime_api = runtime_api;
  r.op = static_cast<uint8_t>(f.op);
  r.kind = static_cast<uint8_t>(f.kind);
  r.device = device;
  r.flags =
      f.flags | (runtime_api ? format::kFlagRuntimeLabel : 0) | (f.timing == Timing::kCall ? 0 : format::kFlagUntimed);
  r.space = space;
  r.ring = t.ring;
}

// A record's `space` field: the hook's address space, plus one (0 is "not said").
inline constexpr uint8_t space_field(Space space) { return static_cast<uint8_t>(static_cast<uint8_t>(space) + 1); }

// Appends the memory record that `fill` writes to `b`, the calling thread's ring (null when it
// could not be made): in place when it fits there without wrapping (nothing is copied), else a copy
// through append_memory_record, which may wait for room or drop.
template <typename Fill>
inline __attribute__((always_inline)) void emit(State *s, ThreadBuffer *b, Counted counted, Fill &&fill) {
  constexpr size_t kBytes = sizeof(format::RecordHeader) + sizeof(format::MemoryRecord);
  uint8_t *at = b ? buffer_reserve<kBytes>(b) : nullptr;
  if (counted == Counted::kAllocation) bump(detail::g_allocation_clock);  // the loop observer's "anything since?"
  if (__builtin_expect(!at, 0)) {
    format::MemoryRecord r;
    fill(r);
    append_memory_record(s, r, counted);
    return;
  }
  const format::RecordHeader h = format::record_header(format::RecordType::kMemory, sizeof(format::MemoryRecord));
  std::memcpy(at, &h, sizeof h);
  fill(*new (at + sizeof h) format::MemoryRecord);
  buffer_commit<kBytes>(b);
  bump(b->events);
  if (counted == Counted::kAllocation) bump(b->allocations);
  if (counted == Counted::kFree) bump(b->frees);
  if (over_quarter_full(b)) request_drain(s);  // the writer drains before it is full
}

// The allocation record, once the capture runs.
template <bool kTimed>
inline __attribute__((always_inline)) void alloc_body(State *s, const CallFacts &f, Space space) {
  SectionTimer<kTimed> timer(s->self_time.records);
  const RecordTime t = record_time(f, false);
  // The calling thread's own Python frames, read without the GIL (python_stack.h); 0 when none.
  uint32_t py_stack_id;
  {
    SectionTimer<kTimed> python(s->self_time.python);
    py_stack_id = s->py_stacks.capture(s);
  }
  // A framework's block on a Python thread: its Python frames name the call site (config.h).
  const bool python_names_it = f.kind == format::Kind::kPoolBlock && py_stack_id != 0 && !s->config.block_native_stacks;
  const uint32_t stack_id = python_names_it ? 0 : capture_stack(s, py_stack_id != 0);
  const uint8_t where = space_field(space);
  const Counted counted = f.result == 0 && f.op == format::Op::kAlloc ? Counted::kAllocation : Counted::kNone;
  if (__builtin_expect(f.result == kOutOfMemory, 0)) {
    format::MemoryRecord r;
    fill_record(r, f, t, f.device, stack_id, py_stack_id, where);
    return detail::record_oom(s, r, counted);
  }
  emit(s, thread_buffer(s), counted,
       [&](format::MemoryRecord &r) { fill_record(r, f, t, f.device, stack_id, py_stack_id, where); });
}

template <bool kTimed>
inline __attribute__((always_inline)) PendingFree begin_free_body(State *s) {
  SectionTimer<kTimed> timer(s->self_time.frees);
  PendingFree p;
  p.buffer = thread_buffer(s);
  p.active = true;
  return p;
}

template <bool kTimed>
inline __attribute__((always_inline)) void end_free_body(State *s, const PendingFree &p, const CallFacts &f,
                                                         Space space) {
  SectionTimer<kTimed> timer(s->self_time.frees);  // (counts 2 a free)
  // Its time is the hook's entry, before the real free (record_time's time_at_start): the driver
  // may hand the address to another thread at once, and that allocation's time, read when its call
  // returns, sorts after this free. Size, kind and device are the allocation's, which the reader
  // pairs it with (format/free_pairing.h): device -1 here. No stack for frees: what keeps memory
  // alive is where it was allocated, and unwinding here would double the cost of every pair.
  const RecordTime t = record_time(f, true);
  emit(s, p.buffer, f.result == 0 ? Counted::kFree : Counted::kNone,
       [&](format::MemoryRecord &r) { fill_record(r, f, t, -1, 0, 0, space_field(space)); });
}

// recorder.h's record_alloc.
inline __attribute__((always_inline)) void record_alloc(const CallFacts &f, Space space) {
  State *s = detail::g_state;
  // The slow paths get a copy of the hook's facts: were the hook's own object's address to leave
  // the hook, the compiler would have to assume that the real call changed it, and could no longer
  // fold the hook's constants (its operation, kind, timing) into the record.
  if (__builtin_expect(!running(s), 0)) {
    const CallFacts copy = f;
    return detail::record_first_alloc(s, copy, space);
  }
  if (__builtin_expect(s->config.self_time, 0)) {
    const CallFacts copy = f;
    return detail::record_alloc_timed(s, copy, space);
  }
  alloc_body<false>(s, f, space);
}

// recorder.h's begin_free.
inline __attribute__((always_inline)) PendingFree begin_free() {
  State *s = detail::g_state;
  if (__builtin_expect(!running(s), 0)) return PendingFree{};
  if (__builtin_expect(s->config.self_time, 0)) return detail::begin_free_timed(s);
  return begin_free_body<false>(s);
}

// recorder.h's end_free.
inline __attribute__((always_inline)) void end_free(const PendingFree &p, const CallFacts &f, Space space) {
  if (!p.active) return;
  State *s = detail::g_state;
  if (__builtin_expect(s->config.self_time, 0)) {
    const CallFacts copy = f;  // (see record_alloc)
    return detail::end_free_timed(s, p, copy, space);
  }
  end_free_body<false>(s, p, f, space);
}

}  // namespace hot
}  // namespace gpuleak::core
