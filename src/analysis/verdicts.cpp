// Verdicts: which call sites leak, which devices grow (DESIGN.md "Verdicts"; the rules and their
// thresholds are documented for users in docs/report-format.md "Verdict rules").
//
// Everything is measured at the ends of the primary loop's iterations. For each device and call
// site, the bytes and allocations from that site still live at the end of iteration j; warm-up
// iterations are left out of every fit. A site leaks when, after warm-up,
//   - its live bytes rise (Theil-Sen slope >= min_bytes_per_iteration, and the fitted rise is at
//     least min_relative_growth of what the site holds at the end) with a good robust fit quality
//     (robust_fit.h: one spike moves neither the slope nor the quality),
//   - its live count rises too: allocations accumulate (a pool that swaps one block for a bigger
//     one grows in bytes with a count of one: that is growth, not a leak),
//   - it is still rising in the last half of the post-warm-up iterations (a plateau, a cache that
//     filled up, optimizer state created in the first steps are not leaks),
//   - the allocations that outlived their iteration were mostly not freed later (a pool that
//     breathes is not a leak; a framework's object freed in the next iteration was handed on, and
//     is left out of this count).
// A device grows when its total live bytes pass the same slope, relative, fit and late-slope
// tests. A device with a leak is `leak`, else with growth `growth`, else `clean`; too few
// iterations, or none, make it `inconclusive`; a device that never allocated is `clean`.
#include <algorithm>
#include <atomic>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "analysis/fit.h"
#include "analysis/pool_blocks.h"
#include "analysis/robust_fit.h"
#include "analysis/verdicts.h"

namespace gpuleak::analysis::detail {

namespace {

using Series = SurvivorObserver::Series;
using Delta = SurvivorObserver::Delta;

// Threads for the fits after each warm-up: 65 fits, each a millisecond or more on a long series.
constexpr unsigned kMaxFitThreads = 8;

struct Trend {
  RobustFit fit;
  double late = 0;  // the slope over the last half of the window
  double r2 = 0;    // least-squares R^2 of the whole window (informational)
  double last = 0;  // value at the last iteration end
  double mid = 0;   // value where the last half starts
};

// y[w..n) fitted whole and over its last half [h, n).
Trend trend(const std::vector<double> &y, uint32_t w, std::vector<double> *scratch, bool with_r2) {
  Trend t;
  size_t n = y.size(), m = n - w, h = w + (m - 1) / 2;
  t.fit = fit_robust(y.data() + w, m, scratch);
  t.late = robust_slope(y.data() + h, n - h, scratch);
  if (with_r2) t.r2 = fit_line(y.data() + w, m).r2;
  t.last = y[n - 1];
  t.mid = y[h];
  return t;
}

// The slope, relative, fit and late-slope tests shared by leaks and growth.
bool rises(const Trend &t, size_t m, const AnalysisOptions &o) {
  double b = t.fit.slope;
  return b >= o.min_bytes_per_iteration &&
         b * static_cast<double>(m - 1) >= o.min_relative_growth * std::max(t.last, 1.0) &&
         t.fit.quality >= o.min_fit_quality && t.late >= o.min_late_slope_fraction * b && t.last > t.mid;
}

// Sorts the deltas by iteration and merges those of one iteration (sums: the order is free).
void merge(std::vector<Delta> *deltas) {
  std::sort(deltas->begin(), deltas->end(), [](const Delta &a, const Delta &b) { return a.iteration < b.iteration; });
  size_t w = 0;
  for (size_t i = 0; i < deltas->size(); ++i) {
    if (w > 0 && (*deltas)[w - 1].iteration == (*deltas)[i].iteration) {
      (*deltas)[w - 1].bytes += (*deltas)[i].bytes;
      (*deltas)[w - 1].count += (*deltas)[i].count;
    } else {
      (*deltas)[w++] = (*deltas)[i];
    }
  }
  deltas->resize(w);
}

uint32_t first_leaking_iteration(const Series &s, uint32_t n, uint32_t w) {
  std::vector<bool> left(n, false);
  for (uint32_t j : s.last_alive_from) left[j] = true;
  uint32_t j = w;
  while (j < n && !left[j]) ++j;
  if (j == n) return w;
  while (j > 0 && left[j - 1]) --j;  // the run of surviving births reaching back into warm-up
  return j;
}

// DeviceSummary::growth_after_warmup: the slope of y[k..n) for k = 0 .. count-1. The fits are
// independent, and on a long series each is a pass over 130,816 pairs (robust_fit.h): then they
// run on a few threads. Each slot is its own fit's, so the doubles are the same whatever the
// threads; a thread that cannot start, or a fit that fails on one, is done on this thread.
std::vector<double> fits_after_warmup(const std::vector<double> &y, uint32_t count) {
  const size_t n = y.size();
  std::vector<double> out(count, 0);
  std::vector<char> done(count, 0);
  std::atomic<uint32_t> next{0};
  std::atomic<bool> failed{false};
  auto work = [&] {
    try {
      std::vector<double> scratch;
      for (uint32_t k; !failed && (k = next.fetch_add(1)) < count;) {
        out[k] = robust_slope(y.data() + k, n - k, &scratch);
        done[k] = 1;
      }
    } catch (const std::exception &) {
      failed = true;
    }
  };
  const bool long_series = n >= kMaxExactFitPoints + count;  // every fit pairs kMaxExactFitPoints points
  const unsigned threads = long_series ? std::min(std::thread::hardware_concurrency(), kMaxFitThreads) : 1;
  std::vector<std::thread> helpers;
  for (unsigned t = 1; t < threads && t < count; ++t) {
    try {
      helpers.emplace_back(work);
    } catch (const std::system_error &) {
      break;
    }
  }
  if (!helpers.empty()) work();
  for (std::thread &h : helpers) h.join();
  std::vector<double> scratch;
  for (uint32_t k = 0; k < count; ++k)
    if (!done[k]) out[k] = robust_slope(y.data() + k, n - k, &scratch);
  return out;
}

}  // namespace

// Each allocation is live at the ends of iterations [lb, ub): born before end lb, dead at or
// after end ub - 1.
void SurvivorObserver::add(const LiveAllocation &a, uint32_t ub) {
  const auto &ends = primary_.end_pos;
  const uint32_t n = static_cast<uint32_t>(ends.size());
  // Another loop's survivors: most allocations die before its first end or are born after its
  // last (a test suite's loops are one after the other), and need no search.
  if (own_births_ && (ub == 0 || ends.empty() || a.birth >= ends.back())) return;
  const uint32_t at_birth =
      own_births_ ? static_cast<uint32_t>(std::upper_bound(ends.begin(), ends.end(), a.birth) - ends.begin())
                  : a.ends_at_birth;
  const uint32_t lb = std::min(at_birth, n);
  if (lb >= ub) return;  // born and gone between two iteration ends
  auto [it, fresh] =
      index_.try_emplace(static_cast<uint64_t>(a.slot) << 32 | a.site, static_cast<uint32_t>(series.size()));
  if (fresh) {
    series.emplace_back();
    series.back().slot = a.slot;
    series.back().site = a.site;
  }
  Series &s = series[it->second];
  s.deltas.push_back({lb, static_cast<int64_t>(a.size), 1});
  if (ub < n) s.deltas.push_back({ub, -static_cast<int64_t>(a.size), -1});
  if (s.deltas.size() >= 2 * s.merged + 64) {
    merge(&s.deltas);
    s.merged = s.deltas.size();
  }
  // A framework's object live at its own iteration's end only (a jitted step's new parameters and
  // loss, replaced in the next step) is handed on, not kept: it is no survivor in the pool-breath
  // test below, which the step's kept output would fail beside them (one site: the call's line). A
  // pool's raw allocations keep that test whole: blocks given back one iteration on are its breath.
  const bool handed_on = a.space == Space::kPoolBlock && ub == lb + 1;
  if (lb >= primary_.warmup && !handed_on) {
    ++s.survivors;
    if (ub < n) ++s.survivors_freed;
  }
  if (ub == n) s.last_alive_from.push_back(lb);
}

void SurvivorObserver::died(uint32_t k, const format::MemoryRecord &, const LiveAllocation &a) {
  if (!leak_candidate(pool_, a)) return;
  add(a, ends_.through(k));
}

void SurvivorObserver::finish(const LiveSet &live) {
  const uint32_t n = static_cast<uint32_t>(primary_.end_pos.size());
  live.for_each([&](const LiveKey &, const LiveAllocation &a) {
    if (leak_candidate(pool_, a)) add(a, n);
  });
  live.for_each([&](const LiveKey &, const LiveAllocation &a) {  // what each site still holds at the end
    if (!leak_candidate(pool_, a)) return;
    auto it = index_.find(static_cast<uint64_t>(a.slot) << 32 | a.site);
    if (it == index_.end()) return;
    series[it->second].live_at_exit_bytes += a.size;
    ++series[it->second].live_at_exit_count;
  });
}

void decide(const Ledger &ledger, const SiteTable &sites, const Primary &primary, SurvivorObserver *survivors,
            const AnalysisOptions &o, Analysis *out) {
  const uint32_t n = static_cast<uint32_t>(primary.spans.size()), w = primary.warmup;
  const size_t slots = ledger.devices.size();
  const bool enough = n > w && n - w >= static_cast<uint32_t>(std::max(2, o.min_post_warmup_iterations));
  const size_t m = n > w ? n - w : 0;
  std::vector<double> scratch;

  for (size_t d = 0; d < slots; ++d) {
    DeviceSummary &dev = out->devices[d];
    if (ledger.totals[d].allocs == 0) {
      dev.verdict = Verdict::kClean;
    } else if (!enough) {
      dev.verdict = Verdict::kInconclusive;
    } else {
      std::vector<double> y(n);
      for (uint32_t j = 0; j < n; ++j) y[j] = static_cast<double>(ledger.row(primary.spans[j], d).live_end_bytes);
      Trend t = trend(y, w, &scratch, true);
      dev.growth_bytes_per_iteration = t.fit.slope;
      dev.growth_fit_quality = t.fit.quality;
      dev.growth_r2 = t.r2;
      dev.verdict = rises(t, m, o) ? Verdict::kGrowth : Verdict::kClean;
      dev.growth_after_warmup = fits_after_warmup(y, n >= 2 ? std::min(n - 1, kMaxWarmupFits + 1) : 0);
    }
  }
  if (!enough) {
    out->verdict = Verdict::kClean;
    for (const auto &dev : out->devices) out->verdict = std::max(out->verdict, dev.verdict);
    return;
  }

  std::vector<double> y(n), c(n);
  for (Series &s : survivors->series) {
    int64_t rise = 0;  // live count at the last end minus at the first post-warm-up end
    for (const Delta &dl : s.deltas)
      if (dl.iteration > w) rise += dl.count;
    if (rise <= 0 || s.survivors == 0) continue;
    if (static_cast<double>(s.survivors_freed) > o.max_survivor_free_fraction * static_cast<double>(s.survivors))
      continue;
    merge(&s.deltas);
    int64_t bytes = 0, count = 0;
    size_t k = 0;
    for (uint32_t j = 0; j < n; ++j) {
      for (; k < s.deltas.size() && s.deltas[k].iteration == j; ++k) {
        bytes += s.deltas[k].bytes;
        count += s.deltas[k].count;
      }
      y[j] = static_cast<double>(bytes);
      c[j] = static_cast<double>(count);
    }
    Trend t = trend(y, w, &scratch, true);
    Trend tc = trend(c, w, &scratch, false);
    if (!rises(t, m, o) || tc.fit.slope <= 0 || tc.last <= tc.mid) continue;
    Leak leak;
    leak.device = ledger.devices[s.slot];
    leak.site = sites.sites[s.site];
    leak.first_iteration = first_leaking_iteration(s, n, w);
    // The rate since the leak began: a leak that starts late is not diluted by the flat start.
    uint32_t from = std::max(w, leak.first_iteration);
    leak.bytes_per_iteration =
        from > w && n - from >= 2 ? robust_slope(y.data() + from, n - from, &scratch) : t.fit.slope;
    leak.fit_quality = t.fit.quality;
    leak.r2 = t.r2;
    leak.iterations_observed = static_cast<uint32_t>(m);
    leak.confidence = t.fit.quality * static_cast<double>(m) / static_cast<double>(m + 2);
    leak.live_bytes = static_cast<uint64_t>(y[n - 1]);
    leak.live_count = static_cast<uint64_t>(c[n - 1]);
    leak.live_by_iteration.assign(y.begin(), y.end());
    leak.live_at_exit_bytes = s.live_at_exit_bytes;
    leak.live_at_exit_count = s.live_at_exit_count;
    out->leaks.push_back(std::move(leak));
    out->devices[s.slot].verdict = Verdict::kLeak;
  }
  std::sort(out->leaks.begin(), out->leaks.end(), [](const Leak &a, const Leak &b) {
    if (a.bytes_per_iteration != b.bytes_per_iteration) return a.bytes_per_iteration > b.bytes_per_iteration;
    if (a.device != b.device) return a.device < b.device;
    return a.site.stack_id != b.site.stack_id ? a.site.stack_id < b.site.stack_id
                                              : a.site.py_stack_id < b.site.py_stack_id;
  });
  out->verdict = Verdict::kClean;
  for (const auto &dev : out->devices) out->verdict = std::max(out->verdict, dev.verdict);
}

}  // namespace gpuleak::analysis::detail
