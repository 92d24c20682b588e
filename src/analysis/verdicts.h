// The verdicts (verdicts.cpp) and the forecast (forecast.cpp): which call sites keep memory alive
// across the primary iterations, whether each device leaks or grows, and when it runs out.
// Private to src/analysis.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/ledger.h"
#include "analysis/replay_observer.h"
#include "analysis/timeline.h"

namespace gpuleak::analysis::detail {

class PoolBlocks;   // pool_blocks.h
struct PoolTotals;  // pool_blocks.h

// Per (device, site): the live bytes and counts at the primary iteration ends, as changes at
// the ends where an allocation started or stopped counting (verdicts.cpp).
// With own_births, the loop is not the replay's primary (LiveAllocation::ends_at_birth counts another
// loop's ends): each allocation's birth iteration is searched for in `primary`'s ends.
class SurvivorObserver : public Observer {
 public:
  SurvivorObserver(const Primary &primary, const PoolBlocks *pool, bool own_births = false)
      : primary_(primary), pool_(pool), ends_(primary.end_pos), own_births_(own_births) {}
  void died(uint32_t k, const format::MemoryRecord &r, const LiveAllocation &a) override;
  void finish(const LiveSet &live) override;

  struct Delta {
    uint32_t iteration;  // index into the primary iterations
    int64_t bytes;
    int64_t count;
  };
  struct Series {
    uint16_t slot = 0;
    uint32_t site = 0;
    std::vector<Delta> deltas;              // merged by iteration from time to time: O(iterations), not O(allocations)
    size_t merged = 0;                      // deltas.size() after the last merge
    uint64_t survivors = 0;                 // born after warm-up, alive at the end of >= 1 iteration
    uint64_t survivors_freed = 0;           // ... of which gone by the end of the last iteration
    std::vector<uint32_t> last_alive_from;  // birth iteration of each allocation live at the last end
    uint64_t live_at_exit_bytes = 0, live_at_exit_count = 0;
  };
  std::vector<Series> series;

 private:
  void add(const LiveAllocation &a, uint32_t ub);
  const Primary &primary_;
  const PoolBlocks *pool_;
  PositionCursor ends_;  // over primary_.end_pos, at the replay's position
  bool own_births_ = false;
  std::unordered_map<uint64_t, uint32_t> index_;  // (slot, site) -> series
};
// Fills out->leaks, the devices' verdicts and growth fits, and out->verdict.
void decide(const Ledger &ledger, const SiteTable &sites, const Primary &primary, SurvivorObserver *survivors,
            const AnalysisOptions &options, Analysis *out);
// Fills the leaking or growing devices' forecasts; `pools`: each device's framework pool at the
// last primary iteration's end (PoolBlocks::pools), whose free space a leak fills first.
void forecast(const std::vector<Span> &spans, const Primary &primary, const Ledger &ledger,
              const std::vector<PoolTotals> &pools, Analysis *out);

}  // namespace gpuleak::analysis::detail
