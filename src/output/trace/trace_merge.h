// `gpuleak merge`: several Chrome traces (or captures, converted first) into one, so that the
// ranks of a distributed job sit one above the other on one clock.
//
//   - each input keeps its own process track(s), ordered by rank (from its "gpuleak_trace"
//     metadata; inputs without a rank come after the ranks, by start time), through
//     process_sort_index;
//   - times are aligned on the realtime anchors: every event of an input moves by
//     (its anchor - the earliest anchor), so ts stays "microseconds since the merged trace's
//     start" (the merged "gpuleak_trace" event carries that anchor, and `merge` can merge its own
//     output again). An input without an anchor (another tool's trace) is not moved, with a
//     warning;
//   - pids that clash between inputs (two hosts, pid namespaces) are renumbered; each input's own
//     "gpuleak_trace" event is kept renamed "gpuleak_process", with the shift it received.
//
// Inputs are read one at a time (gpuleak's own traces line by line), so merging large traces
// needs about one input's worth of memory, not all of them.
#pragma once

#include <string>
#include <vector>

#include "output/front_door.h"
#include "output/trace/file_io.h"
#include "output/trace/trace_options.h"

namespace gpuleak::output::trace {

struct MergeSummary {
  size_t inputs = 0;
  uint64_t events = 0;
  std::vector<std::string> order;  // the inputs in merged order ("path (rank R)")
  // The inputs that grow while the others stay flat ("path (rank R) leaking 1 MiB/iter"), whose
  // process track is named "rank R — leaking .../iter" (analysis/rank_outliers.h).
  std::vector<std::string> leaking;
};

// Writes the merged trace (JSON array form, one event per line) to `out`. False with a one-line
// reason naming the input that could not be read; `warnings` collects what was merged anyway
// (no anchor, a repaired input, symbolization problems of converted captures).
// Captures among the inputs are opened with `read` (front_door.h) and traced with `capture_options`.
bool merge_traces(const std::vector<std::string> &paths, const ReadOptions &read, const TraceOptions &capture_options,
                  ByteStream *out, MergeSummary *summary, std::vector<std::string> *warnings, std::string *error);

}  // namespace gpuleak::output::trace
