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

// Before a buffer's bytes up to `head` leave it: each memory record read in raw ticks gets its
// nanoseconds (the hook left the conversion to the drain), the thread's record times are kept from
// going back (a reading converted by a re-fitted line may fall a few nanoseconds before the one
// before it; capture-format.md promises a thread's times never go back), and the memory records go
// to the tally (null: not counted). In place, in the ring, with memcpy, atomics and at most
// clock_gettime: async-signal-safe, so the signal-time flushes below do it too.
void settle_times(ThreadBuffer *b, uint64_t head, DeviceTally *tally) {
  constexpr uint16_t kMemory = static_cast<uint16_t>(format::RecordType::kMemory);
  constexpr uint16_t kNvtx = static_cast<uint16_t>(format::RecordType::kNvtx);
  constexpr uint16_t kMarker = static_cast<uint16_t>(format::RecordType::kMarker);
  constexpr size_t kTs = offsetof(format::MemoryRecord, ts_ns);
  constexpr size_t kDuration = offsetof(format::MemoryRecord, duration_ns);
  constexpr size_t kReserved = offsetof(format::MemoryRecord, reserved);
  TickLines lines;  // read once per drain of a buffer (a record's line is the same in either)
  bool have_lines = false;
  for (uint64_t at = b->tail.load(std::memory_order_relaxed); at + sizeof(format::RecordHeader) <= head;) {
    format::RecordHeader h;
    const uint8_t *p = ring_span(b, at, sizeof h);
    if (p)
      std::memcpy(&h, p, sizeof h);  // constant sizes: inline copies, no call
    else
      ring_read(b, at, &h, sizeof h);
    uint64_t body = at + sizeof h;
    at = body + h.size;
    if (h.type == kMemory && h.size >= sizeof(format::MemoryRecord)) {
      format::MemoryRecord r;
      if (uint8_t *in_place = ring_span(b, body, sizeof r)) {  // the common case: no wrap
        std::memcpy(&r, in_place, sizeof r);
        if (r.reserved == kTicksInRing) {
          if (!have_lines) lines = tick_lines(), have_lines = true;
          TickConversion t = lines.convert(r.ts_ns, r.duration_ns);
          r.ts_ns = t.ts_ns, r.duration_ns = t.duration_ns, r.reserved = 0;
          std::memcpy(in_place + kDuration, &r.duration_ns, sizeof r.duration_ns);
          std::memcpy(in_place + kReserved, &r.reserved, sizeof r.reserved);
        }
        if (r.ts_ns < b->last_ts) r.ts_ns = b->last_ts;
        b->last_ts = r.ts_ns;
        std::memcpy(in_place + kTs, &r.ts_ns, sizeof r.ts_ns);
        if (tally) tally->add(r);
        continue;
      }
      ring_read(b, body, &r, sizeof r);
      uint64_t ts = r.ts_ns;
      if (r.reserved == kTicksInRing) {
        if (!have_lines) lines = tick_lines(), have_lines = true;
        TickConversion t = lines.convert(r.ts_ns, r.duration_ns);
        r.ts_ns = t.ts_ns, r.duration_ns = t.duration_ns, r.reserved = 0;
        ring_write(b, body + kDuration, &r.duration_ns, sizeof r.duration_ns);
        ring_write(b, body + kReserved, &r.reserved, sizeof r.reserved);
      }
      if (r.ts_ns < b->last_ts) r.ts_ns = b->last_ts;
      b->last_ts = r.ts_ns;
      if (r.ts_ns != ts) ring_write(b, body + kTs, &r.ts_ns, sizeof r.ts_ns);
      if (tally) tally->add(r);
    } else if ((h.type == kNvtx || h.type == kMarker) && h.size >= sizeof(uint64_t)) {
      uint64_t ts;  // the first field of both
      ring_read(b, body, &ts, sizeof ts);
      if (ts < b->last_ts)
        ring_write(b, body, &b->last_ts, sizeof ts);
      else
        b->last_ts = ts;
    }
  }
}

bool claim(State *s, int spins) {
  for (int i = 0; i < spins; ++i) {
    bool expected = false;
    if (s->draining.compare_exchange_weak(expected, true, std::memory_order_acquire)) return true;
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
  if (s->fd < 0 || !claim(s, 10000)) return false;
  if (!still_same_file(s->fd, s->fd_id)) {
    s->fd = -1;
    return true;
  }
  for (ThreadBuffer *b = s->buffers.first(); b; b = b->next) {
    uint64_t head = b->head.load(std::memory_order_acquire);
    settle_times(b, head, nullptr);
    buffer_drain_to(b, head, [&](const uint8_t *p, size_t n) { write_all(s->fd, p, n); });
  }
  return true;
}

void writer_flush_from_signal(State *s) { flush_buffers_from_signal(s); }

bool writer_flush_before_exec(State *s) {
  s->halted.store(true, std::memory_order_release);
  if (flush_buffers_from_signal(s)) return true;
  s->halted.store(false, std::memory_order_release);
  return false;
}

void writer_resume_after_exec(State *s) {
  s->halted.store(false, std::memory_order_release);
  s->draining.store(false, std::memory_order_release);
}

bool writer_finish_from_signal(State *s, BufferCounters *totals) {
  s->halted.store(true, std::memory_order_release);
  if (!flush_buffers_from_signal(s)) return false;
  *totals = s->buffers.totals_claimed();
  if (s->fd >= 0) {
    format::StatsRecord st = make_stats(s, true, true);
    format::RecordHeader h{sizeof st, static_cast<uint16_t>(format::RecordType::kStats), 0};
    char tail[sizeof h + sizeof st];
    std::memcpy(tail, &h, sizeof h);
    std::memcpy(tail + sizeof h, &st, sizeof st);
    write_all(s->fd, tail, sizeof tail);
    close(s->fd);
    s->fd = -1;
  }
  return true;
}

}  // namespace gpuleak::core
