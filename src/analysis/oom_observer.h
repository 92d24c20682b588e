// What was live at each out-of-memory failure (oom.cpp), taken as the ledger's replay reaches it.
// Private to src/analysis.
#pragma once

#include <cstdint>
#include <deque>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/replay_observer.h"
#include "format/capture_reader.h"

namespace gpuleak::analysis::detail {

class PoolBlocks;  // pool_blocks.h

// Out-of-memory failures (oom.cpp): the ones reported (newest first, at most max_oom_events) see
// what is live when the replay reaches them, and the device's recent events (a ring per device).
class OomObserver : public Observer {
 public:
  OomObserver(const format::Capture &capture, const AnalysisOptions &options);
  const std::vector<uint64_t> &times() const { return times_; }
  // Before the replay: the positions make_timeline found for times(), the sites and the devices.
  void place(const std::vector<uint32_t> &positions, const std::vector<int> &devices);
  void use_sites(const std::vector<Site> *sites) { sites_ = sites; }
  void use_pool(const PoolBlocks *pool) { pool_ = pool; }
  void before(uint32_t k, const format::MemoryRecord *r, const LiveSet &live) override;
  void born(uint32_t k, const format::MemoryRecord &r, const LiveAllocation &a) override;
  void remapped(uint32_t k, uint32_t old, const LiveAllocation &a) override;
  std::vector<OomEvent> events();  // after the replay

 private:
  void snapshot(uint32_t i, const LiveSet &live);
  std::vector<std::unordered_map<uint32_t, OomSiteLive>> by_site_;  // per OOM: site -> live, once taken
  const AnalysisOptions &options_;
  uint64_t anchor_ = 0;
  const std::vector<Site> *sites_ = nullptr;
  const PoolBlocks *pool_ = nullptr;
  std::vector<const format::OomRecord *> ooms_;  // newest first
  std::vector<uint64_t> times_;
  std::vector<uint32_t> positions_;
  std::vector<uint32_t> by_position_;  // indices into ooms_, by position
  size_t next_ = 0;
  std::vector<int> devices_;  // slot -> device
  std::vector<OomEvent> events_;
  std::vector<std::pair<uint32_t, uint32_t>> pending_;   // (OOM, slot) taken, recovery still open
  std::vector<std::pair<bool, uint64_t>> last_success_;  // per slot: a successful device allocation's time
  std::vector<int> ring_devices_;                        // devices with an OOM
  std::vector<std::deque<HistoryEvent>> rings_;          // their recent events
};

}  // namespace gpuleak::analysis::detail
