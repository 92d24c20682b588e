// build_trace(): decide the tracks and what is shown (trace_plan.h), then put every event of
// every kind on one time line and hand them to the sink in order. Ordering matters beyond
// neatness: a trace cut short then shows everything up to a moment, and Perfetto's protobuf
// slices must begin and end in order on their track.
#include "output/trace/trace_builder.h"

#include <algorithm>
#include <set>

#include "format/words.h"
#include "output/trace/trace_plan.h"

namespace gpuleak::output::trace {

using namespace detail;

std::string gpu_activity_note(const format::Capture &c) {
  uint64_t kernels = 0, copies = 0, memsets = 0;
  for (const auto &r : c.gpu_activity) {
    kernels += r.kind == static_cast<uint8_t>(format::GpuActivityKind::kKernel);
    copies += r.kind == static_cast<uint8_t>(format::GpuActivityKind::kMemcpy);
    memsets += r.kind == static_cast<uint8_t>(format::GpuActivityKind::kMemset);
  }
  if (kernels + copies + memsets) {
    std::string note = "GPU activity from CUPTI: " + format::count_of(kernels, "kernel") + ", " +
                       format::count_of(copies, "copy", "copies") + ", " + format::count_of(memsets, "memset");
    if (c.cupti() == format::CuptiState::kYielded) note += " (until CUPTI was given back to the program's profiler)";
    return note;
  }
  if (!c.stats) return "GPU activity unavailable (CUPTI off)";
  switch (c.cupti()) {
    case format::CuptiState::kOff:
      return "GPU activity unavailable (CUPTI off)";
    case format::CuptiState::kUnavailable:
      return "GPU activity unavailable (CUPTI unavailable)";
    case format::CuptiState::kTaken:
      return "GPU activity unavailable (CUPTI held by another tool)";
    case format::CuptiState::kYielded:
      return "GPU activity unavailable (CUPTI given back to the program's profiler)";
    default:
      return "GPU activity unavailable (the capture records no kernels or copies)";
  }
}

namespace {

enum class Source : uint8_t {
  kNote,
  kCounter,
  kIteration,
  kLeak,
  kOom,
  kMemory,
  kNvtx,
  kNvtxMark,
  kApiMark,
  kGpu,
  kLaunch
};

// One event to write. Ties at one time: slice ends first (innermost first), then beginnings
// (outermost first) and single events, then the ends of zero-length slices.
struct Item {
  int64_t ts;
  uint8_t rank;
  uint16_t sub;
  Source source;
  bool end;
  uint32_t index;
};

constexpr uint16_t kMemoryDepth = 0xFFF0;  // allocation slices nest inside every NVTX range
constexpr uint16_t kLaunchDepth = 0xFFF1;  // so do launches (never inside an allocation call)

void add_slice(std::vector<Item> *items, Source s, uint32_t index, int64_t start, int64_t end, uint16_t depth) {
  items->push_back({start, 1, depth, s, false, index});
  const bool empty = end <= start;
  items->push_back({std::max(end, start), static_cast<uint8_t>(empty ? 2 : 0), static_cast<uint16_t>(0xFFFF - depth), s,
                    true, index});
}

void plan_tracks(Plan &p) {
  const auto &a = p.analysis;
  // Counters: one per device, then host memory when the program had any, then the tensors inside
  // each device's segments when a framework allocator reported them (counter_decimation.h).
  const analysis::Lives &lives = p.events.lives();
  const size_t devices = lives.devices.size();
  p.counter_track.assign(2 * devices + 1, 0);
  for (size_t d = 0; d <= 2 * devices; ++d) {
    if (d >= devices && !(d < p.counters.used.size() && p.counters.used[d])) continue;
    Track t;
    t.kind = TrackKind::kCounter;
    t.name = d < devices    ? "cuda:" + std::to_string(lives.devices[d].device) + " live"
             : d == devices ? "host pinned live"
                            : "cuda:" + std::to_string(lives.devices[d - devices - 1].device) + " tensors";
    t.bytes_unit = true;
    t.sort_index = static_cast<int>(d);
    p.counter_track[d] = static_cast<uint32_t>(p.tracks.size());
    p.tracks.push_back(t);
  }
  // Iteration rows: the primary loop first, then the others by name.
  std::vector<std::string> loops;
  for (const auto &it : a.iterations)
    if (std::find(loops.begin(), loops.end(), it.loop) == loops.end()) loops.push_back(it.loop);
  std::stable_sort(loops.begin(), loops.end(), [&](const std::string &x, const std::string &y) {
    return (x == a.primary_loop) > (y == a.primary_loop);
  });
  int64_t pseudo = kPseudoTidBase;
  for (const std::string &loop : loops) {
    Track t;
    t.kind = TrackKind::kPseudo;
    t.name = loop == a.primary_loop ? "iterations" : "iterations: " + loop;
    t.tid = pseudo++;
    t.sort_index = -1000 + static_cast<int>(p.loop_track.size());
    p.loop_track[loop] = static_cast<uint32_t>(p.tracks.size());
    p.tracks.push_back(t);
  }
  if (!p.leak_markers.empty()) {
    p.leak_track = static_cast<uint32_t>(p.tracks.size());
    p.tracks.push_back({TrackKind::kPseudo, "leaks", pseudo++, -900, false});
  }
  if (!p.ooms.empty()) {
    p.oom_track = static_cast<uint32_t>(p.tracks.size());
    p.tracks.push_back({TrackKind::kGlobal, "out of memory", 0, -800, false});
  }
  // Threads: every thread something is shown on, the main thread first.
  std::set<uint32_t> tids;
  for (uint32_t k : p.selection.memory) tids.insert(p.events.at(k).tid);
  for (uint32_t i : p.selection.nvtx_ranges)
    if (!p.nvtx.ranges[i].async) tids.insert(p.nvtx.ranges[i].tid);
  for (uint32_t i : p.selection.nvtx_marks) tids.insert(p.nvtx.marks[i].tid);
  for (uint32_t i : p.api_marks) tids.insert(p.capture.markers[i].tid);
  for (const auto &launch : p.gpu.launches) tids.insert(p.capture.gpu_activity[p.gpu.items[launch[0]].record].host_tid);
  const int64_t pid = p.capture.run && p.capture.run->fixed.pid ? p.capture.run->fixed.pid : p.capture.header.pid;
  for (uint32_t tid : tids) {
    Track t;
    t.kind = TrackKind::kThread;
    t.tid = tid;
    t.name = tid == pid ? "main thread " + std::to_string(tid) : "thread " + std::to_string(tid);
    t.sort_index = tid == pid ? 0 : 1 + static_cast<int>(p.thread_track.size());
    p.thread_track[tid] = static_cast<uint32_t>(p.tracks.size());
    p.tracks.push_back(t);
  }
  // GPU work: one row per device and stream, below the threads.
  for (const auto &[device, stream] : p.gpu.lanes) {
    Track t;
    t.kind = TrackKind::kPseudo;
    t.name = "GPU " + std::to_string(device) + " / stream " + std::to_string(stream);
    t.tid = pseudo++;
    t.sort_index = 1000 + static_cast<int>(p.gpu_track.size());
    p.gpu_track.push_back(static_cast<uint32_t>(p.tracks.size()));
    p.tracks.push_back(t);
  }
  for (uint16_t lane = 0; lane < p.nvtx.lanes; ++lane) {
    p.lane_track.push_back(static_cast<uint32_t>(p.tracks.size()));
    p.tracks.push_back({TrackKind::kAsync, "NVTX ranges", 0, 500 + lane, false});
  }
}

std::vector<Item> plan_items(const Plan &p) {
  std::vector<Item> items;
  items.reserve(p.counters.points.size() + 2 * p.selection.memory.size() + 2 * p.analysis.iterations.size() +
                2 * p.selection.nvtx_ranges.size() + p.leak_markers.size() + p.ooms.size() + 8);
  items.push_back({0, 1, 0, Source::kNote, false, 0});
  for (uint32_t i = 0; i < p.counters.points.size(); ++i)
    items.push_back({p.counters.points[i].ts_ns, 1, 0, Source::kCounter, false, i});
  for (uint32_t i = 0; i < p.analysis.iterations.size(); ++i) {
    const auto &it = p.analysis.iterations[i];
    add_slice(&items, Source::kIteration, i, static_cast<int64_t>(it.start_ns), static_cast<int64_t>(it.end_ns), 0);
  }
  for (uint32_t i = 0; i < p.leak_markers.size(); ++i)
    items.push_back({p.leak_markers[i].ts_ns, 1, 0, Source::kLeak, false, i});
  const uint64_t anchor = p.capture.header.monotonic_ns;
  for (uint32_t i = 0; i < p.ooms.size(); ++i)
    items.push_back({static_cast<int64_t>(p.ooms[i]->ts_ns - anchor), 1, 0, Source::kOom, false, i});
  for (uint32_t k : p.selection.memory) {
    const int64_t start = memory_start(p, k);
    add_slice(&items, Source::kMemory, k, start, start + memory_duration(p, k), kMemoryDepth);
  }
  for (uint32_t i : p.selection.nvtx_ranges) {
    const NvtxRange &r = p.nvtx.ranges[i];
    add_slice(&items, Source::kNvtx, i, r.start_ns, r.end_ns, r.async ? 0 : r.depth);
  }
  for (uint32_t i : p.selection.nvtx_marks) items.push_back({p.nvtx.marks[i].ts_ns, 1, 0, Source::kNvtxMark, false, i});
  for (uint32_t i : p.api_marks)
    items.push_back({static_cast<int64_t>(p.capture.markers[i].ts_ns - anchor), 1, 0, Source::kApiMark, false, i});
  for (uint32_t i = 0; i < p.gpu.items.size(); ++i)
    add_slice(&items, Source::kGpu, i, p.gpu.items[i].start_ns, p.gpu.items[i].end_ns, 0);
  for (uint32_t i = 0; i < p.gpu.launches.size(); ++i) {
    const format::GpuActivityRecord &r = p.capture.gpu_activity[p.gpu.items[p.gpu.launches[i][0]].record];
    const int64_t host = static_cast<int64_t>(r.host_ts_ns - anchor);
    add_slice(&items, Source::kLaunch, i, host, host + static_cast<int64_t>(r.host_dur_ns), kLaunchDepth);
  }
  std::stable_sort(items.begin(), items.end(), [](const Item &x, const Item &y) {
    if (x.ts != y.ts) return x.ts < y.ts;
    if (x.rank != y.rank) return x.rank < y.rank;
    return x.sub < y.sub;
  });
  return items;
}

}  // namespace

TraceSummary build_trace(const format::Capture &capture, const analysis::Analysis &analysis,
                         const SymbolizeFn &symbolize, const TraceOptions &options, TraceSink *sink, bool *ok) {
  Sites sites(symbolize, site_options(capture, analysis.user_code));
  return build_trace(capture, analysis, sites, options, sink, ok);
}

TraceSummary build_trace(const format::Capture &capture, const analysis::Analysis &analysis, Sites &sites,
                         const TraceOptions &options, TraceSink *sink, bool *ok) {
  Plan p(capture, analysis, options, sites);
  const uint64_t max_points = options.full ? 0 : options.max_counter_points;
  p.counters = decimate(p.events.lives(), p.events.anchor(), options.counter_resolution_ns, max_points);
  p.nvtx = pair_nvtx(capture, static_cast<int64_t>(analysis.duration_ns));
  p.selection = select_events(p.events, analysis, p.nvtx, options);
  p.leak_markers = leak_markers(p.events, analysis, options.full ? SIZE_MAX : options.max_leak_markers);
  for (uint32_t i = 0; i < capture.markers.size(); ++i)
    if (capture.markers[i].op == static_cast<uint8_t>(format::MarkerOp::kMark)) p.api_marks.push_back(i);
  for (const auto &r : capture.ooms) p.ooms.push_back(&r);
  std::stable_sort(p.ooms.begin(), p.ooms.end(), [](auto *x, auto *y) { return x->ts_ns < y->ts_ns; });
  const int64_t pid = capture.run && capture.run->fixed.pid ? capture.run->fixed.pid : capture.header.pid;
  p.gpu = plan_gpu_activity(capture, analysis, p.selection, options, pid);
  plan_tracks(p);

  TraceSummary s;
  s.policy = p.selection.policy;
  s.counter_points = p.counters.points.size();
  s.counter_changes = p.counters.changes;
  s.memory_events = p.events.size();
  s.memory_events_shown = p.selection.memory.size();
  s.iterations = analysis.iterations.size();
  s.leak_markers = p.leak_markers.size();
  s.oom_markers = p.ooms.size();
  s.nvtx_ranges = p.nvtx.ranges.size();
  s.nvtx_ranges_shown = p.selection.nvtx_ranges.size();
  s.gpu_activities = p.gpu.total;
  s.gpu_activities_shown = p.gpu.items.size();

  TraceInfo info;
  info.pid = capture.run && capture.run->fixed.pid ? capture.run->fixed.pid : capture.header.pid;
  info.monotonic_anchor_ns = capture.header.monotonic_ns;
  info.rank = capture.run ? capture.run->fixed.rank : -1;
  info.host = capture.run ? capture.run->host : "";
  std::string program = capture.run && !capture.run->program.empty() ? capture.run->program : "process";
  info.process_name = program + " (pid " + std::to_string(info.pid) +
                      (info.rank >= 0 ? ", rank " + std::to_string(info.rank) : "") + ")";
  info.metadata = trace_metadata(p);
  sink->begin(info, p.tracks);

  Event e;
  for (const Item &item : plan_items(p)) {
    e = Event{};
    switch (item.source) {
      case Source::kNote:
        e.phase = Phase::kInstant;
        e.scope = Scope::kProcess;
        e.name = gpu_activity_note(capture);
        e.category = "gpuleak";
        break;
      case Source::kCounter:
        counter_event(p, item.index, &e);
        break;
      case Source::kIteration:
        iteration_event(p, item.index, item.end, &e);
        break;
      case Source::kLeak:
        leak_event(p, item.index, &e);
        break;
      case Source::kOom:
        oom_event(p, item.index, &e);
        break;
      case Source::kMemory:
        memory_event(p, item.index, item.end, &e);
        break;
      case Source::kNvtx:
        nvtx_event(p, item.index, item.end, &e);
        break;
      case Source::kNvtxMark:
        nvtx_mark_event(p, item.index, &e);
        break;
      case Source::kApiMark:
        api_mark_event(p, item.index, &e);
        break;
      case Source::kGpu:
        gpu_event(p, item.index, item.end, &e);
        break;
      case Source::kLaunch:
        launch_event(p, item.index, item.end, &e);
        break;
    }
    e.ts_ns = item.ts;
    sink->event(e);
    s.events += e.phase != Phase::kCompleteEnd;
  }
  bool written = sink->end();
  if (ok) *ok = written;
  return s;
}

}  // namespace gpuleak::output::trace
