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
#include "core/device_tally.h"
#include "core/interner.h"
#include "core/live_table.h"
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

// A free under way on some thread, as the drain saw it (drain_settle.cpp): the table key of its
// address, its time less the margin, and the thread's buffer (whose own records never wait for it:
// the thread is inside the free).
struct FreeInFlight {
  uint64_t key;
  uint64_t since_ns;
  const ThreadBuffer *by;
};

// A memory record in a ring, for the drain's sort by time (drain_settle.cpp).
struct SettleRef {
  uint64_t ts;
  uint64_t at;  // its body's position in the ring
  ThreadBuffer *buffer;
};

enum class Phase : int { kIdle = 0, kRunning = 1, kStopped = 2, kDisabled = 3 };

// MemoryRecord.reserved in a thread's ring (never in a file): what the drain still has to do with
// a record the hot path left unfinished (drain_settle.cpp). Every memory record a hook appends
// carries kRingMark; the drain clears `reserved` before the record leaves the ring.
constexpr uint16_t kRingMark = 0x7400;
constexpr uint16_t kRingMarkMask = 0xff00;
constexpr uint16_t kRingTicks = 0x0080;     // ts_ns and duration_ns hold TSC ticks, not nanoseconds
constexpr uint16_t kRingFree = 0x0040;      // a free: size, kind and device come from the live table
constexpr uint16_t kRingInsert = 0x0020;    // an allocation the live table keeps (its free will look it up)
constexpr uint16_t kRingOnDevice = 0x0010;  // ... and it is device memory the program owns (LiveEntry)
constexpr uint16_t kRingSpace = 0x0007;     // the Space of its address
inline bool ring_marked(uint16_t reserved) { return (reserved & kRingMarkMask) == kRingMark; }

// The drain's order (issue #15 goal 3). The hot path no longer touches the live table: a free's
// record leaves the hook without its size, and the drain looks the address up. For that the
// drain applies records to the table in time order across threads, never ahead of a record that
// is not in a ring yet and must come first:
//  - an allocation's record is appended before its hook returns the address to the program, so
//    a free of it cannot be entered earlier; but the drain reads the rings one after another, and
//    could find the free in a ring it read last and miss the allocation in one it read first. So
//    the drain reads the clock before it reads any ring and stops every ring short of that
//    moment: whatever was appended after a ring was read was also entered after that reading.
//  - a free is entered (its time read) before the real free, and the driver may hand the address
//    to another thread whose allocation is appended before the free's record is. So the freeing
//    thread publishes the address (free_key) and its reading (free_since) before the real call
//    and clears the reading once its record is appended; the drain reads them before any ring and
//    stops a ring at an allocation of that address after that reading (or a context reset), which
//    waits for the free's record. Only that ring waits: a free that takes seconds (a synchronous
//    cuMemFree waiting for the device) holds no other thread's records.
// Both bounds lose a margin (kSettleMarginNs) for the TSC's reordering and the line's steps; what
// is held back goes with the next drain. Forced drains (the first allocation, an OOM, exit) skip
// the clock's cut but still hold back an allocation at the address of a free under way; only a
// free that begins between their look at the frees and their reading of the heads, with its
// address re-used and appended by another thread in that moment, can be ordered after the re-use
// (one misattributed free). Signal handlers take everything there is.
constexpr uint64_t kSettleMarginNs = 10000;
// A reading as free_since holds it: ticks or nanoseconds in the low bit (a reading is never 0).
inline uint64_t encode_free_since(ClockReading r) { return r.value << 1 | (r.ticks ? 1 : 0); }

// Grouped by cache line where the hot path meets the writer: the hooks read config, probe,
// stacks, py_stacks and phase on every call, and those lines must not be the ones the writer
// writes on every drain (the tables, the wake-up, the counters).
struct State {
  Config config;
  DriverProbe probe;
  StackCapture stacks;
  PythonStacks py_stacks;  // Python call sites (python_stack.h), interned in stack_ids and strings
  alignas(64) StackInterner stack_ids;
  StringInterner strings;
  LiveTable live;
  DeviceTally tally;  // live and peak bytes per device, from the drained records (device_tally.h)
  BufferRegistry buffers;
  ModuleMap modules;
  alignas(64) SelfTime self_time;  // GPULEAK_SELF_TIME

  alignas(64) std::atomic<int> phase{static_cast<int>(Phase::kIdle)};
  pid_t pid = 0;
  // Written by producers (request_drain) and the writer.
  alignas(64) std::atomic<bool> drain_requested{false};  // a producer asked; cleared by the writer before it drains

  // Writer side.
  alignas(64) std::once_flag started;
  pthread_t writer{};
  bool writer_running = false;
  std::mutex wake_lock;
  std::condition_variable wake;
  bool wake_requested = false;
  bool stop_requested = false;
  std::atomic<bool> draining{false};  // one drainer at a time: the writer or a signal handler
  std::atomic<bool> halted{false};    // _exit or exec owns the capture now: the writer stops
  int fd = -1;
  FileId fd_id;                      // what `fd` was when we opened it (still_own_fd)
  std::atomic<bool> fd_lost{false};  // the program closed or replaced it: tracking stops
  std::string path;
  ReportCommand report;  // the at-exit `gpuleak report`, prepared at capture start
  uint64_t bytes_written = 0;
  std::string batch;                    // the drainer's scratch, reused (only the holder of `draining` touches it)
  std::vector<SettleRef> settle_refs;   // the same: one drain's memory records in time order
  std::vector<size_t> settle_runs;      // the same: where each thread's records begin in settle_refs
  std::vector<FreeInFlight> in_flight;  // the same: the frees under way when the drain began
  // The capture budget (capture_budget.cpp): the drainer's alone, like the batch.
  CaptureBudget budget;
  CaptureAggregator aggregator;
  std::string folded;  // the aggregator's output for one batch (reused)
  // Set once writing has stopped for good (the budget even aggregated, a file system nearly full,
  // a write that failed): drains still empty the rings, and nothing more goes to the file.
  std::atomic<bool> write_stopped{false};

  // Counters (relaxed atomics: read for statistics only). Events, allocations and frees are
  // counted per thread (ThreadBuffer) and summed by counter_totals().
  std::atomic<uint64_t> dropped{0};
  std::atomic<uint64_t> uncaptured{0};
  std::atomic<uint32_t> cupti_state{0};
  std::atomic<const char *> first_uncaptured{nullptr};  // CUPTI's static function name
  std::atomic<bool> summary_printed{false};
  std::atomic<uint64_t> activity_bytes{0};  // GPU activity records appended (GPULEAK_ACTIVITY_MB)

  // PCI bus ids of the CUDA devices, read by the writer thread at start (write_devices) so that
  // NVML can be asked about the same devices at exit; devices_known says they are filled.
  char pci_bus_ids[LiveTable::kMaxDevices][32] = {};
  int device_count = 0;
  std::atomic<bool> devices_known{false};
  std::atomic<bool> devices_written{false};  // the Device records are in the file (writer_start waits for them)

  // The NVML sampler thread (device_usage.cpp).
  pthread_t sampler{};
  bool sampler_running = false;  // started (writer thread only, then writer_stop)
  std::mutex sampler_lock;
  std::condition_variable sampler_wake;
  bool sampler_stop = false;
};

State *state();

// The capture budget's side of a drain (capture_budget.cpp), under the drain claim: `batch` is
// what the rings gave; on return it is what may be written (raw, or folded by the aggregator,
// cut where the budget ends). False when nothing more may be written (write_stopped is set).
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
// false after `spins` tries. Release with `s->draining.store(false)`. Async-signal-safe.
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

// drain_settle.cpp. Before a drain hands the buffers' bytes on: tick readings to nanoseconds, each
// thread's times in order, the live table fed in time order (frees get their sizes) and the
// memory records counted into s->tally; each buffer's `ready` says how far its bytes may leave.
// `forced`: everything up to the heads (else up to the drain's order above). Drain claim held.
void settle_buffers(State *s, bool forced);
// The same in a signal handler (async-signal-safe: no malloc; each thread's records in its own order,
// the table not grown, the tally counting each record at once), everything up to the heads.
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
