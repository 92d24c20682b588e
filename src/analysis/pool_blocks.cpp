// Which device allocations are a framework allocator's segments, and which blocks (tensors) live in
// them (pool_blocks.h).
#include "analysis/pool_blocks.h"

#include <algorithm>

namespace gpuleak::analysis::detail {

namespace {
// Bounds on what the report lists (a report stays small whatever the program does).
constexpr size_t kMaxSegmentSites = 100;
constexpr size_t kMaxBlockSitesPerSegmentSite = 20;
}  // namespace

bool leak_candidate(const PoolBlocks *pool, const LiveAllocation &a) {
  if (a.space == Space::kPoolBlock) return true;
  return on_device(a.space) && !(pool && pool->segment(a));
}

void PoolBlocks::add_range(uint16_t slot, uint64_t start, const Range &range) {
  if (range.end <= start) return;
  if (ranges_.size() <= slot) ranges_.resize(slot + 1u);
  ranges_[slot][start] = range;
  owned_[range.ordinal].emplace_back(slot, start);
}

void PoolBlocks::drop_ranges(uint32_t ordinal) {
  auto it = owned_.find(ordinal);
  if (it == owned_.end()) return;
  for (const auto &[slot, start] : it->second) {
    auto r = ranges_[slot].find(start);
    if (r != ranges_[slot].end() && r->second.ordinal == ordinal) ranges_[slot].erase(r);
  }
  owned_.erase(it);
}

void PoolBlocks::before(uint32_t k, const format::MemoryRecord *r, const LiveSet &) {
  if (!snapped_ && k >= snapshot_at_) snapshot();
  if (!r || r->result != 0) return;
  if (r->op == static_cast<uint8_t>(format::Op::kMap)) {
    pending_map_ = *r;
    map_pending_ = true;
  } else if (r->op == static_cast<uint8_t>(format::Op::kUnmap)) {
    auto d = std::lower_bound(devices_.begin(), devices_.end(), device_of(r->device));
    const size_t slot = static_cast<size_t>(d - devices_.begin());
    if (d == devices_.end() || *d != device_of(r->device) || slot >= ranges_.size()) return;
    ranges_[slot].erase(r->address);  // its owner's list keeps a stale entry: drop_ranges checks
  }
}

// The ledger has charged the physical memory to the mapping's site by now (ledger.cpp map()).
void PoolBlocks::after(uint32_t, const LiveSet &live) {
  if (!map_pending_) return;
  map_pending_ = false;
  const format::MemoryRecord &m = pending_map_;
  LiveKey key{m.aux, device_of(m.device), Space::kVmm};
  const LiveAllocation *handle = const_cast<LiveSet &>(live).find(key);
  if (!handle) return;
  add_range(handle->slot, m.address, Range{m.address + m.size, handle->ordinal, handle->site});
}

void PoolBlocks::mark(std::map<uint64_t, Range>::const_iterator range, uint16_t slot) {
  const Range &segment = range->second;
  if (segment_.size() <= segment.ordinal) segment_.resize(segment.ordinal + 1u, false);
  if (segment_[segment.ordinal]) return;
  segment_[segment.ordinal] = true;  // the first block in it: a segment from now on
  const uint64_t k = key(slot, segment.site);
  SegmentTally &t = tallies_[k];
  ++t.count;
  t.live += segment.end - range->first;
  t.peak = std::max(t.peak, t.live);
  marked_[segment.ordinal] = {k, segment.end - range->first};
}

void PoolBlocks::born(uint32_t, const format::MemoryRecord &r, const LiveAllocation &a) {
  if (a.space == Space::kDevicePtr) {
    add_range(a.slot, r.address, Range{r.address + a.size, a.ordinal, a.site});
    return;
  }
  if (a.space != Space::kPoolBlock || a.slot >= ranges_.size()) return;
  const auto &ranges = ranges_[a.slot];
  const uint64_t end = r.address + (a.size ? a.size : 1);
  auto it = ranges.upper_bound(r.address);
  const bool starts_inside = it != ranges.begin() && r.address < std::prev(it)->second.end;
  if (starts_inside) --it;
  if (!starts_inside) return;  // in no segment gpuleak saw (allocated before it started)
  // Every mapping the block covers is a segment: with expandable segments a large block spans
  // several of the allocator's physical chunks (cuMemCreate, cuMemMap side by side), and only the
  // first holds its start.
  const uint64_t k = key(a.slot, it->second.site);
  for (auto m = it; m != ranges.end() && m->first < end; ++m) mark(m, a.slot);
  Holder &h = tallies_[k].blocks[a.site];
  h.live += a.size;
  h.peak = std::max(h.peak, h.live);
  holder_of_[a.ordinal] = k;
}

void PoolBlocks::died(uint32_t, const format::MemoryRecord &, const LiveAllocation &a) {
  if (a.space == Space::kPoolBlock) {
    auto it = holder_of_.find(a.ordinal);
    if (it == holder_of_.end()) return;
    tallies_[it->second].blocks[a.site].live -= a.size;
    holder_of_.erase(it);
    return;
  }
  drop_ranges(a.ordinal);
  auto m = marked_.find(a.ordinal);
  if (m == marked_.end()) return;
  tallies_[m->second.first].live -= m->second.second;
  marked_.erase(m);
}

void PoolBlocks::remapped(uint32_t, uint32_t, const LiveAllocation &a) {
  auto it = owned_.find(a.ordinal);
  if (it == owned_.end()) return;
  for (const auto &[slot, start] : it->second) {
    auto r = ranges_[slot].find(start);
    if (r != ranges_[slot].end() && r->second.ordinal == a.ordinal) r->second.site = a.site;
  }
}

void PoolBlocks::finish(const LiveSet &live) {
  if (!snapped_) snapshot();
  live.for_each([&](const LiveKey &, const LiveAllocation &a) {
    if (a.space == Space::kPoolBlock) {
      auto it = holder_of_.find(a.ordinal);
      if (it == holder_of_.end()) return;
      Holder &h = tallies_[it->second].blocks[a.site];
      h.exit_bytes += a.size;
      ++h.exit_count;
      return;
    }
    auto m = marked_.find(a.ordinal);
    if (m == marked_.end()) return;
    SegmentTally &t = tallies_[m->second.first];
    t.exit_bytes += m->second.second;
    ++t.exit_count;
  });
}

void PoolBlocks::snapshot() {
  snapped_ = true;
  for (const auto &[k, t] : tallies_) {
    const uint16_t slot = static_cast<uint16_t>(k >> 32);
    const int device = slot < devices_.size() ? devices_[slot] : 0;
    auto it = std::find_if(pools_.begin(), pools_.end(), [&](const PoolTotals &p) { return p.device == device; });
    PoolTotals &p = it != pools_.end() ? *it : pools_.emplace_back(PoolTotals{device, 0, 0});
    p.reserved_bytes += t.live;
    for (const auto &[site, h] : t.blocks) p.object_bytes += h.live;
  }
}

std::vector<SegmentSite> PoolBlocks::take() {
  std::vector<SegmentSite> out;
  for (auto &[k, t] : tallies_) {
    if (t.count == 0) continue;
    SegmentSite s;
    const uint16_t slot = static_cast<uint16_t>(k >> 32);
    s.device = slot < devices_.size() ? devices_[slot] : 0;
    s.site = sites_.sites[static_cast<uint32_t>(k)];
    s.count = t.count;
    s.peak_bytes = t.peak;
    s.live_at_exit_bytes = t.exit_bytes;
    s.live_at_exit_count = t.exit_count;
    for (const auto &[site, h] : t.blocks)
      s.blocks.push_back(SegmentBlock{sites_.sites[site], h.exit_bytes, h.exit_count, h.peak});
    auto by_size = [](const SegmentBlock &a, const SegmentBlock &b) {
      if (a.live_at_exit_bytes != b.live_at_exit_bytes) return a.live_at_exit_bytes > b.live_at_exit_bytes;
      if (a.peak_bytes != b.peak_bytes) return a.peak_bytes > b.peak_bytes;
      return a.site.stack_id != b.site.stack_id ? a.site.stack_id < b.site.stack_id
                                                : a.site.py_stack_id < b.site.py_stack_id;
    };
    std::sort(s.blocks.begin(), s.blocks.end(), by_size);
    if (s.blocks.size() > kMaxBlockSitesPerSegmentSite) s.blocks.resize(kMaxBlockSitesPerSegmentSite);
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const SegmentSite &a, const SegmentSite &b) {
    if (a.device != b.device) return a.device < b.device;
    if (a.live_at_exit_bytes != b.live_at_exit_bytes) return a.live_at_exit_bytes > b.live_at_exit_bytes;
    if (a.peak_bytes != b.peak_bytes) return a.peak_bytes > b.peak_bytes;
    return a.site.stack_id != b.site.stack_id ? a.site.stack_id < b.site.stack_id
                                              : a.site.py_stack_id < b.site.py_stack_id;
  });
  if (out.size() > kMaxSegmentSites) out.resize(kMaxSegmentSites);
  return out;
}

}  // namespace gpuleak::analysis::detail
