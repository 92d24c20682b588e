// What `gpuleak trace` may put in a timeline, and the bounds that keep a long run's trace
// openable (docs/trace-format.md "Size bounds"). The numbers are defaults, not knobs users are
// expected to turn: tests set them to exercise the bounded paths on small captures.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpuleak::output::trace {

// Bumped when an event's meaning or an argument's name changes (written in the "gpuleak_trace"
// metadata event); adding events or arguments keeps the version.
inline constexpr int kTraceVersion = 1;

struct TraceOptions {
  // Every allocation and free, every NVTX range: the unbounded trace (--full, GPULEAK_TRACE=full).
  bool full = false;

  // Counters: at most ~1 point per `counter_resolution_ns` per track (each bucket of twice that
  // width keeps its maximum and its last value), and, by default, at most `max_counter_points`
  // points over all counter tracks (the bucket widens on long runs). 0 = no overall cap.
  uint64_t counter_resolution_ns = 10'000;
  size_t max_counter_points = 400'000;

  // Allocation/free events, by default: those inside the first and last `edge_iterations`
  // iterations of the primary loop (at most `edge_events` at each end), those of leaking call
  // sites (at most `max_leak_site_events` over all leaks, thinned evenly), and
  // `oom_context_events` on either side of each out-of-memory failure the analysis details. A run
  // without iterations shows all of its events when it has fewer than `all_events_below`, else
  // the first and last `edge_events`.
  uint32_t edge_iterations = 3;
  size_t max_leak_site_events = 100'000;
  uint32_t oom_context_events = 64;
  size_t all_events_below = 200'000;
  size_t edge_events = 10'000;

  // Leak markers (one per leaking site and iteration that left memory behind): at most this
  // many over all leaks, thinned evenly.
  size_t max_leak_markers = 50'000;

  // NVTX ranges and marks, by default: all of them up to this many; past it, only those that
  // begin inside the windows shown in detail (see above) or last at least 1% of the run.
  size_t max_nvtx_ranges = 200'000;

  // GPU kernels, copies and memsets (CUPTI): all of them up to this many; past it, those that
  // start inside the windows shown in detail, thinned evenly to this many (gpu_activity.h).
  size_t max_gpu_activities = 200'000;
};

}  // namespace gpuleak::output::trace
