#include "output/trace/event_selection.h"

#include <algorithm>

#include "output/trace/leak_markers.h"

namespace gpuleak::output::trace {

namespace {

// The primary loop's iterations in order (analysis::Analysis::iterations holds every loop).
std::vector<const analysis::Iteration *> primary_iterations(const analysis::Analysis &a) {
  std::vector<const analysis::Iteration *> out;
  for (const auto &it : a.iterations)
    if (it.primary) out.push_back(&it);
  std::stable_sort(out.begin(), out.end(), [](auto *x, auto *y) { return x->index < y->index; });
  return out;
}

// Positions whose time lies in [from, to] (ns since the start).
std::pair<uint32_t, uint32_t> positions_in(const MemoryEvents &events, int64_t from, int64_t to, uint64_t anchor) {
  auto mono = [&](int64_t rel) { return rel <= -static_cast<int64_t>(anchor) ? 0 : anchor + rel; };
  uint32_t begin = events.lower_bound(mono(from));
  uint32_t end = events.lower_bound(mono(to) + 1);
  return {begin, std::max(begin, end)};
}

void merge_windows(std::vector<std::pair<int64_t, int64_t>> *w) {
  std::sort(w->begin(), w->end());
  std::vector<std::pair<int64_t, int64_t>> merged;
  for (const auto &x : *w) {
    if (!merged.empty() && x.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, x.second);
    else
      merged.push_back(x);
  }
  w->swap(merged);
}

bool in_windows(const std::vector<std::pair<int64_t, int64_t>> &w, int64_t t) {
  auto it = std::upper_bound(w.begin(), w.end(), std::make_pair(t, INT64_MAX));
  return it != w.begin() && t <= std::prev(it)->second;
}

}  // namespace

Selection select_events(const MemoryEvents &events, const analysis::Analysis &a, const NvtxTimeline &nvtx,
                        const TraceOptions &o) {
  Selection s;
  const uint32_t n = events.size();
  const uint64_t anchor = events.anchor();
  const auto primary = primary_iterations(a);
  const bool everything = o.full || (primary.empty() && n < o.all_events_below);
  s.policy = o.full ? "full" : everything ? "all" : "bounded";

  std::vector<bool> keep(n, everything);
  if (!everything) {
    if (!primary.empty()) {
      const size_t edge = std::min<size_t>(o.edge_iterations, primary.size());
      if (edge > 0) {
        // At most edge_events of each: the start of the first iterations, the end of the last.
        const uint32_t cap = static_cast<uint32_t>(std::min<size_t>(o.edge_events, UINT32_MAX));
        auto [b0, e0] = positions_in(events, primary[0]->start_ns, primary[edge - 1]->end_ns, anchor);
        auto [b1, e1] = positions_in(events, primary[primary.size() - edge]->start_ns, primary.back()->end_ns, anchor);
        e0 = std::min(e0, b0 + std::min(cap, e0 - b0));
        b1 = std::max(b1, e1 - std::min(cap, e1 - b1));
        for (auto [b, e] : {std::make_pair(b0, e0), std::make_pair(b1, e1)}) {
          for (uint32_t k = b; k < e; ++k) keep[k] = true;
          if (e > b) s.windows.emplace_back(events.time(b), events.time(e - 1));
        }
      }
    } else {
      const uint32_t edge = static_cast<uint32_t>(std::min<size_t>(o.edge_events, n));
      for (uint32_t k = 0; k < edge; ++k) keep[k] = keep[n - 1 - k] = true;
      if (edge > 0) {
        s.windows.emplace_back(events.time(0), events.time(edge - 1));
        s.windows.emplace_back(events.time(n - edge), events.time(n - 1));
      }
    }
    // The allocations of each leaking call site, the budget shared among the leaks.
    const size_t per_leak = a.leaks.empty() ? 0 : o.max_leak_site_events / a.leaks.size();
    std::vector<std::vector<uint32_t>> births(a.leaks.size());
    const std::vector<int> leak_of = leak_of_lives(events, a);
    const std::vector<analysis::AllocationLife> &lives = events.lives().lives;
    for (size_t i = 0; i < lives.size(); ++i)
      if (leak_of[i] >= 0) births[leak_of[i]].push_back(lives[i].birth);
    for (auto &b : births) {
      thin_evenly(&b, per_leak);
      for (uint32_t k : b) keep[k] = true;
    }
    // The moments before and after each out-of-memory failure (those the analysis details: the
    // newest ones, AnalysisOptions::max_oom_events).
    for (const auto &oom : a.ooms) {
      uint32_t p = events.lower_bound(anchor + oom.t_ns);
      uint32_t b = p > o.oom_context_events ? p - o.oom_context_events : 0;
      uint32_t e = static_cast<uint32_t>(std::min<uint64_t>(n, static_cast<uint64_t>(p) + o.oom_context_events));
      for (uint32_t k = b; k < e; ++k) keep[k] = true;
      if (e > b) s.windows.emplace_back(events.time(b), events.time(e - 1));
    }
    merge_windows(&s.windows);
  }
  for (uint32_t k = 0; k < n; ++k)
    if (keep[k]) s.memory.push_back(k);

  // NVTX: everything while it is small; else what begins in the detailed windows, and the long
  // ranges that give the run its shape (epochs, phases).
  const bool all_nvtx = o.full || nvtx.ranges.size() + nvtx.marks.size() <= o.max_nvtx_ranges;
  const int64_t long_range = static_cast<int64_t>(a.duration_ns / 100);
  for (uint32_t i = 0; i < nvtx.ranges.size(); ++i) {
    const NvtxRange &r = nvtx.ranges[i];
    if (all_nvtx || in_windows(s.windows, r.start_ns) || r.end_ns - r.start_ns >= long_range)
      s.nvtx_ranges.push_back(i);
  }
  for (uint32_t i = 0; i < nvtx.marks.size(); ++i)
    if (all_nvtx || in_windows(s.windows, nvtx.marks[i].ts_ns)) s.nvtx_marks.push_back(i);
  return s;
}

}  // namespace gpuleak::output::trace
