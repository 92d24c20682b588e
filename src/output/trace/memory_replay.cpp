// The replay behind the timeline's counters (see memory_replay.h for why it mirrors
// src/analysis/ledger.cpp rather than calling it: analysis.h publishes no time series).
#include "output/trace/memory_replay.h"

#include <algorithm>
#include <unordered_map>

#include "format/address_space.h"

namespace gpuleak::output::trace {

using format::Kind;
using format::MemoryRecord;
using format::Op;

namespace {

using Space = format::AddressSpace;
Space space_of(uint8_t kind) { return format::address_space_of(kind); }

int device_of(int16_t device) { return device < 0 ? 0 : device; }

struct Key {
  uint64_t address;
  int32_t device;
  Space space;
  bool operator==(const Key &o) const { return address == o.address && device == o.device && space == o.space; }
};
struct KeyHash {
  size_t operator()(const Key &k) const {
    uint64_t x = k.address ^ (static_cast<uint64_t>(static_cast<uint32_t>(k.device) + 1) << 52) ^
                 (static_cast<uint64_t>(k.space) << 60);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return static_cast<size_t>(x);
  }
};

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

std::vector<uint32_t> MemoryReplay::live_before(uint32_t p, int device) const {
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < lives.size(); ++i) {
    const Life &l = lives[i];
    if (l.birth >= p) break;  // birth order
    if (l.device == device && (l.death == kNoEvent || l.death >= p)) out.push_back(i);
  }
  return out;
}

MemoryReplay::MemoryReplay(const format::Capture &capture) {
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

  const uint16_t host_track = static_cast<uint16_t>(devices.size());
  std::vector<uint64_t> live(devices.size() + 1, 0);
  peak.assign(devices.size(), 0);
  peak_at.assign(devices.size(), 0);
  life_of_.assign(size_, kNoEvent);
  std::unordered_map<Key, uint32_t, KeyHash> live_map;
  std::vector<bool> mapped;

  auto track_of = [&](const Life &l) { return l.device < 0 ? host_track : static_cast<uint16_t>(slot_of(l.device)); };
  auto release = [&](uint32_t index, uint32_t k) {
    Life &l = lives[index];
    l.death = k;
    uint16_t t = track_of(l);
    live[t] -= l.size;
    changes.push_back({k, t, live[t]});
  };
  auto key_of = [](uint64_t address, int16_t device, Space s) {
    return Key{address, s == Space::kHost ? -1 : device_of(device), s};
  };
  // A free whose kind was not recorded is tried in every space, and a device pointer freed while
  // another device was current on the other devices (the analysis' rule).
  auto find = [&](uint64_t address, int16_t device, uint8_t kind, Key *key) -> uint32_t {
    static const Space kAll[] = {Space::kDevicePtr, Space::kArray, Space::kVmm, Space::kHost};
    for (Space s : kAll) {
      if (kind != 0 && s != space_of(kind)) continue;
      *key = key_of(address, device, s);
      if (auto it = live_map.find(*key); it != live_map.end()) return it->second;
      if (s == Space::kHost) continue;
      for (int dev : devices) {
        if (dev == device_of(device)) continue;
        *key = Key{address, dev, s};
        if (auto it = live_map.find(*key); it != live_map.end()) return it->second;
      }
    }
    return kNoEvent;
  };

  for (uint32_t k = 0; k < size_; ++k) {
    const MemoryRecord &r = at(k);
    if (r.result != 0) continue;
    const Op op = static_cast<Op>(r.op);
    const bool graph = r.flags & format::kFlagGraphReservation;
    if (op == Op::kAlloc && !graph && space_of(r.kind) != Space::kNotOwned) {
      Space s = space_of(r.kind);
      Key key = key_of(r.address, r.device, s);
      auto [it, fresh] = live_map.try_emplace(key, static_cast<uint32_t>(lives.size()));
      if (!fresh) {  // its free was never seen: the old allocation ends here
        release(it->second, k);
        it->second = static_cast<uint32_t>(lives.size());
      }
      Life l;
      l.size = r.size;
      l.birth = k;
      l.stack_id = r.stack_id;
      l.py_stack_id = r.py_stack_id;
      l.device = s == Space::kHost ? -1 : device_of(r.device);
      life_of_[k] = static_cast<uint32_t>(lives.size());
      lives.push_back(l);
      uint16_t t = track_of(l);
      live[t] += l.size;
      changes.push_back({k, t, live[t]});
      if (t == host_track) {
        host_peak = std::max(host_peak, live[t]);
      } else if (live[t] > peak[t]) {
        peak[t] = live[t];
        peak_at[t] = k + 1;
      }
    } else if (op == Op::kFree && !graph && !(r.kind != 0 && space_of(r.kind) == Space::kNotOwned)) {
      Key key;
      uint32_t index = find(r.address, r.device, r.kind, &key);
      if (index == kNoEvent) continue;
      live_map.erase(key);
      life_of_[k] = index;
      release(index, k);
    } else if (op == Op::kMap) {
      // The mapping names the site that made the segment grow: the memory is charged to it.
      Key key;
      uint32_t index = find(r.aux, r.device, static_cast<uint8_t>(Kind::kVmm), &key);
      if (index == kNoEvent) continue;
      if (mapped.size() <= index) mapped.resize(lives.size(), false);
      if (mapped[index]) continue;
      mapped[index] = true;
      lives[index].stack_id = r.stack_id;
      lives[index].py_stack_id = r.py_stack_id;
    } else if (op == Op::kContextReset) {
      const int dev = device_of(r.device);
      std::vector<std::pair<uint32_t, Key>> dropped;
      for (const auto &[key, index] : live_map)
        if (lives[index].device == dev) dropped.emplace_back(index, key);
      std::sort(dropped.begin(), dropped.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
      for (const auto &[index, key] : dropped) {
        live_map.erase(key);
        release(index, k);
      }
    }
  }
}

}  // namespace gpuleak::output::trace
