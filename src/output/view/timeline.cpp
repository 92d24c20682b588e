#include "output/view/timeline.h"

#include <algorithm>

namespace gpuleak::output::view {

namespace {

struct Delta {
  uint32_t position;
  bool up;
  uint64_t size;
};

}  // namespace

std::vector<DeviceTimeline> device_timelines(const AllocationLives &lives, const std::vector<int> &devices,
                                             uint64_t end_ns) {
  std::vector<DeviceTimeline> out;
  for (int device : devices) {
    std::vector<Delta> deltas;
    for (const Life &l : lives.lives()) {
      if (l.device != device || l.pool_block) continue;  // a tensor's bytes are its segment's
      deltas.push_back({l.birth, true, l.size});
      if (l.death != kAlive) deltas.push_back({l.death, false, l.size});
    }
    // Within one position the releases come first: an address handed out again while its old
    // allocation was never freed ends the old one before the new one counts (as the ledger does).
    std::stable_sort(deltas.begin(), deltas.end(), [](const Delta &a, const Delta &b) {
      return a.position != b.position ? a.position < b.position : a.up < b.up;
    });
    DeviceTimeline t;
    t.device = device;
    Series &s = t.series;
    s.t_ns.push_back(0);
    s.bytes.push_back(0);
    uint64_t live = 0;
    for (size_t i = 0; i < deltas.size(); ++i) {
      const Delta &d = deltas[i];
      live = d.up ? live + d.size : live - d.size;
      if (i + 1 < deltas.size() && deltas[i + 1].position == d.position) continue;
      s.t_ns.push_back(lives.time_of(d.position));
      s.bytes.push_back(live);
      if (live > t.peak_bytes) {
        t.peak_bytes = live;
        t.peak_ns = s.t_ns.back();
        t.peak_position = d.position;
      }
    }
    s.t_ns.push_back(std::max(end_ns, s.t_ns.back()));
    s.bytes.push_back(live);
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace gpuleak::output::view
