// The ledger (ledger.cpp): one replay of every memory record in time order that keeps what is live,
// each device's totals and the per-iteration numbers, and tells the observers (replay_observer.h)
// about every change as it happens. Private to src/analysis.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/replay_observer.h"
#include "analysis/timeline.h"
#include "format/capture_reader.h"

namespace gpuleak::analysis::detail {

struct DeviceTotals {
  uint64_t live = 0;  // at the end of the capture
  uint64_t peak = 0;
  uint64_t allocs = 0;
  uint64_t frees = 0;
};

struct Ledger {
  std::vector<int> devices;          // slot -> device index, ascending
  std::vector<DeviceTotals> totals;  // per slot
  // Sparse per-iteration numbers (ledger.cpp): span s's cells, the devices that allocated or
  // released memory while it was open, are cells[cell_start[s] .. cell_start[s + 1]), by device.
  std::vector<IterationDevice> cells;
  std::vector<uint32_t> cell_start;
  std::vector<std::vector<LiveStep>> live_steps;           // per slot: the rest of the cells
  std::vector<std::pair<uint32_t, uint32_t>> span_bounds;  // per span: (begin, end)
  Accounting accounting;
  int slot_of(int device) const;  // -1 when the device was never seen
  // Span s's numbers for one slot, touched or not.
  IterationDevice row(uint32_t span, size_t slot) const;
};
// One replay of every event: fills *ledger and tells the observers. `primary_ends` (Primary::end_pos)
// sets each LiveAllocation's ends_at_birth. `beside`: observers that read nothing of the others
// (the advice rules), told every event as the observers are, by a second replay of their own on
// another thread when the source allows it (MemorySource::concurrent_replays) and the machine has
// a second core, else by the same replay after the observers.
void replay(const format::Capture &capture, const Timeline &timeline, const SiteTable &sites,
            const std::vector<Span> &spans, const std::vector<uint32_t> &primary_ends,
            const std::vector<Observer *> &observers, Ledger *ledger, const std::vector<Observer *> &beside = {});

}  // namespace gpuleak::analysis::detail
