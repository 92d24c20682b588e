// Which allocation/free events and NVTX ranges a trace shows (docs/trace-format.md "Size
// bounds"). Counters, iteration slices, leak markers and OOM markers are always complete; the
// individual events are what makes a long run's trace too big to open, so by default only the
// ones that explain something are kept: the first and last iterations (warm-up and the steady
// state), the allocations of leaking call sites, and the moments around each out-of-memory
// failure. TraceOptions::full keeps everything.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analysis/analysis.h"
#include "output/trace/memory_events.h"
#include "output/trace/nvtx_ranges.h"
#include "output/trace/trace_options.h"

namespace gpuleak::output::trace {

struct Selection {
  std::string policy;                 // "full", "all" (small enough to show whole) or "bounded"
  std::vector<uint32_t> memory;       // event positions shown, ascending
  std::vector<uint32_t> nvtx_ranges;  // indices into NvtxTimeline::ranges, ascending
  std::vector<uint32_t> nvtx_marks;   // indices into NvtxTimeline::marks, ascending
  // Time windows (ns since the start) shown in detail: [first, last] of each, by start.
  std::vector<std::pair<int64_t, int64_t>> windows;
};

Selection select_events(const MemoryEvents &events, const analysis::Analysis &analysis, const NvtxTimeline &nvtx,
                        const TraceOptions &options);

// Keeps `budget` elements spread evenly over v (the first and the last among them); budget 0
// keeps none.
template <typename T>
void thin_evenly(std::vector<T> *v, size_t budget) {
  const size_t n = v->size();
  if (n <= budget) return;
  if (budget == 0) {
    v->clear();
    return;
  }
  std::vector<T> kept;
  kept.reserve(budget);
  for (size_t i = 0; i < budget; ++i) {
    size_t at = budget == 1 ? 0 : static_cast<size_t>((static_cast<unsigned __int128>(i) * (n - 1)) / (budget - 1));
    kept.push_back((*v)[at]);
  }
  v->swap(kept);
}

}  // namespace gpuleak::output::trace
