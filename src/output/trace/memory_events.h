// The memory records as the timeline shows them: in the analysis's effective-time order (the
// positions of analysis/lives.h), each with the allocation life it made or ended. Nothing here
// replays or orders the capture again: the order, the lives and the live curves are the analysis's.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "analysis/analysis.h"
#include "format/capture_reader.h"

namespace gpuleak::output::trace {

inline constexpr uint32_t kNoEvent = std::numeric_limits<uint32_t>::max();

class MemoryEvents {
 public:
  // The capture must outlive this (records are read in place). `analysis` is the capture's; its
  // lives are used (analysis::lives_of).
  MemoryEvents(const format::Capture &capture, const analysis::Analysis &analysis);

  const analysis::Lives &lives() const { return *lives_; }
  // Event positions 0..size()-1.
  uint32_t size() const { return lives_->size(); }
  const format::MemoryRecord &at(uint32_t k) const { return capture_.memory[lives_->record(k)]; }
  // ns since the capture's start (signed: a record before the header's anchor stays before it).
  int64_t time(uint32_t k) const { return static_cast<int64_t>(lives_->times[k] - anchor()); }
  uint64_t anchor() const { return capture_.header.monotonic_ns; }
  // The first position whose record time is >= t (monotonic ns); size() when none.
  uint32_t lower_bound(uint64_t t) const { return lives_->position_at(t); }
  // The allocation (index into lives().lives) that event k made, or for a free the one it
  // released; kNoEvent for any other event.
  uint32_t life_of(uint32_t k) const { return life_of_[k]; }

 private:
  const format::Capture &capture_;
  std::shared_ptr<const analysis::Lives> lives_;
  std::vector<uint32_t> life_of_;
};

}  // namespace gpuleak::output::trace
