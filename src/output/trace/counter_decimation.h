// Live-bytes counters thinned for a viewer: a run with millions of allocations would otherwise
// draw millions of counter points. Points are never averaged (an average hides the spike that
// caused an OOM): time is cut into buckets, and each bucket keeps the moment of its maximum and
// its last value, so every local maximum survives and the value at every bucket edge is exact.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "output/trace/memory_replay.h"

namespace gpuleak::output::trace {

struct CounterPoint {
  int64_t ts_ns = 0;   // since the capture's start
  uint16_t track = 0;  // as LiveChange::track
  uint64_t value = 0;
};

struct Counters {
  std::vector<CounterPoint> points;  // by time; each used track starts with a 0 at the capture's start
  uint64_t bucket_ns = 0;            // the bucket width used (2 points at most per bucket and track)
  size_t changes = 0;                // counter changes before thinning
  std::vector<bool> used;            // per track: it changed at least once
};

// Buckets are 2 x resolution_ns wide (at most ~1 point per resolution_ns), widened when needed
// so that all tracks together stay under max_points (0: no cap). `tracks` is the number of
// counter tracks (devices + 1 for host memory).
Counters decimate(const MemoryReplay &replay, size_t tracks, uint64_t resolution_ns, size_t max_points);

}  // namespace gpuleak::output::trace
