// What became of CUPTI in a run, typed: written by the shim (cupti_bridge.cpp, through
// core::set_cupti_state) into StatsRecord::cupti_state, read back once where the capture is read
// (Capture::cupti), named in the report (`capture.cupti`) and explained by the trace.
#pragma once

#include <cstdint>

namespace gpuleak::format {

// The recorded values are the capture format's: never renumbered within a major version.
enum class CuptiState : uint32_t {
  kOff = 0,          // not asked for (GPULEAK_CUPTI unset): the default
  kOn = 1,           // subscribed
  kUnavailable = 2,  // asked for, but libcupti could not be loaded or refused
  kTaken = 3,        // another tool held the one subscriber slot
  kYielded = 4,      // given back to the program's own profiler (torch.profiler, Nsight)
  kUnknown = 5,      // no stats record, or a newer writer's value
};

// A recorded StatsRecord::cupti_state; kUnknown for a value this reader does not know.
inline CuptiState cupti_state_of(uint32_t recorded) {
  return recorded < static_cast<uint32_t>(CuptiState::kUnknown) ? static_cast<CuptiState>(recorded)
                                                                : CuptiState::kUnknown;
}

// The report's name (capture.cupti): "off", "on", "unavailable", "taken", "yielded", "unknown".
inline const char *cupti_state_name(CuptiState state) {
  static const char *const names[] = {"off", "on", "unavailable", "taken", "yielded", "unknown"};
  return names[static_cast<uint32_t>(cupti_state_of(static_cast<uint32_t>(state)))];
}

}  // namespace gpuleak::format
