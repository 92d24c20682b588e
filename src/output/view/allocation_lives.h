// Every device allocation's life (born when, freed when, from which call site), as the analysis
// replayed it. The viewer's timeline, flame graphs and temporal view are drawn from these lives, so
// that their numbers are the report's numbers: the same events, in the same order, matched by the
// same rules (src/analysis/ledger.cpp), never a second interpretation of the capture.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "analysis/analysis.h"
#include "format/capture_reader.h"

namespace gpuleak::output::view {

inline constexpr uint32_t kAlive = std::numeric_limits<uint32_t>::max();

// One device allocation (host pinned/registered memory is not device memory and is left out).
// Positions count memory events in effective-time order: position k is "the k-th event".
struct Life {
  int device = 0;
  uint64_t size = 0;
  uint32_t birth = 0;       // position of the allocation
  uint32_t death = kAlive;  // position of its release (free, context reset, address reused)
  uint64_t birth_ns = 0;    // since the run's start
  uint64_t death_ns = 0;    // since the run's start; meaningless while death == kAlive
  analysis::Site site;
  // A framework allocator's block (a tensor inside a segment, capture format 1.3): drawn by site
  // like any allocation, but never in the device's curve, which its segment makes already.
  bool pool_block = false;
  // A device allocation that held such blocks: in the curve, but its tensors stand for it by site.
  bool segment = false;
};

class AllocationLives {
 public:
  // The lives `analysis` recorded (AnalysisOptions::record_lives) of `capture`; an analysis that
  // recorded none is redone with record_lives. Never throws for any capture content.
  AllocationLives(const format::Capture &capture, const analysis::Analysis &analysis);
  ~AllocationLives();
  AllocationLives(const AllocationLives &) = delete;
  AllocationLives &operator=(const AllocationLives &) = delete;

  // Device allocations in birth order.
  const std::vector<Life> &lives() const { return lives_; }
  // The first position whose time (since the run's start) is >= t_ns; the event count when none.
  uint32_t position_at(uint64_t t_ns) const;
  // Time of an event position, since the run's start.
  uint64_t time_of(uint32_t position) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<Life> lives_;
};

}  // namespace gpuleak::output::view
