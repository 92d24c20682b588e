// Each device's live bytes over the run, for the viewer's memory-over-time plot: the analysis's
// curve (analysis/lives.h DeviceCurve), on the viewer's clock, thinned by the one decimation rule
// (output/curve_decimation.h). The viewer computes no curve of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "analysis/lives.h"

namespace gpuleak::output::view {

struct DeviceTimeline {
  int device = 0;
  // Live bytes after each event that changed them (ns since the run's start): starts at (0, 0) and
  // ends at end_ns with the live bytes at the end.
  std::vector<uint64_t> t_ns;
  std::vector<uint64_t> bytes;
  size_t source_points = 0;    // points before thinning
  uint64_t peak_bytes = 0;     // the analysis's peak_live_bytes
  uint64_t peak_ns = 0;        // when the peak was first reached
  uint32_t peak_position = 0;  // the event that reached it (allocations born at or before it are live)
};

// One timeline per device of lives.devices (Analysis::devices order), each thinned to at most
// max_points points (below 4 counts as 4) when it has more. `anchor`: the capture's monotonic start.
std::vector<DeviceTimeline> device_timelines(const analysis::Lives &lives, uint64_t anchor, uint64_t end_ns,
                                             size_t max_points);

}  // namespace gpuleak::output::view
