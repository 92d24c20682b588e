// Each kind of timeline event, named and given its arguments (docs/trace-format.md lists them).
// Argument names are part of the trace format: add freely, never rename within a version.
#include <algorithm>

#include "output/report_json.h"
#include "output/text_summary.h"
#include "output/trace/trace_builder.h"
#include "output/trace/trace_plan.h"
#include "text/paths.h"

namespace gpuleak::output::trace::detail {

using nlohmann::json;
using text::hex;

namespace {

std::string device_key(int device) { return "cuda:" + std::to_string(device); }

const char *api_of(const format::MemoryRecord &r) { return format::api_name(r.runtime_api ? r.runtime_api : r.api); }

std::string nvtx_name(const Plan &p, uint32_t message_id) {
  const std::string &m = p.capture.string(message_id);
  return m.empty() ? "(unnamed range)" : m;
}

}  // namespace

int64_t memory_start(const Plan &p, uint32_t k) {
  const format::MemoryRecord &r = p.events.at(k);
  // An allocation's time is when the call returned: the slice starts when it was entered.
  const bool returned = r.op == static_cast<uint8_t>(format::Op::kAlloc);
  return p.events.time(k) - (returned ? static_cast<int64_t>(r.duration_ns) : 0);
}

int64_t memory_duration(const Plan &p, uint32_t k) { return p.events.at(k).duration_ns; }

void counter_event(Plan &p, uint32_t i, Event *e) {
  const CounterPoint &c = p.counters.points[i];
  e->phase = Phase::kCounter;
  e->track = p.counter_track[c.track];
  e->name = p.tracks[e->track].name;
  e->value = c.value;
}

void iteration_event(Plan &p, uint32_t i, bool end, Event *e) {
  const analysis::Iteration &it = p.analysis.iterations[i];
  e->track = p.loop_track.at(it.loop);
  if (end) {
    e->phase = Phase::kCompleteEnd;
    return;
  }
  e->phase = Phase::kComplete;
  e->dur_ns = static_cast<int64_t>(it.end_ns - std::min(it.start_ns, it.end_ns));
  e->name = (it.loop.empty() ? std::string("iteration") : it.loop) + " #" + std::to_string(it.index);
  e->category = "iteration";
  json args = {{"index", it.index}, {"loop", it.loop}, {"primary", it.primary}};
  if (it.primary) {
    // Warm-up iterations are the first primary ones (analysis::Analysis::warmup_iterations).
    args["warmup"] = it.index < p.analysis.warmup_iterations;
  }
  for (size_t k = 0; k < p.analysis.devices.size(); ++k) {
    const analysis::IterationDevice d = p.analysis.iteration_device(i, k);
    args[device_key(d.device)] = {{"live_end_bytes", d.live_end_bytes},   {"peak_bytes", d.peak_bytes},
                                  {"allocated_bytes", d.allocated_bytes}, {"freed_bytes", d.freed_bytes},
                                  {"alloc_count", d.alloc_count},         {"free_count", d.free_count}};
  }
  e->args = std::move(args);
}

void leak_event(Plan &p, uint32_t i, Event *e) {
  const LeakMarker &m = p.leak_markers[i];
  const analysis::Leak &leak = p.analysis.leaks[m.leak];
  const analysis::Iteration &it = p.analysis.iterations[m.iteration];
  const std::string &label = p.sites.resolve(leak.site.stack_id, leak.site.py_stack_id).label;
  e->phase = Phase::kInstant;
  e->track = p.leak_track;
  e->name = "leak: " + label;
  e->category = "leak";
  e->args = {{"site_id", p.sites.resolve(leak.site.stack_id, leak.site.py_stack_id).id},
             {"function", label},
             {"device", leak.device},
             {"bytes_per_iteration", leak.bytes_per_iteration},
             {"confidence", leak.confidence},
             {"iteration", it.index},
             {"loop", it.loop},
             {"bytes", m.bytes},
             {"count", m.count},
             {"leak_live_bytes", leak.live_bytes},
             {"leak_first_iteration", leak.first_iteration}};
}

void oom_event(Plan &p, uint32_t i, Event *e) {
  const format::OomRecord &r = *p.ooms[i];
  const int device = r.device < 0 ? 0 : r.device;
  const uint64_t t = r.ts_ns - p.capture.header.monotonic_ns;
  e->phase = Phase::kInstant;
  e->scope = Scope::kGlobal;
  e->track = p.oom_track;
  e->category = "oom";
  e->name =
      "out of memory on " + device_key(device) + ": " + human_bytes(static_cast<double>(r.requested)) + " requested";
  json args = {{"device", device},
               {"requested_bytes", r.requested},
               {"free_bytes", r.free_bytes},
               {"total_bytes", r.total_bytes},
               {"api", format::api_name(r.api)},
               {"result", r.result},
               {"site_id", p.sites.resolve(r.stack_id, r.py_stack_id).id},
               {"function", p.sites.resolve(r.stack_id, r.py_stack_id).label}};
  // The analysis keeps its newest OOMs in detail: what was live, and whether the program recovered.
  for (const analysis::OomEvent &o : p.analysis.ooms) {
    if (o.t_ns != t || o.device != device || o.requested != r.requested) continue;
    args["live_bytes"] = o.live_bytes;
    args["live_count"] = o.live_count;
    args["recovered"] = o.recovered;
    json top = json::array();
    for (size_t s = 0; s < o.live_by_site.size() && s < 5; ++s) {
      const auto &site = o.live_by_site[s];
      top.push_back({{"function", p.sites.resolve(site.site.stack_id, site.site.py_stack_id).label},
                     {"site_id", p.sites.resolve(site.site.stack_id, site.site.py_stack_id).id},
                     {"bytes", site.bytes},
                     {"count", site.count}});
    }
    args["top_live_sites"] = std::move(top);
    break;
  }
  e->args = std::move(args);
}

void memory_event(Plan &p, uint32_t k, bool end, Event *e) {
  const format::MemoryRecord &r = p.events.at(k);
  e->track = p.thread(r.tid);
  if (end) {
    e->phase = Phase::kCompleteEnd;
    return;
  }
  e->phase = Phase::kComplete;
  e->dur_ns = memory_duration(p, k);
  e->category = "memory";
  e->name = api_of(r);
  if (r.result != 0) e->name += " failed";
  const uint32_t life = p.events.life_of(k);
  uint64_t size = r.size;
  json args = {{"op", format::op_name(r.op)},
               {"kind", format::kind_name(r.kind)},
               {"api", format::api_name(r.api)},
               {"address", hex(r.address)},
               {"device", r.device}};
  if (life != kNoEvent) {
    const analysis::AllocationLife &l = p.events.lives().lives[life];
    if (size == 0) size = l.size;  // a free's size when the recorder did not know it
    args["site"] = p.sites.resolve(l.site.stack_id, l.site.py_stack_id).label;
  } else if (r.stack_id || r.py_stack_id) {
    args["site"] = p.sites.resolve(r.stack_id, r.py_stack_id).label;
  }
  args["size"] = size;
  if (r.runtime_api) args["runtime_api"] = format::api_name(r.runtime_api);
  if (r.stream) args["stream"] = hex(r.stream);
  if (r.result != 0) args["result"] = r.result;
  if (r.flags & format::kFlagGraphReservation) args["graph_reservation"] = true;
  e->args = std::move(args);
}

void nvtx_event(Plan &p, uint32_t i, bool end, Event *e) {
  const NvtxRange &r = p.nvtx.ranges[i];
  e->category = "nvtx";
  e->name = nvtx_name(p, r.message_id);
  if (r.async) {
    e->phase = end ? Phase::kAsyncEnd : Phase::kAsyncBegin;
    e->track = p.lane_track.at(r.lane);
    e->async_id = i + 1;
    e->tid = r.tid;
  } else {
    e->phase = end ? Phase::kEnd : Phase::kBegin;
    e->track = p.thread(r.tid);
  }
  if (end) return;
  json args = json::object();
  if (r.domain_id) args["domain"] = p.capture.string(r.domain_id);
  if (!r.closed) args["open_at_end"] = true;
  if (!args.empty()) e->args = std::move(args);
}

void nvtx_mark_event(Plan &p, uint32_t i, Event *e) {
  const NvtxMark &m = p.nvtx.marks[i];
  e->phase = Phase::kInstant;
  e->track = p.thread(m.tid);
  e->category = "nvtx";
  e->name = nvtx_name(p, m.message_id);
  if (m.domain_id) e->args = {{"domain", p.capture.string(m.domain_id)}};
}

void api_mark_event(Plan &p, uint32_t i, Event *e) {
  const format::MarkerRecord &m = p.capture.markers[i];
  e->phase = Phase::kInstant;
  e->track = p.thread(m.tid);
  e->category = "mark";
  const std::string &label = p.capture.string(m.label_id);
  e->name = label.empty() ? "gpuleak_mark" : label;
}

void gpu_event(Plan &p, uint32_t i, bool end, Event *e) {
  const GpuItem &g = p.gpu.items[i];
  const format::GpuActivityRecord &r = p.capture.gpu_activity[g.record];
  e->track = p.gpu_track[g.lane];
  if (end) {
    e->phase = Phase::kCompleteEnd;
    return;
  }
  e->phase = Phase::kComplete;
  e->dur_ns = g.end_ns - g.start_ns;
  e->category = r.kind == static_cast<uint8_t>(format::GpuActivityKind::kKernel) ? "gpu.kernel" : "gpu.memory";
  e->name = gpu_activity_name(p.capture, r);
  json args = {
      {"device", r.device}, {"stream", r.stream}, {"context", r.context_id}, {"correlation_id", r.correlation_id}};
  if (r.kind != static_cast<uint8_t>(format::GpuActivityKind::kKernel)) args["bytes"] = r.bytes;
  if (r.kind == static_cast<uint8_t>(format::GpuActivityKind::kMemcpy)) args["copy_kind"] = copy_kind_name(r.copy_kind);
  if (r.api_name_id) args["launched_by"] = p.capture.string(r.api_name_id);
  if (r.host_tid) args["host_tid"] = r.host_tid;
  if (g.clipped) args["start_clipped"] = true;  // overlapped the previous slice of its stream
  e->args = std::move(args);
  e->flow_in = g.flow_id;
}

void launch_event(Plan &p, uint32_t i, bool end, Event *e) {
  const std::vector<uint32_t> &launched = p.gpu.launches[i];
  const format::GpuActivityRecord &r = p.capture.gpu_activity[p.gpu.items[launched[0]].record];
  e->track = p.thread(r.host_tid);
  if (end) {
    e->phase = Phase::kCompleteEnd;
    return;
  }
  e->phase = Phase::kComplete;
  e->dur_ns = r.host_dur_ns;
  e->category = "launch";
  const std::string &api = p.capture.string(r.api_name_id);
  e->name = api.empty() ? "launch" : api;
  e->args = {{"launches", gpu_activity_name(p.capture, r)}, {"correlation_id", r.correlation_id}};
  if (launched.size() > 1) e->args["gpu_activities"] = launched.size();
  for (uint32_t item : launched) e->flows_out.push_back(p.gpu.items[item].flow_id);
}

json trace_metadata(const Plan &p) {
  const auto &c = p.capture;
  const auto *run = c.run ? &*c.run : nullptr;
  json m;
  m["gpuleak_trace_version"] = kTraceVersion;
  m["time_unit"] = "ts in microseconds since the capture's start (realtime_anchor_ns)";
  m["realtime_anchor_ns"] = c.header.realtime_ns;
  m["realtime_anchor"] = c.header.realtime_ns ? json(iso8601_utc(c.header.realtime_ns)) : json(nullptr);
  m["monotonic_anchor_ns"] = c.header.monotonic_ns;
  m["pid"] = run && run->fixed.pid ? run->fixed.pid : c.header.pid;
  m["rank"] = run && run->fixed.rank >= 0 ? json(run->fixed.rank) : json(nullptr);
  m["program"] = run ? json(run->program) : json(nullptr);
  m["host"] = run ? json(run->host) : json(nullptr);
  m["gpuleak_version"] = run ? json(run->version) : json(nullptr);
  m["verdict"] = analysis::verdict_name(p.analysis.verdict);
  m["iteration_source"] = analysis::iteration_source_name(p.analysis.iteration_source);
  m["gpu_activity"] = gpu_activity_note(c);
  // What `gpuleak merge` compares between ranks (analysis/rank_outliers.h).
  double growth = 0;
  for (const auto &d : p.analysis.devices) growth += d.growth_bytes_per_iteration;
  m["growth_bytes_per_iteration"] = growth;
  m["events"] = {{"policy", p.selection.policy},
                 {"memory_events", p.events.size()},
                 {"memory_events_shown", p.selection.memory.size()},
                 {"nvtx_ranges", p.nvtx.ranges.size()},
                 {"nvtx_ranges_shown", p.selection.nvtx_ranges.size()},
                 {"counter_changes", p.counters.changes},
                 {"counter_points", p.counters.points.size()},
                 {"counter_bucket_ns", p.counters.bucket_ns},
                 {"leak_markers", p.leak_markers.size()},
                 {"detail_windows_us", json::array()}};
  for (const auto &w : p.selection.windows)
    m["events"]["detail_windows_us"].push_back({w.first / 1000.0, w.second / 1000.0});
  m["gpu_activity_events"] = {{"policy", p.gpu.policy},      {"kernels", p.gpu.kernels},
                              {"copies", p.gpu.copies},      {"memsets", p.gpu.memsets},
                              {"shown", p.gpu.items.size()}, {"dropped_while_capturing", p.gpu.dropped}};
  m["capture"] = {{"truncated", c.truncated},
                  {"aggregated_from_ns", c.aggregated && c.aggregated->from_ns > c.header.monotonic_ns
                                             ? json(c.aggregated->from_ns - c.header.monotonic_ns)
                                             : json(nullptr)},
                  {"events_dropped", c.stats ? c.stats->events_dropped : 0},
                  {"tracking_disabled", c.disabled.empty() ? json(nullptr) : json(c.disabled.front())}};
  return m;
}

}  // namespace gpuleak::output::trace::detail
