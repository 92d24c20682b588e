#include "output/view/timeline.h"

#include <algorithm>

#include "output/curve_decimation.h"

namespace gpuleak::output::view {

std::vector<DeviceTimeline> device_timelines(const analysis::Lives &lives, uint64_t anchor, uint64_t end_ns,
                                             size_t max_points) {
  // Nanoseconds since the run's start (a record before the anchor counts as the start).
  auto since = [&](uint32_t position) {
    const uint64_t t = lives.times[position];
    return t > anchor ? t - anchor : 0;
  };
  std::vector<DeviceTimeline> out;
  std::vector<int64_t> t;
  std::vector<uint64_t> bytes;
  for (const analysis::DeviceCurve &d : lives.devices) {
    const analysis::LiveCurve &c = d.live;
    DeviceTimeline tl;
    tl.device = d.device;
    tl.peak_bytes = c.peak;
    if (c.peak_position != analysis::kStillAlive) {
      tl.peak_ns = since(c.peak_position);
      tl.peak_position = c.peak_position;
    }
    t.assign(1, 0);
    bytes.assign(1, 0);
    for (size_t i = 0; i < c.positions.size(); ++i) {
      t.push_back(static_cast<int64_t>(since(c.positions[i])));
      bytes.push_back(c.bytes[i]);
    }
    t.push_back(std::max(static_cast<int64_t>(end_ns), t.back()));
    bytes.push_back(c.last());
    tl.source_points = t.size();
    max_points = std::max<size_t>(max_points, 4);
    if (t.size() <= max_points) {
      tl.t_ns.assign(t.begin(), t.end());
      tl.bytes = bytes;
    } else {
      const uint64_t width = bucket_width_for(t.front(), t.back(), 1, max_points);
      for (uint32_t i : decimate_curve(t.data(), bytes.data(), t.size(), t.front(), width)) {
        tl.t_ns.push_back(static_cast<uint64_t>(t[i]));
        tl.bytes.push_back(bytes[i]);
      }
    }
    out.push_back(std::move(tl));
  }
  return out;
}

}  // namespace gpuleak::output::view
