// Which finding of one report is which finding of another: the one rule that pairs the user lines
// (leak_groups[]) of a baseline with those of a newer report. `gpuleak check --baseline` (and so
// its JUnit, GitHub and Markdown outputs) and `gpuleak diff` read their "new", "gone" and
// "regressed" from here and pair nothing themselves.
//
// A finding is the user's line, not a library site: a torch upgrade changes the native frames
// under train.py:52 (so every site_id), a line added above it moves it to train.py:53, and CI
// checks main out at /builds/x/repo where the developer had /home/a/repo; each is still the same
// finding. The rule (docs/ci.md "How a finding is paired with the baseline's"):
//
//   candidates   same device, and the same loop (loops_match); a report without loops[] (before
//                gpuleak.report/1.1) matches any loop;
//   1. exact       the headline's file, function and line are equal, and so is its caller's;
//   2. path_suffix the same, the files compared by their trailing path components (the longest
//                  common suffix wins, so pkg/a/utils.py never takes pkg/b/utils.py's pair);
//   3. moved       the same file (by suffix) and function, and the same caller's function, on
//                  another line. Lines added above two leaks of one function shift both, so
//                  their order is kept: the alignment that pairs the most lines and moves them
//                  the least in total (the headline's and the caller's line distances) wins, the
//                  earlier baseline line on a tie;
//   4. site        a library site_id in common (the user's frame named differently, such as
//                  under another --user-code).
//
// Each tier pairs only what the tiers before it left, one to one: two lines of one function never
// both pair with one baseline line. In the other tiers the longest common path suffix pairs
// first, then leak_groups[] order, so the result depends on nothing but the two reports.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "gate/report_view.h"

namespace gpuleak::gate {

enum class PairedBy { kExact, kPathSuffix, kMoved, kSite };
const char *paired_by_name(PairedBy by);  // "exact", "path_suffix", "moved", "site"

struct LinePair {
  size_t before = 0, after = 0;  // indexes into each report's leak_groups
  PairedBy by = PairedBy::kExact;
};

struct LinePairing {
  std::vector<LinePair> pairs;      // by `after` index
  std::vector<size_t> only_after;   // "new": after's lines with no pair, in leak_groups order
  std::vector<size_t> only_before;  // "gone": before's lines with no pair, in leak_groups order

  // The pair of after.leak_groups[index], nullptr when it is new.
  const LinePair *of_after(size_t index) const;
};

// Pairs the user lines of `before` (the baseline) with those of `after`.
LinePairing pair_lines(const Report &before, const Report &after);

// Whether a loop of `ra` and a loop of `rb` are the same loop: a marked loop by its name, an
// observed one (which names itself by its line) by its kind, file (by path suffix) and function,
// and each report's only loop with the other's only loop (marks added to a loop that was
// observed). nullptr (a report before loops[]) matches any.
bool loops_match(const Report &ra, const Loop *a, const Report &rb, const Loop *b);

// How many trailing '/'-separated components two paths share: 2 for /home/a/repo/train.py and
// /builds/x/repo/train.py ("repo/train.py"), 0 when their file names differ.
size_t common_path_suffix(const std::string &a, const std::string &b);

// Whether a line's rate moved beyond `tolerance` of the baseline's: grew (regressed) or shrank.
bool rate_regressed(double before, double after, double tolerance);
bool rate_improved(double before, double after, double tolerance);

}  // namespace gpuleak::gate
