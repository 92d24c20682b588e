// What the loop advice stages share. Private to src/analysis (advice*.cpp and analysis.cpp).
//
//   advice.cpp       advise(): builds the LoopView, runs the rules, orders and caps the findings
//   advice_loop.cpp  churn, cache thrash, serialization: what happens inside each iteration
//   advice_peak.cpp  late release, peak composition, fragmentation: what the peak is made of
//   advice_reserve.cpp  fragmentation without a failure: NVML's samples, reserved far above live
//   advice_text.cpp  the sentences and the units they print
#pragma once

#include <string>
#include <vector>

#include "analysis/internal.h"

namespace gpuleak::analysis::detail {

// The primary loop as the advice rules read it.
struct Change {
  uint32_t pos = 0;
  uint8_t order = 1;  // 0: applied before the events at pos (a free moved to an iteration's end)
  int64_t delta = 0;
  uint32_t alloc = 0;
};
std::vector<Change> device_changes(const Ledger &ledger, uint16_t slot);

struct LoopView {
  LoopView(const format::Capture &c, const Timeline &t, const SiteTable &s, const Ledger &l, const AdviceOptions &o)
      : capture(c), timeline(t), sites(s), ledger(l), options(o) {}

  const format::Capture &capture;
  const Timeline &timeline;
  const SiteTable &sites;
  const Ledger &ledger;
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
  // The primary iteration holding event position p, or kNone (between iterations, outside).
  uint32_t iteration_of(uint32_t p) const;
  // Iteration ends an allocation born at `birth` and freed at `death` lived through.
  uint32_t ends_crossed(uint32_t birth, uint32_t death) const;
  // Enough post-warm-up iterations for "every iteration" to mean something.
  bool enough() const;
  // At least min_iteration_share of the post-warm-up iterations.
  bool most(uint64_t iterations) const;
  // device_changes(ledger, slot), computed once per device and shared by the rules (one sort of
  // every birth and death of a device is the most expensive step of the advice).
  const std::vector<Change> &changes(uint16_t slot) const;

 private:
  mutable std::vector<std::vector<Change>> changes_;
  mutable std::vector<bool> changes_ready_;
};

// Device live bytes after every change, with some allocations' deaths moved: the baseline and
// the counterfactuals the late-release and peak rules compare.

struct PeakAt {
  uint64_t bytes = 0;
  uint32_t pos = 0;        // the change that reached it (kNone: the iteration's start value)
  uint32_t iteration = 0;  // primary iteration
};
// The highest live value inside post-warm-up primary iterations. `changes` sorted by (pos, order).
PeakAt steady_peak(const LoopView &loop, const std::vector<Change> &changes);

void advise_churn_and_thrash(const LoopView &loop, std::vector<Advice> *out);
void advise_serialization(const LoopView &loop, std::vector<Advice> *out);
void advise_late_release(const LoopView &loop, std::vector<Advice> *out);
void advise_peak(const LoopView &loop, const std::vector<OomEvent> &ooms, std::vector<Advice> *out);
void advise_fragmentation(const LoopView &loop, const std::vector<OomEvent> &ooms, std::vector<Advice> *out);
void advise_reserve(const LoopView &loop, std::vector<Advice> *out);

// Units for the sentences: "4.0 MiB", "35 us", "12 %".
std::string bytes_text(double bytes);
std::string duration_text(double ns);
std::string share_text(double share);
// The API the program called for record `pos`: the runtime label when known ("cudaMalloc"), else
// the driver entry, else "the allocation calls".
std::string api_text(const Timeline &timeline, uint32_t pos);

void advise(const format::Capture &capture, const Timeline &timeline, const SiteTable &sites, const Ledger &ledger,
            const std::vector<Span> &spans, const Primary &primary, const AnalysisOptions &options, Analysis *out);

}  // namespace gpuleak::analysis::detail
