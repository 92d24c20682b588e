// Where things happen in a capture: event positions (pass 0, timeline.cpp), the call sites
// interned on the way, the iterations as spans of positions, and a cursor that walks positions in
// replay order. Private to src/analysis.
//
// The memory records are never held: every stage that needs them reads them during a replay of
// the capture's format::MemorySource in effective-time order, and keeps only what is proportional
// to live allocations, call sites and iterations.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/flat_map.h"
#include "analysis/records.h"
#include "analysis/site.h"
#include "format/capture_reader.h"
#include "format/memory_source.h"

namespace gpuleak::analysis::detail {

// One iteration while it is being found: raw monotonic times, and the events it holds as the
// half-open range [begin, end) of event positions. Position p means "after the first p memory
// records in effective-time order": every stage refers to a moment that way.
struct Span {
  std::string loop;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t begin = 0;
  uint32_t end = 0;
  // The thread whose pass this is, when the level's passes run on several threads at once (a
  // handler on a pool of workers): its allocations are that thread's. 0: any thread's.
  uint32_t tid = 0;
};

// Call sites interned to dense indices, in the order their first allocation (or VMM map) happens.
struct SiteTable {
  std::vector<Site> sites;
  FlatMap<uint64_t, uint32_t, U64Hash> index;  // site_key -> index in sites
  uint32_t of(const format::MemoryRecord &r) const;
  // The site of every successful allocation of owned memory, in time order: only collected when
  // automatic period detection needs it (no iteration marks), 4 bytes an allocation.
  std::vector<uint32_t> alloc_sequence;
  std::vector<uint32_t> alloc_positions;  // ... and their event positions (4 more bytes): no replay finds them again
  uint64_t allocations = 0;               // successful allocations of owned memory
};

// What pass 0 learns about the memory records; replay() hands them out again, with positions.
struct Timeline {
  const format::MemorySource *source = nullptr;
  uint32_t size = 0;
  uint64_t end_ns = 0;       // latest timestamp of any record (memory, NVTX, marker, OOM)
  std::vector<int> devices;  // every device index of a record or a device record, ascending
  // Successful allocations by kind, for the allocator mode (analysis.cpp).
  uint64_t device_allocs = 0, device_2mib_allocs = 0, async_allocs = 0, vmm_allocs = 0;
  uint64_t pool_block_allocs = 0;  // a framework allocator's blocks (format 1.3)

  template <typename F>
  void replay(F &&visit) const {
    uint32_t k = 0;
    source->replay([&](const format::MemoryRecord &r) {
      if (k < size) visit(k, r);
      ++k;
    });
  }
  // The same, with the records' times alone: visit(k, ts_ns).
  template <typename F>
  void replay_times(F &&visit) const {
    uint32_t k = 0;
    source->replay_times([&](const uint64_t *ts, size_t n) {
      for (size_t i = 0; i < n && k < size; ++i, ++k) visit(k, ts[i]);
    });
  }
};
// The latest timestamp of any record (memory, NVTX, marker, OOM).
uint64_t capture_end_ns(const format::Capture &capture, const format::MemorySource &source);
// Pass 0. Sets begin/end of every span from its times (events at or after start_ns and at or
// before end_ns), each oom_positions[i] to the first position at or after oom_ts[i], and collects
// the allocation sequence when `sequence` is set.
Timeline make_timeline(const format::Capture &capture, const format::MemorySource &source, std::vector<Span> *spans,
                       const std::vector<uint64_t> &oom_ts, std::vector<uint32_t> *oom_positions, bool sequence,
                       SiteTable *sites);

// Allocation indices (into the allocation sequence) -> their event positions (timeline.size past
// the last), from SiteTable::alloc_positions; and event positions (ascending, each <
// timeline.size; repeats allowed) -> their times, in one replay.
std::vector<uint32_t> positions_of(const Timeline &timeline, const SiteTable &sites,
                                   const std::vector<uint32_t> &allocs);
std::vector<uint64_t> times_at(const Timeline &timeline, const std::vector<uint32_t> &positions);
// Sets begin/end of each span from its times (as make_timeline does for the spans it is given),
// in one replay.
void place_spans(const Timeline &timeline, const std::vector<Span *> &spans);

// How many of an ascending list of event positions are at or before p (std::upper_bound's
// count), for a p that never decreases, as a replay's position: O(1) amortized where a binary
// search per event cost log2(iterations). A p below the last one asked is searched for.
class PositionCursor {
 public:
  explicit PositionCursor(const std::vector<uint32_t> &positions) : positions_(&positions) {}
  uint32_t through(uint32_t p) {
    const std::vector<uint32_t> &v = *positions_;
    if (p < last_) return static_cast<uint32_t>(std::upper_bound(v.begin(), v.end(), p) - v.begin());
    last_ = p;
    while (next_ < v.size() && v[next_] <= p) ++next_;
    return next_;
  }

 private:
  const std::vector<uint32_t> *positions_;
  uint32_t next_ = 0;
  uint32_t last_ = 0;
};

// The iterations the verdicts are computed on: the primary loop's spans in end order.
struct Primary {
  std::vector<uint32_t> spans;    // indices into the span list
  std::vector<uint32_t> end_pos;  // spans[i]'s end position, ascending
  uint32_t warmup = 0;
};

}  // namespace gpuleak::analysis::detail
