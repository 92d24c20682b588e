// `gpuleak diff A B`: two reports side by side (verdicts, peak and live at exit per device,
// growth) and how their leaks changed, one user line (leak_groups) at a time: as text, or as
// JSON (gpuleak.diff/1) for a CI step that reads it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gate/pairing.h"
#include "gate/report_view.h"

namespace gpuleak::gate {

struct LeakChange {
  // new, gone, regressed (the rate grew beyond the tolerance of A's), improved (it shrank beyond
  // it), moved (paired by "moved" or "site": A's line is elsewhere; rate within the tolerance),
  // same.
  enum class What { kAdded, kRemoved, kRegressed, kImproved, kMoved, kSame };
  What what = What::kSame;
  const LeakGroup *before_line = nullptr;  // the user line in A (null when added)
  const LeakGroup *after_line = nullptr;   // in B (null when removed)
  const Leak *before = nullptr;            // the line's largest site in A (null when added)
  const Leak *after = nullptr;             // in B (null when removed)
  std::optional<PairedBy> paired_by;       // how the lines paired (pairing.h); none when added or removed
};
const char *change_name(LeakChange::What what);  // "new", "gone", "regressed", "improved", "moved", "same"

// The user lines (leak_groups) of A and B, paired by pair_lines(A, B) (pairing.h): every line of
// both, new first, then gone, regressed, improved, moved and same, each largest rate first. A
// line whose library sites changed below it, that moved a few lines, or that ran from another
// checkout is the same line. The pointers point into `a` and `b`, which must outlive the result.
std::vector<LeakChange> diff_leaks(const Report &a, const Report &b, double tolerance);

// The same as JSON, "schema": "gpuleak.diff/1" (docs/ci.md "gpuleak diff --json").
nlohmann::json diff_json(const Report &a, const Report &b, double tolerance);

// The side-by-side text.
std::string write_diff(const Report &a, const Report &b, double tolerance);

}  // namespace gpuleak::gate
