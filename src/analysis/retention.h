// Retention paths joined to live allocations (retention.cpp). Private to src/analysis.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/replay_observer.h"
#include "analysis/timeline.h"

namespace gpuleak::analysis::detail {

// Watches pass 1: the live blocks and device allocations by address, and, at each retention
// path's time, which allocation (site, device slot) and how many of its bytes the path holds.
// Memory: the live allocations of those two spaces and one entry per matched path.
class RetentionJoin : public Observer {
 public:
  explicit RetentionJoin(const format::Capture &capture);
  bool empty() const { return order_.empty() && capture_.retentions.empty(); }
  void before(uint32_t k, const format::MemoryRecord *r, const LiveSet &live) override;
  void born(uint32_t k, const format::MemoryRecord &r, const LiveAllocation &a) override;
  void died(uint32_t k, const format::MemoryRecord &r, const LiveAllocation &a) override;
  void finish(const LiveSet &live) override;
  // After decide(): fills Leak::retained of every leak, and Analysis::retention_walks.
  void apply(const std::vector<int> &devices, const SiteTable &sites, Analysis *out) const;

 private:
  struct Held {
    uint64_t size;
    uint32_t site, ordinal;
    uint16_t slot;
  };
  struct Match {
    uint32_t path, site;
    uint16_t slot;
    uint64_t bytes;
  };
  void place(uint32_t path);
  const format::Capture &capture_;
  std::vector<uint32_t> order_;  // paths (not summaries) by time
  size_t next_ = 0;
  std::map<uint64_t, Held> blocks_, device_;
  std::vector<Match> matches_;
};

}  // namespace gpuleak::analysis::detail
