// The capture's bound (issue #25): a size budget (GPULEAK_MAX_CAPTURE) and a watch on the free
// space of the file system that holds the capture. Past the switch point the writer folds events
// into the aggregated form (capture_aggregate.h); at the budget itself, or when the file system
// is nearly full, it stops writing, leaving a readable capture. The drain holder's state alone.
#pragma once

#include <cstdint>

namespace gpuleak::core {

struct CaptureBudget {
  uint64_t limit = 0;       // bytes the capture may take (0: no budget, the free-space watch only)
  uint64_t switch_at = 0;   // raw events stop here: the last part of the budget is the aggregated form's
  bool by_default = false;  // the default budget (GPULEAK_MAX_CAPTURE unset)
  // The free-space watch: below `low` free bytes the capture aggregates, below `stop` it stops.
  bool watch = false;
  uint64_t low = 0, stop = 0;
  uint64_t free_seen = 0;                    // free bytes at the last look
  uint64_t written_seen = 0;                 // bytes_written at that look
  const char *aggregated_because = nullptr;  // "budget" or "disk"
};

// The default budget: 4 GiB, or a quarter of the free space of the capture's file system at
// start, whichever is smaller (docs/safety.md "Capture budget" says why), never below 64 MiB.
uint64_t default_capture_budget(uint64_t free_bytes);
// What the free-space watch keeps free: aggregated below max(2 %, min(256 MiB, 1/8)) of the
// file system's size, stopped below half of that.
uint64_t free_space_reserve(uint64_t fs_bytes);

}  // namespace gpuleak::core
