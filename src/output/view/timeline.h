// Device live bytes after every memory event that changed them: the viewer's memory-over-time plot.
#pragma once

#include <cstdint>
#include <vector>

#include "output/view/allocation_lives.h"
#include "output/view/decimate.h"

namespace gpuleak::output::view {

struct DeviceTimeline {
  int device = 0;
  Series series;               // starts at (0, 0) and ends at end_ns with the live bytes at the end
  uint64_t peak_bytes = 0;     // equals the analysis's peak_live_bytes
  uint64_t peak_ns = 0;        // when the peak was first reached
  uint32_t peak_position = 0;  // the event that reached it (allocations born at or before it are live)
};

// One timeline per device in `devices` (ascending index), from the allocations' lives.
std::vector<DeviceTimeline> device_timelines(const AllocationLives &lives, const std::vector<int> &devices,
                                             uint64_t end_ns);

}  // namespace gpuleak::output::view
