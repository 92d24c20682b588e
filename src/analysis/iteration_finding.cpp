// The one place that decides a run's iterations (DESIGN.md "Iterations"), strongest source first:
// the gpuleak_iteration_* C API marks, NVTX ranges named like a step, then, with neither, the
// observed Python loops, the loop in the allocations' Python frames, the allocation sequence's
// period. Each source is in its own file (iterations.cpp, observed_loops.cpp,
// python_loop_detection.cpp, period_detection.cpp); this file only orders them.
#include <algorithm>
#include <regex>

#include "analysis/iteration_finding.h"

namespace gpuleak::analysis::detail {

using format::Capture;

namespace {

// No iterations: what was tried, in the order tried, and the --loop line to suggest.
void say_why_none(const Capture &capture, const SiteTable &sites, const HidingPool &pool, Analysis *out) {
  const UserCode &user = out->user_code;
  IterationChoice &c = out->iteration_choice;
  c.tried.push_back(capture.markers.empty() ? "no gpuleak_iteration marks" : "no complete gpuleak_iteration marks");
  c.tried.push_back(capture.nvtx.empty() ? "no NVTX ranges" : "no NVTX range named like a step");
  if (!pool.mode.empty()) {
    c.tried.push_back("no loop inferred: " + pool.mode.text() + " hides the objects");
  } else {
    if (c.observed)
      c.tried.push_back(c.levels == 0 ? "no observed Python loop or callback ran 4 passes with allocations"
                                      : "no observed Python loop holding most of the allocations");
    else if (!c.observer.empty())
      c.tried.push_back("Python loops not observed (" + c.observer + ")");
    c.tried.push_back("no Python loop in the allocations' lines");
    c.tried.push_back("no period in the allocation sequence");
  }
  c.suggested_loop = suggest_loop(capture, sites, user);
}

}  // namespace

std::vector<Span> marked_iterations(const Capture &capture, uint64_t end_ns, const AnalysisOptions &o, Analysis *out) {
  std::vector<Span> spans = spans_from_markers(capture, end_ns);
  if (!spans.empty()) {
    out->iteration_source = IterationSource::kApi;
  } else if (!capture.nvtx.empty()) {
    const auto flags = std::regex::ECMAScript | std::regex::icase;
    std::regex pattern;
    try {
      pattern = std::regex(o.iteration_range_regex, flags);
    } catch (const std::regex_error &) {
      out->warnings.push_back("invalid iteration range pattern '" + o.iteration_range_regex + "': using the default");
      pattern = std::regex(AnalysisOptions{}.iteration_range_regex, flags);
    }
    try {
      auto is_range = [&pattern](const std::string &text, std::optional<std::string> *group) {
        std::smatch m;
        if (!std::regex_match(text, m, pattern)) return false;
        if (m.size() > 1 && m[1].matched) *group = m[1].str();
        return true;
      };
      spans = spans_from_nvtx(capture, is_range, end_ns);
    } catch (const std::regex_error &) {  // too complex for std::regex on some message
      out->warnings.push_back("iteration range pattern failed on an NVTX message: NVTX ranges ignored");
      spans.clear();
    }
    if (!spans.empty()) out->iteration_source = IterationSource::kNvtx;
  }
  return spans;
}

std::vector<Span> find_iterations(const Capture &capture, const Timeline &timeline, SiteTable *sites,
                                  const HidingPool &pool, std::vector<Span> marked, const AnalysisOptions &o,
                                  Analysis *out) {
  std::vector<Span> spans = std::move(marked);
  // No marks: the user's Python loop when the frames show one, else the period. Neither when a
  // framework's pool hides the objects: its allocations follow the pool's growth, not the loop.
  if (spans.empty() && pool.mode.empty()) {
    spans = spans_from_observed(capture, timeline, *sites, o.min_auto_repetitions, &out->iteration_choice, &out->loops);
    if (!spans.empty()) out->iteration_source = IterationSource::kObserved;
  } else {
    for (const format::Observer &observer : capture.observers) {
      out->iteration_choice.observer = observer.note;
      out->iteration_choice.observed = observer.method == static_cast<uint32_t>(format::ObserverMethod::kMonitoring);
    }
  }
  if (spans.empty() && pool.mode.empty()) {
    spans =
        spans_from_python_loop(capture, timeline, *sites, out->user_code, o.min_auto_repetitions, o.min_auto_coverage);
    if (!spans.empty()) out->iteration_source = IterationSource::kPythonLoop;
  }
  if (spans.empty() && pool.mode.empty()) {
    spans = spans_from_period(timeline, *sites, o.min_auto_repetitions, o.min_auto_coverage);
    if (!spans.empty()) out->iteration_source = IterationSource::kAuto;
  }
  if (spans.empty()) say_why_none(capture, *sites, pool, out);
  std::vector<uint32_t>().swap(sites->alloc_sequence);
  std::vector<uint32_t>().swap(sites->alloc_positions);
  // Usually in that order already (one loop, found in order): then nothing moves.
  auto by_start = [](const Span &a, const Span &b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.begin < b.begin;
  };
  if (!std::is_sorted(spans.begin(), spans.end(), by_start)) std::stable_sort(spans.begin(), spans.end(), by_start);
  return spans;
}

}  // namespace gpuleak::analysis::detail
