// The ledger: memory records replayed in effective-time order into the life of every allocation
// (born at one event position, dead at another or still alive), the devices' live and peak bytes,
// and the per-iteration numbers. The one pass over all events that everything else builds on, so
// it stays O(n log n): one sort, one hash table of what is live, and O(open iterations) per event.
#include <algorithm>
#include <cstdint>
#include <numeric>

#include "analysis/flat_map.h"
#include "analysis/internal.h"
#include "format/huge_pages.h"

namespace gpuleak::analysis::detail {

using format::Capture;
using format::Kind;
using format::MemoryRecord;
using format::Op;

Timeline make_timeline(const Capture &capture) {
  Timeline t;
  const auto &mem = capture.memory;
  t.memory = mem.data();
  // Positions are 32-bit; four billion records would be a 300 GB capture.
  const uint32_t n = static_cast<uint32_t>(std::min<size_t>(mem.size(), kNone - 1));
  t.size = n;
  bool sorted = true;
  for (uint32_t i = 1; i < n && sorted; ++i) sorted = mem[i - 1].ts_ns <= mem[i].ts_ns;
  if (!sorted) {
    // (ts, file index) pairs: sorting them is a stable sort by ts, and cache friendly.
    std::vector<std::pair<uint64_t, uint32_t>> keyed;
    keyed.reserve(n);
    format::prefer_huge_pages(keyed);
    keyed.resize(n);
    for (uint32_t i = 0; i < n; ++i) keyed[i] = {mem[i].ts_ns, i};
    std::sort(keyed.begin(), keyed.end());
    t.order.reserve(n);
    format::prefer_huge_pages(t.order);
    t.order.resize(n);
    for (uint32_t i = 0; i < n; ++i) t.order[i] = keyed[i].second;
  }
  uint64_t end = n ? t.ts(n - 1) : 0;
  for (const auto &r : capture.nvtx) end = std::max(end, r.ts_ns);
  for (const auto &r : capture.markers) end = std::max(end, r.ts_ns);
  for (const auto &r : capture.ooms) end = std::max(end, r.ts_ns);
  t.end_ns = end;
  return t;
}

uint32_t Timeline::lower_bound(uint64_t t) const {
  uint32_t lo = 0, hi = size;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (ts(mid) < t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

uint32_t Timeline::upper_bound(uint64_t t) const {
  uint32_t lo = 0, hi = size;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (ts(mid) <= t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

namespace {

struct U64Hash {
  uint64_t operator()(uint64_t k) const { return mix64(k); }
};

bool owned_alloc(const MemoryRecord &r) {
  return r.op == static_cast<uint8_t>(Op::kAlloc) && r.result == 0 && !(r.flags & format::kFlagGraphReservation) &&
         space_of(r.kind) != Space::kNotOwned;
}

}  // namespace

SiteTable intern_sites(const Timeline &timeline) {
  SiteTable t;
  size_t allocs = 0, maps = 0;  // sized first: growing a 10-million entry vector costs more
  for (uint32_t k = 0; k < timeline.size; ++k) {
    const MemoryRecord &r = timeline.at(k);
    allocs += owned_alloc(r);
    maps += r.op == static_cast<uint8_t>(Op::kMap) && r.result == 0;
  }
  t.alloc_sequence.reserve(allocs);
  t.map_sequence.reserve(maps);
  FlatMap<uint64_t, uint32_t, U64Hash> index;
  for (uint32_t k = 0; k < timeline.size; ++k) {
    const MemoryRecord &r = timeline.at(k);
    bool alloc = owned_alloc(r);
    bool map = r.op == static_cast<uint8_t>(Op::kMap) && r.result == 0;
    if (!alloc && !map) continue;
    uint64_t key = static_cast<uint64_t>(r.stack_id) << 32 | r.py_stack_id;
    auto [site, fresh] = index.try_emplace(key, static_cast<uint32_t>(t.sites.size()));
    if (fresh) t.sites.push_back(Site{r.stack_id, r.py_stack_id});
    (alloc ? t.alloc_sequence : t.map_sequence).emplace_back(k, *site);
  }
  return t;
}

int Ledger::slot_of(int device) const {
  auto it = std::lower_bound(devices.begin(), devices.end(), device);
  return it != devices.end() && *it == device ? static_cast<int>(it - devices.begin()) : -1;
}

namespace {

// Where a live allocation is found again: host pointers are process-wide, the rest per device.
struct Key {
  uint64_t address;
  int32_t device;
  Space space;
  bool operator==(const Key &o) const { return address == o.address && device == o.device && space == o.space; }
};
struct KeyHash {
  uint64_t operator()(const Key &k) const {
    uint64_t where = static_cast<uint64_t>(static_cast<uint32_t>(k.device) + 1) << 8 | static_cast<uint8_t>(k.space);
    return mix64(k.address ^ (where << 44));
  }
};

class Replayer {
 public:
  Replayer(const Capture &capture, const Timeline &timeline, const SiteTable &sites, const std::vector<Span> &spans,
           Ledger *out)
      : capture_(capture), timeline_(timeline), sites_(sites), spans_(spans), out_(*out) {}

  void run() {
    collect_devices();
    size_t slots = out_.devices.size();
    live_.assign(slots, 0);
    out_.totals.assign(slots, DeviceTotals{});
    out_.per_span.assign(spans_.size(), std::vector<IterationDevice>(slots));
    for (size_t s = 0; s < spans_.size(); ++s)
      for (size_t d = 0; d < slots; ++d) out_.per_span[s][d].device = out_.devices[d];
    std::vector<uint32_t> by_begin(spans_.size()), by_end(spans_.size());
    std::iota(by_begin.begin(), by_begin.end(), 0u);
    std::iota(by_end.begin(), by_end.end(), 0u);
    std::stable_sort(by_begin.begin(), by_begin.end(),
                     [&](uint32_t a, uint32_t b) { return spans_[a].begin < spans_[b].begin; });
    std::stable_sort(by_end.begin(), by_end.end(),
                     [&](uint32_t a, uint32_t b) { return spans_[a].end < spans_[b].end; });
    size_t n = timeline_.size, nb = 0, ne = 0;
    out_.allocs.reserve(sites_.alloc_sequence.size());
    format::prefer_huge_pages(out_.allocs);
    open_pos_.assign(spans_.size(), kNone);
    for (size_t k = 0; k <= n; ++k) {
      // Open before closing, so that an empty span [k, k) opens and closes at the same moment.
      for (; nb < by_begin.size() && spans_[by_begin[nb]].begin <= k; ++nb) open_span(by_begin[nb]);
      for (; ne < by_end.size() && spans_[by_end[ne]].end <= k; ++ne) close_span(by_end[ne]);
      if (k < n) apply(static_cast<uint32_t>(k), timeline_.at(static_cast<uint32_t>(k)));
    }
    for (size_t d = 0; d < slots; ++d) out_.totals[d].live = live_[d];
    out_.accounting.events = capture_.memory.size();
    out_.accounting.host_pinned_live_at_exit_bytes = host_live_;
    out_.accounting.host_pinned_peak_bytes = host_peak_;
  }

 private:
  void collect_devices() {
    std::vector<int> &d = out_.devices;
    // Record devices are int16; a device record's index is taken only in that range (untrusted).
    for (const auto &dev : capture_.devices)
      if (dev.index >= 0 && dev.index <= INT16_MAX) d.push_back(dev.index);
    std::vector<bool> seen(INT16_MAX + 1, false);
    for (const auto &r : capture_.memory) {
      int dev = device_of(r.device);
      if (!seen[dev]) seen[dev] = true, d.push_back(dev);
    }
    std::sort(d.begin(), d.end());
    d.erase(std::unique(d.begin(), d.end()), d.end());
    if (d.empty()) return;
    lookup_.assign(static_cast<size_t>(d.back()) + 1, -1);
    for (size_t i = 0; i < d.size(); ++i) lookup_[d[i]] = static_cast<int>(i);
  }
  int slot(int16_t device) const { return lookup_[device_of(device)]; }

  void open_span(uint32_t s) {
    open_pos_[s] = static_cast<uint32_t>(open_.size());
    open_.push_back(s);
    for (size_t d = 0; d < live_.size(); ++d) out_.per_span[s][d].peak_bytes = live_[d];
  }
  void close_span(uint32_t s) {
    for (size_t d = 0; d < live_.size(); ++d) out_.per_span[s][d].live_end_bytes = live_[d];
    uint32_t pos = open_pos_[s];
    if (pos == kNone) return;
    open_pos_[open_.back()] = pos;
    open_[pos] = open_.back();
    open_.pop_back();
    open_pos_[s] = kNone;
  }

  void apply(uint32_t k, const MemoryRecord &r) {
    Op op = static_cast<Op>(r.op);
    if (r.result != 0) {
      if (op == Op::kAlloc) ++out_.accounting.failed_allocations;
      return;  // a failed call changes nothing
    }
    switch (op) {
      case Op::kAlloc:
        return alloc(k, r);
      case Op::kFree:
        return free(k, r);
      case Op::kMap:
        return map(k, r);
      case Op::kContextReset:
        return reset(k, r);
      default:
        return;  // unmap, reserve, pool ops: no owned bytes change (VMM counts at create)
    }
  }

  Key key_of(uint64_t address, int16_t device, Space space) const {
    return Key{address, space == Space::kHost ? -1 : device_of(device), space};
  }

  void alloc(uint32_t k, const MemoryRecord &r) {
    if (r.flags & format::kFlagGraphReservation) {
      ++out_.accounting.graph_reservations;
      return;
    }
    Space space = space_of(r.kind);
    if (space == Space::kNotOwned) {
      ++out_.accounting.not_owned;
      return;
    }
    Key key = key_of(r.address, r.device, space);
    auto [index, fresh] = live_map_.try_emplace(key, static_cast<uint32_t>(out_.allocs.size()));
    if (!fresh) {  // its free was never seen: the old allocation ends here
      release(*index, k, false);
      *index = static_cast<uint32_t>(out_.allocs.size());
    }
    Alloc a;
    a.size = r.size;
    a.birth = k;
    a.site = sites_.alloc_sequence[out_.allocs.size()].second;  // one for one, same predicate
    a.slot = static_cast<uint16_t>(slot(r.device));
    a.space = space;
    out_.allocs.push_back(a);
    ++out_.accounting.allocations;
    if (space == Space::kHost) {
      host_live_ += a.size;
      host_peak_ = std::max(host_peak_, host_live_);
      return;
    }
    uint64_t &live = live_[a.slot];
    live += a.size;
    DeviceTotals &t = out_.totals[a.slot];
    t.peak = std::max(t.peak, live);
    ++t.allocs;
    for (uint32_t s : open_) {
      IterationDevice &it_dev = out_.per_span[s][a.slot];
      it_dev.allocated_bytes += a.size;
      ++it_dev.alloc_count;
      it_dev.peak_bytes = std::max(it_dev.peak_bytes, live);
    }
  }

  // The live allocation a free or map refers to: its key, or false. A free whose kind was not
  // recorded is tried in every space; a device pointer freed while another device was current is
  // looked for on the other devices.
  bool find(uint64_t address, int16_t device, uint8_t kind, Key *key, uint32_t *index) {
    static const Space kAll[] = {Space::kDevicePtr, Space::kArray, Space::kVmm, Space::kHost};
    Space space = space_of(kind);
    for (Space s : kAll) {
      if (kind != 0 && s != space) continue;
      *key = key_of(address, device, s);
      if (uint32_t *found = live_map_.find(*key)) return *index = *found, true;
      if (s == Space::kHost) continue;
      for (int dev : out_.devices) {
        if (dev == device_of(device)) continue;
        *key = Key{address, dev, s};
        if (uint32_t *found = live_map_.find(*key)) return *index = *found, true;
      }
    }
    return false;
  }

  void free(uint32_t k, const MemoryRecord &r) {
    if (r.flags & format::kFlagGraphReservation) return;
    if (r.kind != 0 && space_of(r.kind) == Space::kNotOwned) return;  // closing an import
    Key key;
    uint32_t index;
    if (!find(r.address, r.device, r.kind, &key, &index)) {
      ++out_.accounting.unmatched_frees;
      return;
    }
    live_map_.erase(key);
    release(index, k, true);
  }

  void release(uint32_t index, uint32_t k, bool counted) {
    Alloc &a = out_.allocs[index];
    a.death = k;
    if (counted) ++out_.accounting.frees;
    if (a.space == Space::kHost) {
      host_live_ -= a.size;
      return;
    }
    live_[a.slot] -= a.size;
    ++out_.totals[a.slot].frees;
    for (uint32_t s : open_) {
      IterationDevice &it_dev = out_.per_span[s][a.slot];
      it_dev.freed_bytes += a.size;
      ++it_dev.free_count;
    }
  }

  // A mapping names the site that made the segment grow: the physical memory is charged to it.
  void map(uint32_t k, const MemoryRecord &r) {
    Key key;
    uint32_t index;
    if (!find(r.aux, r.device, static_cast<uint8_t>(Kind::kVmm), &key, &index)) return;
    if (mapped_.size() <= index) mapped_.resize(out_.allocs.size(), false);
    if (mapped_[index]) return;
    mapped_[index] = true;
    while (next_map_ < sites_.map_sequence.size() && sites_.map_sequence[next_map_].first < k) ++next_map_;
    if (next_map_ < sites_.map_sequence.size() && sites_.map_sequence[next_map_].first == k)
      out_.allocs[index].site = sites_.map_sequence[next_map_].second;
  }

  void reset(uint32_t k, const MemoryRecord &r) {
    ++out_.accounting.context_resets;
    int s = slot(r.device);
    std::vector<std::pair<uint32_t, Key>> dropped;
    live_map_.for_each([&](const Key &key, uint32_t index) {
      if (out_.allocs[index].slot == s) dropped.emplace_back(index, key);
    });
    std::sort(dropped.begin(), dropped.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
    for (const auto &[index, key] : dropped) {
      live_map_.erase(key);
      release(index, k, false);
    }
  }

  const Capture &capture_;
  const Timeline &timeline_;
  const SiteTable &sites_;
  const std::vector<Span> &spans_;
  Ledger &out_;
  std::vector<int> lookup_;     // device index -> slot
  std::vector<uint64_t> live_;  // per slot
  uint64_t host_live_ = 0, host_peak_ = 0;
  FlatMap<Key, uint32_t, KeyHash> live_map_;  // -> index in allocs
  std::vector<bool> mapped_;                  // per alloc: its VMM handle was mapped already
  size_t next_map_ = 0;                       // cursor in sites_.map_sequence
  std::vector<uint32_t> open_;                // spans open at the current position
  std::vector<uint32_t> open_pos_;
};

}  // namespace

Ledger replay(const Capture &capture, const Timeline &timeline, const SiteTable &sites,
              const std::vector<Span> &spans) {
  Ledger ledger;
  Replayer(capture, timeline, sites, spans, &ledger).run();
  return ledger;
}

}  // namespace gpuleak::analysis::detail
