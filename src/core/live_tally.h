// Live and peak bytes per device as the recorder itself knows them: the one thing the process
// must pair frees for (recorder_state.h says why). Kept by whoever holds the drain claim, from the
// records it drains, on copies: never in a hook, and never written into the capture, whose frees
// the reader pairs (format/free_pairing.h). The getters may be read from any thread.
//
// A drain hands each thread's records in that thread's order; the tally takes a drain's records in
// time order across threads, so that a device's peak is its highest point in time. What a drain
// cannot order is a free read before a drain and appended after it, while another thread's
// allocation at the freed address went out with that drain: the allocation replaces the entry (the
// old allocation ends there) and the late free, older than the entry, is recognized and consumed.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "format/capture_format.h"
#include "format/free_pairing.h"

namespace gpuleak::core {

class LiveTally {
 public:
  static constexpr int kMaxDevices = 64;

  // At capture start: room for the allocations a signal-time drain may meet (it cannot grow).
  void reserve();
  // One drain's whole records (capture framing), taken in time order. Drain claim held.
  void add_drained(const uint8_t *data, size_t n);
  // One record at once, in the caller's order: async-signal-safe (no sort, no allocation; an
  // allocation that finds the table full is not counted). Drain claim held.
  void add_now(const format::MemoryRecord &r);

  uint64_t device_live(int device) const { return live_[slot(device)].load(std::memory_order_relaxed); }
  uint64_t device_peak(int device) const { return peak_[slot(device)].load(std::memory_order_relaxed); }
  uint64_t total_live() const { return total_live_.load(std::memory_order_relaxed); }
  uint64_t total_peak() const { return total_peak_.load(std::memory_order_relaxed); }
  uint64_t host_live() const { return host_live_.load(std::memory_order_relaxed); }
  // Live allocations, reservations and pools (what the at-exit line calls live allocations).
  uint64_t live_count() const { return count_.load(std::memory_order_relaxed); }

  static int slot(int device) { return device < 0 ? 0 : device % kMaxDevices; }

 private:
  void apply(const format::MemoryRecord &r, bool may_grow);
  void change(int16_t device, uint8_t kind, int64_t bytes);
  void reset(int16_t device);

  format::PairingTable table_{4096};
  std::vector<std::pair<uint64_t, size_t>> order_;  // one drain's (time, position), reused
  std::array<std::atomic<uint64_t>, kMaxDevices> live_{};
  std::array<std::atomic<uint64_t>, kMaxDevices> peak_{};
  std::atomic<uint64_t> total_live_{0};
  std::atomic<uint64_t> total_peak_{0};
  std::atomic<uint64_t> host_live_{0};
  std::atomic<uint64_t> count_{0};
};

}  // namespace gpuleak::core
