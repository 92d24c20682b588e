// advise(): the loop advice entry point. Builds the view of the primary loop the rules share,
// runs each rule, and orders the findings (kind order, then largest saving first).
#include <algorithm>

#include "analysis/advice_internal.h"

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

uint32_t LoopView::iteration_of(uint32_t p) const {
  // The first iteration ending after p; p is inside it when it began at or before p.
  uint32_t j = static_cast<uint32_t>(std::upper_bound(end.begin(), end.end(), p) - end.begin());
  return j < n && begin[j] <= p ? j : kNone;
}

uint32_t LoopView::ends_crossed(uint32_t birth, uint32_t death) const {
  // Alive at end e when born before it (birth < e) and freed at or after it (death >= e).
  auto after = [&](uint32_t p) { return std::upper_bound(end.begin(), end.end(), p) - end.begin(); };
  return death <= birth ? 0 : static_cast<uint32_t>(after(death) - after(birth));
}

const std::vector<Change> &LoopView::changes(uint16_t slot) const {
  if (changes_.size() <= slot) {
    changes_.resize(slot + 1u);
    changes_ready_.resize(slot + 1u, false);
  }
  if (!changes_ready_[slot]) {
    changes_[slot] = device_changes(ledger, slot);
    changes_ready_[slot] = true;
  }
  return changes_[slot];
}

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

void advise(const format::Capture &capture, const Timeline &timeline, const SiteTable &sites, const Ledger &ledger,
            const std::vector<Span> &spans, const Primary &primary, const AnalysisOptions &options, Analysis *out) {
  if (!options.advice.enabled) return;
  LoopView loop(capture, timeline, sites, ledger, options.advice);
  loop.n = static_cast<uint32_t>(primary.spans.size());
  loop.w = primary.warmup;
  loop.min_post_warmup = options.min_post_warmup_iterations;
  loop.first_begin = kNone;
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

  std::vector<Advice> found;
  if (loop.enough()) {
    advise_churn_and_thrash(loop, &found);
    advise_late_release(loop, &found);
    advise_serialization(loop, &found);
  }
  if (loop.n > 0) advise_peak(loop, out->ooms, &found);
  advise_fragmentation(loop, out->ooms, &found);
  advise_reserve(loop, &found);

  std::stable_sort(found.begin(), found.end(), [](const Advice &a, const Advice &b) {
    if (a.kind != b.kind) return a.kind < b.kind;
    return rank_of(a) > rank_of(b);
  });
  size_t kept_of_kind = 0;
  for (size_t i = 0; i < found.size(); ++i) {
    kept_of_kind = i > 0 && found[i].kind == found[i - 1].kind ? kept_of_kind + 1 : 0;
    if (kept_of_kind < options.advice.max_per_kind) out->advice.push_back(std::move(found[i]));
  }
}

}  // namespace detail
}  // namespace gpuleak::analysis
