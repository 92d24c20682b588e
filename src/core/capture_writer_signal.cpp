// The async-signal-safe ends of a capture: fatal signals, _exit and _Exit, exec. They may run in
// a signal handler that interrupted malloc or a lock holder, or in a vfork child's parent about
// to be replaced, so only write(2), fstat and atomics are used here (signal_safe.h).
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

#include "core/recorder_state.h"
#include "core/signal_safe.h"
#include "format/record_framing.h"

namespace gpuleak::core {

bool write_all(int fd, const void *data, size_t n) {
  auto *p = static_cast<const uint8_t *>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool claim(State *s, int spins) {
  for (int i = 0; i < spins; ++i) {
    bool expected = false;
    if (s->drain.draining.compare_exchange_weak(expected, true, std::memory_order_acquire)) return true;
    sched_yield();
  }
  return false;
}

// The async-signal-safe flushes below write the thread buffers as they are (no module map: that
// needs the loader's lock; it went out at capture start and with every writer flush since). Each
// keeps the drain claim when it returns, so that the writer thread cannot start a write that the
// end of the process would cut in half; the claim is bounded (a writer stuck mid-write makes
// the caller give up, never wait forever).
bool flush_buffers_from_signal(State *s) {
  if (s->drain.fd < 0 || !claim(s, 10000)) return false;
  if (!still_same_file(s->drain.fd, s->drain.fd_id)) {
    s->drain.fd = -1;
    return true;
  }
  settle_buffers_from_signal(s);
  // Once writing has stopped (the budget, a full file system), the rings are emptied unwritten.
  const bool stopped = s->drain.write_stopped.load(std::memory_order_relaxed);
  for (ThreadBuffer *b = s->buffers.first(); b; b = b->next)
    buffer_drain_to(b, b->ready, [&](const uint8_t *p, size_t n) {
      if (!stopped) write_all(s->drain.fd, p, n);
    });
  return true;
}

void writer_flush_from_signal(State *s) { flush_buffers_from_signal(s); }

bool writer_flush_before_exec(State *s) {
  s->drain.halted.store(true, std::memory_order_release);
  if (flush_buffers_from_signal(s)) return true;
  s->drain.halted.store(false, std::memory_order_release);
  return false;
}

void writer_resume_after_exec(State *s) {
  s->drain.halted.store(false, std::memory_order_release);
  s->drain.draining.store(false, std::memory_order_release);
}

bool writer_finish_from_signal(State *s, BufferCounters *totals) {
  s->drain.halted.store(true, std::memory_order_release);
  if (!flush_buffers_from_signal(s)) return false;
  *totals = s->buffers.totals_claimed();
  if (s->drain.fd >= 0) {
    format::StatsRecord st = make_stats(s, true, true);
    uint8_t tail[sizeof(format::RecordHeader) + sizeof st];
    format::frame_record(tail, format::RecordType::kStats, st);
    if (!s->drain.write_stopped.load(std::memory_order_relaxed)) write_all(s->drain.fd, tail, sizeof tail);
    close(s->drain.fd);
    s->drain.fd = -1;
  }
  return true;
}

}  // namespace gpuleak::core
