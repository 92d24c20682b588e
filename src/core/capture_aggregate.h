// The capture's aggregated form (issue #25): what the writer thread writes once the capture has
// reached its budget (GPULEAK_MAX_CAPTURE) or its file system runs low. Allocations and frees stop
// going out one by one; they are folded, per window of iterations of one loop, into a row per
// (call site, device, kind, window of birth): allocations and bytes born in the window, and the
// frees of each earlier window's allocations. That keeps what the verdicts need (every site's
// survivors at every window's end, the live set, the devices' bytes) in a size that grows with
// the sites and the logarithm of the iterations, not with the events: windows are one iteration
// wide at first, and each kWindowsPerWidth windows the width doubles.
//
// Writer thread only, under the drain claim: it never runs in a hook. It keeps its own table of
// the allocations it folded (their site, window and time of birth), so that their frees, which
// the hooks write raw (no size), are folded too; an allocation made before the switch keeps its
// raw record, and so does its free.
// The records are documented in format/capture_format.h and docs/capture-format.md.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "format/capture_format.h"

namespace gpuleak::core {

class CaptureAggregator {
 public:
  static constexpr uint32_t kWindowsPerWidth = 64;
  // A window closes after this long even short of its iterations, so that a killed process, or
  // one that marks no iterations, loses no more of the aggregated stretch than this.
  static constexpr uint64_t kMaxWindowNs = 5'000'000'000ull;

  // Before the switch: the markers of each batch written raw (which loop is open, and where).
  void observe_raw(const uint8_t *data, size_t n);
  bool active() const { return active_; }
  // From now on every batch goes through fold(). `now_ns`: the capture clock at the switch.
  void start(uint64_t now_ns, bool low_disk);
  // One drained batch (whole records, each thread's in time order): what must stay raw, and the
  // records of the windows that closed, are appended to *out.
  void fold(const uint8_t *data, size_t n, std::string *out);
  // Closes the open window when it is older than kMaxWindowNs (the writer's clock).
  void close_if_stale(uint64_t now_ns, std::string *out);
  // The end of the capture: the open window, flagged final.
  void finish(std::string *out);

  uint64_t switched_at_ns() const { return switched_at_; }
  uint64_t folded() const { return folded_; }
  uint64_t live_allocations() const { return live_.size(); }

 private:
  struct Born {
    uint64_t size;
    uint64_t birth_ns;
    uint32_t stack_id, py_stack_id, window;
    int16_t device;
    uint8_t kind;
    uint32_t late_frees;  // frees still to come of allocations this one replaced at its address
  };
  struct RowKey {
    uint32_t stack_id, py_stack_id, birth;
    int16_t device;
    uint8_t kind;
    bool operator==(const RowKey &o) const {
      return stack_id == o.stack_id && py_stack_id == o.py_stack_id && birth == o.birth && device == o.device &&
             kind == o.kind;
    }
  };
  struct RowHash {
    size_t operator()(const RowKey &k) const {
      uint64_t h = (uint64_t{k.stack_id} << 32 | k.py_stack_id) * 0x9e3779b97f4a7c15ull;
      h ^= (uint64_t{k.birth} << 24 | uint64_t(uint16_t(k.device)) << 8 | k.kind) + (h >> 29);
      return static_cast<size_t>(h * 0xbf58476d1ce4e5b9ull);
    }
  };
  struct Row {
    uint64_t alloc_bytes = 0, freed_bytes = 0;
    uint32_t allocs = 0, frees = 0;
  };
  struct Timed {
    uint64_t ts;
    size_t at;  // the record's header in the batch
  };

  void marker(const format::MarkerRecord &m, bool raw);
  void memory(const format::MemoryRecord &r, const uint8_t *record, size_t record_n, std::string *out);
  void boundary_end(uint64_t ts);  // an iteration of the tracked loop ended
  void close_window(uint64_t end_ns, uint32_t extra_flags, std::string *out);
  void touch(uint64_t ts);

  bool active_ = false;
  uint64_t switched_at_ = 0;
  bool first_fold_ = true;
  bool low_disk_ = false;  // the switch's reason, flagged on the first window  // the switch's batch: its records may
                           // be older than the switch itself
  uint64_t folded_ = 0;

  // The loop whose iterations make the windows: the one begun most often (by the raw markers
  // before the switch; else the first begun after it), and whether one of its iterations is open.
  std::unordered_map<uint32_t, uint64_t> begins_;  // loop label -> begins seen
  uint32_t loop_ = 0;                              // its label id (0: none chosen yet)
  uint32_t loop_tid_ = 0;
  bool loop_chosen_ = false;
  bool open_ = false;
  uint64_t open_since_ = 0;
  // Per thread, the labels of its open iterations, innermost last (an end closes the innermost).
  std::unordered_map<uint32_t, std::vector<uint32_t>> open_by_thread_;

  // The open window.
  uint32_t number_ = 1;
  uint32_t width_ = 1;
  uint32_t at_width_ = 0;  // windows closed at this width
  uint64_t start_ns_ = 0, first_begin_ns_ = 0, iterations_end_ns_ = 0, last_ns_ = 0;
  uint32_t iterations_ = 0;
  uint64_t events_ = 0, dropped_ = 0;
  bool open_at_start_ = false;
  bool first_begin_seen_ = false;
  std::unordered_map<RowKey, Row, RowHash> rows_;

  std::unordered_map<uint64_t, Born> live_;  // folded allocations still live, by space and address
  std::vector<Timed> order_;                 // one batch's records in time order (reused)
  std::string *out_ = nullptr;               // fold()'s output, for the windows its markers close
};

}  // namespace gpuleak::core
