#include "core/recorder.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <new>

#include "core/clock.h"
#include "core/hot_path.h"
#include "core/recorder_state.h"
#include "core/signal_safe.h"
#include "core/stack_memo.h"
#include "core/tls.h"
#include "format/record_framing.h"

namespace gpuleak::core {

namespace detail {
std::atomic<int> *g_phase = nullptr;
GPULEAK_SHARED_TLS bool t_in_hook = false;
State *g_state = nullptr;
GPULEAK_SHARED_TLS uint16_t t_runtime_api = 0;
GPULEAK_SHARED_TLS uint32_t t_tid = 0;
alignas(64) std::atomic<uint64_t> g_allocation_clock{0};
uint32_t read_tid() { return t_tid = static_cast<uint32_t>(syscall(SYS_gettid)); }
}  // namespace detail

using detail::g_state;
using detail::t_runtime_api;

static_assert(static_cast<int>(Phase::kIdle) == 0 && static_cast<int>(Phase::kRunning) == 1,
              "hook_enter() (recorder.h) lets hooks run in exactly these two phases");

namespace {

// Per-thread state (core/tls.h).
GPULEAK_TLS uint64_t t_last_ts = 0;

// A thread's record times never go back (capture-format.md): a reading taken while the writer
// re-fits the clock's line can fall a few nanoseconds before the previous one.
uint64_t in_thread_order(uint64_t ts) {
  if (ts < t_last_ts) ts = t_last_ts;
  t_last_ts = ts;
  return ts;
}

using hot::kOutOfMemory;

Phase phase(State *s) { return static_cast<Phase>(s->phase.load(std::memory_order_acquire)); }

// Starts the capture at the first allocation that succeeded (or failed for lack of memory): a
// process that only touches CUDA to find it unusable leaves no file behind. *started: this call
// started it.
bool ensure_running(State *s, int32_t result, bool *started) {
  Phase p = phase(s);
  if (p == Phase::kRunning) return true;
  if (p != Phase::kIdle || (result != 0 && result != kOutOfMemory)) return false;
  std::call_once(s->writer.started, [s, started] {
    std::string error;
    if (!writer_start(s, &error)) {
      recorder_disable(error);
      return;
    }
    int expected = static_cast<int>(Phase::kIdle);
    *started = s->phase.compare_exchange_strong(expected, static_cast<int>(Phase::kRunning));
  });
  return phase(s) == Phase::kRunning;
}

}  // namespace

namespace detail {

// `has_python`: the thread's Python frames were captured, so the native stack stops where the
// interpreter's own frames begin (they would only split one Python call site into several).
// A thread back at a stack pointer it unwound from before gets its stack from the memo when
// nothing the unwind depended on changed (stack_memo.h). Not inlined: the memo's proof starts at
// this function's own stack pointer.
__attribute__((noinline)) uint32_t unwind_stack(State *s, bool has_python) {
  SelfTimer timer(s->config.self_time, s->self_time.unwinds);
  uintptr_t sp = 0, bp = 0;
#if defined(__x86_64__)  // the proof follows x86-64's registers (stack_capture.cpp)
  asm volatile("mov %%rsp, %0\n\tmov %%rbp, %1" : "=r"(sp), "=r"(bp));
  StackMemo *memo = s->config.stack_memo ? StackMemo::for_thread(s, s->config.stack_depth) : nullptr;
#else
  StackMemo *memo = nullptr;
#endif
  StackProof *proof = nullptr;
  if (memo)
    if (uint32_t id = memo->find(sp, bp, has_python, &proof)) {
      if (s->config.self_time) s->self_time.memo_hits.fetch_add(1, std::memory_order_relaxed);
      return id;
    }
  uint64_t frames[128];
  unsigned n = 0;
  if (proof) {
    SelfTimer timer(s->config.self_time, s->self_time.proofs);
    n = s->stacks.capture_with_proof(frames, s->config.stack_depth, proof);
  }
  if (n == 0) n = s->stacks.capture(frames, s->config.stack_depth);
  if (s->config.self_time) s->self_time.frames.fetch_add(n, std::memory_order_relaxed);
  if (has_python) {
    n = PythonStacks::frames_before_interpreter(frames, n);
    if (proof) proof->keep_frames(n);  // the interpreter's frames above the cut may vary freely
  }
  uint32_t id = 0;
  if (n > 0) {
    bool is_new = false;
    id = s->stack_ids.intern(frames, n, &is_new);
    if (is_new) {
      format::StackRecord r{id, static_cast<uint16_t>(n), static_cast<uint16_t>(format::StackKind::kNative)};
      append_record(s, format::RecordType::kStack, &r, sizeof r, frames, n * sizeof(uint64_t));
    }
  }
  if (memo) memo->remember(sp, bp, has_python, proof, id);
  return id;
}

}  // namespace detail

namespace {

void write_oom(State *s, const format::MemoryRecord &r) {
  format::OomRecord o{};
  o.ts_ns = (r.ring & kRingTicks) ? ticks_to_ns(r.ts_ns, 0).ts_ns : r.ts_ns;
  o.requested = r.size;
  o.tid = r.tid;
  o.stack_id = r.stack_id;
  o.py_stack_id = r.py_stack_id;
  o.result = r.result;
  o.api = r.api;
  o.device = r.device;
  // The one place a hook calls CUDA and writes synchronously: the program is already failing and
  // may die next (DESIGN.md "OOM").
  if (s->probe.mem_info) s->probe.mem_info(r.device, &o.free_bytes, &o.total_bytes);
  append_record(s, format::RecordType::kOom, &o, sizeof o);
  writer_flush_now(s);
}

}  // namespace

State *state() { return g_state; }

void recorder_init(const Config &config, uintptr_t own_begin, uintptr_t own_end) {
  if (g_state) return;
  g_state = new State;  // never deleted: see recorder_state.h
  detail::g_phase = &g_state->phase;
  g_state->config = config;
  g_state->pid = getpid();
  if (!config.enabled) {
    g_state->phase.store(static_cast<int>(Phase::kDisabled));
    if (!config.error.empty()) recorder_disable_quietly(config.error);
    return;
  }
  // A bad GPULEAK_PY_* value is a bad setting like any other: tracking off, one line.
  std::string py_error = python_stacks_configure();
  if (!py_error.empty()) {
    recorder_disable_quietly(py_error);
    return;
  }
  g_state->stacks.init(own_begin, own_end, config.prefer_libgcc);
}

void recorder_set_probe(const DriverProbe &probe) {
  if (g_state) g_state->probe = probe;
}

uint16_t runtime_label_swap(uint16_t api) {
  uint16_t old = t_runtime_api;
  t_runtime_api = api;
  return old;
}

namespace detail {

// An allocation that failed for lack of memory: its record and the OOM snapshot, written to the
// file at once.
__attribute__((noinline)) void record_oom(State *s, const format::MemoryRecord &r, Counted counted) {
  append_memory_record(s, r, counted);
  write_oom(s, r);
}

// Before the capture runs: start it, record, and write this first record to the file at once
// (once per process), so that a program killed a moment after its first allocation still leaves
// that allocation and its call site behind. Kept off the hot path.
__attribute__((noinline)) void record_first_alloc(State *s, const CallFacts &f, Space space) {
  bool started = false;
  if (!ensure_running(s, f.result, &started)) return;
  if (s->config.self_time)
    hot::alloc_body<true>(s, f, space);
  else
    hot::alloc_body<false>(s, f, space);
  if (started && f.result != kOutOfMemory) writer_flush_now(s);  // (an OOM record flushed already)
}

// GPULEAK_SELF_TIME's variants of the hot path (hot_path.h), out of line.
__attribute__((noinline)) void record_alloc_timed(State *s, const CallFacts &f, Space space) {
  hot::alloc_body<true>(s, f, space);
}
__attribute__((noinline)) PendingFree begin_free_timed(State *s) { return hot::begin_free_body<true>(s); }
__attribute__((noinline)) void end_free_timed(State *s, PendingFree p, const CallFacts &f, Space space) {
  hot::end_free_body<true>(s, p, f, space);
}

}  // namespace detail

// For callers outside the hooks (the C API, tests): the same inline bodies.
void record_alloc(const CallFacts &f, Space space) { hot::record_alloc(f, space); }
PendingFree begin_free() { return hot::begin_free(); }
void end_free(const PendingFree &p, const CallFacts &f, Space space) { hot::end_free(p, f, space); }

void record_event(const CallFacts &f) {
  State *s = g_state;
  if (phase(s) != Phase::kRunning) return;
  const hot::RecordTime t = hot::record_time(f, true);
  const uint32_t stack_id = hot::capture_stack(s);
  hot::emit(s, thread_buffer(s), Counted::kNone,
            // (no space: an event ends nothing at an address; a context reset ends its device's)
            [&](format::MemoryRecord &r) { hot::fill_record(r, f, t, f.device, stack_id, 0, 0); });
}

uint32_t intern_string(State *s, const char *text, size_t length) {
  if (!text || !length) return 0;
  if (length > 4096) length = 4096;  // an NVTX message is a label, not a payload
  bool is_new = false;
  uint32_t id = s->strings.intern(text, length, &is_new);
  if (is_new) {
    format::StringRecord r{id, static_cast<uint32_t>(length)};
    append_record(s, format::RecordType::kString, &r, sizeof r, text, length);
  }
  return id;
}

namespace {
bool buffering(State *s) {
  Phase p = phase(s);
  return p == Phase::kIdle || p == Phase::kRunning;
}
}  // namespace

void record_nvtx(format::NvtxOp op, const char *message, size_t length, const char *domain, uint64_t range_id) {
  State *s = g_state;
  if (!s || !buffering(s) || detail::t_in_hook) return;
  detail::t_in_hook = true;
  format::NvtxRecord r{};
  r.ts_ns = in_thread_order(capture_now_ns());
  r.range_id = range_id;
  r.tid = hot::thread_id();
  r.message_id = intern_string(s, message, length);
  r.domain_id = domain ? intern_string(s, domain, strlen(domain)) : 0;
  r.op = static_cast<uint8_t>(op);
  append_record(s, format::RecordType::kNvtx, &r, sizeof r);
  detail::t_in_hook = false;
}

void record_marker(format::MarkerOp op, const char *label) {
  State *s = g_state;
  if (!s || !buffering(s) || detail::t_in_hook) return;
  detail::t_in_hook = true;
  format::MarkerRecord r{};
  r.ts_ns = in_thread_order(capture_now_ns());
  r.tid = hot::thread_id();
  r.label_id = label ? intern_string(s, label, strlen(label)) : 0;
  r.op = static_cast<uint8_t>(op);
  append_record(s, format::RecordType::kMarker, &r, sizeof r);
  detail::t_in_hook = false;
}

void record_loop(const format::LoopRecord &fixed, const char *file, const char *function) {
  State *s = g_state;
  if (!s || !buffering(s) || detail::t_in_hook) return;
  detail::t_in_hook = true;
  format::LoopRecord r = fixed;
  r.file_id = file ? intern_string(s, file, strnlen(file, 4096)) : 0;
  r.function_id = function ? intern_string(s, function, strnlen(function, 4096)) : 0;
  append_record(s, format::RecordType::kLoop, &r, sizeof r);
  detail::t_in_hook = false;
}

void record_loop_pass(uint32_t loop_id, format::LoopPassOp op, uint64_t task_id) {
  State *s = g_state;
  if (!s || !buffering(s) || detail::t_in_hook) return;
  detail::t_in_hook = true;
  format::LoopPassRecord r{};
  r.ts_ns = in_thread_order(capture_now_ns());
  r.task_id = task_id;
  r.tid = hot::thread_id();
  r.loop_id = loop_id;
  r.op = static_cast<uint8_t>(op);
  append_record(s, format::RecordType::kLoopPass, &r, sizeof r);
  detail::t_in_hook = false;
}

void record_observer(uint32_t method, const char *note) {
  State *s = g_state;
  if (!s || !buffering(s) || detail::t_in_hook) return;
  detail::t_in_hook = true;
  format::ObserverRecord r{};
  r.ts_ns = in_thread_order(capture_now_ns());
  r.method = method;
  r.length = note ? static_cast<uint32_t>(strnlen(note, 4096)) : 0;
  append_record(s, format::RecordType::kObserver, &r, sizeof r, note, r.length);
  detail::t_in_hook = false;
}

bool recorder_active() { return g_state && buffering(g_state); }
bool recorder_running() { return g_state && phase(g_state) == Phase::kRunning; }

void record_pool_tracker(int32_t framework, const char *description, bool attached) {
  State *s = g_state;
  if (!s || !buffering(s) || detail::t_in_hook) return;
  detail::t_in_hook = true;
  format::PoolTrackerRecord r{};
  r.ts_ns = in_thread_order(capture_now_ns());
  r.framework = framework;
  r.length = description ? static_cast<uint32_t>(strnlen(description, 4096)) : 0;
  append_record(s, attached ? format::RecordType::kPoolTracker : format::RecordType::kPoolMissing, &r, sizeof r,
                description, r.length);
  detail::t_in_hook = false;
}

uint32_t record_python_frames(const char *const *files, const char *const *functions, const int32_t *lines,
                              unsigned n) {
  State *s = g_state;
  if (!s || phase(s) != Phase::kRunning || !hook_enter()) return 0;
  const uint32_t id = s->py_stacks.intern_frames(s, files, functions, lines, n);
  hook_leave();
  return id;
}

bool record_sampled_block(format::Op op, format::Api api, int16_t device, uint64_t address, uint64_t size,
                          uint32_t py_stack_id) {
  State *s = g_state;
  if (!s || phase(s) != Phase::kRunning || address == 0 || !hook_enter()) return false;
  CallFacts f{};
  f.op = op;
  f.kind = format::Kind::kPoolBlock;
  f.api = api;
  f.address = address;
  f.device = device;
  if (op == format::Op::kAlloc) {
    f.size = size;
    f.timing = Timing::kEnd;
    const hot::RecordTime t = hot::record_time(f, false);
    const uint8_t space = hot::space_field(Space::kPoolBlock);
    hot::emit(s, thread_buffer(s), Counted::kAllocation,
              [&](format::MemoryRecord &r) { hot::fill_record(r, f, t, device, 0, py_stack_id, space); });
  } else {
    f.timing = Timing::kStart;
    f.start = clock_read();
    PendingFree pending = hot::begin_free();
    hot::end_free(pending, f, Space::kPoolBlock);
  }
  hook_leave();
  return true;
}

bool record_framework_oom(format::OomRecord o) {
  State *s = g_state;
  if (!s || phase(s) != Phase::kRunning || !hook_enter()) return false;
  o.ts_ns = in_thread_order(capture_now_ns());
  o.tid = hot::thread_id();
  o.py_stack_id = s->py_stacks.capture(s);
  o.stack_id = o.py_stack_id && !s->config.block_native_stacks ? 0 : hot::capture_stack(s, o.py_stack_id != 0);
  if (s->probe.mem_info && o.device >= 0) s->probe.mem_info(o.device, &o.free_bytes, &o.total_bytes);
  append_record(s, format::RecordType::kOom, &o, sizeof o);
  writer_flush_now(s);
  hook_leave();
  return true;
}

void record_retention(uint8_t event, uint64_t address, uint64_t size, const char *text) {
  State *s = g_state;
  if (!s || !buffering(s) || detail::t_in_hook) return;
  detail::t_in_hook = true;
  format::RetentionRecord r{};
  r.ts_ns = in_thread_order(capture_now_ns());
  r.address = address;
  r.size = size;
  r.tid = hot::thread_id();
  r.length = text ? static_cast<uint32_t>(strnlen(text, format::kMaxRetentionText)) : 0;
  r.event = event;
  append_record(s, format::RecordType::kRetention, &r, sizeof r, text, r.length);
  detail::t_in_hook = false;
}

namespace {
// A bad setting's line, said at the first CUDA use (recorder_note_cuda_use). Never freed.
std::atomic<std::string *> g_pending_line{nullptr};
}  // namespace

void recorder_disable_quietly(const std::string &why) {
  if (g_state) g_state->phase.store(static_cast<int>(Phase::kDisabled));
  std::string *line = new std::string(why);
  std::string *none = nullptr;
  if (!g_pending_line.compare_exchange_strong(none, line)) delete line;  // the first one is said
}

void recorder_note_cuda_use() {
  if (!g_pending_line.load(std::memory_order_relaxed)) return;
  if (std::string *line = g_pending_line.exchange(nullptr))
    Line().text("gpuleak: ").text(line->c_str()).text("; tracking is off, the program continues unprofiled").emit();
}

void recorder_disable(const std::string &why) {
  State *s = g_state;
  if (!s) return;
  int prev = s->phase.exchange(static_cast<int>(Phase::kDisabled));
  if (prev == static_cast<int>(Phase::kDisabled)) return;
  Line().text("gpuleak: ").text(why.c_str()).text("; tracking is off, the program continues unprofiled").emit();
  if (prev == static_cast<int>(Phase::kRunning) && s->drain.fd >= 0 && still_same_file(s->drain.fd, s->drain.fd_id)) {
    const format::RecordHeader h = format::record_header(format::RecordType::kDisabled, why.size());
    if (write(s->drain.fd, &h, sizeof h) == sizeof h) (void)!write(s->drain.fd, why.data(), why.size());
  }
}

bool inside_hook() { return detail::t_in_hook; }

void count_uncaptured(const char *function) {
  if (!g_state) return;
  if (g_state->counters.uncaptured.fetch_add(1, std::memory_order_relaxed) == 0)
    g_state->counters.first_uncaptured.store(function, std::memory_order_relaxed);
}

void set_cupti_state(format::CuptiState state) {
  if (g_state) g_state->counters.cupti_state.store(static_cast<uint32_t>(state), std::memory_order_relaxed);
}

const Config *recorder_config() { return g_state ? &g_state->config : nullptr; }

void recorder_after_fork_child() {
  capture_clock_after_fork();
  detail::t_tid = 0;  // the thread that forked is the child's only thread, with an id of its own
  State *old = g_state;
  if (!old) return;
  // The parent's writer thread, buffers and tables do not belong to this process. Start over
  // (leaking the parent's copy: its locks may have been held by threads that no longer exist).
  g_state = nullptr;
  detail::g_phase = nullptr;
  Config config = old->config;
  g_state = new State;
  g_state->config = config;
  g_state->pid = getpid();
  g_state->stacks = old->stacks;
  g_state->probe = old->probe;
  if (!config.enabled) g_state->phase.store(static_cast<int>(Phase::kDisabled));
  detail::g_phase = &g_state->phase;
}

}  // namespace gpuleak::core
