// A framework allocator's blocks inside its segments (capture format 1.3, kind pool_block): PyTorch's
// caching allocator gets large segments from CUDA (cudaMalloc, or cuMemCreate + cuMemMap into a
// reserved range with expandable segments) and hands its tensors out as blocks inside them; its
// trace tracker tells gpuleak about every block (src/shim/c_api.cpp, gpuleak_api_pool_block).
//
// Both levels are kept. A device allocation (or mapped VMM memory) whose address range ever holds
// part of a block is a segment: a container. Its bytes are real device memory (device live and peak bytes, the OOM
// forecast) but it is no leak candidate: its growth is explained by the blocks it holds, which are
// (leak_candidate, below). The blocks carry no device bytes of their own (ledger.cpp).
//
// This observer watches pass 1 of the replay: the live device-pointer allocations and VMM mappings
// by address range per device, which of them are segments, and per (segment site, block site) the
// bytes live now, at their most and at exit: the report's `segments` section. Memory: the live
// ranges, the live blocks and one bit per allocation.
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/replay_observer.h"
#include "analysis/timeline.h"

namespace gpuleak::analysis::detail {

class PoolBlocks;

// A device's framework pool at the end of the last primary iteration (PoolBlocks::snapshot_at):
// the segments' bytes and the blocks' bytes inside them.
struct PoolTotals {
  int device = 0;
  uint64_t reserved_bytes = 0;
  uint64_t object_bytes = 0;
};

// Whether an allocation's bytes are a call site's own, for leaks, live at exit and OOM sites: device
// memory, and a framework allocator's blocks; not the segments that hold blocks (`pool` null: no
// blocks in the capture).
bool leak_candidate(const PoolBlocks *pool, const LiveAllocation &a);

class PoolBlocks : public Observer {
 public:
  PoolBlocks(const SiteTable &sites, const std::vector<int> &devices) : sites_(sites), devices_(devices) {}

  // Whether the allocation held part of a block at some point so far (a segment).
  bool segment(const LiveAllocation &a) const { return a.ordinal < segment_.size() && segment_[a.ordinal]; }

  void before(uint32_t k, const format::MemoryRecord *r, const LiveSet &live) override;
  void after(uint32_t k, const LiveSet &live) override;
  void born(uint32_t k, const format::MemoryRecord &r, const LiveAllocation &a) override;
  void died(uint32_t k, const format::MemoryRecord &r, const LiveAllocation &a) override;
  void remapped(uint32_t k, uint32_t old, const LiveAllocation &a) override;
  void finish(const LiveSet &live) override;

  // Each device's pool totals as they stand before the replay reaches `position` (the last
  // primary iteration's end, Primary::end_pos), or at the end of the replay (pools()).
  void snapshot_at(uint32_t position) { snapshot_at_ = position; }
  const std::vector<PoolTotals> &pools() const { return pools_; }

  // After the replay: the segments by site, devices ascending, most bytes at exit first.
  std::vector<SegmentSite> take();

 private:
  struct Range {  // a live device allocation or VMM mapping: [start, end)
    uint64_t end = 0;
    uint32_t ordinal = 0;  // the allocation (a mapping: its physical memory's)
    uint32_t site = 0;     // its site (a VMM allocation: its first mapping's)
  };
  struct Holder {  // one segment site's blocks of one block site
    uint64_t live = 0, peak = 0, exit_bytes = 0, exit_count = 0;
  };
  struct SegmentTally {
    uint64_t count = 0, live = 0, peak = 0, exit_bytes = 0, exit_count = 0;
    std::unordered_map<uint32_t, Holder> blocks;  // block site -> bytes
  };
  static uint64_t key(uint16_t slot, uint32_t site) { return static_cast<uint64_t>(slot) << 32 | site; }
  void snapshot();
  void add_range(uint16_t slot, uint64_t start, const Range &range);
  void drop_ranges(uint32_t ordinal);
  void mark(std::map<uint64_t, Range>::const_iterator range, uint16_t slot);

  const SiteTable &sites_;
  const std::vector<int> &devices_;                                                 // slot -> device
  std::vector<std::map<uint64_t, Range>> ranges_;                                   // per slot, by start
  std::unordered_map<uint32_t, std::vector<std::pair<uint16_t, uint64_t>>> owned_;  // ordinal -> its ranges
  std::vector<bool> segment_;                                                       // by ordinal
  std::unordered_map<uint32_t, uint64_t> holder_of_;                    // live block ordinal -> key(slot, segment site)
  std::unordered_map<uint32_t, std::pair<uint64_t, uint64_t>> marked_;  // live segment -> (key, bytes)
  uint32_t snapshot_at_ = UINT32_MAX;
  bool snapped_ = false;
  std::vector<PoolTotals> pools_;
  std::unordered_map<uint64_t, SegmentTally> tallies_;  // key(slot, segment site)
  format::MemoryRecord pending_map_{};                  // a mapping seen in before(), placed in after()
  bool map_pending_ = false;
};

}  // namespace gpuleak::analysis::detail
