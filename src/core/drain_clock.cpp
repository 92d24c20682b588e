// The drain's pass over each thread's ring before its bytes leave it: hooks store raw TSC ticks
// (clock.h), and here each memory record gets its nanoseconds, each thread's times stay in order
// (capture-format.md promises they never go back), and an ordinary drain stops where the order of
// the tally (live_tally.h) needs it to. Nothing is paired here. Runs under the drain claim.
#include <cstring>

#include "core/recorder_state.h"

namespace gpuleak::core {

namespace {

constexpr uint16_t kMemory = static_cast<uint16_t>(format::RecordType::kMemory);
constexpr uint16_t kNvtx = static_cast<uint16_t>(format::RecordType::kNvtx);
constexpr uint16_t kMarker = static_cast<uint16_t>(format::RecordType::kMarker);

// A memory record read from the ring and written back: in place where it does not wrap (nearly
// always), else in two pieces.
struct RingRecord {
  format::MemoryRecord r;
  uint8_t *in_place;  // null where it wraps
  void load(ThreadBuffer *b, uint64_t at) {
    in_place = ring_span(b, at, sizeof r);
    if (in_place)
      std::memcpy(&r, in_place, sizeof r);
    else
      ring_read(b, at, &r, sizeof r);
  }
  void store(ThreadBuffer *b, uint64_t at) const {
    if (in_place)
      std::memcpy(in_place, &r, sizeof r);
    else
      ring_write(b, at, &r, sizeof r);
  }
};

// One buffer from its tail to `head`: tick readings to nanoseconds and the thread's times in
// order, in place; stops at the first memory record at or after `until`, which stays for the next
// drain (converted already: its ring mark is cleared). `visit(record)` gets every memory record let
// through. Sets b->ready: its bytes up to there may leave the ring.
template <typename Visit>
void settle_one(ThreadBuffer *b, uint64_t head, uint64_t until, const TickLines &lines, Visit &&visit) {
  uint64_t at = b->tail.load(std::memory_order_relaxed);
  while (at + sizeof(format::RecordHeader) <= head) {
    format::RecordHeader h;
    if (const uint8_t *p = ring_span(b, at, sizeof h))
      std::memcpy(&h, p, sizeof h);
    else
      ring_read(b, at, &h, sizeof h);
    const uint64_t body = at + sizeof h;
    if (h.type == kMemory && h.size >= sizeof(format::MemoryRecord)) {
      RingRecord rec;
      rec.load(b, body);
      format::MemoryRecord &r = rec.r;
      if (r.ring & kRingTicks) {
        TickConversion t = lines.convert(r.ts_ns, r.duration_ns);
        r.ts_ns = t.ts_ns, r.duration_ns = t.duration_ns;
      }
      r.ring = 0;
      if (r.ts_ns >= until) {  // held back
        rec.store(b, body);
        break;
      }
      if (r.ts_ns < b->last_ts) r.ts_ns = b->last_ts;
      b->last_ts = r.ts_ns;
      rec.store(b, body);
      visit(r);
    } else if ((h.type == kNvtx || h.type == kMarker) && h.size >= sizeof(uint64_t)) {
      uint64_t ts;  // the first field of both
      ring_read(b, body, &ts, sizeof ts);
      if (ts < b->last_ts)
        ring_write(b, body, &b->last_ts, sizeof ts);
      else
        b->last_ts = ts;
    }
    at = body + h.size;
  }
  b->ready = at;
}

}  // namespace

void settle_buffers(State *s, bool forced) {
  const TickLines lines = tick_lines();
  // The clock before any head: an allocation drained now was appended before its ring was read,
  // and a free of it, entered after the program had the address, reads a later time than this
  // one. So up to this moment (less a margin for the TSC's cores and the line's steps) no free
  // goes out ahead of its allocation, which the tally needs. A forced drain (the first allocation,
  // an OOM, exit) takes everything there is.
  uint64_t until = UINT64_MAX;
  if (!forced) {
    const uint64_t now = capture_now_ns();
    until = now > kSettleMarginNs ? now - kSettleMarginNs : 0;
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (ThreadBuffer *b = s->buffers.first(); b; b = b->next)
    settle_one(b, b->head.load(std::memory_order_acquire), until, lines, [](const format::MemoryRecord &) {});
}

void settle_buffers_from_signal(State *s) {
  const TickLines lines = tick_lines();
  for (ThreadBuffer *b = s->buffers.first(); b; b = b->next)
    settle_one(b, b->head.load(std::memory_order_acquire), UINT64_MAX, lines,
               [&](const format::MemoryRecord &r) { s->drain.tally.add_now(r); });  // _exit's line counts these too
}

}  // namespace gpuleak::core
