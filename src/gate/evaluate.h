// The gate's decision for one report: every finding (a leak, growth, a peak over budget, an
// out-of-memory, a short OOM forecast, a regression against the baseline, an inconclusive run,
// a damaged capture) with its status. Pure code over report_view.h: the writers (plain, JUnit,
// GitHub, Markdown) only render these findings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gate/budgets.h"
#include "gate/report_view.h"

namespace gpuleak::gate {

enum class Status {
  kFail,        // fails the gate (exit 1)
  kWarn,        // printed, passes
  kSuppressed,  // matched a suppression: listed with its reason, passes
  kIgnored,     // outside the gate's scope (--warmup), listed, passes
  kPass,        // within budget, listed for the record
};
const char *status_name(Status s);  // "FAIL", "warning", "suppressed", "ignored", "ok"

// kGone: a user line that leaked in the baseline and pairs with none of this report's (a pass).
enum class Kind {
  kLeak,
  kGrowth,
  kPeak,
  kOom,
  kOomHorizon,
  kPeakRegression,
  kLiveRegression,
  kInconclusive,
  kCapture,
  kGone
};
const char *kind_name(Kind k);  // "leak", "growth", "peak", "out of memory", "OOM forecast", ...

struct Finding {
  Kind kind = Kind::kLeak;
  Status status = Status::kFail;
  std::string message;                // one line: what, the rate or size, the budget, where
  std::string site_id;                // "" when not about a site; a user line's largest site
  std::vector<std::string> site_ids;  // a leak: every site judged in it, largest first
  std::vector<std::string> details;   // a user line of several sites: one line per site, under it
  int device = -1;                    // -1 when not about a device
  // Where to send a person (the site's user frame), when known.
  std::optional<std::string> file, function;
  std::optional<int64_t> line;
  std::string note;  // suppression reason and rule, or why ignored
  // (issue #33) The loop a leak or growth was judged in, and the test that ran it: "" when the
  // report has one loop and no test, or the finding is not about a loop.
  std::string loop, test;
  // A leak judged against a baseline (pairing.h): "new" (no baseline line pairs with it),
  // "regressed" (its rate grew beyond the tolerance), "same", or "gone" (Kind::kGone); "" without
  // a baseline. `paired_by` says how it paired ("exact", "path_suffix", "moved", "site") and
  // `baseline_line` names the baseline's line when it is paired or gone.
  std::string baseline, paired_by, baseline_line;
};

struct ReportOutcome {
  Report report;
  std::string baseline_path;  // "" when none applied
  std::vector<Finding> findings;

  bool failed() const;
  size_t count(Status s) const;
};

// Weighs `report` against the budgets and, when given, a baseline report, whose user lines pair
// with the report's by pair_lines() (pairing.h). Suppressions record
// their uses (for the "unused suppression" note).
ReportOutcome evaluate(Report report, const Budgets &budgets, Suppressions &suppressions, const Report *baseline);

// Reports whose capture recorded no memory event (run.capture.events == 0) measured nothing. One
// among others (a launcher that only queried CUDA) is a warning; when every report is such, the
// gate judged nothing and fails closed (docs/ci.md). Call once, after evaluate() of every report.
void judge_empty_captures(std::vector<ReportOutcome> *outcomes);

// A device's steady-state live bytes: the median of its live bytes at the ends of the
// post-warm-up primary iterations, else its live bytes at exit.
uint64_t steady_state_live(const Report &report, int device);

}  // namespace gpuleak::gate
