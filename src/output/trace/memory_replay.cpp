// The timeline's counters and allocation events, drawn from the analysis's own replay
// (analysis/lives.h): this file orders the records and turns lives into counter steps; which
// allocation lived when is the analysis's decision.
#include "output/trace/memory_replay.h"

#include <algorithm>

namespace gpuleak::output::trace {

using format::MemoryRecord;
using format::Op;

namespace {

int device_of(int16_t device) { return device < 0 ? 0 : device; }

}  // namespace

int64_t MemoryReplay::time(uint32_t k) const { return static_cast<int64_t>(at(k).ts_ns - anchor_); }

uint32_t MemoryReplay::lower_bound(uint64_t t) const {
  uint32_t lo = 0, hi = size_;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (at(mid).ts_ns < t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

int MemoryReplay::slot_of(int device) const {
  auto it = std::lower_bound(devices.begin(), devices.end(), device);
  return it != devices.end() && *it == device ? static_cast<int>(it - devices.begin()) : -1;
}

std::vector<uint32_t> MemoryReplay::live_before(uint32_t p, int device, bool per_tensor) const {
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < lives.size(); ++i) {
    const Life &l = lives[i];
    if (l.birth >= p) break;  // birth order
    if (per_tensor ? l.segment : l.pool_block) continue;
    if (l.device == device && (l.death == kNoEvent || l.death >= p)) out.push_back(i);
  }
  return out;
}

MemoryReplay::MemoryReplay(const format::Capture &capture, const analysis::Analysis &analysis) {
  const auto &mem = capture.memory;
  memory_ = mem.data();
  anchor_ = capture.header.monotonic_ns;
  size_ = static_cast<uint32_t>(std::min<size_t>(mem.size(), kNoEvent - 1));
  bool sorted = true;
  for (uint32_t i = 1; i < size_ && sorted; ++i) sorted = mem[i - 1].ts_ns <= mem[i].ts_ns;
  if (!sorted) {  // (ts, file index) pairs: a stable sort by time, as the analysis does
    std::vector<std::pair<uint64_t, uint32_t>> keyed(size_);
    for (uint32_t i = 0; i < size_; ++i) keyed[i] = {mem[i].ts_ns, i};
    std::sort(keyed.begin(), keyed.end());
    order_.resize(size_);
    for (uint32_t i = 0; i < size_; ++i) order_[i] = keyed[i].second;
  }

  for (const auto &d : capture.devices)
    if (d.index >= 0 && d.index <= INT16_MAX) devices.push_back(d.index);
  for (uint32_t k = 0; k < size_; ++k) devices.push_back(device_of(at(k).device));
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());

  // The lives themselves: the analysis's (lives.h), never a second reading of the records.
  std::shared_ptr<const analysis::Lives> recorded = analysis.lives;
  if (!recorded) {  // an analysis made without record_lives: the lives do not depend on options
    analysis::AnalysisOptions options;
    options.record_lives = true;
    options.advice.enabled = false;
    recorded = analysis::analyze(capture, options).lives;
  }
  life_of_.assign(size_, kNoEvent);
  struct Step {
    uint32_t k;
    bool birth;  // at one position, releases come first (an address reused: the old one ends)
    uint32_t index;
    bool operator<(const Step &o) const { return k != o.k ? k < o.k : birth != o.birth ? !birth : index < o.index; }
  };
  std::vector<Step> steps;
  for (const analysis::AllocationLife &a : recorded->lives) {
    if (a.birth >= size_) break;  // birth order
    Life l;
    l.size = a.size;
    l.birth = a.birth;
    l.death = a.death == analysis::kStillAlive || a.death >= size_ ? kNoEvent : a.death;
    l.stack_id = a.site.stack_id;
    l.py_stack_id = a.site.py_stack_id;
    l.device = a.device;
    l.pool_block = a.pool_block;
    l.segment = a.segment;
    const uint32_t index = static_cast<uint32_t>(lives.size());
    steps.push_back({l.birth, true, index});
    if (l.death != kNoEvent) {
      steps.push_back({l.death, false, index});
      if (static_cast<Op>(at(l.death).op) == Op::kFree) life_of_[l.death] = index;  // the free that ended it
    }
    life_of_[l.birth] = index;
    lives.push_back(l);
  }
  std::sort(steps.begin(), steps.end());

  const uint16_t host_track = static_cast<uint16_t>(devices.size());
  std::vector<uint64_t> live(2 * devices.size() + 1, 0);
  peak.assign(devices.size(), 0);
  peak_at.assign(devices.size(), 0);
  for (const Step &st : steps) {
    const Life &l = lives[st.index];
    const int slot = l.device < 0 ? -1 : slot_of(l.device);
    // A tensor inside a segment: its own track, never the device's, which its segment makes.
    if (l.pool_block && slot < 0) continue;
    const uint16_t t = l.pool_block ? static_cast<uint16_t>(host_track + 1 + slot)
                       : slot < 0   ? host_track
                                    : static_cast<uint16_t>(slot);
    live[t] = st.birth ? live[t] + l.size : live[t] - l.size;
    changes.push_back({st.k, t, live[t]});
    if (!st.birth) continue;
    if (t == host_track) {
      host_peak = std::max(host_peak, live[t]);
    } else if (t < host_track && live[t] > peak[t]) {
      peak[t] = live[t];
      peak_at[t] = st.k + 1;
    }
  }
}

}  // namespace gpuleak::output::trace
