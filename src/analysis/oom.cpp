// Out-of-memory failures: for each OomRecord the recorder flushed when an allocation failed, what
// was live on that device at that moment (by call site), what happened just before, and whether
// the program got memory again afterwards (PyTorch frees its cache and retries).
#include <algorithm>
#include <unordered_map>

#include "analysis/internal.h"

namespace gpuleak::analysis::detail {

using format::Capture;
using format::MemoryRecord;

std::vector<OomEvent> oom_events(const Capture &capture, const Timeline &timeline,
                                 const SiteTable &sites, const Ledger &ledger,
                                 const AnalysisOptions &options) {
  const uint64_t anchor = capture.header.monotonic_ns;
  std::vector<const format::OomRecord *> ooms;
  // Newest first; among equal times the later record first.
  for (auto it = capture.ooms.rbegin(); it != capture.ooms.rend(); ++it) ooms.push_back(&*it);
  std::stable_sort(ooms.begin(), ooms.end(), [](auto *a, auto *b) { return a->ts_ns > b->ts_ns; });
  if (ooms.size() > options.max_oom_events) ooms.resize(options.max_oom_events);
  if (ooms.empty()) return {};

  // The last successful device allocation of each device slot, as an event position.
  std::vector<int64_t> last_success(ledger.devices.size(), -1);
  for (const Alloc &a : ledger.allocs)
    if (on_device(a.space)) last_success[a.slot] = std::max<int64_t>(last_success[a.slot], a.birth);

  std::vector<OomEvent> out;
  for (const format::OomRecord *r : ooms) {
    OomEvent e;
    e.t_ns = since_start(r->ts_ns, anchor);
    e.device = device_of(r->device);
    e.requested = r->requested;
    e.api = r->api;
    e.result = r->result;
    e.site = Site{r->stack_id, r->py_stack_id};
    e.free_bytes = r->free_bytes;
    e.total_bytes = r->total_bytes;
    const uint32_t p = timeline.lower_bound(r->ts_ns);
    const int slot = ledger.slot_of(e.device);

    std::unordered_map<uint32_t, OomSiteLive> by_site;
    for (const Alloc &a : ledger.allocs) {
      if (a.birth >= p) break;  // allocs are in birth order
      if (!on_device(a.space) || a.slot != slot || (a.death != kNone && a.death < p)) continue;
      OomSiteLive &s = by_site[a.site];
      s.site = sites.sites[a.site];
      s.bytes += a.size;
      ++s.count;
      e.live_bytes += a.size;
      ++e.live_count;
    }
    for (auto &[id, s] : by_site) e.live_by_site.push_back(s);
    std::sort(e.live_by_site.begin(), e.live_by_site.end(), [](const OomSiteLive &a, const OomSiteLive &b) {
      if (a.bytes != b.bytes) return a.bytes > b.bytes;
      return a.site.stack_id != b.site.stack_id ? a.site.stack_id < b.site.stack_id
                                                : a.site.py_stack_id < b.site.py_stack_id;
    });
    if (e.live_by_site.size() > options.oom_top_sites) e.live_by_site.resize(options.oom_top_sites);

    for (uint32_t k = p; k-- > 0 && e.history.size() < options.oom_history_events;) {
      const MemoryRecord &m = timeline.at(k);
      if (device_of(m.device) != e.device) continue;
      HistoryEvent h;
      h.t_ns = since_start(m.ts_ns, anchor);
      h.op = m.op;
      h.kind = m.kind;
      h.api = m.api;
      h.address = m.address;
      h.size = m.size;
      h.result = m.result;
      h.site = Site{m.stack_id, m.py_stack_id};
      e.history.push_back(h);
    }
    std::reverse(e.history.begin(), e.history.end());
    e.recovered = slot >= 0 && last_success[slot] >= 0 &&
                  timeline.ts(static_cast<uint32_t>(last_success[slot])) > r->ts_ns;
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace gpuleak::analysis::detail
