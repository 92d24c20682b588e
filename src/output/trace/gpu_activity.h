// GPU work on the timeline (capture format 1.1 kGpuActivity records, GPULEAK_CUPTI=1): which
// kernels, copies and memsets a trace shows, on which "GPU d / stream s" track, and the flow from
// the host call that launched each one (docs/trace-format.md "GPU activity").
//
// Bounds: activity is by far the largest volume a capture holds. All of it is shown when there is
// at most TraceOptions::max_gpu_activities; past that, only what starts inside the windows shown
// in detail (event_selection.h) or inside the first and last TraceOptions::edge_iterations
// iterations of the primary loop (the iterations whose allocations are kept), thinned evenly to
// that many. TraceOptions::full keeps all.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analysis/analysis.h"
#include "format/capture_reader.h"
#include "output/trace/event_selection.h"
#include "output/trace/trace_options.h"

namespace gpuleak::output::trace {

struct GpuItem {
  uint32_t record = 0;   // index into Capture::gpu_activity
  uint32_t lane = 0;     // index into GpuTimeline::lanes
  int64_t start_ns = 0;  // since the capture's start; clipped so that slices of one lane never overlap
  int64_t end_ns = 0;
  bool clipped = false;
  uint64_t flow_id = 0;  // 0: no host call known
};

struct GpuTimeline {
  std::string policy;                           // "full", "all", "windows"
  std::vector<GpuItem> items;                   // by start time
  std::vector<std::pair<int, uint64_t>> lanes;  // (device, stream), sorted
  // Host calls shown, each with the items it launched (indices into items; one call may start
  // several: a graph launch, a copy split in pieces). All share its correlation id.
  std::vector<std::vector<uint32_t>> launches;
  uint64_t total = 0;  // kernels, copies and memsets in the capture
  uint64_t kernels = 0, copies = 0, memsets = 0;
  uint64_t dropped = 0;  // records lost while capturing (kDropped records)
};

// `pid` scopes the flow ids (unique within one process' trace, and across processes of a merge
// unless two pids clash).
GpuTimeline plan_gpu_activity(const format::Capture &capture, const analysis::Analysis &analysis,
                              const Selection &selection, const TraceOptions &options, int64_t pid);

// "kernel name", "Memcpy HtoD", "Memset": the slice name of a record.
std::string gpu_activity_name(const format::Capture &capture, const format::GpuActivityRecord &r);
const char *copy_kind_name(uint8_t copy_kind);

}  // namespace gpuleak::output::trace
