// Out-of-memory failures: for each OomRecord the recorder flushed when an allocation failed, what
// was live on that device at that moment (by call site), what happened just before, and whether
// the program got memory again afterwards (PyTorch frees its cache and retries).
#include <algorithm>
#include <deque>
#include <numeric>
#include <unordered_map>

#include "analysis/oom_observer.h"
#include "analysis/pool_blocks.h"

namespace gpuleak::analysis::detail {

using format::Capture;
using format::MemoryRecord;

OomObserver::OomObserver(const Capture &capture, const AnalysisOptions &options)
    : options_(options), anchor_(capture.header.monotonic_ns) {
  // Newest first; among equal times the later record first.
  for (auto it = capture.ooms.rbegin(); it != capture.ooms.rend(); ++it) ooms_.push_back(&*it);
  std::stable_sort(ooms_.begin(), ooms_.end(), [](auto *a, auto *b) { return a->ts_ns > b->ts_ns; });
  if (ooms_.size() > options.max_oom_events) ooms_.resize(options.max_oom_events);
  for (const format::OomRecord *r : ooms_) times_.push_back(r->ts_ns);
}

void OomObserver::place(const std::vector<uint32_t> &positions, const std::vector<int> &devices) {
  positions_ = positions;
  by_position_.resize(ooms_.size());
  std::iota(by_position_.begin(), by_position_.end(), 0u);
  std::stable_sort(by_position_.begin(), by_position_.end(),
                   [&](uint32_t a, uint32_t b) { return positions_[a] < positions_[b]; });
  devices_ = devices;
  events_.assign(ooms_.size(), OomEvent{});
  by_site_.assign(ooms_.size(), {});
  last_success_.assign(devices.size(), {false, 0});
  for (const format::OomRecord *r : ooms_) {
    const int device = device_of(r->device);
    if (std::find(ring_devices_.begin(), ring_devices_.end(), device) == ring_devices_.end())
      ring_devices_.push_back(device);
  }
  rings_.assign(ring_devices_.size(), {});
}

// The OOMs placed at position k (before event k) see what is live now and the recent history.
void OomObserver::before(uint32_t k, const MemoryRecord *r, const LiveSet &live) {
  if (by_position_.empty() && ring_devices_.empty()) return nothing_before();  // no OOM in the capture
  for (; next_ < by_position_.size() && positions_[by_position_[next_]] <= k; ++next_)
    snapshot(by_position_[next_], live);
  if (!r || ring_devices_.empty()) return;
  const int device = device_of(r->device);
  for (size_t i = 0; i < ring_devices_.size(); ++i) {
    if (ring_devices_[i] != device) continue;
    std::deque<HistoryEvent> &ring = rings_[i];
    if (options_.oom_history_events == 0) return;
    if (ring.size() == options_.oom_history_events) ring.pop_front();
    HistoryEvent h;
    h.t_ns = since_start(r->ts_ns, anchor_);
    h.op = r->op;
    h.kind = r->kind;
    h.api = r->api;
    h.address = r->address;
    h.size = r->size;
    h.result = r->result;
    h.site = Site{r->stack_id, r->py_stack_id};
    ring.push_back(h);
  }
}

void OomObserver::born(uint32_t, const MemoryRecord &r, const LiveAllocation &a) {
  if (on_device(a.space)) last_success_[a.slot] = {true, r.ts_ns};
}

void OomObserver::snapshot(uint32_t i, const LiveSet &live) {
  const format::OomRecord *r = ooms_[i];
  OomEvent &e = events_[i];
  e.t_ns = since_start(r->ts_ns, anchor_);
  e.device = device_of(r->device);
  e.requested = r->requested;
  e.api = r->api;
  e.result = r->result;
  e.site = Site{r->stack_id, r->py_stack_id};
  e.free_bytes = r->free_bytes;
  e.total_bytes = r->total_bytes;
  e.pool_framework = r->pool_framework;
  e.pool_in_use_bytes = r->pool_in_use_bytes;
  e.pool_largest_free_bytes = r->pool_largest_free_bytes;
  e.pool_limit_bytes = r->pool_limit_bytes;
  auto slot_it = std::lower_bound(devices_.begin(), devices_.end(), e.device);
  const int slot =
      slot_it != devices_.end() && *slot_it == e.device ? static_cast<int>(slot_it - devices_.begin()) : -1;
  auto &by_site = by_site_[i];
  live.for_each([&](const LiveKey &, const LiveAllocation &a) {
    if (a.slot != slot) return;
    if (on_device(a.space)) {  // device memory, segments included
      e.live_bytes += a.size;
      ++e.live_count;
    }
    if (!leak_candidate(pool_, a)) return;  // by site: the tensors, not the segments holding them
    OomSiteLive &s = by_site[a.site];
    s.site = (*sites_)[a.site];
    s.bytes += a.size;
    ++s.count;
  });
  for (size_t d = 0; d < ring_devices_.size(); ++d)
    if (ring_devices_[d] == e.device) e.history.assign(rings_[d].begin(), rings_[d].end());
  if (slot >= 0) pending_.push_back({i, static_cast<uint32_t>(slot)});
}

// An allocation live at an OOM already taken is charged to the site of its first mapping, as if
// that had been known then.
void OomObserver::remapped(uint32_t, uint32_t old, const LiveAllocation &a) {
  if (!leak_candidate(pool_, a)) return;
  for (const auto &[i, slot] : pending_) {
    if (slot != a.slot || a.birth >= positions_[i]) continue;
    auto &by_site = by_site_[i];
    OomSiteLive &from = by_site[old];
    from.bytes -= a.size;
    if (--from.count == 0) by_site.erase(old);
    OomSiteLive &to = by_site[a.site];
    to.site = (*sites_)[a.site];
    to.bytes += a.size;
    ++to.count;
  }
}

// Whether a later allocation on the same device succeeded: known once the replay is over.
std::vector<OomEvent> OomObserver::events() {
  for (const auto &[i, slot] : pending_)
    events_[i].recovered = last_success_[slot].first && last_success_[slot].second > ooms_[i]->ts_ns;
  for (size_t i = 0; i < events_.size(); ++i) {
    OomEvent &e = events_[i];
    for (auto &[id, s] : by_site_[i]) e.live_by_site.push_back(s);
    std::sort(e.live_by_site.begin(), e.live_by_site.end(), [](const OomSiteLive &a, const OomSiteLive &b) {
      if (a.bytes != b.bytes) return a.bytes > b.bytes;
      return a.site.stack_id != b.site.stack_id ? a.site.stack_id < b.site.stack_id
                                                : a.site.py_stack_id < b.site.py_stack_id;
    });
    if (e.live_by_site.size() > options_.oom_top_sites) e.live_by_site.resize(options_.oom_top_sites);
  }
  return std::move(events_);
}

}  // namespace gpuleak::analysis::detail
