// `gpuleak diff A B`: two reports side by side (verdicts, peak and live at exit per device,
// growth) and how their leaks changed, matched by site_id.
#pragma once

#include <string>
#include <vector>

#include "gate/report_view.h"

namespace gpuleak::gate {

struct LeakChange {
  enum class What { kAdded, kRemoved, kChanged, kSame };
  What what = What::kSame;
  const Leak *before = nullptr;  // in A (null when added)
  const Leak *after = nullptr;   // in B (null when removed)
};

// Leaks of A and B matched by (site_id, device): added, removed, then changed (the rate moved by
// more than `tolerance` of A's), each largest rate first. Unchanged sites are left out. The
// pointers point into `a` and `b`, which must outlive the result.
std::vector<LeakChange> diff_leaks(const Report &a, const Report &b, double tolerance);

// The side-by-side text.
std::string write_diff(const Report &a, const Report &b, double tolerance);

}  // namespace gpuleak::gate
