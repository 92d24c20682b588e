// Iteration finding: every source of a run's iterations, and find_iterations
// (iteration_finding.cpp), the one place that picks among them, strongest first. Private to
// src/analysis.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/frameworks.h"
#include "analysis/timeline.h"
#include "analysis/user_code.h"
#include "format/capture_reader.h"

namespace gpuleak::analysis::detail {

// The sources, strongest first. Marked iterations (iterations.cpp): from the C API's markers, from
// NVTX ranges whose name `is_range` accepts.
std::vector<Span> spans_from_markers(const format::Capture &capture, uint64_t capture_end_ns);
// Whether an NVTX message names an iteration, and with it the pattern's first group when that
// matched. A callback, not a std::regex: <regex> stays in the one file that compiles the pattern
// (iteration_finding.cpp) instead of in every file of the analysis (docs/benchmarks.md, "The
// demo's build"). It may throw std::regex_error, which reaches spans_from_nvtx's caller.
using RangeMatcher = std::function<bool(const std::string &message, std::optional<std::string> *group)>;
std::vector<Span> spans_from_nvtx(const format::Capture &capture, const RangeMatcher &is_range,
                                  uint64_t capture_end_ns);
// The loop with the most iterations (ties: the one that started first).
std::string primary_loop(const std::vector<Span> &spans);
// Spans from iteration starts given as allocation indices (ascending): each runs to the next
// start; the last one gets the median length in events of the others, and never reaches `tail`
// (an allocation index known to be past the loop, kNone: none) or the capture's end. Times set.
std::vector<Span> spans_from_starts(const Timeline &timeline, const SiteTable &sites, const std::string &loop,
                                    const std::vector<uint32_t> &starts, uint32_t tail);
// Iterations from the allocation sequence's period (period_detection.cpp). Spans come back with
// begin/end set, loop "auto"; empty when no period repeats often enough.
std::vector<Span> spans_from_period(const Timeline &timeline, const SiteTable &sites, int min_repetitions,
                                    double min_coverage);
// Iterations from the Python frames of the allocations (python_loop_detection.cpp): the passes of
// the loop in the outermost user-code frame most allocations go through. Loop named after that
// frame; empty when no such loop repeats min_repetitions times over min_coverage of the
// allocations that carry Python frames.
std::vector<Span> spans_from_python_loop(const format::Capture &capture, const Timeline &timeline,
                                         const SiteTable &sites, const UserCode &user, int min_repetitions,
                                         double min_coverage);

// Iterations from the observed Python loops (observed_loops.cpp, capture format 1.5): the passes
// of the loop level or callback whose passes explain the memory; `choice` says which, and what the
// observer said. Empty when none has min_repetitions passes (or the capture has no loop records).
// With them, the passes of one level per other group of nested levels (issue #33), each level
// described in *judged (name, kind, place, test, threads; the primary flagged).
std::vector<Span> spans_from_observed(const format::Capture &capture, const Timeline &timeline, const SiteTable &sites,
                                      int min_repetitions, IterationChoice *choice, std::vector<LoopJudgment> *judged);
// The `--loop FILE:LINE` to suggest when no iterations were found: the outermost observed loop
// the allocations pass through, else the outermost user frame of the first allocation with Python
// frames; "" when the program has no Python frames of the user's.
std::string suggest_loop(const format::Capture &capture, const SiteTable &sites, const UserCode &user);

// Iteration finding (iteration_finding.cpp), the one place that picks a run's iterations. First,
// before pass 0 (which places their times on event positions): the marked ones, from the C API,
// else from NVTX ranges matching AnalysisOptions::iteration_range_regex (sets iteration_source,
// warns about a bad pattern). Empty when the program marked none.
std::vector<Span> marked_iterations(const format::Capture &capture, uint64_t capture_end_ns,
                                    const AnalysisOptions &options, Analysis *out);
// Then, after pass 0: `marked` when there are any; else, unless a framework's pool hides the
// objects, the observed Python loops, the loop in the allocations' Python frames, the allocation
// sequence's period, the first that finds any. Sets iteration_source and iteration_choice (what
// was tried and the --loop to suggest when nothing was found) and frees the sites' allocation
// sequence. The spans come back sorted by start.
std::vector<Span> find_iterations(const format::Capture &capture, const Timeline &timeline, SiteTable *sites,
                                  const HidingPool &pool, std::vector<Span> marked, const AnalysisOptions &options,
                                  Analysis *out);

}  // namespace gpuleak::analysis::detail
