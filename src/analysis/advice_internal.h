// What the loop advice stages share. Private to src/analysis (advice*.cpp and analysis.cpp).
//
//   advice.cpp       Advisor: builds the LoopView, hands the rules' observers to the replay, runs
//                    a second replay when a rule needs one, orders and caps the findings
//   advice_loop.cpp  churn, cache thrash, serialization: what happens inside each iteration
//   advice_peak.cpp  late release, fragmentation: what the peak is made of
//   advice_composition.cpp  peak composition: the live set at the peak, by site and age
//   advice_reserve.cpp  fragmentation without a failure: NVML's samples, reserved far above live
//   advice_text.cpp  the sentences and the units they print
//
// A rule is an Observer of the replay (replay_observer.h): it aggregates as allocations are born and
// die, so that what it keeps is proportional to sites, iterations and live allocations. A rule
// that needs a moment known only at the end (the peak) asks for a second replay. A rule that reads
// other records of the capture (OOM, device usage, ...) reads them from LoopView::capture.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/records.h"
#include "analysis/replay_observer.h"
#include "analysis/timeline.h"

namespace gpuleak::analysis::detail {

// A call site on one device slot, as one map key (the advice rules count per site and device).
inline uint64_t slot_site_key(uint16_t slot, uint32_t site) { return static_cast<uint64_t>(slot) << 32 | site; }

// The primary loop as the advice rules read it.
struct LoopView {
  LoopView(const format::Capture &c, const SiteTable &s, const std::vector<int> &d, const AdviceOptions &o)
      : capture(c), sites(s), devices(d), options(o) {}

  const format::Capture &capture;
  const SiteTable &sites;
  const std::vector<int> &devices;  // slot -> device index
  const AdviceOptions &options;
  uint32_t n = 0;                  // primary iterations
  uint32_t w = 0;                  // of which warm-up
  std::vector<uint32_t> begin;     // event positions of each primary iteration, [begin, end)
  std::vector<uint32_t> end;       // ascending
  std::vector<uint64_t> start_ns;  // monotonic
  std::vector<uint64_t> end_ns;
  uint32_t first_begin = 0;  // where the loop starts: "before the loop" is earlier
  int min_post_warmup = 3;   // AnalysisOptions::min_post_warmup_iterations

  uint32_t post() const { return n > w ? n - w : 0; }
  // The primary iteration holding event position p, or kNone (between iterations, outside), given
  // `after`: how many primary iterations ended at or before p (Primary::end_pos; a LiveAllocation's
  // ends_at_birth, or a PositionCursor over `end` at the replay's position). O(1): the rules ask on
  // every death, and a binary search over the ends each time was a tenth of the analysis.
  uint32_t iteration_at(uint32_t p, uint32_t after) const {
    const uint32_t j = std::min(after, n);  // `end` may be a prefix of the primary ends
    return j < n && begin[j] <= p ? j : kNone;
  }
  uint32_t iteration_born(const LiveAllocation &a) const { return iteration_at(a.birth, a.ends_at_birth); }
  // Iteration ends allocation `a` lived through when it died at `death`, `after_death` iterations
  // having ended at or before that.
  uint32_t ends_crossed(const LiveAllocation &a, uint32_t death, uint32_t after_death) const {
    return death <= a.birth ? 0 : std::min(after_death, n) - std::min(a.ends_at_birth, n);
  }
  // Enough post-warm-up iterations for "every iteration" to mean something.
  bool enough() const;
  // At least min_iteration_share of the post-warm-up iterations.
  bool most(uint64_t iterations) const;
};

// Walks the primary iterations as the replay passes their boundaries: advance(k) before event k
// opens every iteration that began at or before k and closes every one that ended there; current()
// is then the iteration event k belongs to (kNone: between iterations).
class LoopWalk {
 public:
  explicit LoopWalk(const LoopView &loop) : loop_(loop) {}
  template <typename Open, typename Close>
  void advance(uint32_t k, Open open, Close close) {
    while (next_ < loop_.n) {
      if (!open_ && loop_.begin[next_] <= k) open_ = true, open(next_);
      if (!open_ || loop_.end[next_] > k) return;
      open_ = false;
      close(next_++);
    }
  }
  uint32_t current() const { return open_ ? next_ : kNone; }

 private:
  const LoopView &loop_;
  uint32_t next_ = 0;
  bool open_ = false;
};

// The highest device live bytes inside post-warm-up primary iterations (an iteration's start
// counts: everything before its first event).
struct PeakAt {
  uint64_t bytes = 0;
  uint32_t pos = 0;        // the event that reached it (kNone: the iteration's start value)
  uint32_t iteration = 0;  // primary iteration
};
// What was live at one iteration's own peak, by age.
struct AgesAt {
  uint64_t peak = 0, this_iteration = 0, earlier = 0, before_loop = 0;
  bool operator==(const AgesAt &o) const {
    return peak == o.peak && this_iteration == o.this_iteration && earlier == o.earlier && before_loop == o.before_loop;
  }
};
// One device's AgesAt over the post-warm-up iterations, equal neighbours kept once with a count:
// a device that holds the same memory through a million iterations without allocating is one run
// (issue #18: nothing kept per device and iteration).
struct AgesRun {
  AgesAt ages;
  uint32_t iterations = 0;
};

// Pass 1, per device slot: the steady peak and each post-warm-up iteration's peak by age.
class DevicePeaks : public Observer {
 public:
  explicit DevicePeaks(const LoopView &loop) : loop_(loop), walk_(loop), slots_(loop.devices.size()) {}
  void before(uint32_t k, const format::MemoryRecord *r, const LiveSet &live) override;
  void born(uint32_t k, const format::MemoryRecord &r, const LiveAllocation &a) override;
  void died(uint32_t k, const format::MemoryRecord &r, const LiveAllocation &a) override;
  const PeakAt &peak(uint16_t slot) const { return slots_[slot].best; }
  const std::vector<AgesRun> &ages(uint16_t slot) const { return slots_[slot].ages; }

 private:
  void change(uint32_t k, const LiveAllocation &a, int64_t delta);
  struct Slot {
    int64_t live = 0, before_loop = 0, mine = 0;
    PeakAt best;
    bool found = false;
    AgesAt iteration_best;
    std::vector<AgesRun> ages;
  };
  const LoopView &loop_;
  LoopWalk walk_;
  std::vector<Slot> slots_;
};

// A rule: an observer for the first replay, one for a second replay when wants_second() says so
// after the first, and its findings at the end.
class Rule {
 public:
  virtual ~Rule() = default;
  virtual Observer *first() { return nullptr; }
  virtual bool wants_second(const std::vector<OomEvent> &ooms) { return (void)ooms, false; }
  virtual Observer *second() { return nullptr; }
  virtual void findings(const std::vector<OomEvent> &ooms, std::vector<Advice> *out) = 0;
};

// Each rule needs `enough()` iterations unless said otherwise.
std::unique_ptr<Rule> churn_and_thrash_rule(const LoopView &loop);
std::unique_ptr<Rule> serialization_rule(const LoopView &loop);
std::unique_ptr<Rule> late_release_rule(const LoopView &loop, const DevicePeaks &peaks);
std::unique_ptr<Rule> peak_rule(const LoopView &loop, const DevicePeaks &peaks);  // needs n > 0
void advise_fragmentation(const std::vector<OomEvent> &ooms, std::vector<Advice> *out);
// Fragmentation without a failure: NVML's samples (device usage records), reserved far above live.
std::unique_ptr<Rule> reserve_rule(const LoopView &loop);

// Units for the sentences: "4.0 MiB", "35 us", "12 %".
std::string bytes_text(double bytes);
std::string duration_text(double ns);
std::string share_text(double share);
// The API the program called (an api_label): "cudaMalloc", else the driver entry, else "the
// allocation calls".
std::string api_text(uint16_t api);

// The advice stage of analyze(): observers for pass 1, then (after it) the findings, with a
// second replay when a rule needs one.
class Advisor {
 public:
  Advisor(const format::Capture &capture, const Timeline &timeline, const SiteTable &sites,
          const std::vector<Span> &spans, const Primary &primary, const AnalysisOptions &options);
  std::vector<Observer *> observers();
  void finish(Analysis *out);

 private:
  // Drops what the user cannot act on: findings at framework internals only, and savings below
  // AdviceOptions::min_saving_share of the iteration's time or of the peak.
  void drop_unactionable(std::vector<Advice> *found) const;
  const format::Capture &capture_;
  const Timeline &timeline_;
  const SiteTable &sites_;
  const std::vector<Span> &spans_;
  const std::vector<uint32_t> &primary_ends_;
  const AnalysisOptions &options_;
  LoopView loop_;
  DevicePeaks peaks_;
  std::vector<std::unique_ptr<Rule>> rules_;
};

}  // namespace gpuleak::analysis::detail
