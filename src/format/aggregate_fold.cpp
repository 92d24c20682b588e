// The aggregated form (capture format 1.4) read back as memory records and iteration marks, so
// that every reader after this one (the analysis' ledger, the trace, the viewer) sees one event
// stream and decides exactly as it does on a raw capture. docs/capture-format.md "Aggregated
// form" is the contract; in short, for each window of w iterations:
//   - the iterations are spaced evenly between its first begin and its last end, each with its
//     begin and end mark (no begin where the iteration began before the window, no end for an
//     iteration still open when the window closed);
//   - a row's survivors (born there, still live at its end) become allocations of their average
//     size, placed right-aligned over the iterations (iteration j holds floor(S (j+1) / w) of
//     them by its end): a leak of one allocation per step comes back one per step; a buffer kept
//     one step comes back in the window's last iteration;
//   - the allocations born and freed inside the window become one pair per iteration at most,
//     of the bytes they moved;
//   - a row of frees of an earlier window's allocations frees that many of the allocations made
//     for it, oldest first, right-aligned the same way.
// Every site's live bytes and count at each window's end are exact (up to the average size of a
// site whose sizes vary); what is lost is the order and the number of allocations inside a window.
#include "format/aggregate_fold.h"

#include <algorithm>
#include <deque>
#include <map>
#include <tuple>

namespace gpuleak::format {

namespace {

constexpr uint64_t kSyntheticBase = 0xa660000000000000ull;  // no pointer or handle a driver hands out
constexpr uint64_t kSurvivorsPerIteration = 64;             // beyond that a row's survivors are merged (average size)

struct Cohort {
  uint64_t real = 0;                               // allocations of the window still live, as the writer counted them
  std::deque<std::pair<uint64_t, uint64_t>> made;  // the synthetic ones standing for them: address, size
};
using CohortKey = std::tuple<uint32_t, uint32_t, int16_t, uint8_t, uint32_t>;  // stack, py, device, kind, window

struct Piece {
  uint64_t begin, end;
  bool begin_mark, end_mark;
};

// floor(x * (j + 1) / n) - floor(x * j / n): the right-aligned share of piece j.
uint64_t share(uint64_t x, size_t j, size_t n) {
  auto cum = [&](size_t k) { return static_cast<uint64_t>((static_cast<unsigned __int128>(x) * k) / n); };
  return cum(j + 1) - cum(j);
}

uint64_t at(uint64_t b, uint64_t e, size_t i, size_t n) {
  return b + static_cast<uint64_t>((static_cast<unsigned __int128>(e - b) * (i + 1)) / (n + 1));
}

std::vector<Piece> pieces_of(const AggregateWindowRecord &w) {
  std::vector<Piece> out;
  const bool open_start = w.flags & kWindowOpenAtStart, open_end = w.flags & kWindowOpenAtEnd;
  const uint64_t first = std::max(w.first_begin_ns, w.start_ns);
  const uint64_t last = std::max(w.iterations_end_ns, first);
  for (uint32_t j = 0; j < w.iterations; ++j) {
    const uint64_t b = first + static_cast<uint64_t>((static_cast<unsigned __int128>(last - first) * j) / w.iterations);
    const uint64_t e =
        first + static_cast<uint64_t>((static_cast<unsigned __int128>(last - first) * (j + 1)) / w.iterations);
    out.push_back(Piece{b, e, !(j == 0 && open_start), true});
  }
  if (open_end) {
    const uint64_t b = std::max(w.iterations ? last : w.start_ns, std::min(w.last_begin_ns, w.end_ns));
    out.push_back(Piece{b, std::max(b, w.end_ns), !(w.iterations == 0 && open_start), false});
  }
  if (out.empty()) out.push_back(Piece{w.start_ns, std::max(w.start_ns, w.end_ns), false, false});
  return out;
}

class Folder {
 public:
  Folder(const Capture &c, std::vector<MemoryRecord> *memory, std::vector<MarkerRecord> *markers)
      : capture_(c), memory_(*memory), markers_(*markers) {}

  bool run(std::string *error) {
    for (const AggregateWindow &w : capture_.aggregate_windows) {
      iterations_ += w.record.iterations;
      if (iterations_ > kMaxAggregatedIterations) {
        *error = "aggregated capture claims more than " + std::to_string(kMaxAggregatedIterations) +
                 " iterations (a limit, docs/limits.md): corrupt or not from gpuleak";
        return false;
      }
      window(w);
      if (memory_.size() - first_ > kMaxSyntheticRecords) {
        *error = "aggregated capture unfolds to more than " + std::to_string(kMaxSyntheticRecords) +
                 " memory records (a limit, docs/limits.md): corrupt or not from gpuleak";
        return false;
      }
    }
    return true;
  }

 private:
  struct Event {
    uint8_t op;
    const AggregateSiteRecord *row;
    uint64_t address, size;
  };

  MemoryRecord record(const Event &e, uint64_t ts, uint32_t tid) const {
    MemoryRecord r{};
    r.ts_ns = ts;
    r.address = e.address;
    r.size = e.size;
    r.tid = tid;
    r.stack_id = e.op == static_cast<uint8_t>(Op::kAlloc) ? e.row->stack_id : 0;
    r.py_stack_id = e.op == static_cast<uint8_t>(Op::kAlloc) ? e.row->py_stack_id : 0;
    r.op = e.op;
    r.kind = e.row->kind;
    r.device = e.row->device;
    r.flags = kFlagUntimed;
    return r;
  }

  void window(const AggregateWindow &w) {
    const std::vector<Piece> pieces = pieces_of(w.record);
    const size_t P = pieces.size();
    const AggregateSiteRecord *rows = capture_.aggregate_rows.data() + w.rows_begin;
    const size_t nrows = w.rows_end - w.rows_begin;
    // Per row, what it puts in the pieces: survivors, pairs, and frees of an earlier cohort.
    struct Plan {
      uint64_t survivors = 0, survivor_bytes = 0, pairs = 0, pair_bytes = 0, frees = 0;
      uint64_t made_survivors = 0, made_pairs = 0;
      Cohort *cohort = nullptr;
    };
    std::vector<Plan> plans(nrows);
    for (size_t i = 0; i < nrows; ++i) {
      const AggregateSiteRecord &a = rows[i];
      Plan &p = plans[i];
      if (a.birth_window == w.record.number) {
        const uint64_t frees = std::min(a.frees, a.allocs), freed = std::min(a.freed_bytes, a.alloc_bytes);
        p.survivors = std::min<uint64_t>(a.allocs - frees, kSurvivorsPerIteration * P);
        p.survivor_bytes = a.alloc_bytes - freed;
        if (p.survivors == 0 && p.survivor_bytes > 0) p.survivors = 1;
        p.pairs = std::min<uint64_t>(frees, P);
        p.pair_bytes = freed;
        Cohort &c = cohorts_[key(a, a.birth_window)];
        c.real += a.allocs - frees;
        p.cohort = &c;
      } else {
        auto it = cohorts_.find(key(a, a.birth_window));
        if (it == cohorts_.end() || it->second.made.empty()) continue;  // a window never seen: nothing to free
        Cohort &c = it->second;
        const uint64_t before = c.real, gone = std::min<uint64_t>(a.frees, before);
        c.real -= gone;
        p.frees = c.real == 0 ? c.made.size()
                              : std::min<uint64_t>(c.made.size(), (c.made.size() * gone + before / 2) / before);
        p.cohort = &c;
      }
    }
    std::vector<Event> events;
    for (size_t j = 0; j < P; ++j) {
      events.clear();
      for (size_t i = 0; i < nrows; ++i) {
        Plan &p = plans[i];
        const AggregateSiteRecord &a = rows[i];
        if (!p.cohort) continue;
        for (uint64_t n = share(p.survivors, j, P); n > 0; --n, ++p.made_survivors) {
          const uint64_t size =
              p.survivor_bytes / p.survivors + (p.made_survivors == 0 ? p.survivor_bytes % p.survivors : 0);
          const uint64_t address = next_address();
          p.cohort->made.emplace_back(address, size);
          events.push_back(Event{static_cast<uint8_t>(Op::kAlloc), &a, address, size});
        }
        for (uint64_t n = share(p.pairs, j, P); n > 0; --n, ++p.made_pairs) {
          const uint64_t size = p.pair_bytes / p.pairs + (p.made_pairs == 0 ? p.pair_bytes % p.pairs : 0);
          const uint64_t address = next_address();
          events.push_back(Event{static_cast<uint8_t>(Op::kAlloc), &a, address, size});
          events.push_back(Event{static_cast<uint8_t>(Op::kFree), &a, address, size});
        }
        for (uint64_t n = share(p.frees, j, P); n > 0 && !p.cohort->made.empty(); --n) {
          const auto [address, size] = p.cohort->made.front();
          p.cohort->made.pop_front();
          events.push_back(Event{static_cast<uint8_t>(Op::kFree), &a, address, size});
        }
      }
      const Piece &piece = pieces[j];
      if (piece.begin_mark) marker(MarkerOp::kIterationBegin, piece.begin, w.record);
      for (size_t e = 0; e < events.size(); ++e)
        memory_.push_back(record(events[e], at(piece.begin, piece.end, e, events.size()), w.record.tid));
      if (piece.end_mark) marker(MarkerOp::kIterationEnd, piece.end, w.record);
    }
  }

  void marker(MarkerOp op, uint64_t ts, const AggregateWindowRecord &w) {
    MarkerRecord m{};
    m.ts_ns = ts;
    m.tid = w.tid;
    m.label_id = op == MarkerOp::kIterationBegin ? w.loop_id : 0;
    m.op = static_cast<uint8_t>(op);
    markers_.push_back(m);
  }

  static CohortKey key(const AggregateSiteRecord &a, uint32_t window) {
    return CohortKey{a.stack_id, a.py_stack_id, a.device, a.kind, window};
  }
  uint64_t next_address() { return kSyntheticBase + (++made_ << 4); }

  const Capture &capture_;
  std::vector<MemoryRecord> &memory_;
  std::vector<MarkerRecord> &markers_;
  const size_t first_ = memory_.size();
  std::map<CohortKey, Cohort> cohorts_;
  uint64_t iterations_ = 0;
  uint64_t made_ = 0;
};

}  // namespace

bool fold_aggregates(Capture *capture, std::vector<MemoryRecord> *memory, std::string *error) {
  if (capture->aggregate_windows.empty()) return true;
  Aggregated info;
  const AggregateWindowRecord &first = capture->aggregate_windows.front().record;
  info.from_ns = first.start_ns;
  info.loop_id = first.loop_id;
  info.low_disk = first.flags & kWindowLowDisk;
  for (const AggregateWindow &w : capture->aggregate_windows) {
    ++info.windows;
    info.iterations += w.record.iterations;
    info.events += w.record.events;
    info.dropped += w.record.dropped;
    if (!info.loop_id) info.loop_id = w.record.loop_id;
  }
  info.incomplete = capture->aggregate_rows.size() > capture->aggregate_windows.back().rows_end;
  const size_t before = memory->size();
  std::vector<MarkerRecord> markers;
  if (!Folder(*capture, memory, &markers).run(error)) return false;
  info.synthetic = memory->size() - before;
  capture->markers.insert(capture->markers.end(), markers.begin(), markers.end());
  capture->aggregated = info;
  std::vector<AggregateSiteRecord>().swap(capture->aggregate_rows);
  return true;
}

}  // namespace gpuleak::format
