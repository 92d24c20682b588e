// The one clock of a capture: CLOCK_MONOTONIC nanoseconds (vDSO, ~20 ns), anchored once per file
// to CLOCK_REALTIME so that processes and ranks merge on one time line.
#pragma once

#include <cstdint>
#include <ctime>

namespace gpuleak::core {

inline uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace gpuleak::core
