// `gpuleak diff A B`: two reports side by side (verdicts, peak and live at exit per device,
// growth) and how their leaks changed, one user line (leak_groups) at a time.
#pragma once

#include <string>
#include <vector>

#include "gate/report_view.h"

namespace gpuleak::gate {

struct LeakChange {
  enum class What { kAdded, kRemoved, kChanged, kSame };
  What what = What::kSame;
  const LeakGroup *before_line = nullptr;  // the user line in A (null when added)
  const LeakGroup *after_line = nullptr;   // in B (null when removed)
  const Leak *before = nullptr;            // the line's largest site in A (null when added)
  const Leak *after = nullptr;             // in B (null when removed)
};

// The user lines (leak_groups) of A and B, matched by device and the line's headline frame, or
// by a site they share: added, removed, then changed (the rate moved by more than `tolerance` of
// A's), each largest rate first. Unchanged lines are left out; a line whose library sites
// changed below it is the same line. The pointers point into `a` and `b`, which must outlive
// the result.
std::vector<LeakChange> diff_leaks(const Report &a, const Report &b, double tolerance);

// The side-by-side text.
std::string write_diff(const Report &a, const Report &b, double tolerance);

}  // namespace gpuleak::gate
