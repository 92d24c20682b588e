// Assembles the "view" object: timelines, flame graph snapshots, temporal intervals.
#include "output/view/view_data.h"

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>

#include "output/view/site_table.h"
#include "output/view/timeline.h"

namespace gpuleak::output::view {

using nlohmann::json;

namespace {

using analysis::AllocationLife;
using analysis::kStillAlive;

json timeline_json(const DeviceTimeline &t) {
  return {{"device", t.device},
          {"t_ns", t.t_ns},
          {"live_bytes", t.bytes},
          {"source_points", t.source_points},
          {"decimated", t.t_ns.size() < t.source_points},
          {"peak", {{"t_ns", t.peak_ns}, {"bytes", t.peak_bytes}}}};
}

// Live memory of one device at one moment, by site, largest first; beyond max_sites summed up.
template <typename IsLive>
json snapshot_json(const analysis::Lives &lives, int device, IsLive is_live, SiteTable &sites, const ViewOptions &o,
                   json head) {
  std::unordered_map<uint64_t, std::tuple<analysis::Site, uint64_t, uint64_t>> by_site;
  uint64_t total = 0, count = 0, reserved = 0, in_blocks = 0;
  for (const AllocationLife &l : lives.lives) {
    if (l.device != device || !is_live(l)) continue;
    if (l.segment) {  // by site: the tensors, not their segments
      reserved += l.size;
      continue;
    }
    if (l.pool_block) in_blocks += l.size;
    auto &[site, bytes, n] = by_site[static_cast<uint64_t>(l.site.stack_id) << 32 | l.site.py_stack_id];
    site = l.site;
    bytes += l.size;
    ++n;
    total += l.size;
    ++count;
  }
  std::vector<std::tuple<analysis::Site, uint64_t, uint64_t>> ranked;
  ranked.reserve(by_site.size());
  for (auto &[key, v] : by_site) ranked.push_back(v);
  std::sort(ranked.begin(), ranked.end(), [](const auto &a, const auto &b) {
    if (std::get<1>(a) != std::get<1>(b)) return std::get<1>(a) > std::get<1>(b);
    const auto &sa = std::get<0>(a), &sb = std::get<0>(b);
    return sa.stack_id != sb.stack_id ? sa.stack_id < sb.stack_id : sa.py_stack_id < sb.py_stack_id;
  });
  json site_col = json::array(), bytes_col = json::array(), count_col = json::array();
  uint64_t other_bytes = total, other_count = count;
  size_t kept = std::min(ranked.size(), o.max_snapshot_sites);
  for (size_t i = 0; i < kept; ++i) {
    const auto &[site, bytes, n] = ranked[i];
    site_col.push_back(sites.index(site));
    bytes_col.push_back(bytes);
    count_col.push_back(n);
    other_bytes -= bytes;
    other_count -= n;
  }
  head["device"] = device;
  head["live_bytes"] = total;
  head["live_count"] = count;
  head["site"] = std::move(site_col);
  head["bytes"] = std::move(bytes_col);
  head["count"] = std::move(count_col);
  head["other"] = {{"sites", ranked.size() - kept}, {"bytes", other_bytes}, {"count", other_count}};
  // The framework allocator's segments at that moment and how much of them its blocks filled: the
  // rest is its cache, which the page draws apart from the call sites (never as one of them).
  head["pool"] = reserved || in_blocks ? json{{"reserved_bytes", reserved}, {"in_blocks_bytes", in_blocks}} : json();
  return head;
}

// Device allocations born inside a primary iteration that outlived it, grouped by (site, device,
// birth iteration, death iteration). death_iteration: the first primary iteration at whose end the
// allocation was gone; the iteration count when freed after the last one; -1 when never freed.
// An allocation freed inside its own iteration never appears: it cannot be alive at the end of
// any range of whole iterations.
json temporal_json(const analysis::Lives &lives, uint64_t anchor, const analysis::Analysis &a, SiteTable &sites) {
  auto since = [&](uint32_t position) {  // ns since the run's start (before the anchor: the start)
    const uint64_t t = lives.times[position];
    return t > anchor ? t - anchor : 0;
  };
  std::vector<const analysis::Iteration *> primary;
  for (const auto &it : a.iterations)
    if (it.primary) primary.push_back(&it);
  std::stable_sort(primary.begin(), primary.end(), [](auto *x, auto *y) { return x->index < y->index; });
  const int64_t n = static_cast<int64_t>(primary.size());
  auto birth_iteration = [&](uint64_t t) -> int64_t {
    auto it = std::upper_bound(primary.begin(), primary.end(), t,
                               [](uint64_t v, const analysis::Iteration *i) { return v < i->start_ns; });
    if (it == primary.begin()) return -1;
    --it;
    return t <= (*it)->end_ns ? it - primary.begin() : -1;
  };
  auto death_iteration = [&](uint64_t t) -> int64_t {
    auto it = std::lower_bound(primary.begin(), primary.end(), t,
                               [](const analysis::Iteration *i, uint64_t v) { return i->end_ns < v; });
    return it - primary.begin();
  };
  std::map<std::tuple<uint32_t, int, int64_t, int64_t>, std::pair<uint64_t, uint64_t>> groups;
  for (const AllocationLife &l : lives.lives) {
    if (l.device < 0 || l.segment) continue;  // host memory; a segment: the tensors in it are drawn instead
    int64_t born = n ? birth_iteration(since(l.birth)) : -1;
    if (born < 0) continue;
    int64_t died = l.death == kStillAlive ? -1 : death_iteration(since(l.death));
    if (died != -1 && died <= born) continue;
    auto &[count, bytes] = groups[{sites.index(l.site), l.device, born, died}];
    ++count;
    bytes += l.size;
  }
  json site = json::array(), device = json::array(), birth = json::array(), death = json::array(),
       count = json::array(), bytes = json::array();
  for (const auto &[key, v] : groups) {
    site.push_back(std::get<0>(key));
    device.push_back(std::get<1>(key));
    birth.push_back(std::get<2>(key));
    death.push_back(std::get<3>(key));
    count.push_back(v.first);
    bytes.push_back(v.second);
  }
  json start = json::array(), end = json::array();
  for (const auto *it : primary) {
    start.push_back(it->start_ns);
    end.push_back(it->end_ns);
  }
  return {{"loop", a.primary_loop},
          {"iterations", n},
          {"start_ns", std::move(start)},
          {"end_ns", std::move(end)},
          {"site", std::move(site)},
          {"device", std::move(device)},
          {"birth_iteration", std::move(birth)},
          {"death_iteration", std::move(death)},
          {"count", std::move(count)},
          {"bytes", std::move(bytes)}};
}

}  // namespace

json make_view_data(const format::Capture &capture, const analysis::Analysis &a, const SymbolizeFn &symbolize,
                    const ViewOptions &o) {
  Sites resolved(symbolize, site_options(capture, a.user_code));
  return make_view_data(capture, a, resolved, o);
}

json make_view_data(const format::Capture &capture, const analysis::Analysis &a, Sites &resolved,
                    const ViewOptions &o) {
  const std::shared_ptr<const analysis::Lives> kept = analysis::lives_of(capture, a);
  const analysis::Lives &lives = *kept;
  const uint64_t anchor = capture.header.monotonic_ns;
  SiteTable sites(resolved);
  std::vector<DeviceTimeline> timelines = device_timelines(lives, anchor, a.duration_ns, o.max_timeline_points);

  json timeline = json::array(), snapshots = json::array();
  for (const DeviceTimeline &t : timelines) timeline.push_back(timeline_json(t));
  for (const DeviceTimeline &t : timelines) {
    auto at_end = [](const AllocationLife &l) { return l.death == kStillAlive; };
    snapshots.push_back(snapshot_json(lives, t.device, at_end, sites, o, {{"kind", "end"}, {"t_ns", a.duration_ns}}));
    const uint32_t p = t.peak_position;
    auto at_peak = [p](const AllocationLife &l) { return l.birth <= p && (l.death == kStillAlive || l.death > p); };
    snapshots.push_back(snapshot_json(lives, t.device, at_peak, sites, o, {{"kind", "peak"}, {"t_ns", t.peak_ns}}));
  }
  // The end of the last primary iteration, where the report counts what a leak holds (its
  // live_bytes): a program that frees everything at exit still shows its leak here.
  const analysis::Iteration *last = nullptr;
  for (const auto &it : a.iterations)
    if (it.primary && (!last || it.index > last->index)) last = &it;
  if (last) {
    // Its events are [begin_event, end_event): live at its end is live before end_event.
    const uint32_t p = last->end_event;
    auto at_last = [p](const AllocationLife &l) { return l.birth < p && (l.death == kStillAlive || l.death >= p); };
    for (const DeviceTimeline &t : timelines)
      snapshots.push_back(
          snapshot_json(lives, t.device, at_last, sites, o,
                        {{"kind", "last_iteration"}, {"t_ns", last->end_ns}, {"iteration", last->index}}));
  }
  // The same moments as the report's oom.events[i]: before the first event at or after the failure.
  for (size_t i = 0; i < a.ooms.size(); ++i) {
    const uint32_t p = lives.position_at(anchor + a.ooms[i].t_ns);
    auto at_oom = [p](const AllocationLife &l) { return l.birth < p && (l.death == kStillAlive || l.death >= p); };
    snapshots.push_back(snapshot_json(lives, a.ooms[i].device, at_oom, sites, o,
                                      {{"kind", "oom"}, {"oom_index", i}, {"t_ns", a.ooms[i].t_ns}}));
  }
  json temporal = temporal_json(lives, anchor, a, sites);
  return {{"schema", kViewSchema},           {"timeline", std::move(timeline)}, {"snapshots", std::move(snapshots)},
          {"temporal", std::move(temporal)}, {"sites", sites.sites_json()},     {"frames", sites.frames_json()}};
}

}  // namespace gpuleak::output::view
