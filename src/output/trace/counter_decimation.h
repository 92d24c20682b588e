// The timeline's live-bytes counters: the curves the analysis keeps (analysis/lives.h), thinned by
// the one decimation rule (output/curve_decimation.h) so that a run with millions of allocations
// does not draw millions of counter points. Every curve's peak, troughs and the value at every
// bucket edge survive; nothing is averaged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "analysis/lives.h"

namespace gpuleak::output::trace {

// Counter tracks: 0..D-1 the devices' live bytes (Lives::devices order), D host pinned and
// registered memory, D + 1 + slot the tensors a framework allocator handed out inside that
// device's segments (capture format 1.3).
struct CounterPoint {
  int64_t ts_ns = 0;  // since the capture's start
  uint16_t track = 0;
  uint64_t value = 0;
};

struct Counters {
  std::vector<CounterPoint> points;  // by time; each used track starts with a 0 at the capture's start
  uint64_t bucket_ns = 0;            // the bucket width used (3 points at most per bucket and track)
  size_t changes = 0;                // counter changes before thinning (event positions that moved a curve)
  std::vector<bool> used;            // per track (2 x devices + 1): it changed at least once
};

// Buckets are 2 x resolution_ns wide, widened when needed so that all tracks together stay under
// max_points (0: no cap). `anchor`: the capture's monotonic start.
Counters decimate(const analysis::Lives &lives, uint64_t anchor, uint64_t resolution_ns, size_t max_points);

}  // namespace gpuleak::output::trace
