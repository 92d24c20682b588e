// Private to src/output/trace: what trace_builder.cpp decides before writing anything (tracks,
// what is shown) and the event renderers of trace_events.cpp that read it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/analysis.h"
#include "format/capture_reader.h"
#include "output/sites.h"
#include "output/trace/counter_decimation.h"
#include "output/trace/event_selection.h"
#include "output/trace/gpu_activity.h"
#include "output/trace/leak_markers.h"
#include "output/trace/memory_events.h"
#include "output/trace/nvtx_ranges.h"
#include "output/trace/trace_options.h"
#include "output/trace/trace_sink.h"

namespace gpuleak::output::trace::detail {

// Rows that are not threads get tids no kernel hands out (pid_max is at most 2^22).
inline constexpr int64_t kPseudoTidBase = 1'000'000'000;

struct Plan {
  Plan(const format::Capture &c, const analysis::Analysis &a, const TraceOptions &o, Sites &s)
      : capture(c), analysis(a), options(o), events(c, a), sites(s) {}

  const format::Capture &capture;
  const analysis::Analysis &analysis;
  const TraceOptions &options;
  MemoryEvents events;  // the memory records in time order, with the analysis's lives and curves
  Sites &sites;
  NvtxTimeline nvtx;
  Counters counters;
  Selection selection;
  std::vector<LeakMarker> leak_markers;
  std::vector<uint32_t> api_marks;              // indices into capture.markers of gpuleak_mark() labels
  std::vector<const format::OomRecord *> ooms;  // by time
  GpuTimeline gpu;                              // kernels, copies, memsets (CUPTI) shown

  std::vector<Track> tracks;
  std::vector<uint32_t> counter_track;  // CounterPoint::track -> index into tracks
  std::map<std::string, uint32_t> loop_track;
  std::map<uint32_t, uint32_t> thread_track;  // tid -> index into tracks
  std::vector<uint32_t> lane_track;           // NVTX async lane -> index into tracks
  std::vector<uint32_t> gpu_track;            // GpuTimeline lane -> index into tracks
  uint32_t leak_track = 0;
  uint32_t oom_track = 0;

  uint32_t thread(uint32_t tid) const { return thread_track.at(tid); }
};

// The events of each kind (trace_events.cpp). Each fills `out` from the plan; `end` selects the
// closing event of a slice.
void counter_event(Plan &p, uint32_t point, Event *out);
void iteration_event(Plan &p, uint32_t iteration, bool end, Event *out);
void leak_event(Plan &p, uint32_t marker, Event *out);
void oom_event(Plan &p, uint32_t oom, Event *out);
void memory_event(Plan &p, uint32_t position, bool end, Event *out);
void nvtx_event(Plan &p, uint32_t range, bool end, Event *out);
void nvtx_mark_event(Plan &p, uint32_t mark, Event *out);
void api_mark_event(Plan &p, uint32_t marker, Event *out);
// GpuTimeline::items[item]: the GPU slice, and the host call that launched it (with the flow).
void gpu_event(Plan &p, uint32_t item, bool end, Event *out);
void launch_event(Plan &p, uint32_t item, bool end, Event *out);

// When a memory event's slice starts: an allocation is recorded when it returned, a free when it
// was entered (capture_format.h), and the slice covers the call.
int64_t memory_start(const Plan &p, uint32_t position);
int64_t memory_duration(const Plan &p, uint32_t position);

// The args of the "gpuleak_trace" metadata event.
nlohmann::json trace_metadata(const Plan &p);

}  // namespace gpuleak::output::trace::detail
