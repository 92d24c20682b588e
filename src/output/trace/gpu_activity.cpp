#include "output/trace/gpu_activity.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace gpuleak::output::trace {

using format::GpuActivityKind;

const char *copy_kind_name(uint8_t k) {
  // CUpti_ActivityMemcpyKind values (stable across CUPTI versions).
  switch (k) {
    case 1:
      return "HtoD";
    case 2:
      return "DtoH";
    case 3:
      return "HtoA";
    case 4:
      return "AtoH";
    case 5:
      return "AtoA";
    case 6:
      return "AtoD";
    case 7:
      return "DtoA";
    case 8:
      return "DtoD";
    case 9:
      return "HtoH";
    case 10:
      return "PtoP";
    default:
      return "unknown";
  }
}

std::string gpu_activity_name(const format::Capture &c, const format::GpuActivityRecord &r) {
  switch (static_cast<GpuActivityKind>(r.kind)) {
    case GpuActivityKind::kKernel: {
      const std::string &name = c.string(r.name_id);
      return name.empty() ? "(unnamed kernel)" : name;
    }
    case GpuActivityKind::kMemcpy:
      return std::string("Memcpy ") + copy_kind_name(r.copy_kind);
    case GpuActivityKind::kMemset:
      return "Memset";
    default:
      return "GPU activity";
  }
}

GpuTimeline plan_gpu_activity(const format::Capture &c, const analysis::Analysis &a, const Selection &selection,
                              const TraceOptions &options, int64_t pid) {
  GpuTimeline g;
  const int64_t anchor = static_cast<int64_t>(c.header.monotonic_ns);
  std::vector<GpuItem> all;
  for (uint32_t i = 0; i < c.gpu_activity.size(); ++i) {
    const format::GpuActivityRecord &r = c.gpu_activity[i];
    switch (static_cast<GpuActivityKind>(r.kind)) {
      case GpuActivityKind::kKernel:
        ++g.kernels;
        break;
      case GpuActivityKind::kMemcpy:
        ++g.copies;
        break;
      case GpuActivityKind::kMemset:
        ++g.memsets;
        break;
      case GpuActivityKind::kDropped:
        g.dropped += r.bytes;
        continue;
      default:
        continue;  // a newer writer's kind
    }
    if (!r.start_ns) continue;  // no time: nothing to place
    GpuItem item;
    item.record = i;
    item.start_ns = static_cast<int64_t>(r.start_ns) - anchor;
    item.end_ns = std::max(item.start_ns, static_cast<int64_t>(r.end_ns) - anchor);
    all.push_back(item);
  }
  g.total = g.kernels + g.copies + g.memsets;
  std::stable_sort(all.begin(), all.end(), [](const GpuItem &x, const GpuItem &y) { return x.start_ns < y.start_ns; });

  if (options.full) {
    g.policy = "full";
  } else if (all.size() <= options.max_gpu_activities) {
    g.policy = "all";
  } else {
    g.policy = "windows";
    std::vector<std::pair<int64_t, int64_t>> windows = selection.windows;
    std::vector<const analysis::Iteration *> primary;
    for (const auto &it : a.iterations)
      if (it.primary) primary.push_back(&it);
    const size_t edge = std::min<size_t>(options.edge_iterations, primary.size());
    for (size_t i = 0; i < edge; ++i)
      for (const analysis::Iteration *it : {primary[i], primary[primary.size() - 1 - i]})
        windows.emplace_back(static_cast<int64_t>(it->start_ns), static_cast<int64_t>(it->end_ns));
    std::vector<GpuItem> kept;
    for (const GpuItem &item : all)
      for (const auto &w : windows)
        if (item.start_ns >= w.first && item.start_ns <= w.second) {
          kept.push_back(item);
          break;
        }
    thin_evenly(&kept, options.max_gpu_activities);
    all.swap(kept);
  }

  std::map<std::pair<int, uint64_t>, uint32_t> lane_of;
  for (const GpuItem &item : all) lane_of[{c.gpu_activity[item.record].device, c.gpu_activity[item.record].stream}] = 0;
  for (auto &[key, index] : lane_of) {
    index = static_cast<uint32_t>(g.lanes.size());
    g.lanes.push_back(key);
  }
  // One stream runs its work in order; a slice that starts before the previous one on its lane
  // ended (clock rounding, concurrent kernels CUPTI put on one stream id) starts at that end, so
  // that every lane nests (Perfetto's protobuf slices must).
  std::vector<int64_t> lane_end(g.lanes.size(), INT64_MIN);
  const uint64_t flow_base = static_cast<uint64_t>(pid & 0x3FFFFF) << 30;
  for (GpuItem &item : all) {
    const format::GpuActivityRecord &r = c.gpu_activity[item.record];
    item.lane = lane_of[{r.device, r.stream}];
    if (item.start_ns < lane_end[item.lane]) {
      item.start_ns = lane_end[item.lane];
      item.end_ns = std::max(item.end_ns, item.start_ns);
      item.clipped = true;
    }
    lane_end[item.lane] = item.end_ns;
    if (r.host_tid && r.host_ts_ns) item.flow_id = flow_base + item.record + 1;
  }
  g.items = std::move(all);
  std::map<std::tuple<uint32_t, uint32_t, uint64_t>, uint32_t> launch_of;  // (correlation, tid, ts)
  for (uint32_t i = 0; i < g.items.size(); ++i) {
    if (!g.items[i].flow_id) continue;
    const format::GpuActivityRecord &r = c.gpu_activity[g.items[i].record];
    auto [it, fresh] =
        launch_of.try_emplace({r.correlation_id, r.host_tid, r.host_ts_ns}, static_cast<uint32_t>(g.launches.size()));
    if (fresh) g.launches.emplace_back();
    g.launches[it->second].push_back(i);
  }
  return g;
}

}  // namespace gpuleak::output::trace
