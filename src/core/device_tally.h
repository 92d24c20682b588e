// Live and peak bytes per device, counted by whoever drains the threads' buffers (the writer
// thread, or an OOM flush) from the memory records going by: the bookkeeping the hot path no
// longer does (issue #15). It feeds the statistics record, the NVML samples' tracked bytes and
// the at-exit summary line; the report's own numbers come from the analysis, which replays the
// whole capture in time order.
//
// One drain holds each thread's new records in that thread's order; the tally orders the drain's
// records by time before it counts them, so the peak is the live bytes' highest point in time
// order, exact but for a record taken before a drain and appended after it (it is counted with the
// next drain).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "format/capture_format.h"

namespace gpuleak::core {

class DeviceTally {
 public:
  static constexpr int kMaxDevices = 64;

  // One drain: add() each memory record (in nanoseconds) as it leaves its thread's buffer, then
  // settle() once, which counts them in time order. Called by the holder of the drain alone; the
  // getters below may be called from any thread.
  void add(const format::MemoryRecord &r);
  void settle();
  // Counts one record at once, in the caller's order (no time sort, no allocation): the
  // async-signal-safe drains of _exit and fatal signals, which hold the drain claim.
  void add_now(const format::MemoryRecord &r);
  // add() for every memory record among whole records (capture-format framing), then settle().
  void add_drained(const uint8_t *data, size_t n);

  uint64_t device_live(int device) const { return live_[slot(device)].load(std::memory_order_relaxed); }
  uint64_t device_peak(int device) const { return peak_[slot(device)].load(std::memory_order_relaxed); }
  uint64_t total_live() const { return total_live_.load(std::memory_order_relaxed); }
  uint64_t total_peak() const { return total_peak_.load(std::memory_order_relaxed); }
  uint64_t host_live() const { return host_live_.load(std::memory_order_relaxed); }

  static int slot(int device) { return device < 0 ? 0 : device % kMaxDevices; }

 private:
  struct Change {
    uint64_t ts;
    int64_t bytes;
    int16_t slot;
    uint8_t what;  // Target
  };
  enum Target : uint8_t { kDevice, kHost, kReset };
  void apply(const Change &c);
  static bool change_of(const format::MemoryRecord &r, Change *c);

  std::vector<Change> changes_;  // one drain's, reused
  std::array<std::atomic<uint64_t>, kMaxDevices> live_{};
  std::array<std::atomic<uint64_t>, kMaxDevices> peak_{};
  std::atomic<uint64_t> total_live_{0};
  std::atomic<uint64_t> total_peak_{0};
  std::atomic<uint64_t> host_live_{0};
};

}  // namespace gpuleak::core
