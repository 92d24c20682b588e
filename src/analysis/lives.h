// Every owned allocation's life, as the analysis's own replay (ledger.cpp, pass 1) saw it: born
// at which event, released at which, from which call site, on which device. Kept only when asked
// (AnalysisOptions::record_lives): the report needs totals, the viewer and the trace draw each
// allocation. Because they come from the same replay as the verdicts, a drawing's peak and live
// bytes are the report's numbers, by construction.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "analysis/site.h"

namespace gpuleak::analysis {

inline constexpr uint32_t kStillAlive = std::numeric_limits<uint32_t>::max();

struct AllocationLife {
  int device = 0;  // device index; -1 for host pinned or registered memory
  uint64_t size = 0;
  uint32_t birth = 0;            // event position of the allocation
  uint32_t death = kStillAlive;  // position of its release (a free, a context reset, its address reused)
  Site site;                     // a VMM allocation: the site of its first mapping
  // A framework allocator's block (a tensor inside a segment, format 1.3): not device memory of its
  // own, so never in a device's live bytes (its segment is).
  bool pool_block = false;
  // A device allocation that held such blocks: a segment (device memory, holding tensors).
  bool segment = false;
};

// Positions count memory events in effective-time order: position k is "the k-th event".
struct Lives {
  std::vector<AllocationLife> lives;  // in birth order
  std::vector<uint64_t> times;        // per event position: the record's monotonic ns
};

}  // namespace gpuleak::analysis
