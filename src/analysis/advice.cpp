// advise(): the loop advice entry point. Builds the view of the primary loop the rules share,
// runs each rule, and orders the findings (kind order, then largest saving first).
#include <algorithm>

#include "analysis/advice_internal.h"
#include "analysis/frameworks.h"
#include "analysis/ledger.h"

namespace gpuleak::analysis {

const char *advice_kind_name(AdviceKind kind) {
  switch (kind) {
    case AdviceKind::kChurn:
      return "churn";
    case AdviceKind::kCacheThrash:
      return "cache_thrash";
    case AdviceKind::kLateRelease:
      return "late_release";
    case AdviceKind::kPeakComposition:
      return "peak_composition";
    case AdviceKind::kFragmentation:
      return "fragmentation";
    case AdviceKind::kSerialization:
      return "serialization";
  }
  return "unknown";
}

namespace detail {

bool LoopView::enough() const { return post() >= static_cast<uint32_t>(std::max(2, min_post_warmup)); }

bool LoopView::most(uint64_t iterations) const {
  return post() > 0 && static_cast<double>(iterations) >= options.min_iteration_share * post();
}

namespace {

// The number a finding is ranked by within its kind.
double rank_of(const Advice &a) {
  for (const char *name : {"time_ns_per_iteration", "peak_bytes", "bytes"})
    for (const AdviceNumber &s : a.saving)
      if (s.name == name) return s.value;
  return 0;
}

}  // namespace

void DevicePeaks::before(uint32_t k, const format::MemoryRecord *, const LiveSet &) {
  walk_.advance(
      k,
      [&](uint32_t j) {
        for (Slot &s : slots_) {
          if (j >= loop_.w && (!s.found || static_cast<uint64_t>(s.live) > s.best.bytes))
            s.best = {static_cast<uint64_t>(s.live), kNone, j}, s.found = true;
          s.mine = 0;
          s.iteration_best = {static_cast<uint64_t>(s.live), 0, static_cast<uint64_t>(s.live - s.before_loop),
                              static_cast<uint64_t>(s.before_loop)};
        }
      },
      [&](uint32_t j) {
        if (j < loop_.w) return;
        for (Slot &s : slots_) {
          // At most one run per post-warm-up iteration: room for all at once, not by doubling.
          if (s.ages.capacity() == 0) s.ages.reserve(loop_.n - loop_.w);
          if (s.ages.empty() || !(s.ages.back().ages == s.iteration_best)) s.ages.push_back({s.iteration_best, 0});
          ++s.ages.back().iterations;
        }
      });
}

void DevicePeaks::born(uint32_t k, const format::MemoryRecord &, const LiveAllocation &a) {
  if (on_device(a.space)) change(k, a, static_cast<int64_t>(a.size));
}

void DevicePeaks::died(uint32_t k, const format::MemoryRecord &, const LiveAllocation &a) {
  if (on_device(a.space)) change(k, a, -static_cast<int64_t>(a.size));
}

void DevicePeaks::change(uint32_t k, const LiveAllocation &a, int64_t delta) {
  Slot &s = slots_[a.slot];
  s.live += delta;
  if (a.birth < loop_.first_begin) s.before_loop += delta;
  const uint32_t j = walk_.current();
  if (j == kNone) return;
  if (a.birth >= loop_.begin[j]) s.mine += delta;
  if (j >= loop_.w && static_cast<uint64_t>(s.live) > s.best.bytes) s.best = {static_cast<uint64_t>(s.live), k, j};
  if (static_cast<uint64_t>(s.live) > s.iteration_best.peak)
    s.iteration_best = {static_cast<uint64_t>(s.live), static_cast<uint64_t>(s.mine),
                        static_cast<uint64_t>(s.live - s.before_loop - s.mine), static_cast<uint64_t>(s.before_loop)};
}

namespace {

LoopView make_loop(const format::Capture &capture, const SiteTable &sites, const std::vector<int> &devices,
                   const std::vector<Span> &spans, const Primary &primary, const AnalysisOptions &options) {
  LoopView loop(capture, sites, devices, options.advice);
  loop.n = static_cast<uint32_t>(primary.spans.size());
  loop.w = primary.warmup;
  loop.min_post_warmup = options.min_post_warmup_iterations;
  loop.first_begin = kNone;
  for (auto *v : {&loop.begin, &loop.end}) v->reserve(primary.spans.size());
  for (auto *v : {&loop.start_ns, &loop.end_ns}) v->reserve(primary.spans.size());
  for (uint32_t s : primary.spans) {
    loop.begin.push_back(spans[s].begin);
    loop.end.push_back(spans[s].end);
    loop.start_ns.push_back(spans[s].start_ns);
    loop.end_ns.push_back(spans[s].end_ns);
    loop.first_begin = std::min(loop.first_begin, spans[s].begin);
  }
  // Spans of one loop do not overlap, but a malformed capture may say otherwise: the rules need
  // iterations in order, so anything out of order ends the loop there.
  for (uint32_t j = 1; j < loop.n; ++j)
    if (loop.begin[j] < loop.end[j - 1]) {
      loop.n = j;
      break;
    }
  loop.w = std::min(loop.w, loop.n);
  for (auto *v : {&loop.begin, &loop.end}) v->resize(loop.n);
  loop.start_ns.resize(loop.n);
  loop.end_ns.resize(loop.n);
  return loop;
}

}  // namespace

namespace {

bool per_object_mode(const format::Capture &capture) {
  const format::AllocatorSettings &s = allocator_settings(capture);
  return s.cupy == format::CupyMode::kPerArray || s.xla_allocator == format::XlaAllocator::kPlatform ||
         s.torch_caching == format::TorchCaching::kOff;
}

}  // namespace

Advisor::Advisor(const format::Capture &capture, const Timeline &timeline, const SiteTable &sites,
                 const std::vector<Span> &spans, const Primary &primary, const AnalysisOptions &options)
    : capture_(capture),
      timeline_(timeline),
      sites_(sites),
      spans_(spans),
      primary_ends_(primary.end_pos),
      options_(options),
      loop_(make_loop(capture, sites, timeline.devices, spans, primary, options)),
      peaks_(loop_) {
  if (!options.advice.enabled) return;
  if (loop_.enough()) {
    // Under an allocator switch gpuleak made (every object its own CUDA call), the calls' number
    // and their waiting are gpuleak's doing, not the program's: no advice about them.
    const bool own_switch = gpuleak_switched_allocator(capture);
    if (!own_switch) rules_.push_back(churn_and_thrash_rule(loop_));
    rules_.push_back(late_release_rule(loop_, peaks_));
    // Under a per-object mode (gpuleak run --cupy per-array, --jax per-buffer, --torch
    // no-caching, or the same variables set by hand) every object is its own cudaMalloc: the
    // profiling mode made that cost, and the program's own pool would not pay it.
    if (!own_switch && !per_object_mode(capture)) rules_.push_back(serialization_rule(loop_));
  }
  if (loop_.n > 0) rules_.push_back(peak_rule(loop_, peaks_));
  rules_.push_back(reserve_rule(loop_));
}

std::vector<Observer *> Advisor::observers() {
  std::vector<Observer *> out;
  if (!options_.advice.enabled) return out;
  if (loop_.n > 0) out.push_back(&peaks_);
  for (auto &rule : rules_)
    if (Observer *o = rule->first()) out.push_back(o);
  return out;
}

void Advisor::finish(Analysis *out) {
  if (!options_.advice.enabled) return;
  std::vector<Observer *> second;
  for (auto &rule : rules_)
    if (rule->wants_second(out->ooms)) second.push_back(rule->second());
  if (!second.empty()) {  // the moments some rules need are known now: one more replay
    Ledger again;
    replay(capture_, timeline_, sites_, spans_, primary_ends_, second, &again);
  }
  std::vector<Advice> found;
  for (auto &rule : rules_) rule->findings(out->ooms, &found);
  // Rules that read no memory record (OOM records, NVML device usage in loop_.capture) need no
  // replay: plain functions, called here.
  advise_fragmentation(out->ooms, &found);

  drop_unactionable(&found);
  // A leaking device's peak is the leak's doing, and so are the pool's segments it maps every
  // iteration to hold what leaks: the leak finding says what to change, and "chunk the batch",
  // "shrink what the largest sites keep" or "make the allocations stream-ordered" beside it would
  // send the user elsewhere (issue #28: a leaking PyTorch loop, and the same run out of memory).
  auto leaking = [&](int device) {
    return std::any_of(out->devices.begin(), out->devices.end(),
                       [&](const DeviceSummary &d) { return d.index == device && d.verdict == Verdict::kLeak; });
  };
  found.erase(
      std::remove_if(found.begin(), found.end(),
                     [&](const Advice &a) {
                       return (a.kind == AdviceKind::kPeakComposition || a.kind == AdviceKind::kSerialization) &&
                              leaking(a.device);
                     }),
      found.end());

  std::stable_sort(found.begin(), found.end(), [](const Advice &a, const Advice &b) {
    if (a.kind != b.kind) return a.kind < b.kind;
    return rank_of(a) > rank_of(b);
  });
  size_t kept_of_kind = 0;
  for (size_t i = 0; i < found.size(); ++i) {
    kept_of_kind = i > 0 && found[i].kind == found[i - 1].kind ? kept_of_kind + 1 : 0;
    if (kept_of_kind < options_.advice.max_per_kind) out->advice.push_back(std::move(found[i]));
  }
}

void Advisor::drop_unactionable(std::vector<Advice> *found) const {
  const AdviceOptions &o = options_.advice;
  // The median post-warm-up iteration, the yardstick of a time saving.
  std::vector<uint64_t> wall;
  for (uint32_t j = loop_.w; j < loop_.n; ++j)
    wall.push_back(loop_.end_ns[j] > loop_.start_ns[j] ? loop_.end_ns[j] - loop_.start_ns[j] : 0);
  double iteration_ns = 0;
  if (!wall.empty()) {
    std::nth_element(wall.begin(), wall.begin() + wall.size() / 2, wall.end());
    iteration_ns = static_cast<double>(wall[wall.size() / 2]);
  }
  const CodeOwner owner(capture_, user_code_for(capture_, options_.user_code));
  auto keep = [&](const Advice &a) {
    switch (a.kind) {  // the device's state (nearly full, a failure): always said
      case AdviceKind::kPeakComposition:
      case AdviceKind::kFragmentation:
        return true;
      default:
        break;
    }
    if (o.require_user_frame && a.has_site && owner.site(a.site) == CodeOwner::Answer::kLibrary) return false;
    for (const AdviceNumber &s : a.saving) {
      if (s.name == "time_ns_per_iteration" && iteration_ns > 0 && s.value < o.min_saving_share * iteration_ns)
        return false;
      if (s.name == "peak_bytes") {
        int slot = -1;
        for (size_t d = 0; d < loop_.devices.size(); ++d)
          if (loop_.devices[d] == a.device) slot = static_cast<int>(d);
        const double peak = slot < 0 ? 0.0 : static_cast<double>(peaks_.peak(static_cast<uint16_t>(slot)).bytes);
        if (peak > 0 && s.value < o.min_saving_share * peak) return false;
      }
    }
    return true;
  };
  found->erase(std::remove_if(found->begin(), found->end(), [&](const Advice &a) { return !keep(a); }), found->end());
}

}  // namespace detail
}  // namespace gpuleak::analysis
