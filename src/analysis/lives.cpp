// The lives and curves of lives.h, recorded as the ledger replays (LifeRecorder), and the two
// questions every drawing asks of them.
#include <algorithm>

#include "analysis/analysis.h"
#include "analysis/life_recorder.h"
#include "analysis/pool_blocks.h"

namespace gpuleak::analysis {

uint32_t Lives::position_at(uint64_t t) const {
  return static_cast<uint32_t>(std::lower_bound(times.begin(), times.end(), t) - times.begin());
}

std::vector<uint32_t> Lives::live_before(uint32_t p, int device, bool per_tensor) const {
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < lives.size(); ++i) {
    const AllocationLife &l = lives[i];
    if (l.birth >= p) break;  // birth order
    if (per_tensor ? l.segment : l.pool_block) continue;
    if (l.device == device && (l.death == kStillAlive || l.death >= p)) out.push_back(i);
  }
  return out;
}

std::shared_ptr<const Lives> lives_of(const format::Capture &capture, const Analysis &analysis) {
  if (analysis.lives && analysis.lives->size() == std::min<size_t>(capture.memory.size(), detail::kNone - 1))
    return analysis.lives;
  AnalysisOptions options;
  options.record_lives = true;
  options.advice.enabled = false;
  return analyze(capture, options).lives;
}

namespace detail {

namespace {

// The value after event k: a second change at k replaces the first (one entry per position).
// Within a position releases come before the birth, so no value in between exceeds both the
// previous position's and this one's: the peak over entries is the peak over every change.
void step(LiveCurve &c, uint32_t k, uint64_t value) {
  if (!c.positions.empty() && c.positions.back() == k) {
    c.bytes.back() = value;
  } else {
    c.positions.push_back(k);
    c.bytes.push_back(value);
  }
  if (value > c.peak) c.peak = value, c.peak_position = k;
}

}  // namespace

LifeRecorder::LifeRecorder(const SiteTable &sites, const PoolBlocks *segments, const std::vector<int> &devices)
    : sites_(sites), segments_(segments), live_(devices.size(), 0), blocks_(devices.size(), 0) {
  lives_->devices.resize(devices.size());
  for (size_t s = 0; s < devices.size(); ++s) lives_->devices[s].device = devices[s];
}

void LifeRecorder::before(uint32_t, const format::MemoryRecord *r, const LiveSet &) {
  if (r) lives_->times.push_back(r->ts_ns);
}

void LifeRecorder::change(uint32_t k, const LiveAllocation &a, bool up) {
  uint64_t *value = nullptr;
  LiveCurve *curve = nullptr;
  if (a.space == Space::kHost) {
    value = &host_, curve = &lives_->host;
  } else if (a.slot < live_.size() && a.space == Space::kPoolBlock) {
    value = &blocks_[a.slot], curve = &lives_->devices[a.slot].blocks;
  } else if (a.slot < live_.size() && on_device(a.space)) {
    value = &live_[a.slot], curve = &lives_->devices[a.slot].live;
  } else {
    return;  // memory of no device (not owned allocations never get here)
  }
  *value = up ? *value + a.size : *value - a.size;
  step(*curve, k, *value);
}

void LifeRecorder::born(uint32_t k, const format::MemoryRecord &, const LiveAllocation &a) {
  Entry e;
  e.life.size = a.size;
  e.life.birth = k;
  e.slot = a.slot;
  e.on_device = on_device(a.space) || a.space == Space::kPoolBlock;
  e.life.pool_block = a.space == Space::kPoolBlock;
  entries_.push_back(e);
  change(k, a, true);
}

void LifeRecorder::died(uint32_t k, const format::MemoryRecord &, const LiveAllocation &a) {
  entries_[a.ordinal].life.death = k;
  ended(a);
  change(k, a, false);
}

void LifeRecorder::finish(const LiveSet &live) {
  live.for_each([&](const LiveKey &, const LiveAllocation &a) { ended(a); });
}

void LifeRecorder::ended(const LiveAllocation &a) {
  entries_[a.ordinal].life.site = sites_.sites[a.site];
  entries_[a.ordinal].life.segment = segments_ && segments_->segment(a);
}

std::shared_ptr<const Lives> LifeRecorder::take(std::vector<uint32_t> record_of) {
  Lives &out = *lives_;
  out.lives.reserve(entries_.size());
  for (Entry &e : entries_) {
    e.life.device = e.on_device && e.slot < out.devices.size() ? out.devices[e.slot].device : -1;
    out.lives.push_back(e.life);
  }
  std::vector<Entry>().swap(entries_);
  if (record_of.size() > out.times.size()) record_of.resize(out.times.size());  // positions are 32-bit
  out.record_of = std::move(record_of);
  return std::move(lives_);
}

}  // namespace detail
}  // namespace gpuleak::analysis
