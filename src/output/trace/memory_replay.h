// What a timeline draws from a capture: the memory records in effective-time order, live bytes
// after every change, and the life of every allocation (which event made it, which ended it).
//
// The lives are the analysis's own (analysis/lives.h: recorded during the replay its verdicts
// come from), so the curves agree with the report by construction: a device's highest counter
// value is its peak_live_bytes, its last one its live_at_exit_bytes, and the value at an
// iteration's end that iteration's live_end_bytes (tests/unit/trace/memory_replay_test.cpp).
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "analysis/analysis.h"
#include "format/capture_reader.h"

namespace gpuleak::output::trace {

inline constexpr uint32_t kNoEvent = std::numeric_limits<uint32_t>::max();

// One owned allocation (device or host memory).
struct Life {
  uint64_t size = 0;
  uint32_t birth = 0;         // event position of the allocation
  uint32_t death = kNoEvent;  // event position that released it; kNoEvent: alive at the end
  uint32_t stack_id = 0;      // call site (a VMM allocation: the site of its first mapping)
  uint32_t py_stack_id = 0;
  int device = 0;  // device index (host memory: -1)
  // A framework allocator's block (a tensor, format 1.3): shown as an allocation, never in a
  // counter (its segment's bytes are the device's already).
  bool pool_block = false;
  bool segment = false;  // device memory that held such blocks
};

// A counter value after one event: track 0..devices.size()-1 are the devices (same order),
// track devices.size() is host pinned/registered memory, and devices.size() + 1 + slot the
// tensors a framework allocator handed out inside that device's segments (capture format 1.3).
struct LiveChange {
  uint32_t position = 0;
  uint16_t track = 0;
  uint64_t live = 0;
};

class MemoryReplay {
 public:
  // The capture must outlive the replay (records are read in place). `analysis` is the capture's;
  // without recorded lives (AnalysisOptions::record_lives) they are recorded by a default analysis.
  MemoryReplay(const format::Capture &capture, const analysis::Analysis &analysis);

  // Event positions: the memory records in effective-time order (stable by time).
  uint32_t size() const { return size_; }
  const format::MemoryRecord &at(uint32_t k) const { return memory_[order_.empty() ? k : order_[k]]; }
  // ns since the capture's start (signed: a record before the header's anchor stays before it).
  int64_t time(uint32_t k) const;
  uint64_t anchor() const { return anchor_; }  // the capture header's monotonic_ns
  // The first position whose record time is >= t (monotonic ns); size() when none.
  uint32_t lower_bound(uint64_t t) const;

  std::vector<int> devices;         // ascending, as analysis::Analysis::devices
  std::vector<Life> lives;          // in birth order
  std::vector<LiveChange> changes;  // in position order
  std::vector<uint64_t> peak;       // per device slot: highest live bytes
  std::vector<uint32_t> peak_at;    // per device slot: position just after the peak was first reached
  uint64_t host_peak = 0;

  // The allocation an event made or ended (for a free: the one it released), else kNoEvent.
  uint32_t life_of(uint32_t k) const { return life_of_[k]; }
  // Device slot of a device index, -1 when never seen.
  int slot_of(int device) const;

  // Live allocations on `device` just before position p (p = size(): at the end), by index: its
  // device memory; `per_tensor`: what the report names sites of instead, a framework allocator's
  // blocks in place of the segments holding them (analysis/pool_blocks.h).
  std::vector<uint32_t> live_before(uint32_t p, int device, bool per_tensor = false) const;

 private:
  const format::MemoryRecord *memory_ = nullptr;
  std::vector<uint32_t> order_;  // empty when file order is time order
  uint32_t size_ = 0;
  uint64_t anchor_ = 0;
  std::vector<uint32_t> life_of_;
};

}  // namespace gpuleak::output::trace
