// Advice from what the loop's peak is made of: late release (allocations freed one iteration
// too late, measured by replaying the device with their frees moved to the end of their own
// iteration), peak composition (what was live at the peak, by site and by age, when the device
// is nearly full) and fragmentation (an allocation failed while enough memory was free).
#include <algorithm>
#include <unordered_map>

#include "analysis/advice_internal.h"
#include "format/huge_pages.h"

namespace gpuleak::analysis::detail {

namespace {

bool change_before(const Change &a, const Change &b) {
  if (a.pos != b.pos) return a.pos < b.pos;
  if (a.order != b.order) return a.order < b.order;
  return a.delta < b.delta;  // a release before a birth at the same event (an address reused)
}

void sort_changes(std::vector<Change> *changes) { std::sort(changes->begin(), changes->end(), change_before); }

uint64_t key_of(uint16_t slot, uint32_t site) { return static_cast<uint64_t>(slot) << 32 | site; }

uint64_t device_total(const LoopView &loop, int device) {
  for (const auto &d : loop.capture.devices)
    if (d.index == device) return d.total_bytes;
  return 0;
}

}  // namespace

std::vector<Change> device_changes(const Ledger &ledger, uint16_t slot) {
  size_t n = 0;
  for (const Alloc &a : ledger.allocs)
    if (on_device(a.space) && a.slot == slot) n += a.death != kNone ? 2 : 1;
  std::vector<Change> changes;
  changes.reserve(n);
  format::prefer_huge_pages(changes);
  for (uint32_t i = 0; i < ledger.allocs.size(); ++i) {
    const Alloc &a = ledger.allocs[i];
    if (!on_device(a.space) || a.slot != slot) continue;
    changes.push_back({a.birth, 1, static_cast<int64_t>(a.size), i});
    if (a.death != kNone) changes.push_back({a.death, 1, -static_cast<int64_t>(a.size), i});
  }
  sort_changes(&changes);
  return changes;
}

PeakAt steady_peak(const LoopView &loop, const std::vector<Change> &changes) {
  PeakAt best;
  bool found = false;
  int64_t live = 0;
  size_t c = 0;
  for (uint32_t j = 0; j < loop.n; ++j) {
    // Everything before the iteration's first event, and frees moved to its start.
    for (; c < changes.size() &&
           (changes[c].pos < loop.begin[j] || (changes[c].pos == loop.begin[j] && changes[c].order == 0));
         ++c)
      live += changes[c].delta;
    const bool counted = j >= loop.w;
    if (counted && (!found || static_cast<uint64_t>(live) > best.bytes))
      best = {static_cast<uint64_t>(live), kNone, j}, found = true;
    for (; c < changes.size() && changes[c].pos < loop.end[j]; ++c) {
      live += changes[c].delta;
      if (counted && static_cast<uint64_t>(live) > best.bytes) best = {static_cast<uint64_t>(live), changes[c].pos, j};
    }
  }
  return best;
}

namespace {

struct LateSite {
  uint16_t slot = 0;
  uint32_t site = 0;
  uint64_t eligible = 0, late = 0, bytes = 0, iterations = 0;
  uint32_t last_iteration = kNone, max_lag = 0;
  std::vector<uint32_t> allocs;  // the late ones, warm-up included (the counterfactual frees them all)
  std::vector<uint32_t> tail;    // born in the last iterations, never freed: not judged, freed too
};

}  // namespace

void advise_late_release(const LoopView &loop, std::vector<Advice> *out) {
  const AdviceOptions &o = loop.options;
  const Ledger &ledger = loop.ledger;
  if (o.late_max_lag == 0 || loop.post() <= o.late_max_lag) return;
  std::unordered_map<uint64_t, size_t> index;
  std::vector<LateSite> sites;
  for (uint32_t i = 0; i < ledger.allocs.size(); ++i) {
    const Alloc &a = ledger.allocs[i];
    if (!on_device(a.space)) continue;
    uint32_t j = loop.iteration_of(a.birth);
    if (j == kNone) continue;
    const bool judged = j >= loop.w;  // warm-up allocations are fixed too, never judged
    if (a.death == kNone && !judged) continue;
    auto [it, fresh] = index.try_emplace(key_of(a.slot, a.site), sites.size());
    if (fresh) {
      sites.emplace_back();
      sites.back().slot = a.slot;
      sites.back().site = a.site;
    }
    LateSite &s = sites[it->second];
    if (a.death == kNone && j + o.late_max_lag >= loop.n) {  // its release may still come
      s.tail.push_back(i);
      continue;
    }
    if (judged) ++s.eligible;
    if (a.death == kNone) continue;
    uint32_t lag = loop.ends_crossed(a.birth, a.death);
    if (lag < 1 || lag > o.late_max_lag) continue;
    s.allocs.push_back(i);
    if (!judged) continue;
    ++s.late;
    s.bytes += a.size;
    s.max_lag = std::max(s.max_lag, lag);
    if (s.last_iteration != j) ++s.iterations, s.last_iteration = j;
  }

  std::unordered_map<uint16_t, PeakAt> baseline;
  for (const LateSite &s : sites) {
    if (s.late == 0 || static_cast<double>(s.late) < o.late_min_share * static_cast<double>(s.eligible)) continue;
    if (static_cast<double>(s.iterations) < o.min_iteration_share * (loop.post() - o.late_max_lag)) continue;
    const std::vector<Change> &all = loop.changes(s.slot);
    auto base = baseline.find(s.slot);
    if (base == baseline.end()) base = baseline.emplace(s.slot, steady_peak(loop, all)).first;
    // The counterfactual: each late allocation freed at the end of the iteration that made it.
    // The moved frees are sorted on their own and merged into the rest, which stays in order.
    std::vector<bool> late(ledger.allocs.size(), false);
    std::vector<Change> moved;
    auto freed_at_end = [&](uint32_t i) {
      const Alloc &a = ledger.allocs[i];
      moved.push_back({loop.end[loop.iteration_of(a.birth)], 0, -static_cast<int64_t>(a.size), i});
    };
    for (uint32_t i : s.allocs) late[i] = true, freed_at_end(i);
    for (uint32_t i : s.tail) freed_at_end(i);
    sort_changes(&moved);
    std::vector<Change> changes;
    changes.reserve(all.size() + s.tail.size());
    format::prefer_huge_pages(changes);
    size_t m = 0;
    for (const Change &c : all) {
      if (c.delta < 0 && late[c.alloc]) continue;  // its moved copy takes its place
      while (m < moved.size() && change_before(moved[m], c)) changes.push_back(moved[m++]);
      changes.push_back(c);
    }
    changes.insert(changes.end(), moved.begin() + static_cast<std::ptrdiff_t>(m), moved.end());
    const PeakAt fixed = steady_peak(loop, changes);
    const uint64_t peak = base->second.bytes;
    if (fixed.bytes >= peak) continue;
    const uint64_t saving = peak - fixed.bytes;
    if (static_cast<double>(saving) < o.late_min_saving_share * static_cast<double>(peak)) continue;

    const double it = static_cast<double>(s.iterations);
    Advice a;
    a.kind = AdviceKind::kLateRelease;
    a.device = ledger.devices[s.slot];
    a.has_site = true;
    a.site = loop.sites.sites[s.site];
    a.evidence = {{"allocs_per_iteration", static_cast<double>(s.late) / it},
                  {"bytes_per_iteration", static_cast<double>(s.bytes) / it},
                  {"max_lag_iterations", static_cast<double>(s.max_lag)},
                  {"late_share", static_cast<double>(s.late) / static_cast<double>(s.eligible)},
                  {"iterations_with_pattern", it},
                  {"post_warmup_iterations", static_cast<double>(loop.post())},
                  {"steady_peak_bytes", static_cast<double>(peak)},
                  {"peak_bytes_if_released", static_cast<double>(fixed.bytes)}};
    a.saving = {{"peak_bytes", static_cast<double>(saving)}};
    a.message = "Allocations from here (" + bytes_text(static_cast<double>(s.bytes) / it) +
                " per iteration) are freed only during " +
                (s.max_lag == 1 ? std::string("the next iteration")
                                : "one of the next " + std::to_string(s.max_lag) + " iterations") +
                ": drop the last reference at the end of the iteration that made them (del it, or overwrite in "
                "place); the loop's peak would drop by " +
                bytes_text(static_cast<double>(saving)) + " (from " + bytes_text(static_cast<double>(peak)) + " to " +
                bytes_text(static_cast<double>(fixed.bytes)) + ").";
    out->push_back(std::move(a));
  }
}

namespace {

// What was live at each post-warm-up iteration's own peak, by age; one sweep over the changes.
struct AgesAt {
  uint64_t peak = 0, this_iteration = 0, earlier = 0, before_loop = 0;
};

std::vector<AgesAt> iteration_peak_ages(const LoopView &loop, const std::vector<Change> &changes) {
  std::vector<AgesAt> out;
  int64_t live = 0, before = 0, mine = 0;  // all, born before the loop, born in this iteration
  size_t c = 0;
  auto apply = [&](const Change &ch, uint32_t begin) {
    const uint32_t birth = loop.ledger.allocs[ch.alloc].birth;
    live += ch.delta;
    if (birth < loop.first_begin)
      before += ch.delta;
    else if (birth >= begin)
      mine += ch.delta;
  };
  for (uint32_t j = 0; j < loop.n; ++j) {
    for (; c < changes.size() && changes[c].pos < loop.begin[j]; ++c) apply(changes[c], kNone);
    mine = 0;
    auto at = [&] {
      return AgesAt{static_cast<uint64_t>(live), static_cast<uint64_t>(mine),
                    static_cast<uint64_t>(live - before - mine), static_cast<uint64_t>(before)};
    };
    AgesAt best = at();
    for (; c < changes.size() && changes[c].pos < loop.end[j]; ++c) {
      apply(changes[c], loop.begin[j]);
      if (static_cast<uint64_t>(live) > best.peak) best = at();
    }
    if (j >= loop.w) out.push_back(best);
  }
  return out;
}

double median_of(std::vector<AgesAt> v, uint64_t AgesAt::*field) {
  if (v.empty()) return 0;
  auto mid = v.begin() + v.size() / 2;
  std::nth_element(v.begin(), mid, v.end(), [&](const AgesAt &a, const AgesAt &b) { return a.*field < b.*field; });
  return static_cast<double>((*mid).*field);
}

}  // namespace

void advise_peak(const LoopView &loop, const std::vector<OomEvent> &ooms, std::vector<Advice> *out) {
  const AdviceOptions &o = loop.options;
  const Ledger &ledger = loop.ledger;
  for (uint16_t slot = 0; slot < ledger.devices.size(); ++slot) {
    const int device = ledger.devices[slot];
    const uint64_t total = device_total(loop, device);
    const bool oom = std::any_of(ooms.begin(), ooms.end(), [&](const OomEvent &e) { return e.device == device; });
    const std::vector<Change> &changes = loop.changes(slot);
    const PeakAt peak = steady_peak(loop, changes);
    if (peak.bytes == 0) continue;
    const bool full =
        total > 0 && static_cast<double>(peak.bytes) >= o.peak_min_device_share * static_cast<double>(total);
    if (!full && !oom) continue;

    // What was live right after the peak's change (or just before its iteration began).
    const uint32_t j = peak.iteration;
    const bool at_start = peak.pos == kNone;
    if (at_start && loop.begin[j] == 0) continue;
    const uint32_t m = at_start ? loop.begin[j] - 1 : peak.pos;
    std::unordered_map<uint32_t, size_t> index;
    std::vector<AdviceSite> sites;
    AdviceSite all;
    for (const Alloc &a : ledger.allocs) {
      if (a.birth > m) break;  // birth order
      if (!on_device(a.space) || a.slot != slot || (a.death != kNone && a.death <= m)) continue;
      auto [it, fresh] = index.try_emplace(a.site, sites.size());
      if (fresh) sites.push_back(AdviceSite{loop.sites.sites[a.site]});
      for (AdviceSite *s : {&sites[it->second], &all}) {
        s->bytes += a.size;
        ++s->count;
        if (a.birth >= loop.begin[j])
          s->this_iteration_bytes += a.size;
        else if (a.birth < loop.first_begin)
          s->before_loop_bytes += a.size;
        else
          s->earlier_iterations_bytes += a.size;
      }
    }
    if (sites.empty()) continue;
    std::sort(sites.begin(), sites.end(), [](const AdviceSite &a, const AdviceSite &b) {
      if (a.bytes != b.bytes) return a.bytes > b.bytes;
      return a.site.stack_id != b.site.stack_id ? a.site.stack_id < b.site.stack_id
                                                : a.site.py_stack_id < b.site.py_stack_id;
    });
    const AdviceSite *dominant = &*std::max_element(
        sites.begin(), sites.end(),
        [](const AdviceSite &a, const AdviceSite &b) { return a.this_iteration_bytes < b.this_iteration_bytes; });
    const bool chunk =
        static_cast<double>(dominant->this_iteration_bytes) >= o.peak_dominant_share * static_cast<double>(all.bytes);
    // A full device whose peak no transient dominates is a sizing choice (weights, a preallocated
    // arena), not something the loop does wrong: only an OOM makes that worth a finding.
    if (!chunk && !oom) continue;

    Advice a;
    a.kind = AdviceKind::kPeakComposition;
    a.device = device;
    a.has_site = true;
    a.site = chunk ? dominant->site : sites.front().site;
    a.evidence = {{"peak_bytes", static_cast<double>(all.bytes)},
                  {"peak_iteration", static_cast<double>(j)},
                  {"live_count", static_cast<double>(all.count)},
                  {"this_iteration_bytes", static_cast<double>(all.this_iteration_bytes)},
                  {"earlier_iterations_bytes", static_cast<double>(all.earlier_iterations_bytes)},
                  {"before_loop_bytes", static_cast<double>(all.before_loop_bytes)},
                  {"oom_count", static_cast<double>(std::count_if(
                                    ooms.begin(), ooms.end(), [&](const OomEvent &e) { return e.device == device; }))}};
    // The typical iteration, next to the worst: medians over the iterations' own peaks.
    const std::vector<AgesAt> ages = iteration_peak_ages(loop, changes);
    a.evidence.push_back({"median_iteration_peak_bytes", median_of(ages, &AgesAt::peak)});
    a.evidence.push_back({"median_iteration_this_iteration_bytes", median_of(ages, &AgesAt::this_iteration)});
    a.evidence.push_back({"median_iteration_earlier_iterations_bytes", median_of(ages, &AgesAt::earlier)});
    a.evidence.push_back({"median_iteration_before_loop_bytes", median_of(ages, &AgesAt::before_loop)});
    std::string where = "At the loop's peak (" + bytes_text(static_cast<double>(all.bytes));
    if (total) {
      const uint64_t headroom = total > all.bytes ? total - all.bytes : 0;
      a.evidence.push_back({"total_bytes", static_cast<double>(total)});
      a.evidence.push_back({"headroom_bytes", static_cast<double>(headroom)});
      where +=
          " of " + bytes_text(static_cast<double>(total)) + ", " + bytes_text(static_cast<double>(headroom)) + " left";
    }
    where += ", iteration " + std::to_string(j) + ") ";
    if (chunk) {
      const double transient = static_cast<double>(dominant->this_iteration_bytes);
      a.saving = {{"peak_bytes", transient / 2}};
      a.message = where + bytes_text(transient) +
                  " was allocated here in that same iteration: chunk or shrink the batch this site allocates for "
                  "(two chunks would lower the peak by about " +
                  bytes_text(transient / 2) + ").";
    } else {
      a.message = where + bytes_text(static_cast<double>(all.before_loop_bytes)) + " dates from before the loop, " +
                  bytes_text(static_cast<double>(all.earlier_iterations_bytes)) + " from earlier iterations and " +
                  bytes_text(static_cast<double>(all.this_iteration_bytes)) +
                  " from that iteration, no single site dominating: shrink what the largest sites keep.";
    }
    if (sites.size() > o.peak_top_sites) sites.resize(o.peak_top_sites);
    a.sites = std::move(sites);
    out->push_back(std::move(a));
  }
}

void advise_fragmentation(const LoopView &loop, const std::vector<OomEvent> &ooms, std::vector<Advice> *out) {
  (void)loop;
  for (const OomEvent &e : ooms) {
    if (e.requested == 0 || e.free_bytes < e.requested) continue;
    Advice a;
    a.kind = AdviceKind::kFragmentation;
    a.device = e.device;
    a.has_site = true;
    a.site = e.site;
    a.evidence = {{"requested_bytes", static_cast<double>(e.requested)},
                  {"free_bytes", static_cast<double>(e.free_bytes)},
                  {"total_bytes", static_cast<double>(e.total_bytes)},
                  {"live_bytes", static_cast<double>(e.live_bytes)},
                  {"t_ns", static_cast<double>(e.t_ns)},
                  {"recovered", e.recovered ? 1.0 : 0.0}};
    if (e.total_bytes > e.free_bytes + e.live_bytes)
      a.evidence.push_back({"untracked_used_bytes", static_cast<double>(e.total_bytes - e.free_bytes - e.live_bytes)});
    a.saving = {{"bytes", static_cast<double>(e.free_bytes)}};
    a.message = "An allocation of " + bytes_text(static_cast<double>(e.requested)) +
                " failed while the device reported " + bytes_text(static_cast<double>(e.free_bytes)) +
                " free: the free memory is fragmented (or reserved by a pool); allocate the large long-lived buffers "
                "first and reuse same-size blocks, or with PyTorch set "
                "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.";
    out->push_back(std::move(a));
  }
}

}  // namespace gpuleak::analysis::detail
