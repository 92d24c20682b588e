#include "output/trace/counter_decimation.h"

#include <algorithm>

#include "output/curve_decimation.h"

namespace gpuleak::output::trace {

Counters decimate(const analysis::Lives &lives, uint64_t anchor, uint64_t resolution_ns, size_t max_points) {
  const size_t devices = lives.devices.size();
  std::vector<const analysis::LiveCurve *> curves(2 * devices + 1);
  for (size_t d = 0; d < devices; ++d) {
    curves[d] = &lives.devices[d].live;
    curves[devices + 1 + d] = &lives.devices[d].blocks;
  }
  curves[devices] = &lives.host;

  Counters out;
  out.used.assign(curves.size(), false);
  int64_t first = INT64_MAX, last = INT64_MIN;
  size_t used = 0;
  auto ts = [&](uint32_t position) { return static_cast<int64_t>(lives.times[position] - anchor); };
  for (size_t t = 0; t < curves.size(); ++t) {
    const analysis::LiveCurve &c = *curves[t];
    if (c.empty()) continue;
    out.used[t] = true;
    ++used;
    out.changes += c.positions.size();
    first = std::min(first, ts(c.positions.front()));
    last = std::max(last, ts(c.positions.back()));
  }
  if (used == 0) return out;

  // One bucket grid for every track (origin: the first change of any), so that their points line up.
  uint64_t width = std::max<uint64_t>(1, resolution_ns) * 2;
  if (max_points > 0) width = std::max(width, bucket_width_for(first, last, used, max_points));
  out.bucket_ns = width;

  std::vector<int64_t> t_ns;
  std::vector<uint64_t> bytes;
  for (size_t t = 0; t < curves.size(); ++t) {
    const analysis::LiveCurve &c = *curves[t];
    if (c.empty()) continue;
    // The curve starts from zero at the capture's start (or its first change, when earlier): this
    // point is the rule's "first point", so it is always kept.
    t_ns.assign(1, std::min<int64_t>(0, ts(c.positions.front())));
    bytes.assign(1, 0);
    for (size_t i = 0; i < c.positions.size(); ++i) {
      t_ns.push_back(ts(c.positions[i]));
      bytes.push_back(c.bytes[i]);
    }
    for (uint32_t i : decimate_curve(t_ns.data(), bytes.data(), t_ns.size(), first, width))
      out.points.push_back({t_ns[i], static_cast<uint16_t>(t), bytes[i]});
  }
  std::stable_sort(out.points.begin(), out.points.end(),
                   [](const CounterPoint &a, const CounterPoint &b) { return a.ts_ns < b.ts_ns; });
  return out;
}

}  // namespace gpuleak::output::trace
