// The timeline of one capture: what `gpuleak trace` shows, decided once for every file format
// (docs/trace-format.md describes each track and event).
//
//   process   "<program> (pid N, rank R)", with the capture's clock anchors in the
//             "gpuleak_trace" metadata (trace format version, realtime anchor, what was kept)
//   counters  "cuda:N live" per device (and "host pinned live"): live bytes after every change,
//             thinned without averaging (counter_decimation.h)
//   rows      "iterations" (one per loop): a slice per iteration with the analysis' numbers;
//             "leaks": a marker per leaking site and iteration that left memory behind
//   threads   the program's allocations and frees (short slices, bounded: event_selection.h),
//             NVTX push/pop ranges and marks, gpuleak_mark() labels
//   async     NVTX start/end ranges
//   GPU       "GPU d / stream s": kernels, copies and memsets seen by CUPTI (capture format 1.1),
//             each with a flow from the host call that launched it (gpu_activity.h)
//   global    out-of-memory failures
//
// Numbers come from analysis::Analysis (iterations, leaks, OOMs), the counters and the allocation
// events from its lives and live curves (analysis/lives.h): the trace replays nothing, so its
// counters peak where the report says. Events reach the sink in time order.
#pragma once

#include <cstdint>
#include <string>

#include "analysis/analysis.h"
#include "format/capture_reader.h"
#include "output/sites.h"
#include "output/trace/trace_options.h"
#include "output/trace/trace_sink.h"

namespace gpuleak::output::trace {

// What a build wrote, for the command line's summary and for tests.
struct TraceSummary {
  std::string policy;   // Selection::policy
  uint64_t events = 0;  // timeline events (a slice counts once; metadata not counted)
  uint64_t counter_points = 0;
  uint64_t counter_changes = 0;  // before thinning
  uint64_t memory_events_shown = 0;
  uint64_t memory_events = 0;
  uint64_t iterations = 0;
  uint64_t leak_markers = 0;
  uint64_t oom_markers = 0;
  uint64_t nvtx_ranges_shown = 0;
  uint64_t nvtx_ranges = 0;
  uint64_t gpu_activities_shown = 0;  // kernels, copies and memsets (CUPTI)
  uint64_t gpu_activities = 0;
};

// Builds the timeline and hands it to `sink` (begin, events by time, end). `analysis` must be
// analyze(capture) (any options); `sites` names the call sites as the report does. Never throws
// for any capture content; returns sink->end()'s verdict in `ok`.
TraceSummary build_trace(const format::Capture &capture, const analysis::Analysis &analysis, Sites &sites,
                         const TraceOptions &options, TraceSink *sink, bool *ok = nullptr);
// The same with Sites(symbolize, site_options(capture, analysis.user_code)).
TraceSummary build_trace(const format::Capture &capture, const analysis::Analysis &analysis,
                         const SymbolizeFn &symbolize, const TraceOptions &options, TraceSink *sink,
                         bool *ok = nullptr);

// "GPU activity from CUPTI: N kernels, ..." when the capture holds GPU activity (format 1.1,
// GPULEAK_CUPTI=1), else "GPU activity unavailable (CUPTI off)" and its siblings: why not.
std::string gpu_activity_note(const format::Capture &capture);

}  // namespace gpuleak::output::trace
