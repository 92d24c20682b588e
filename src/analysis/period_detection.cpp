// Automatic iterations: with no marks at all, find the program's period in the sequence of call
// sites of its successful allocations. A loop that does alloc(A temp), alloc(B kept), free(A)
// leaves "... A B A B A B ..." behind: period 2 allocations, and each occurrence of A (the first
// call site of the period) starts an iteration.
//
// 1. Candidate periods. For every allocation, the distance back to the 1st..4th previous
//    allocation from the same site votes for that distance: a site that allocates k times per
//    iteration (k <= 4) votes for the period with its k-th distance. Candidates are ranked by
//    votes x distance (the share of the sequence they explain), so that a long loop body is not
//    crowded out by the short repeats inside it (layers of one model).
// 2. Verification. For a candidate p, the longest run of positions i where site[i] == site[i+p]
//    is a stretch of the sequence that is exactly p-periodic. The stretch that covers the most
//    allocations wins; among stretches within 10% of it, the smallest period (p rather than 2p).
//    It must hold min_repetitions periods, and the iterations cut from it must cover at least
//    min_auto_coverage of all allocations (a set-up burst is not the program's loop).
// 3. Cutting. Iterations start at the allocation of the period that most often follows a burst
//    of other events (the frees at the end of an iteration): there the previous iteration's
//    temporaries are gone. Inside the stretch, one iteration every p allocations; when that
//    allocation's site occurs once per period (the anchor), also beyond the stretch (before and
//    after) wherever the anchor recurs at a distance within 25% of p, so that an iteration with
//    one extra allocation (a log step) does not end the loop.
//
// Cost: O(N) per candidate, at most kCandidates of them, on the allocation sequence only (pass 0
// kept it: one 4-byte site index and one 4-byte event position per allocation, and only when the
// capture has no iteration marks), then one replay for the times of the cuts.
#include <algorithm>
#include <array>

#include "analysis/iteration_finding.h"
#include "analysis/timeline.h"
#include "format/huge_pages.h"

namespace gpuleak::analysis::detail {

namespace {

constexpr int kMaxPerIteration = 4;
constexpr size_t kCandidates = 24;

std::vector<uint32_t> candidate_periods(const std::vector<uint32_t> &seq, size_t site_count, size_t max_period,
                                        size_t min_votes) {
  std::vector<uint32_t> votes(max_period + 1, 0);
  std::vector<std::array<uint32_t, kMaxPerIteration>> recent(site_count);
  for (auto &r : recent) r.fill(kNone);
  for (uint32_t i = 0; i < seq.size(); ++i) {
    auto &r = recent[seq[i]];
    for (int k = 0; k < kMaxPerIteration && r[k] != kNone; ++k) {
      uint32_t gap = i - r[k];
      if (gap <= max_period) ++votes[gap];
    }
    for (int k = kMaxPerIteration - 1; k > 0; --k) r[k] = r[k - 1];
    r[0] = i;
  }
  std::vector<std::pair<uint64_t, uint32_t>> ranked;  // (votes x gap, gap)
  for (uint32_t gap = 1; gap <= max_period; ++gap)
    if (votes[gap] >= min_votes) ranked.emplace_back(static_cast<uint64_t>(votes[gap]) * gap, gap);
  size_t keep = std::min(kCandidates, ranked.size());
  std::partial_sort(ranked.begin(), ranked.begin() + keep, ranked.end(), [](const auto &a, const auto &b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<uint32_t> out;
  for (size_t i = 0; i < keep; ++i) out.push_back(ranked[i].second);
  return out;
}

struct Stretch {
  uint32_t period = 0;
  uint32_t start = 0;   // first allocation of the periodic stretch
  uint32_t length = 0;  // allocations in it
};

Stretch longest_periodic(const std::vector<uint32_t> &seq, uint32_t p) {
  Stretch best{p, 0, 0};
  uint32_t run = 0;
  for (uint32_t i = 0; i + p < seq.size(); ++i) {
    run = seq[i] == seq[i + p] ? run + 1 : 0;
    if (run > 0 && run + p > best.length) best = {p, i + 1 - run, run + p};
  }
  return best;
}

}  // namespace

std::vector<uint32_t> positions_of(const Timeline &timeline, const SiteTable &sites,
                                   const std::vector<uint32_t> &allocs) {
  std::vector<uint32_t> out(allocs.size(), timeline.size);
  for (size_t i = 0; i < allocs.size(); ++i)
    if (allocs[i] < sites.alloc_positions.size()) out[i] = sites.alloc_positions[allocs[i]];
  return out;
}

// The times of events at positions (ascending, each < timeline.size).
std::vector<uint64_t> times_at(const Timeline &timeline, const std::vector<uint32_t> &positions) {
  std::vector<uint64_t> out(positions.size(), 0);
  size_t next = 0;
  timeline.replay_times([&](uint32_t k, uint64_t ts) {
    for (; next < positions.size() && positions[next] == k; ++next) out[next] = ts;
  });
  return out;
}

std::vector<Span> spans_from_period(const Timeline &timeline, const SiteTable &sites, int min_repetitions,
                                    double min_coverage) {
  const std::vector<uint32_t> &seq = sites.alloc_sequence;
  uint32_t reps = static_cast<uint32_t>(std::max(2, min_repetitions));
  if (seq.size() < 2 * static_cast<size_t>(reps)) return {};
  uint32_t n = static_cast<uint32_t>(seq.size());

  std::vector<Stretch> found;
  for (uint32_t p : candidate_periods(seq, sites.sites.size(), n / reps, reps - 1)) {
    Stretch s = longest_periodic(seq, p);
    if (s.length / p >= reps) found.push_back(s);
  }
  if (found.empty()) return {};
  uint32_t widest = 0;
  for (const Stretch &s : found) widest = std::max(widest, s.length);
  const Stretch *pick = nullptr;
  for (const Stretch &s : found)
    if (s.length * 10ull >= widest * 9ull && (!pick || s.period < pick->period)) pick = &s;
  const uint32_t p = pick->period, end = pick->start + pick->length;

  // The phase: iterations start at the allocation that most often follows a burst of other
  // events (the frees that end an iteration), so that an iteration's end falls where its
  // temporaries are gone. Ties: the earliest.
  std::vector<uint64_t> score(p, 0);
  {
    const std::vector<uint32_t> &at = sites.alloc_positions;
    const uint32_t from = std::max<uint32_t>(pick->start, 1);
    for (uint32_t index = from; index < end && index < at.size(); ++index)
      score[(index - pick->start) % p] += at[index] - at[index - 1] - 1;
  }
  const uint32_t first =
      pick->start + static_cast<uint32_t>(std::max_element(score.begin(), score.end()) - score.begin());
  // The anchor: that allocation's site, when it occurs once per period (else no extension).
  uint32_t seen = 0;
  for (uint32_t i = pick->start; i < pick->start + p; ++i) seen += seq[i] == seq[first];
  const bool anchored = seen == 1;

  std::vector<uint32_t> cuts;  // allocation indices where iterations start
  for (uint32_t c = first; c + p <= end; c += p) cuts.push_back(c);
  if (anchored) {
    uint32_t anchor = seq[first], slack = std::max<uint32_t>(1, p / 4);
    auto near_period = [&](uint32_t gap) { return gap + slack >= p && gap <= p + slack; };
    std::vector<uint32_t> before;
    for (uint32_t i = first, prev = first; i-- > 0;) {
      if (seq[i] != anchor) continue;
      if (!near_period(prev - i)) break;
      before.push_back(i);
      prev = i;
    }
    uint32_t last = cuts.back();
    for (uint32_t i = last + 1; i < n; ++i) {
      if (seq[i] != anchor) continue;
      if (!near_period(i - last)) break;
      cuts.push_back(i);
      last = i;
    }
    cuts.insert(cuts.begin(), before.rbegin(), before.rend());
  }
  if (cuts.size() < reps) return {};
  // A short burst (a few buffers allocated in a loop during set-up) repeats too, but it is not the
  // program's loop: the iterations must span a good part of all allocations.
  if (static_cast<double>(std::min<uint64_t>(n, uint64_t{cuts.back()} + p) - cuts.front()) < min_coverage * n)
    return {};

  // Each iteration runs to the next one's first allocation; the last one never beyond the
  // allocation one period after its start.
  return spans_from_starts(timeline, sites, "auto", cuts, cuts.back() + p < n ? cuts.back() + p : kNone);
}

std::vector<Span> spans_from_starts(const Timeline &timeline, const SiteTable &sites, const std::string &loop,
                                    const std::vector<uint32_t> &starts, uint32_t tail) {
  if (starts.empty()) return {};
  // The last one has no successor: it gets the median length in events of the others.
  std::vector<uint32_t> wanted = starts;
  const bool bounded = tail != kNone && tail > starts.back();
  if (bounded) wanted.push_back(tail);
  const std::vector<uint32_t> at = positions_of(timeline, sites, wanted);
  std::vector<Span> spans;
  std::vector<uint32_t> lengths;
  spans.reserve(starts.size());
  format::prefer_huge_pages(spans);
  lengths.reserve(starts.size());
  for (size_t j = 0; j < starts.size(); ++j) {
    Span s{loop};  // copied in place: an assignment into a default string cost three times that
    s.begin = at[j];
    if (j + 1 < starts.size()) {
      s.end = at[j + 1];
      lengths.push_back(s.end - s.begin);
    } else {
      uint64_t e = timeline.size;
      if (!lengths.empty()) {
        std::nth_element(lengths.begin(), lengths.begin() + lengths.size() / 2, lengths.end());
        e = static_cast<uint64_t>(s.begin) + lengths[lengths.size() / 2];
      }
      if (bounded) e = std::min<uint64_t>(e, at[j + 1]);
      s.end = static_cast<uint32_t>(std::min<uint64_t>(e, timeline.size));
    }
    spans.push_back(std::move(s));
  }
  // Their times: one more replay for the positions of every start and last event. Spans one after
  // another ask in order already (start, last, next start, ...): then no search per span.
  std::vector<uint32_t> moments;
  moments.reserve(2 * spans.size());
  for (const Span &s : spans) moments.push_back(s.begin), moments.push_back(std::max(s.begin, s.end - 1));
  if (std::is_sorted(moments.begin(), moments.end())) {
    const std::vector<uint64_t> times = times_at(timeline, moments);
    for (size_t j = 0; j < spans.size(); ++j) spans[j].start_ns = times[2 * j], spans[j].end_ns = times[2 * j + 1];
    return spans;
  }
  std::vector<uint32_t> sorted = moments;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  const std::vector<uint64_t> times = times_at(timeline, sorted);
  auto time_of = [&](uint32_t pos) {
    return times[std::lower_bound(sorted.begin(), sorted.end(), pos) - sorted.begin()];
  };
  for (Span &s : spans) {
    s.start_ns = time_of(s.begin);
    s.end_ns = time_of(std::max(s.begin, s.end - 1));
  }
  return spans;
}

}  // namespace gpuleak::analysis::detail
