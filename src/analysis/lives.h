// Every owned allocation's life and every device's live curve, as the analysis's own replay
// (ledger.cpp, pass 1) saw them: born at which event, released at which, from which call site, on
// which device; and the live bytes after every event that changed them. Kept only when asked
// (AnalysisOptions::record_lives): the report needs totals, the viewer and the trace draw each
// allocation and each curve. This is the one record of an allocation's life on the read side: the
// trace (src/output/trace) and the viewer's data (src/output/view) read these and replay nothing.
// Because they come from the replay the verdicts come from, a drawing's peak and live bytes are the
// report's numbers by construction: a device's curve peaks at its peak_live_bytes and ends at its
// live_at_exit_bytes.
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

// One counter's steps: its value after each event position that changed it, positions ascending
// (one entry per position: the value once all of that position's changes are applied). Before
// positions[0] the value is 0.
struct LiveCurve {
  std::vector<uint32_t> positions;
  std::vector<uint64_t> bytes;
  uint64_t peak = 0;                     // the highest value
  uint32_t peak_position = kStillAlive;  // the position that first reached it; kStillAlive: never above 0
  bool empty() const { return positions.empty(); }
  uint64_t last() const { return bytes.empty() ? 0 : bytes.back(); }
};

// One device's curves (Analysis::devices order).
struct DeviceCurve {
  int device = 0;
  // Device memory (device pointers, arrays, VMM physical memory, a framework allocator's
  // segments): peak == DeviceSummary::peak_live_bytes, last() == live_at_exit_bytes.
  LiveCurve live;
  // The blocks a framework allocator handed out inside this device's segments (format 1.3): a
  // share of `live`, never added to it. Empty when the capture has none.
  LiveCurve blocks;
};

// Positions count memory events in effective-time order: position k is "the k-th event".
struct Lives {
  std::vector<AllocationLife> lives;  // in birth order
  std::vector<uint64_t> times;        // per event position: the record's monotonic ns
  // Per event position, the index of its record in Capture::memory; empty when the file order is
  // the time order (then position k is record k) or when the records were streamed (analyze over a
  // MemorySource: there is no Capture::memory to index).
  std::vector<uint32_t> record_of;
  std::vector<DeviceCurve> devices;  // one per Analysis::devices, same order
  LiveCurve host;                    // host pinned and registered memory (accounting.host_pinned_*)

  uint32_t size() const { return static_cast<uint32_t>(times.size()); }
  // The index in Capture::memory of the record at position k.
  uint32_t record(uint32_t k) const { return record_of.empty() ? k : record_of[k]; }
  // The first position whose time is >= t (monotonic ns); size() when none.
  uint32_t position_at(uint64_t t) const;
  // Indices into `lives` of the allocations on `device` live just before position p (p = size():
  // at the end): its device memory; with `per_tensor`, what the report names sites of instead (a
  // framework allocator's blocks in place of the segments holding them, pool_blocks.h).
  std::vector<uint32_t> live_before(uint32_t p, int device, bool per_tensor = false) const;
};

}  // namespace gpuleak::analysis
