// Advice from what the loop's peak is made of, when the device is nearly full or ran out: the
// live set at the steady peak by site and by age (born in the peak's iteration, in earlier ones,
// before the loop), and the same split at each iteration's own peak. The peak is known only after
// the first replay (DevicePeaks, advice.cpp): the live set is taken in a second one, right after
// the peak's event (or just before its iteration began).
#include <algorithm>
#include <unordered_map>

#include "analysis/advice_internal.h"

namespace gpuleak::analysis::detail {

namespace {

uint64_t device_total(const LoopView &loop, int device) {
  for (const auto &d : loop.capture.devices)
    if (d.index == device) return d.total_bytes;
  return 0;
}

// The element at index n / 2 of the n iterations' values sorted (the upper median).
double median_of(const std::vector<AgesRun> &runs, uint64_t AgesAt::*field) {
  std::vector<std::pair<uint64_t, uint64_t>> v;  // (value, iterations)
  uint64_t n = 0;
  for (const AgesRun &r : runs) v.emplace_back(r.ages.*field, r.iterations), n += r.iterations;
  if (n == 0) return 0;
  std::sort(v.begin(), v.end());
  uint64_t seen = 0;
  for (const auto &[value, count] : v)
    if ((seen += count) > n / 2) return static_cast<double>(value);
  return static_cast<double>(v.back().first);
}

// Peak composition: the live set at each qualifying device's steady peak, taken in the second
// replay right after the peak's event (or just before its iteration began).
class PeakComposition : public Rule, public Observer {
 public:
  PeakComposition(const LoopView &loop, const DevicePeaks &peaks) : loop_(loop), peaks_(peaks) {}
  Observer *second() override { return this; }

  bool wants_second(const std::vector<OomEvent> &ooms) override {
    const AdviceOptions &o = loop_.options;
    for (uint16_t slot = 0; slot < loop_.devices.size(); ++slot) {
      const int device = loop_.devices[slot];
      const uint64_t total = device_total(loop_, device);
      const bool oom = std::any_of(ooms.begin(), ooms.end(), [&](const OomEvent &e) { return e.device == device; });
      const PeakAt &peak = peaks_.peak(slot);
      if (peak.bytes == 0) continue;
      const bool full =
          total > 0 && static_cast<double>(peak.bytes) >= o.peak_min_device_share * static_cast<double>(total);
      if (!full && !oom) continue;
      const uint32_t j = peak.iteration;
      const bool at_start = peak.pos == kNone;
      if (at_start && loop_.begin[j] == 0) continue;
      Moment m;
      m.slot = slot;
      m.pos = at_start ? loop_.begin[j] - 1 : peak.pos;
      m.oom = oom;
      m.total = total;
      moments_.push_back(std::move(m));
    }
    std::stable_sort(moments_.begin(), moments_.end(), [](const Moment &a, const Moment &b) { return a.pos < b.pos; });
    return !moments_.empty();
  }

  void after(uint32_t k, const LiveSet &live) override {
    for (; next_ < moments_.size() && moments_[next_].pos == k; ++next_) take(&moments_[next_], live);
  }

  void findings(const std::vector<OomEvent> &ooms, std::vector<Advice> *out) override {
    std::vector<const Moment *> by_slot;
    for (const Moment &m : moments_) by_slot.push_back(&m);
    std::sort(by_slot.begin(), by_slot.end(), [](const Moment *a, const Moment *b) { return a->slot < b->slot; });
    for (const Moment *m : by_slot) finding(*m, ooms, out);
  }

 private:
  struct Moment {
    uint16_t slot = 0;
    uint32_t pos = 0;
    bool oom = false;
    uint64_t total = 0;
    bool taken = false;
    std::unordered_map<uint32_t, size_t> index;  // site -> sites
    std::vector<AdviceSite> sites;
    AdviceSite all;
  };

  void take(Moment *m, const LiveSet &live) {
    m->taken = true;
    live.for_each([&](const LiveKey &, const LiveAllocation &a) {
      if (!on_device(a.space) || a.slot != m->slot) return;
      add(m, a.site, a, 1);
      add(m, kNone, a, 1);
    });
  }

  // An allocation in a taken snapshot moved to the site of its first mapping: so does its share.
  void remapped(uint32_t, uint32_t old, const LiveAllocation &a) override {
    if (!on_device(a.space)) return;
    for (Moment &m : moments_) {
      if (!m.taken || m.slot != a.slot || a.birth > m.pos) continue;
      add(&m, old, a, -1);
      add(&m, a.site, a, 1);
    }
  }

  // Adds (sign 1) or takes back (-1) an allocation live at the moment; site kNone: the total.
  void add(Moment *m, uint32_t site, const LiveAllocation &a, int sign) {
    AdviceSite *s = &m->all;
    if (site != kNone) {
      auto [it, fresh] = m->index.try_emplace(site, m->sites.size());
      if (fresh) m->sites.push_back(AdviceSite{loop_.sites.sites[site]});
      s = &m->sites[it->second];
    }
    const uint32_t j = peaks_.peak(m->slot).iteration;
    const uint64_t size = sign > 0 ? a.size : 0 - a.size;  // unsigned: wraps back exactly
    s->bytes += size;
    s->count += sign > 0 ? 1 : 0 - uint64_t{1};
    if (a.birth >= loop_.begin[j])
      s->this_iteration_bytes += size;
    else if (a.birth < loop_.first_begin)
      s->before_loop_bytes += size;
    else
      s->earlier_iterations_bytes += size;
  }

  void finding(const Moment &moment, const std::vector<OomEvent> &ooms, std::vector<Advice> *out) {
    const AdviceOptions &o = loop_.options;
    const int device = loop_.devices[moment.slot];
    const uint64_t total = moment.total;
    const bool oom = moment.oom;
    const uint32_t j = peaks_.peak(moment.slot).iteration;
    const AdviceSite &all = moment.all;
    std::vector<AdviceSite> sites;
    for (const AdviceSite &s : moment.sites)
      if (s.count > 0) sites.push_back(s);  // a site whose only allocations moved away is gone
    if (sites.empty()) return;
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
    if (!chunk && !oom) return;

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
    const std::vector<AgesRun> &ages = peaks_.ages(moment.slot);
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
      // The sentence follows the table beside it: the largest site's share is said as a number,
      // and a site that holds most of the peak is named as the one to shrink (it once said "no
      // single site dominating" above a table where one site held 98 %).
      const AdviceSite &top = sites.front();
      const double top_share =
          all.bytes ? std::min(1.0, static_cast<double>(top.bytes) / static_cast<double>(all.bytes)) : 0.0;
      a.evidence.push_back({"largest_site_share", top_share});
      a.message = where + bytes_text(static_cast<double>(all.before_loop_bytes)) + " dates from before the loop, " +
                  bytes_text(static_cast<double>(all.earlier_iterations_bytes)) + " from earlier iterations and " +
                  bytes_text(static_cast<double>(all.this_iteration_bytes)) + " from that iteration. ";
      if (top_share >= 0.5) {  // most of the peak is one site's: that site is the advice
        const uint64_t kept = top.before_loop_bytes + top.earlier_iterations_bytes;
        a.message += "This site holds " + share_text(top_share) + " of it (" +
                     bytes_text(static_cast<double>(top.bytes)) + ", " + bytes_text(static_cast<double>(kept)) +
                     " of that kept from before the iteration): " + "shrink what it keeps, or free it sooner.";
      } else {
        a.message += "The largest site holds " + share_text(top_share) + " of it (" +
                     bytes_text(static_cast<double>(top.bytes)) + "): shrink what the largest sites keep.";
      }
    }
    if (sites.size() > o.peak_top_sites) sites.resize(o.peak_top_sites);
    a.sites = std::move(sites);
    out->push_back(std::move(a));
  }

  const LoopView &loop_;
  const DevicePeaks &peaks_;
  std::vector<Moment> moments_;
  size_t next_ = 0;
};

}  // namespace

std::unique_ptr<Rule> peak_rule(const LoopView &loop, const DevicePeaks &peaks) {
  return std::make_unique<PeakComposition>(loop, peaks);
}

}  // namespace gpuleak::analysis::detail
