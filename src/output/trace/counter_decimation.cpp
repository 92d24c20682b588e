#include "output/trace/counter_decimation.h"

#include <algorithm>

namespace gpuleak::output::trace {

namespace {

// One track's bucket being filled.
struct Bucket {
  bool open = false;
  int64_t index = 0;
  int64_t max_ts = 0, last_ts = 0;
  uint64_t max_value = 0, last_value = 0;
};

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

}  // namespace

Counters decimate(const MemoryReplay &replay, size_t tracks, uint64_t resolution_ns, size_t max_points) {
  Counters out;
  out.changes = replay.changes.size();
  out.used.assign(tracks, false);
  for (const LiveChange &c : replay.changes)
    if (c.track < tracks) out.used[c.track] = true;
  const size_t used = static_cast<size_t>(std::count(out.used.begin(), out.used.end(), true));
  if (used == 0) return out;

  uint64_t width = std::max<uint64_t>(1, resolution_ns) * 2;
  const int64_t first = replay.time(replay.changes.front().position);
  const int64_t last = replay.time(replay.changes.back().position);
  const uint64_t span = static_cast<uint64_t>(std::max<int64_t>(0, last - first)) + 1;
  // Each track gives at most 2 points per bucket plus its starting 0.
  if (max_points > 3 * used && out.changes * 2 > max_points) {
    const uint64_t per_track = std::max<uint64_t>(1, (max_points - used) / used / 2);  // buckets a track may fill
    const uint64_t needed = (span + per_track - 1) / per_track;                        // then at most per_track buckets
    width = std::max(width, needed);
  }
  out.bucket_ns = width;

  std::vector<Bucket> open(tracks);
  std::vector<bool> started(tracks, false);
  auto flush = [&](uint16_t track) {
    Bucket &b = open[track];
    if (!b.open) return;
    out.points.push_back({b.max_ts, track, b.max_value});
    if (b.last_ts != b.max_ts || b.last_value != b.max_value) out.points.push_back({b.last_ts, track, b.last_value});
    b.open = false;
  };
  const int64_t w = static_cast<int64_t>(width);
  for (const LiveChange &c : replay.changes) {
    if (c.track >= tracks) continue;
    const int64_t ts = replay.time(c.position);
    const int64_t index = floor_div(ts - first, w);
    Bucket &b = open[c.track];
    if (!started[c.track]) {  // the curve starts from zero where the track is first touched
      started[c.track] = true;
      out.points.push_back({std::min<int64_t>(0, ts), c.track, 0});
    }
    if (b.open && b.index != index) flush(c.track);
    if (!b.open) {
      b = Bucket{true, index, ts, ts, c.live, c.live};
      continue;
    }
    if (c.live > b.max_value) b.max_value = c.live, b.max_ts = ts;
    b.last_value = c.live;
    b.last_ts = ts;
  }
  for (uint16_t t = 0; t < tracks; ++t) flush(t);
  std::stable_sort(out.points.begin(), out.points.end(),
                   [](const CounterPoint &a, const CounterPoint &b) { return a.ts_ns < b.ts_ns; });
  return out;
}

}  // namespace gpuleak::output::trace
