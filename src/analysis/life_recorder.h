// Private to src/analysis: the observer that keeps what lives.h promises (AnalysisOptions::
// record_lives), filled by the ledger's replay like every other observer, so the lives and the
// curves are the very events the verdicts were computed on.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "analysis/lives.h"
#include "analysis/replay_observer.h"
#include "analysis/timeline.h"

namespace gpuleak::analysis::detail {

class PoolBlocks;  // pool_blocks.h

class LifeRecorder : public Observer {
 public:
  // `devices`: the ledger's slots (Timeline::devices). `segments`: which allocations held a
  // framework allocator's blocks (null when the capture has none).
  LifeRecorder(const SiteTable &sites, const PoolBlocks *segments, const std::vector<int> &devices);

  void before(uint32_t k, const format::MemoryRecord *r, const LiveSet &live) override;
  void born(uint32_t k, const format::MemoryRecord &r, const LiveAllocation &a) override;
  void died(uint32_t k, const format::MemoryRecord &r, const LiveAllocation &a) override;
  void finish(const LiveSet &live) override;

  // After the replay. `record_of`: the source's time order (VectorMemorySource::order()), empty
  // when it is the file order or the records were streamed.
  std::shared_ptr<const Lives> take(std::vector<uint32_t> record_of);

 private:
  struct Entry {
    AllocationLife life;
    uint16_t slot = 0;
    bool on_device = false;
  };
  // What is known of an allocation once it is gone, or at the end: its site, whether a segment.
  void ended(const LiveAllocation &a);
  // The allocation's bytes added to (up) or taken from its curve at event k.
  void change(uint32_t k, const LiveAllocation &a, bool up);

  const SiteTable &sites_;
  const PoolBlocks *segments_;
  std::vector<Entry> entries_;
  std::shared_ptr<Lives> lives_ = std::make_shared<Lives>();
  // Current values: per slot, device memory and blocks; host memory.
  std::vector<uint64_t> live_, blocks_;
  uint64_t host_ = 0;
};

}  // namespace gpuleak::analysis::detail
