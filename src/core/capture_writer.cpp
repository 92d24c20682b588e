// The writer side of the recorder: opens the capture, drains every thread's buffer into it from
// gpuleak's own thread, and closes it at exit. Hooks never do I/O; only an out-of-memory record
// and the process's first allocation are flushed synchronously (writer_flush_now), because the
// process may die right after them. The signal-safe ends (exit, exec, fatal signals) are in
// capture_writer_signal.cpp.
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>

#include "core/clock.h"
#include "core/recorder_state.h"
#include "core/run_facts.h"
#include "core/signal_safe.h"
#include "core/tls.h"
#include "format/record_framing.h"
#include "log/log.h"

#ifndef GPULEAK_VERSION
#define GPULEAK_VERSION "0.0.0"
#endif

namespace gpuleak::core {

namespace {

pthread_key_t g_exit_key;
pthread_once_t g_exit_key_once = PTHREAD_ONCE_INIT;

// Thread exit: the buffer may still hold records; the writer frees it once drained.
void on_thread_exit(void *buffer) {
  static_cast<ThreadBuffer *>(buffer)->orphaned.store(true, std::memory_order_release);
}
void make_exit_key() { pthread_key_create(&g_exit_key, on_thread_exit); }

std::string run_info_record(const RunFacts &f, const StackCapture &stacks, const Config &c) {
  std::string command;
  for (size_t i = 0; i < f.command.size(); ++i) {
    if (i) command.push_back('\0');
    command += f.command[i];
  }
  const std::string fields[] = {f.program,  command, f.host, GPULEAK_VERSION, f.allocator_env, stacks.unwinder_name(),
                                c.run_token};
  format::RunInfoRecord r{};
  r.pid = static_cast<uint32_t>(getpid());
  r.ppid = static_cast<uint32_t>(getppid());
  r.rank = f.rank;
  r.stack_depth = static_cast<uint16_t>(c.stack_depth);
  r.string_count = static_cast<uint16_t>(format::RunInfoField::kCount);
  std::string strings;
  for (const std::string &s : fields) {
    uint32_t len = static_cast<uint32_t>(s.size());
    strings.append(reinterpret_cast<const char *>(&len), sizeof len);
    strings += s;
  }
  std::string out;
  format::append_record(&out, format::RecordType::kRunInfo, &r, sizeof r, strings.data(), strings.size());
  return out;
}

// Whether the capture's descriptor still refers to the file we created: the program may have
// closed it and opened its own file under the same number, or dup2'ed over it. Checked once per
// flush by whoever holds the drain claim, never per record. When it is not ours any more, it is
// forgotten (not closed: the number is the program's now) and tracking stops.
bool still_own_fd(State *s) {
  if (s->drain.fd < 0) return false;
  if (still_same_file(s->drain.fd, s->drain.fd_id)) return true;
  s->drain.fd = -1;
  s->drain.fd_lost.store(true, std::memory_order_release);
  return false;
}

void say_fd_lost(State *s) {
  if (s->drain.fd_lost.load(std::memory_order_acquire))
    recorder_disable("the program closed or replaced the capture file's descriptor (" + s->drain.path + ")");
}

// `forced`: every record there is (the first allocation, an OOM, exit), else those up to a moment
// just past (drain_clock.cpp). The tally counts the batch's memory records; the budget
// (capture_budget.cpp) decides what of it goes out: raw, aggregated, or, once writing has stopped,
// nothing.
void drain(State *s, bool forced) {
  if (s->drain.halted.load(std::memory_order_acquire) || !claim(s, 1 << 20)) return;
  std::string &batch = s->drain.batch;
  batch.clear();
  s->modules.append_changes(&batch);
  settle_buffers(s, forced);
  for (ThreadBuffer *b = s->buffers.first(); b; b = b->next)
    buffer_drain_to(b, b->ready,
                    [&](const uint8_t *p, size_t n) { batch.append(reinterpret_cast<const char *>(p), n); });
  s->drain.tally.add_drained(reinterpret_cast<const uint8_t *>(batch.data()), batch.size());
  budget_admit(s, &batch);
  const size_t n = batch.size();
  bool owned = n == 0 || still_own_fd(s);
  int error = 0;
  bool ok = !owned || n == 0 || write_all(s->drain.fd, batch.data(), n);
  if (!ok) error = errno;
  if (ok && owned) s->drain.bytes_written += n;
  if (!ok) budget_write_failed(s, error);
  s->buffers.reap();  // under the claim: a signal-time flush walks the buffer list without locks
  s->drain.draining.store(false, std::memory_order_release);
  if (!owned) say_fd_lost(s);
}

bool write_direct(State *s, const std::string &bytes) {
  if (bytes.empty() || s->drain.fd < 0 || s->drain.halted.load(std::memory_order_acquire) ||
      s->drain.write_stopped.load(std::memory_order_relaxed) || !claim(s, 1 << 20))
    return false;
  bool owned = still_own_fd(s);
  bool ok = owned && write_all(s->drain.fd, bytes.data(), bytes.size());
  const int error = errno;
  if (ok) s->drain.bytes_written += bytes.size();
  if (owned && !ok) budget_write_failed(s, error);
  s->drain.draining.store(false, std::memory_order_release);
  if (!owned) say_fd_lost(s);
  return ok;
}

// Device names and sizes, and the driver version: CUDA queries, so made here on gpuleak's own
// thread, never in a hook. The RunInfo is written again with the driver version (the last wins).
void write_devices(State *s, const RunFacts &facts) {
  std::string batch;
  if (s->probe.driver_version) {
    std::string again = run_info_record(facts, s->stacks, s->config);
    format::RunInfoRecord r;
    std::memcpy(&r, again.data() + sizeof(format::RecordHeader), sizeof r);
    r.driver_version = s->probe.driver_version();
    std::memcpy(again.data() + sizeof(format::RecordHeader), &r, sizeof r);
    batch += again;
  }
  int count = s->probe.device_count && s->probe.device_info ? s->probe.device_count() : 0;
  s->devices.count = count;
  for (int d = 0; d < count && d < LiveTally::kMaxDevices; ++d)
    if (!s->probe.pci_bus_id || !s->probe.pci_bus_id(d, s->devices.pci_bus_ids[d], sizeof s->devices.pci_bus_ids[d]))
      s->devices.pci_bus_ids[d][0] = '\0';
  s->devices.known.store(true, std::memory_order_release);
  for (int d = 0; d < count && d < LiveTally::kMaxDevices; ++d) {
    char name[256] = {0};
    format::DeviceRecord r{};
    r.index = d;
    if (!s->probe.device_info(d, name, sizeof name, &r.total_bytes)) continue;
    r.name_length = static_cast<uint32_t>(strnlen(name, sizeof name));
    format::append_record(&batch, format::RecordType::kDevice, &r, sizeof r, name, r.name_length);
  }
  write_direct(s, batch);
  s->devices.written.store(true, std::memory_order_release);
}

// Read once in writer_start, reused by the writer thread. Heap-allocated and never freed: a global
// with a destructor would be destroyed at exit while the writer may still read it.
RunFacts *g_facts = nullptr;

void *writer_main(void *arg) {
  auto *s = static_cast<State *>(arg);
  write_devices(s, *g_facts);
  uint64_t last_stats = monotonic_ns();
  for (;;) {
    bool stop;
    {
      std::unique_lock<std::mutex> lock(s->writer.wake_lock);
      s->writer.wake.wait_for(lock, std::chrono::milliseconds(20),
                              [s] { return s->writer.wake_requested || s->writer.stop_requested; });
      s->writer.wake_requested = false;
      stop = s->writer.stop_requested;
    }
    s->drain_requested.store(false, std::memory_order_release);
    capture_clock_calibrate();
    // _exit or exec owns the file now; after a failed exec it is ours again (writer_resume_after_exec).
    if (s->drain.halted.load(std::memory_order_acquire)) {
      if (stop) return nullptr;
      continue;
    }
    uint64_t before = s->drain.bytes_written;
    drain(s, false);
    if (s->drain.bytes_written != before)
      GPULEAK_LOG_TRACE("writer: flushed %llu bytes", static_cast<unsigned long long>(s->drain.bytes_written - before));
    usage_sampler_start(s);
    if (monotonic_ns() - last_stats > 1000000000ull) {
      format::StatsRecord st = make_stats(s, false);
      append_record(s, format::RecordType::kStats, &st, sizeof st);
      last_stats = monotonic_ns();
      GPULEAK_LOG_DEBUG("writer: %llu bytes in %s so far, %llu records dropped",
                        static_cast<unsigned long long>(s->drain.bytes_written), s->drain.path.c_str(),
                        static_cast<unsigned long long>(s->counters.dropped.load(std::memory_order_relaxed)));
    }
    if (stop) return nullptr;
  }
}

}  // namespace

namespace detail {
GPULEAK_SHARED_TLS ThreadBuffer *t_buffer = nullptr;
// After fork() a new State owns new buffers.
GPULEAK_SHARED_TLS State *t_buffer_owner = nullptr;
}  // namespace detail

__attribute__((noinline)) ThreadBuffer *new_thread_buffer(State *s) {
  pthread_once(&g_exit_key_once, make_exit_key);
  ThreadBuffer *b = s->buffers.create(s->config.buffer_kib * 1024u, static_cast<uint32_t>(syscall(SYS_gettid)));
  if (!b) return nullptr;
  detail::t_buffer = b;
  detail::t_buffer_owner = s;
  pthread_setspecific(g_exit_key, b);
  return b;
}

namespace {

// A quarter full: have the writer drain now rather than at its next tick, so that the program
// never meets a full buffer (waiting for room costs it far more than one wake-up).
void drain_if_quarter_full(State *s, ThreadBuffer *b) {
  if (over_quarter_full(b)) request_drain(s);
}

}  // namespace

bool append_record(State *s, format::RecordType type, const void *payload, size_t n, const void *tail, size_t tail_n) {
  ThreadBuffer *b = thread_buffer(s);
  if (!b) {
    s->counters.dropped.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  const format::RecordHeader h = format::record_header(type, n + tail_n);
  std::string joined;
  const void *body = payload;
  size_t body_n = n;
  if (tail_n) {  // rare (stacks, strings): join so the append stays one call
    joined.assign(static_cast<const char *>(payload), n);
    joined.append(static_cast<const char *>(tail), tail_n);
    body = joined.data();
    body_n = joined.size();
  }
  if (buffer_append(b, &h, sizeof h, body, body_n)) {
    drain_if_quarter_full(s, b);
    return true;
  }
  // Full: give the writer up to ~50 ms to make room, then drop and count (never silently).
  if (s->writer.running) {
    writer_wake(s);
    for (int i = 0; i < 1000; ++i) {
      if (i < 100)
        sched_yield();
      else
        usleep(50);
      if (buffer_append(b, &h, sizeof h, body, body_n)) return true;
    }
  }
  if (type == format::RecordType::kMemory) s->counters.dropped.fetch_add(1, std::memory_order_relaxed);
  return false;
}

bool append_memory_record(State *s, const format::MemoryRecord &r, Counted counted) {
  ThreadBuffer *b = thread_buffer(s);
  const format::RecordHeader h = format::record_header(format::RecordType::kMemory, sizeof r);
  bool ok = b && buffer_append_fixed<sizeof h, sizeof r>(b, &h, &r);
  if (ok)
    drain_if_quarter_full(s, b);
  else
    ok = append_record(s, format::RecordType::kMemory, &r, sizeof r);  // no buffer, or full: wait, or drop
  if (!b) return ok;
  if (ok) bump(b->events);
  if (counted == Counted::kAllocation) bump(b->allocations);
  if (counted == Counted::kFree) bump(b->frees);
  return ok;
}

format::StatsRecord make_stats(State *s, bool final_record, bool claimed) {
  format::StatsRecord st{};
  st.events = claimed ? s->buffers.totals_claimed().events : counter_totals(s).events;
  st.events_dropped = s->counters.dropped.load();
  st.stacks = s->stack_ids.count();
  st.uncaptured = s->counters.uncaptured.load();
  st.live_bytes = s->drain.tally.total_live();
  st.peak_bytes = s->drain.tally.total_peak();
  st.cupti_state = s->counters.cupti_state.load();
  st.final_record = final_record ? 1 : 0;
  return st;
}

bool writer_start(State *s, std::string *error) {
  g_facts = new RunFacts(read_run_facts());
  const RunFacts &facts = *g_facts;
  std::string stem = facts.program + "." + std::to_string(getpid());
  if (facts.rank >= 0) stem += ".rank" + std::to_string(facts.rank);
  CaptureFile file;
  int fd = create_capture_file(s->config.out_dir, stem, &file, error);
  if (fd < 0) return false;
  s->drain.path = file.path;
  format::FileHeader h{};
  std::memcpy(h.magic, format::kMagic, sizeof h.magic);
  h.major = format::kMajorVersion;
  h.minor = format::kMinorVersion;
  h.header_size = sizeof h;
  h.monotonic_ns = monotonic_ns();
  h.realtime_ns = realtime_ns();
  h.pid = static_cast<uint32_t>(getpid());
  std::string head(reinterpret_cast<const char *>(&h), sizeof h);
  head += run_info_record(facts, s->stacks, s->config);
  // The module map goes out with the header, before any record can refer to it: a process that
  // dies a moment later still has its call sites symbolized. Objects loaded later follow in the
  // writer's next flush, ahead of the records in it.
  s->modules.append_changes(&head);
  if (!write_all(fd, head.data(), head.size())) {
    *error = "writing " + s->drain.path + " failed: " + std::strerror(errno);
    close(fd);
    return false;
  }
  s->drain.fd_id = file_id(fd);
  s->drain.fd = fd;
  s->drain.bytes_written = head.size();
  budget_start(s);
  s->writer.report.prepare(s->config, file);  // built now: at exit nothing may be allocated
  s->drain.tally.reserve();
  // The writer must never receive the program's signals.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  s->writer.running = pthread_create(&s->writer.thread, nullptr, writer_main, s) == 0;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (!s->writer.running) {
    *error = "cannot start the writer thread";
    return false;
  }
  // The device records (the forecast needs each device's size) are on disk before the first
  // allocation returns: a process that ends at once in _exit, abort or exec never gives the
  // writer another chance. The queries are the writer's; this thread waits for them, bounded
  // (a driver that blocks them costs the records, never the program).
  for (int i = 0; i < 2000 && !s->devices.written.load(std::memory_order_acquire); ++i) usleep(500);
  GPULEAK_LOG_DEBUG("capture %s started by the first allocation; writer thread running", s->drain.path.c_str());
  return true;
}

void request_drain(State *s) {
  if (s->drain_requested.load(std::memory_order_relaxed) || !s->writer.running) return;
  if (!s->drain_requested.exchange(true, std::memory_order_acq_rel)) writer_wake(s);
}

void writer_wake(State *s) {
  {
    std::lock_guard<std::mutex> lock(s->writer.wake_lock);
    s->writer.wake_requested = true;
  }
  s->writer.wake.notify_one();
}

void writer_flush_now(State *s) { drain(s, true); }

void writer_stop(State *s) {
  if (s->writer.running) {
    {
      std::lock_guard<std::mutex> lock(s->writer.wake_lock);
      s->writer.stop_requested = true;
    }
    s->writer.wake.notify_one();
    pthread_join(s->writer.thread, nullptr);
    s->writer.running = false;
  }
  usage_sampler_stop(s);  // after the writer (which starts it); its last records go out below
  drain(s, true);
  std::string tail;
  if (claim(s, 1 << 20)) {  // the aggregator is the drain holder's
    budget_finish(s, &tail);
    s->drain.draining.store(false, std::memory_order_release);
  }
  format::StatsRecord st = make_stats(s, true);
  format::append_record(&tail, format::RecordType::kStats, &st, sizeof st);
  write_direct(s, tail);
  if (s->drain.fd >= 0) {
    close(s->drain.fd);
    s->drain.fd = -1;
    GPULEAK_LOG_DEBUG("capture %s closed: %llu bytes, %llu records dropped", s->drain.path.c_str(),
                      static_cast<unsigned long long>(s->drain.bytes_written),
                      static_cast<unsigned long long>(s->counters.dropped.load(std::memory_order_relaxed)));
  }
}

}  // namespace gpuleak::core
