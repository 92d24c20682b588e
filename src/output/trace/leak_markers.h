// Where each leak was made: for every leaking call site (analysis::Leak, the analysis' verdict,
// never re-decided here), the primary iterations in which allocations from it were born that are
// still live at the end of the capture. One marker per (leak, iteration).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "analysis/analysis.h"
#include "output/trace/memory_events.h"

namespace gpuleak::output::trace {

struct LeakMarker {
  size_t leak = 0;       // index into Analysis::leaks
  size_t iteration = 0;  // index into Analysis::iterations
  int64_t ts_ns = 0;     // birth of the first such allocation in that iteration (ns since the start)
  uint64_t bytes = 0;    // bytes born in that iteration from the site, still live at the end
  uint64_t count = 0;
};

// Per entry of events.lives().lives: the index into Analysis::leaks of the leak its call site and device
// make it part of, or -1.
std::vector<int> leak_of_lives(const MemoryEvents &events, const analysis::Analysis &analysis);

// By time. At most `budget` markers over all leaks (each leak gets an equal share, thinned
// evenly over its iterations).
std::vector<LeakMarker> leak_markers(const MemoryEvents &events, const analysis::Analysis &analysis, size_t budget);

}  // namespace gpuleak::output::trace
