// The recorder: the small internal interface every hook hands its facts to (STYLE.md lesson 2).
// Hooks stay thin: guard, call the real function, then one call here. It is tested through the
// real shim on the fake CUDA (tests/integration/capture_test.cpp, no GPU needed) and its parts by
// unit tests (tests/unit/live_table_test.cpp, thread_buffer_test.cpp, clock_test.cpp).
//
// Lifecycle: nothing is created until the first successful (or out-of-memory) allocation, so a
// process that never uses CUDA writes no file. Then the writer thread opens
// $GPULEAK_OUT/<program>.<pid>[.rank<R>].gpuleak and drains the per-thread buffers into it.
// shutdown() (atexit, _exit, fatal signals) drains everything and writes the final statistics.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/clock.h"
#include "core/config.h"
#include "core/tls.h"
#include "format/address_space.h"
#include "format/capture_format.h"
#include "format/cupti_state.h"

namespace gpuleak::core {

// CUDA queries the recorder may make outside the hot path (the writer thread, an OOM), provided by
// the shim, which knows where the real driver is. Any of them may be null.
struct DriverProbe {
  bool (*mem_info)(int device, uint64_t *free_bytes, uint64_t *total_bytes) = nullptr;
  int (*device_count)() = nullptr;
  bool (*device_info)(int device, char *name, size_t name_size, uint64_t *total_bytes) = nullptr;
  int (*driver_version)() = nullptr;
  bool (*pci_bus_id)(int device, char *buf, size_t size) = nullptr;  // cuDeviceGetPCIBusId
};

// When a hook reads the clock. Synchronous calls are read at both ends: their durations feed the
// serialization advice. A stream-ordered call (cuMemAllocAsync, cuMemFreeAsync, FromPool, _ptsz)
// only queues work, and one reading is enough: an allocation's when it returned, a
// free's when it was entered (before the address can be handed out again). Its record says so
// with kFlagUntimed.
enum class Timing : uint8_t { kCall, kEnd, kStart };

// What a hook knows about one call. Address and size as the API reports them.
struct CallFacts {
  format::Op op;
  format::Kind kind;
  format::Api api;
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t stream = 0;
  uint64_t aux = 0;
  int32_t result = 0;
  int16_t device = kQueryDevice;  // kQueryDevice: the hook asks the driver (shim/hook.h)
  uint16_t flags = 0;
  ClockReading start;  // when the hook was entered (clock.h); not read with Timing::kEnd
  Timing timing = Timing::kCall;

  static constexpr int16_t kQueryDevice = -2;
};

// Configures the recorder once, from the preload constructor. Reads nothing else from the
// environment afterwards. `own_begin/own_end` bound gpuleak's code (skipped in stacks).
void recorder_init(const Config &config, uintptr_t own_begin, uintptr_t own_end);
void recorder_set_probe(const DriverProbe &probe);

// The space a hook knows its address is in: a VMM handle may equal a device pointer value.
using Space = format::AddressSpace;

// Re-entry guard. hook_enter() is false when tracking is off or this thread is already inside a
// hook (our own work, or a driver entry point called by another one): the hook must then only
// forward the call, so that nothing is counted twice. Inline: every hooked call runs it.
namespace detail {
extern std::atomic<int> *g_phase;  // the recorder's phase (recorder_state.h); null before init
extern GPULEAK_SHARED_TLS bool t_in_hook;
}  // namespace detail
inline bool hook_enter() {
  std::atomic<int> *phase = detail::g_phase;
  if (!phase || detail::t_in_hook) return false;
  if (phase->load(std::memory_order_acquire) > 1) return false;  // neither idle (0) nor running (1)
  detail::t_in_hook = true;
  return true;
}
inline void hook_leave() { detail::t_in_hook = false; }

// Records an allocation-type call (Alloc, Reserve, Map, PoolCreate) after the real call returned.
// The hooks use the same body inline (core/hot_path.h, hot::record_alloc, hot::begin_free,
// hot::end_free); these out-of-line definitions are for the C API and the tests.
void record_alloc(const CallFacts &facts, Space space);

// A free is recorded in two halves around the real call. Its time is the hook's entry (`facts.start`),
// read *before* the memory is released, because the driver can hand the same address to another
// thread the moment it is free: sorted by time, the free then always comes before that re-use.
// begin_free (before the real call) says whether the capture runs and finds the thread's ring;
// end_free appends the record, with the call's result. `space`: where the address lives (a VMM
// handle may equal a device pointer), which the reader pairs the free in.
struct ThreadBuffer;
struct PendingFree {
  ThreadBuffer *buffer = nullptr;
  bool active = false;
};
PendingFree begin_free();
void end_free(const PendingFree &pending, const CallFacts &facts, Space space);

// Pool trims, pool destruction and context resets: no address of their own.
void record_event(const CallFacts &facts);

// Runtime label: the cudart function the program called, for the driver hooks underneath.
uint16_t runtime_label_swap(uint16_t api);

// NVTX ranges and the gpuleak_* C API. Buffered even before the first allocation (iteration
// marks come first), written only if the process turns out to use CUDA.
void record_nvtx(format::NvtxOp op, const char *message, size_t length, const char *domain, uint64_t range_id);
void record_marker(format::MarkerOp op, const char *label);
bool recorder_active();
// The observed Python loops (capture format 1.5, LoopRecord/LoopPassRecord/ObserverRecord),
// buffered like the marks: `file` and `function` are untrusted text, interned as strings.
void record_loop(const format::LoopRecord &fixed, const char *file, const char *function);
void record_loop_pass(uint32_t loop_id, format::LoopPassOp op, uint64_t task_id);
void record_observer(uint32_t method, const char *note);
// Successful allocations recorded so far in this process, all threads (approximate: threads bump
// it without a read-modify-write, so two at once may count one). The observer compares two
// readings: "did anything allocate in between" is all it asks.
namespace detail {
extern std::atomic<uint64_t> g_allocation_clock;
}  // namespace detail
inline uint64_t allocation_clock() { return detail::g_allocation_clock.load(std::memory_order_relaxed); }
// The capture runs (not idle before the first allocation, not off).
bool recorder_running();
// A framework allocator's tracker attached (gpuleak_api_pool_attached): a PoolTrackerRecord,
// buffered like a mark. `description` is untrusted text, cut at 4096 bytes. With `attached` false
// (gpuleak_api_pool_missing, format 1.8) it is why the tracker could not attach.
void record_pool_tracker(int32_t framework, const char *description, bool attached = true);
// A retention path (gpuleak_api_retention, format 1.7): buffered like a mark; `text` is untrusted,
// cut at format::kMaxRetentionText bytes.
void record_retention(uint8_t event, uint64_t address, uint64_t size, const char *text);

// gpuleak's Python side for the frameworks whose objects it samples (gpuleak._jax): a Python stack
// given as text (PythonStacks::intern_frames), 0 when the capture does not run; an object of
// framework allocator `api` first seen live (kAlloc) or first seen gone (kFree) now, recorded as
// a pool block (Kind::kPoolBlock) with that Python stack and no native one; and a framework's own
// out-of-memory (no CUDA call failed), with the calling thread's Python frames, written at once.
// Each is false (0) when tracking is off, not running, or the call is made inside a hook.
uint32_t record_python_frames(const char *const *files, const char *const *functions, const int32_t *lines, unsigned n);
bool record_sampled_block(format::Op op, format::Api api, int16_t device, uint64_t address, uint64_t size,
                          uint32_t py_stack_id);
bool record_framework_oom(format::OomRecord facts);

// Drains and closes the capture, prints the one-line summary and (under plain LD_PRELOAD) runs
// `gpuleak report` on it. Returns the exit status the process should end with instead of its
// own when GPULEAK_EXITCODE is set and the report found a leak, else -1. Safe to call twice.
int recorder_shutdown(const char *why);
// The same for _exit and _Exit, which a signal handler may call while the interrupted thread holds
// malloc's lock: async-signal-safe (flush with write(2), final Stats, close, summary, prepared
// report). Returns what recorder_shutdown does.
int recorder_exit_now();
// From a fatal signal handler: drain what is buffered with write(2) only, no locks, no malloc.
void recorder_flush_from_signal();
// Around exec (async-signal-safe, exec may be called from a handler or a vfork child): flush what
// is buffered and hold the writer off, so that the new image replaces a complete capture. When
// exec fails, recorder_after_failed_exec lets the capture go on. True when a flush was made.
bool recorder_before_exec();
void recorder_after_failed_exec();
// In the child after fork(): forget the parent's capture; start afresh if the child uses CUDA.
void recorder_after_fork_child();
// Tracking off for good, with one stderr line (internal failure) where stderr is still safe to
// write to (signal_safe.h).
void recorder_disable(const std::string &why);
// A bad setting: tracking off, and the line is kept until recorder_note_cuda_use(), so that the
// processes under the preload that never touch CUDA (/bin/true, ls) print nothing.
void recorder_disable_quietly(const std::string &why);
// The program reached CUDA through us (a lookup or call of a driver entry point): say a kept
// bad-setting line, once.
void recorder_note_cuda_use();

// CUPTI cross-check (shim/cupti_bridge.cpp): is this thread inside one of our hooks, and a call
// CUPTI saw that no hook did, and what became of CUPTI (format::StatsRecord::cupti_state).
bool inside_hook();
void count_uncaptured(const char *function);
void set_cupti_state(format::CuptiState state);

// GPU work from CUPTI's Activity API (shim/cupti_activity.cpp), called on CUPTI's thread. `name`
// (a kernel name: untrusted program text) and `api` (the launching call) are interned into
// name_id/api_name_id; either may be null. Past GPULEAK_ACTIVITY_MB the record is not written and
// false is returned (the caller counts it into a kDropped record, which `force` always writes).
bool record_gpu_activity(const format::GpuActivityRecord &record, const char *name, const char *api,
                         bool force = false);

// For `gpuleak_active()`.
const Config *recorder_config();  // null before recorder_init

}  // namespace gpuleak::core
