// The drain's half of every memory record (issue #15 goal 3): what a hook leaves unfinished so that
// the hot path only calls, reads the clock and appends. Before a drain hands a thread's bytes on,
// each memory record gets its nanoseconds (hooks store raw TSC ticks), its thread's times stay in
// order (capture-format.md promises they never go back), and the live table is fed in time order
// across threads: an allocation enters it, a free takes its size, kind and device from it, a
// context reset empties a device. Then the records are counted into the device tally. How far
// a drain may go without missing a record that comes earlier is "the drain's order" in
// recorder_state.h. Everything here runs under the drain claim.
#include <algorithm>
#include <cstring>

#include "core/recorder_state.h"

namespace gpuleak::core {

namespace {

constexpr uint16_t kMemory = static_cast<uint16_t>(format::RecordType::kMemory);
constexpr uint16_t kNvtx = static_cast<uint16_t>(format::RecordType::kNvtx);
constexpr uint16_t kMarker = static_cast<uint16_t>(format::RecordType::kMarker);

// A memory record read from the ring and written back: in place with constant-size copies where it
// does not wrap (nearly always), else in two pieces.
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

// The live table's part of one record, taken in time order; the ring's marks are cleared.
void apply_to_table(LiveTable &live, format::MemoryRecord &r, bool may_grow) {
  const uint16_t mark = r.reserved;
  r.reserved = 0;
  if (!ring_marked(mark)) return;
  const auto space = static_cast<Space>(mark & kRingSpace);
  if (mark & kRingFree) {
    LiveEntry e;
    // A free that failed leaves the allocation live; its record still says what it was.
    bool found = r.result == 0 ? live.take(space, r.address, &e) : live.peek(space, r.address, &e);
    if (found) {
      r.size = e.size;
      r.kind = e.kind;
      r.device = e.device;
      r.flags &= static_cast<uint16_t>(~format::kFlagGraphReservation);  // only a pointer never counted is one
    } else {
      r.flags |= format::kFlagUnknownPointer;
    }
  } else if (mark & kRingInsert) {
    LiveEntry e;
    e.size = r.size;
    e.stack_id = r.stack_id;
    e.kind = r.kind;
    e.device = r.device;
    e.counts_on_device = (mark & kRingOnDevice) != 0;
    live.insert(space, r.address, e, may_grow);
  } else if (r.op == static_cast<uint8_t>(format::Op::kContextReset) && r.result == 0) {
    live.drop_device(r.device);
  }
}

// Whether a record must wait for a free still under way elsewhere: an allocation at its address
// after it began, or a context reset (which would empty the table under it).
bool waits_for_a_free(const format::MemoryRecord &r, const ThreadBuffer *b,
                      const std::vector<FreeInFlight> &in_flight) {
  if (!ring_marked(r.reserved)) return false;
  const bool reset = r.op == static_cast<uint8_t>(format::Op::kContextReset);
  if (!(r.reserved & kRingInsert) && !reset) return false;
  const uint64_t key = LiveTable::key_of(static_cast<Space>(r.reserved & kRingSpace), r.address);
  for (const FreeInFlight &f : in_flight)
    if (f.by != b && r.ts_ns >= f.since_ns && (reset || f.key == key)) return true;
  return false;
}

// The time of the first memory record in `b` (up to `head`, before `until`) that waits for a free
// under way, else `until`. Reads only.
uint64_t first_waiting(ThreadBuffer *b, uint64_t head, uint64_t until, const std::vector<FreeInFlight> &in_flight,
                       const TickLines &lines) {
  for (uint64_t at = b->tail.load(std::memory_order_relaxed); at + sizeof(format::RecordHeader) <= head;) {
    format::RecordHeader h;
    ring_read(b, at, &h, sizeof h);
    const uint64_t body = at + sizeof h;
    at = body + h.size;
    if (h.type != kMemory || h.size < sizeof(format::MemoryRecord)) continue;
    RingRecord rec;
    rec.load(b, body);
    format::MemoryRecord &r = rec.r;
    if (ring_marked(r.reserved) && (r.reserved & kRingTicks)) r.ts_ns = lines.convert(r.ts_ns, 0).ts_ns;
    if (r.ts_ns >= until) break;
    if (waits_for_a_free(r, b, in_flight)) return r.ts_ns;
  }
  return until;
}

// One buffer from its tail to `head`: tick readings to nanoseconds and the thread's times in
// order, in place; stops at the first memory record at or after `until`, which stays for the next
// drain. `visit(record, body position)` gets every memory record let through, in the thread's
// order. Sets b->ready: its bytes up to there may leave the ring.
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
      if (ring_marked(r.reserved) && (r.reserved & kRingTicks)) {
        TickConversion t = lines.convert(r.ts_ns, r.duration_ns);
        r.ts_ns = t.ts_ns, r.duration_ns = t.duration_ns;
        r.reserved &= static_cast<uint16_t>(~kRingTicks);
      }
      if (r.ts_ns >= until) {  // held back, converted already (the mark says so)
        rec.store(b, body);
        break;
      }
      if (r.ts_ns < b->last_ts) r.ts_ns = b->last_ts;
      b->last_ts = r.ts_ns;
      visit(rec, body);
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

uint64_t free_since_ns(uint64_t encoded, const TickLines &lines) {
  return (encoded & 1) ? lines.convert(encoded >> 1, 0).ts_ns : encoded >> 1;
}

uint64_t less_margin(uint64_t ns) { return ns > kSettleMarginNs ? ns - kSettleMarginNs : 0; }

}  // namespace

void settle_buffers(State *s, bool forced) {
  const TickLines lines = tick_lines();
  uint64_t until = UINT64_MAX;
  std::vector<FreeInFlight> &in_flight = s->in_flight;
  in_flight.clear();
  // The clock first, then every free under way, then the heads (recorder_state.h). A forced drain
  // takes every record up to the heads except an allocation that waits for a free under way (and
  // what follows it in time): other threads may be re-using freed addresses meanwhile.
  if (!forced) until = less_margin(capture_now_ns());
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (ThreadBuffer *b = s->buffers.first(); b; b = b->next) {
    const uint64_t since = b->free_since.load(std::memory_order_acquire);
    if (!since) continue;
    const uint64_t key = b->free_key.load(std::memory_order_acquire);
    const uint64_t again = b->free_since.load(std::memory_order_acquire);
    if (again == since)  // the key is this free's
      in_flight.push_back(FreeInFlight{key, less_margin(free_since_ns(since, lines)), b});
    else if (again)  // another free began meanwhile, its address unknown here: wait for every ring
      until = std::min(until, less_margin(free_since_ns(again, lines)));
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // One reading of each head for the whole drain (kept in `ready` until settle_one sets it): a
  // record appended after the look for waiting allocations below must not be settled either.
  for (ThreadBuffer *b = s->buffers.first(); b; b = b->next) b->ready = b->head.load(std::memory_order_acquire);
  // An allocation at the address of a free under way waits for the free's record, and with it
  // everything after it in time: the drain's cut stays one moment for all threads, so nothing is
  // applied ahead of a record it may depend on. A free with no such allocation holds nothing.
  if (!in_flight.empty())
    for (ThreadBuffer *b = s->buffers.first(); b; b = b->next)
      if (in_flight.size() > 1 || in_flight.front().by != b)
        until = first_waiting(b, b->ready, until, in_flight, lines);
  // One thread with new records (the common case of a drain): its order is the time order, and
  // each record goes to the table as it is settled.
  int busy = 0;
  for (ThreadBuffer *b = s->buffers.first(); b && busy < 2; b = b->next)
    if (b->ready != b->tail.load(std::memory_order_relaxed)) ++busy;
  std::vector<SettleRef> &refs = s->settle_refs;
  std::vector<size_t> &runs = s->settle_runs;  // where each thread's records begin in refs
  refs.clear();
  runs.clear();
  for (ThreadBuffer *b = s->buffers.first(); b; b = b->next) {
    if (runs.empty() || runs.back() != refs.size()) runs.push_back(refs.size());
    settle_one(b, b->ready, until, lines, [&](RingRecord &rec, uint64_t at) {
      if (busy > 1) {
        rec.store(b, at);
        refs.push_back(SettleRef{rec.r.ts_ns, at, b});
        return;
      }
      apply_to_table(s->live, rec.r, true);
      rec.store(b, at);
      s->tally.add(rec.r);
    });
  }
  // Several threads: each one's run is in time order already; merged pairwise into one order for
  // all of them (n log k for k threads, where a sort would be n log n). Merges are stable: a
  // thread's records keep their order where times are equal.
  runs.push_back(refs.size());
  auto by_time = [](const SettleRef &a, const SettleRef &b) { return a.ts < b.ts; };
  for (size_t width = 1; width + 1 < runs.size(); width *= 2)
    for (size_t i = 0; i + width + 1 < runs.size(); i += 2 * width) {
      const size_t end = runs[std::min(i + 2 * width, runs.size() - 1)];
      std::inplace_merge(refs.begin() + static_cast<ptrdiff_t>(runs[i]),
                         refs.begin() + static_cast<ptrdiff_t>(runs[i + width]),
                         refs.begin() + static_cast<ptrdiff_t>(end), by_time);
    }
  for (const SettleRef &ref : refs) {
    RingRecord rec;
    rec.load(ref.buffer, ref.at);
    apply_to_table(s->live, rec.r, true);
    rec.store(ref.buffer, ref.at);
    s->tally.add(rec.r);
  }
  s->tally.settle();
}

void settle_buffers_from_signal(State *s) {
  const TickLines lines = tick_lines();
  for (ThreadBuffer *b = s->buffers.first(); b; b = b->next)
    settle_one(b, b->head.load(std::memory_order_acquire), UINT64_MAX, lines, [&](RingRecord &rec, uint64_t at) {
      apply_to_table(s->live, rec.r, false);
      s->tally.add_now(rec.r);  // _exit's summary line counts these too
      rec.store(b, at);
    });
}

}  // namespace gpuleak::core
