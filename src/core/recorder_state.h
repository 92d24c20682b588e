// The recorder's process-wide state, shared by the hot path (recorder.cpp) and the writer thread
// (capture_writer.cpp). Allocated once and never destroyed: hooks may still run during and after
// exit (late frees from static destructors), and must find valid memory, not freed tables.
#pragma once

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "core/capture_aggregate.h"
#include "core/capture_budget.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/interner.h"
#include "core/live_tally.h"
#include "core/module_map.h"
#include "core/nvml_usage.h"
#include "core/python_stack.h"
#include "core/recorder.h"
#include "core/report_spawn.h"
#include "core/self_time.h"
#include "core/signal_safe.h"
#include "core/stack_capture.h"
#include "core/thread_buffer.h"
#include "core/tls.h"

namespace gpuleak::core {

enum class Phase : int { kIdle = 0, kRunning = 1, kStopped = 2, kDisabled = 3 };

// MemoryRecord::ring in a thread's ring (0 in a file): the record's ts_ns and duration_ns hold TSC
// ticks, for the drain to convert (drain_clock.cpp).
constexpr uint8_t kRingTicks = 0x80;
// What an ordinary drain leaves for the next one: the records of the last moments (clock.h's TSC
// may order two cores' readings this far apart), so that no free goes out ahead of its allocation
// (drain_clock.cpp).
constexpr uint64_t kSettleMarginNs = 10000;

// The one part of the recorder that pairs frees with allocations, and why it stays: the at-exit
// line ("live at exit: 5 allocations, 5.0 MiB on device (peak 5.0 MiB)") is printed by the process
// itself, also where no analysis follows it (_exit and fatal signals, whose handlers may not start
// one safely before the file is whole, GPULEAK_REPORT_TIMEOUT=0, no CLI found), and the NVML
// samples' tracked_live_bytes must be read at the moment NVML is, while the program runs. Both
// need live bytes per device now, in the process. The tally (live_tally.h) keeps them from copies
// of the records the writer drains, off the hot path, on one thread at a time (the drain claim):
// hooks publish nothing for it, and the capture's own frees are paired by the reader alone
// (format/free_pairing.h). Its table is format's PairingTable, and what a record does to the live
// set is format::pair_role: one rule for both.

// The parts of the recorder's state, each by who writes it.

// Written by whoever holds the drain claim (`draining`): the writer thread, the flush of an OOM
// or of the first allocation, exit, exec, a fatal signal. Each drain reads the rings, counts the
// records into the tally and writes the file.
struct DrainSide {
  std::atomic<bool> draining{false};  // the claim: one drainer at a time
  std::atomic<bool> halted{false};    // _exit or exec owns the capture now: the writer stops
  int fd = -1;
  FileId fd_id;                      // what `fd` was when we opened it (still_own_fd)
  std::atomic<bool> fd_lost{false};  // the program closed or replaced it: tracking stops
  std::string path;
  uint64_t bytes_written = 0;
  std::string batch;  // one drain's bytes, reused
  LiveTally tally;    // live and peak bytes per device, from the drained records (live_tally.h)
  // The capture budget (capture_budget.cpp).
  CaptureBudget budget;
  CaptureAggregator aggregator;
  std::string folded;  // the aggregator's output for one batch (reused)
  // Set once writing has stopped for good (the budget even aggregated, a file system nearly full,
  // a write that failed): drains still empty the rings, and nothing more goes to the file.
  std::atomic<bool> write_stopped{false};
};

// The writer thread's own (capture_writer.cpp), and its wake-up, which producers ask for.
struct WriterThread {
  std::once_flag started;
  pthread_t thread{};
  bool running = false;
  std::mutex wake_lock;
  std::condition_variable wake;
  bool wake_requested = false;
  bool stop_requested = false;
  ReportCommand report;  // the at-exit `gpuleak report`, prepared at capture start
};

// Written once by the writer thread at start (write_devices); read by NVML's callers at exit and by
// the sampler. PCI bus ids, so that NVML is asked about the same devices.
struct DeviceFacts {
  char pci_bus_ids[LiveTally::kMaxDevices][32] = {};
  int count = 0;
  std::atomic<bool> known{false};    // the bus ids are filled
  std::atomic<bool> written{false};  // the Device records are in the file (writer_start waits for them)
};

// The NVML sampler thread (device_usage.cpp), started by the writer thread.
struct SamplerThread {
  pthread_t thread{};
  bool running = false;
  std::mutex lock;
  std::condition_variable wake;
  bool stop = false;
};

// Any thread, relaxed atomics, read for statistics only. Events, allocations and frees are counted
// per thread (ThreadBuffer) and summed by counter_totals().
struct Counters {
  std::atomic<uint64_t> dropped{0};
  std::atomic<uint64_t> uncaptured{0};
  std::atomic<uint32_t> cupti_state{0};
  std::atomic<const char *> first_uncaptured{nullptr};  // CUPTI's static function name
  std::atomic<bool> summary_printed{false};
  std::atomic<uint64_t> activity_bytes{0};  // GPU activity records appended (GPULEAK_ACTIVITY_MB)
};

// Grouped by cache line where the hot path meets the writer: the hooks read config, probe,
// stacks, py_stacks and phase on every call, and those lines must not be the ones the writer
// writes on every drain.
struct State {
  // Set before the capture runs (recorder_init, recorder_set_probe); read by every hook.
  Config config;
  DriverProbe probe;
  StackCapture stacks;
  // Written by the hooks (what they intern, their buffers, their time).
  PythonStacks py_stacks;  // Python call sites (python_stack.h), interned in stack_ids and strings
  alignas(64) StackInterner stack_ids;
  StringInterner strings;
  BufferRegistry buffers;
  ModuleMap modules;
  alignas(64) SelfTime self_time;  // GPULEAK_SELF_TIME

  alignas(64) std::atomic<int> phase{static_cast<int>(Phase::kIdle)};
  pid_t pid = 0;
  // Written by producers (request_drain) and the writer.
  alignas(64) std::atomic<bool> drain_requested{false};  // a producer asked; cleared by the writer before it drains

  alignas(64) DrainSide drain;
  alignas(64) WriterThread writer;
  DeviceFacts devices;
  SamplerThread sampler;
  alignas(64) Counters counters;
};

State *state();

// The capture budget's side of a drain (capture_budget.cpp), under the drain claim: `batch` is
// what the rings gave; on return it is what may be written (raw, or folded by the aggregator,
// cut where the budget ends). False when nothing more may be written (drain.write_stopped is set).
bool budget_admit(State *s, std::string *batch);
// A write of the capture failed: cut the file back to its last whole record (a full file system
// gets its bytes back) and stop writing, with one line on stderr.
void budget_write_failed(State *s, int error);
// At capture start: the budget in force (GPULEAK_MAX_CAPTURE, or the default from the file
// system's free space).
void budget_start(State *s);
// At the end: the aggregator's last window, if any, into *tail.
void budget_finish(State *s, std::string *tail);

// Writer-thread side (capture_writer.cpp).
bool writer_start(State *s, std::string *error);
void writer_wake(State *s);
void request_drain(State *s);     // wakes the writer unless already asked since its last drain
void writer_flush_now(State *s);  // drain synchronously on the calling thread (OOM)
void writer_stop(State *s);
// write(2) until done or failed (EINTR retried). Async-signal-safe.
bool write_all(int fd, const void *data, size_t n);
// Claims the right to drain (the writer thread, an OOM flush, exec, exit or a signal handler):
// false after `spins` tries. Release with `s->drain.draining.store(false)`. Async-signal-safe.
bool claim(State *s, int spins);
// The calling thread's buffer, made on its first record (null when that failed).
namespace detail {
extern GPULEAK_SHARED_TLS ThreadBuffer *t_buffer;
extern GPULEAK_SHARED_TLS State *t_buffer_owner;
}  // namespace detail
ThreadBuffer *new_thread_buffer(State *s);
inline ThreadBuffer *thread_buffer(State *s) {
  if (__builtin_expect(detail::t_buffer && detail::t_buffer_owner == s, 1)) return detail::t_buffer;
  return new_thread_buffer(s);
}

// drain_clock.cpp. Before a drain hands the buffers' bytes on: tick readings to nanoseconds and
// each thread's times in order; each buffer's `ready` says how far its bytes may leave. `forced`:
// everything up to the heads (else up to a moment just past, kSettleMarginNs). Drain claim held.
void settle_buffers(State *s, bool forced);
// The same in a signal handler (async-signal-safe: no malloc), everything up to the heads, each
// memory record counted into s->tally at once (in its thread's order, the table not grown).
void settle_buffers_from_signal(State *s);

// capture_writer_signal.cpp. Async-signal-safe: flush what the thread buffers hold, keeping the drain claim.
void writer_flush_from_signal(State *s);
// _exit and _Exit: flush, write the final Stats record, close, and read the event counters; false
// when the writer held the file too long to wait for (nothing written, no counters).
bool writer_finish_from_signal(State *s, BufferCounters *totals);
// exec: flush and hold the writer off; if exec fails, writer_resume_after_exec lets it go on.
bool writer_flush_before_exec(State *s);
void writer_resume_after_exec(State *s);
// Appends one record to the calling thread's buffer, waiting briefly for the writer when full.
bool append_record(State *s, format::RecordType type, const void *payload, size_t n, const void *tail = nullptr,
                   size_t tail_n = 0);
// `claimed`: the caller holds the drain claim (no lock is taken: async-signal-safe).
format::StatsRecord make_stats(State *s, bool final_record, bool claimed = false);
// The id of `text` (at most 4096 bytes kept), writing its StringRecord the first time; 0 for "".
uint32_t intern_string(State *s, const char *text, size_t length);

// A memory record, counted in the calling thread's counters.
enum class Counted : uint8_t { kNone, kAllocation, kFree };
bool append_memory_record(State *s, const format::MemoryRecord &r, Counted counted);
inline BufferCounters counter_totals(const State *s) { return s->buffers.totals(); }

// NVML's view of each device this process used, as DeviceUsage records (nvml_usage.h); called at
// an ordinary exit (not _exit), before writer_stop. Does nothing when GPULEAK_NVML=0.
void record_device_usage(State *s);

// NVML samples while the capture runs (GPULEAK_NVML_INTERVAL_MS), on a thread of their own: NVML
// may take a second to initialize and must never hold up the writer's drains. Called on every
// writer tick, usage_sampler_start starts the sampler once the program has allocated on a device
// (nothing with GPULEAK_NVML=0 or GPULEAK_NVML_INTERVAL_MS=0); usage_sampler_stop ends it (before
// the writer's last drain, which then takes its last records). Each sample is one DeviceUsage
// record (kUsageSample) per device this process allocated on.
void usage_sampler_start(State *s);
void usage_sampler_stop(State *s);

}  // namespace gpuleak::core
