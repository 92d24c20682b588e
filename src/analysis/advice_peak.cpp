// Advice from what the loop's peak is made of: late release (allocations freed one iteration
// too late, measured by replaying the device with their frees moved to the end of their own
// iteration) and fragmentation (an allocation failed while enough memory was free). Peak
// composition is in advice_composition.cpp.
//
// Late release needs to know which sites are late before it can measure what freeing them earlier
// would save: it asks for a second replay, where the counterfactual is measured for the candidate
// sites only.
#include <algorithm>
#include <unordered_map>

#include "analysis/advice_internal.h"

namespace gpuleak::analysis::detail {

namespace {

struct LateSite {
  uint16_t slot = 0;
  uint32_t site = 0;
  uint64_t eligible = 0, late = 0, bytes = 0, iterations = 0;
  uint32_t max_lag = 0;
  uint32_t first_birth = kNone;  // the order findings are listed in: the site's earliest allocation counted
  std::vector<bool> late_in;     // per primary iteration: a late allocation was born there
};

// The counterfactual of one candidate site, measured in the second replay. Freeing each late
// allocation a (and each never-freed one of the last iterations) at the end of its own iteration
// j_a instead of at its death lowers the device's live bytes, inside iteration i, by the sizes of
// those with j_a < i not yet dead: A_i (alive at i's start) minus D_i(q) (died since). So the
// counterfactual peak of i is max_q(live(q) + D_i(q)) - A_i, and only A_i must wait for later
// events: it is kept per iteration.
struct Counterfactual {
  uint16_t slot = 0;
  uint32_t site = 0;
  size_t late_site = 0;
  int64_t died = 0;            // D of the open iteration
  std::vector<int64_t> max;    // per iteration: max(live + D)
  std::vector<int64_t> alive;  // per iteration, as differences: A
};

class LateRelease : public Rule, public Observer {
 public:
  LateRelease(const LoopView &loop, const DevicePeaks &peaks)
      : loop_(loop),
        peaks_(peaks),
        pass2_(this),
        ends_(loop.end),
        walk_(loop),
        ends2_(loop.end),
        begins2_(loop.begin),
        live_(loop.devices.size(), 0) {}
  Observer *first() override { return this; }
  Observer *second() override { return &pass2_; }

  // Pass 1: which allocations of each site outlive their iteration by 1..late_max_lag ends.
  void died(uint32_t k, const format::MemoryRecord &, const LiveAllocation &a) override {
    if (!active() || !on_device(a.space)) return;
    const uint32_t j = loop_.iteration_born(a);
    if (j == kNone) return;
    const bool judged = j >= loop_.w;  // warm-up allocations are fixed too, never judged
    LateSite &s = site(a);
    if (judged) ++s.eligible;
    uint32_t lag = loop_.ends_crossed(a, k, ends_.through(k));
    if (lag < 1 || lag > loop_.options.late_max_lag || !judged) return;
    ++s.late;
    s.bytes += a.size;
    s.max_lag = std::max(s.max_lag, lag);
    if (s.late_in.empty()) s.late_in.assign(loop_.n, false);
    if (!s.late_in[j]) s.late_in[j] = true, ++s.iterations;
  }

  void finish(const LiveSet &live) override {
    if (!active()) return;
    live.for_each([&](const LiveKey &, const LiveAllocation &a) {
      if (!on_device(a.space)) return;
      const uint32_t j = loop_.iteration_born(a);
      if (j == kNone || j < loop_.w) return;
      LateSite &s = site(a);
      if (j + loop_.options.late_max_lag < loop_.n) ++s.eligible;  // else its release may still come
    });
  }

  bool wants_second(const std::vector<OomEvent> &) override {
    const AdviceOptions &o = loop_.options;
    if (!active()) return false;
    for (size_t i = 0; i < sites_.size(); ++i) {
      const LateSite &s = sites_[i];
      if (s.late == 0 || static_cast<double>(s.late) < o.late_min_share * static_cast<double>(s.eligible)) continue;
      if (static_cast<double>(s.iterations) < o.min_iteration_share * (loop_.post() - o.late_max_lag)) continue;
      Counterfactual c;
      c.slot = s.slot;
      c.site = s.site;
      c.late_site = i;
      c.max.assign(loop_.n, 0);
      c.alive.assign(loop_.n + 1, 0);
      candidates_.emplace(slot_site_key(s.slot, s.site), counterfactuals_.size());
      counterfactuals_.push_back(std::move(c));
    }
    return !counterfactuals_.empty();
  }

  void findings(const std::vector<OomEvent> &, std::vector<Advice> *out) override {
    std::vector<const Counterfactual *> order;
    for (const Counterfactual &c : counterfactuals_) order.push_back(&c);
    std::stable_sort(order.begin(), order.end(), [&](const Counterfactual *a, const Counterfactual *b) {
      return sites_[a->late_site].first_birth < sites_[b->late_site].first_birth;
    });
    for (const Counterfactual *c : order) finding(*c, out);
  }

 private:
  // The second replay: the device's live bytes with the candidates' frees moved.
  class Pass2 : public Observer {
   public:
    explicit Pass2(LateRelease *rule) : r_(*rule) {}
    void before(uint32_t k, const format::MemoryRecord *, const LiveSet &) override {
      r_.walk_.advance(
          k,
          [&](uint32_t j) {
            for (Counterfactual &c : r_.counterfactuals_) {
              c.died = 0;
              c.max[j] = r_.live_[c.slot];
            }
          },
          [](uint32_t) {});
    }
    void born(uint32_t, const format::MemoryRecord &, const LiveAllocation &a) override {
      if (on_device(a.space)) r_.change(a.slot, static_cast<int64_t>(a.size));
    }
    void died(uint32_t k, const format::MemoryRecord &, const LiveAllocation &a) override {
      if (!on_device(a.space)) return;
      auto it = r_.candidates_.find(slot_site_key(a.slot, a.site));
      if (it != r_.candidates_.end()) r_.moved(&r_.counterfactuals_[it->second], a, k);
      r_.change(a.slot, -static_cast<int64_t>(a.size));
    }
    void finish(const LiveSet &live) override {
      live.for_each([&](const LiveKey &, const LiveAllocation &a) {
        if (!on_device(a.space)) return;
        auto it = r_.candidates_.find(slot_site_key(a.slot, a.site));
        if (it == r_.candidates_.end()) return;
        const uint32_t j = r_.loop_.iteration_born(a);
        if (j == kNone || j < r_.loop_.w || j + r_.loop_.options.late_max_lag < r_.loop_.n) return;
        Counterfactual &c = r_.counterfactuals_[it->second];  // never freed, in the last iterations
        c.alive[j + 1] += static_cast<int64_t>(a.size);
        c.alive[r_.loop_.n] -= static_cast<int64_t>(a.size);
      });
    }

   private:
    LateRelease &r_;
  };

  bool active() const { return loop_.options.late_max_lag > 0 && loop_.post() > loop_.options.late_max_lag; }

  LateSite &site(const LiveAllocation &a) {
    auto [it, fresh] = index_.try_emplace(slot_site_key(a.slot, a.site), sites_.size());
    if (fresh) {
      sites_.emplace_back();
      sites_.back().slot = a.slot;
      sites_.back().site = a.site;
    }
    LateSite &s = sites_[it->second];
    s.first_birth = std::min(s.first_birth, a.birth);
    return s;
  }

  // A candidate's allocation dies at k: when it is late, its release moves to the end of its
  // iteration j_a; it counts in A_i of the iterations i > j_a that began before k.
  void moved(Counterfactual *c, const LiveAllocation &a, uint32_t k) {
    const uint32_t ja = loop_.iteration_born(a);
    if (ja == kNone) return;
    const uint32_t lag = loop_.ends_crossed(a, k, ends2_.through(k));
    if (lag < 1 || lag > loop_.options.late_max_lag) return;
    const uint32_t last = begins2_.through(k);  // iterations [0, last) began
    if (last > ja + 1) {
      c->alive[ja + 1] += static_cast<int64_t>(a.size);
      c->alive[last] -= static_cast<int64_t>(a.size);
    }
    if (walk_.current() != kNone) c->died += static_cast<int64_t>(a.size);
  }

  void change(uint16_t slot, int64_t delta) {
    live_[slot] += delta;
    const uint32_t j = walk_.current();
    if (j == kNone) return;
    for (Counterfactual &c : counterfactuals_)
      if (c.slot == slot) c.max[j] = std::max(c.max[j], live_[slot] + c.died);
  }

  void finding(const Counterfactual &c, std::vector<Advice> *out) {
    const LateSite &s = sites_[c.late_site];
    const uint64_t peak = peaks_.peak(c.slot).bytes;
    int64_t best = 0, alive = 0;
    bool found = false;
    for (uint32_t j = 0; j < loop_.n; ++j) {
      alive += c.alive[j];
      if (j < loop_.w) continue;
      if (!found || c.max[j] - alive > best) best = c.max[j] - alive, found = true;
    }
    const PeakAt fixed{static_cast<uint64_t>(best), 0, 0};
    if (fixed.bytes >= peak) return;
    const uint64_t saving = peak - fixed.bytes;
    if (static_cast<double>(saving) < loop_.options.late_min_saving_share * static_cast<double>(peak)) return;

    const double it = static_cast<double>(s.iterations);
    Advice a;
    a.kind = AdviceKind::kLateRelease;
    a.device = loop_.devices[s.slot];
    a.has_site = true;
    a.site = loop_.sites.sites[s.site];
    a.evidence = {{"allocs_per_iteration", static_cast<double>(s.late) / it},
                  {"bytes_per_iteration", static_cast<double>(s.bytes) / it},
                  {"max_lag_iterations", static_cast<double>(s.max_lag)},
                  {"late_share", static_cast<double>(s.late) / static_cast<double>(s.eligible)},
                  {"iterations_with_pattern", it},
                  {"post_warmup_iterations", static_cast<double>(loop_.post())},
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

  const LoopView &loop_;
  const DevicePeaks &peaks_;
  Pass2 pass2_;
  PositionCursor ends_;             // over loop_.end: first replay
  LoopWalk walk_;                   // second replay
  PositionCursor ends2_, begins2_;  // over loop_.end and loop_.begin: second replay
  std::vector<int64_t> live_;       // second replay: per slot
  std::unordered_map<uint64_t, size_t> index_;
  std::vector<LateSite> sites_;
  std::unordered_map<uint64_t, size_t> candidates_;  // (slot, site) -> counterfactuals_
  std::vector<Counterfactual> counterfactuals_;
};

}  // namespace

std::unique_ptr<Rule> late_release_rule(const LoopView &loop, const DevicePeaks &peaks) {
  return std::make_unique<LateRelease>(loop, peaks);
}

void advise_fragmentation(const std::vector<OomEvent> &ooms, std::vector<Advice> *out) {
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
