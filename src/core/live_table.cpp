#include "core/live_table.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>

namespace gpuleak::core {

namespace {
void raise_peak(std::atomic<uint64_t> &peak, uint64_t value) {
  uint64_t seen = peak.load(std::memory_order_relaxed);
  while (value > seen && !peak.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}
int slot(int device) { return device < 0 ? 0 : device % LiveTable::kMaxDevices; }
}  // namespace

void LiveTable::account(const LiveEntry &e, int64_t sign) {
  if (e.counts_on_device) {
    int d = slot(e.device);
    if (sign > 0) {
      raise_peak(peak_[d], live_[d].fetch_add(e.size, std::memory_order_relaxed) + e.size);
      raise_peak(total_peak_, total_live_.fetch_add(e.size, std::memory_order_relaxed) + e.size);
    } else {
      live_[d].fetch_sub(e.size, std::memory_order_relaxed);
      total_live_.fetch_sub(e.size, std::memory_order_relaxed);
    }
  }
  if (e.counts_on_host) {
    if (sign > 0)
      host_live_.fetch_add(e.size, std::memory_order_relaxed);
    else
      host_live_.fetch_sub(e.size, std::memory_order_relaxed);
  }
  if (sign > 0)
    live_count_.fetch_add(1, std::memory_order_relaxed);
  else
    live_count_.fetch_sub(1, std::memory_order_relaxed);
}

namespace {
size_t mix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  return static_cast<size_t>(k ^ (k >> 33));
}
}  // namespace

LiveTable::Slot *LiveTable::Shard::find(uint64_t k) {
  if (slots.empty()) return nullptr;
  size_t mask = slots.size() - 1;
  for (size_t i = mix(k) & mask;; i = (i + 1) & mask) {
    Slot &slot = slots[i];
    if (slot.state == 0) return nullptr;
    if (slot.state == 1 && slot.key == k) return &slot;
  }
}

LiveTable::Slot *LiveTable::Shard::claim(uint64_t k) {
  if ((used + 1) * 2 > slots.size()) grow();
  size_t mask = slots.size() - 1;
  Slot *erased = nullptr;
  for (size_t i = mix(k) & mask;; i = (i + 1) & mask) {
    Slot &slot = slots[i];
    if (slot.state == 1 && slot.key == k) return &slot;
    if (slot.state == 2 && !erased) erased = &slot;
    if (slot.state == 0) return erased ? erased : &slot;
  }
}

void LiveTable::Shard::grow() {
  std::vector<Slot> old;
  old.swap(slots);
  size_t size = 64;
  while (size < full * 4) size <<= 1;  // rehashing drops erased slots
  slots.assign(size, Slot{0, LiveEntry{}, 0});
  used = full = 0;
  for (const Slot &slot : old)
    if (slot.state == 1) {
      Slot *to = claim(slot.key);
      *to = slot;
      ++used, ++full;
    }
}

void LiveTable::insert(Space space, uint64_t address, const LiveEntry &e) {
  uint64_t k = key(space, address);
  Shard &s = shard(k);
  LiveEntry stale;
  bool replaced = false;
  {
    std::lock_guard<SpinLock> lock(s.lock);
    Slot *slot = s.claim(k);
    if (slot->state == 1) {
      stale = slot->entry;
      replaced = true;
    } else {
      if (slot->state == 0) ++s.used;
      ++s.full;
    }
    *slot = Slot{k, e, 1};
  }
  if (replaced) account(stale, -1);
  account(e, +1);
}

bool LiveTable::take(Space space, uint64_t address, LiveEntry *out) {
  uint64_t k = key(space, address);
  Shard &s = shard(k);
  {
    std::lock_guard<SpinLock> lock(s.lock);
    Slot *slot = s.find(k);
    if (!slot) return false;
    *out = slot->entry;
    slot->state = 2;
    --s.full;
  }
  account(*out, -1);
  return true;
}

void LiveTable::drop_device(int device) {
  for (Shard &s : shards_) {
    std::vector<LiveEntry> gone;
    {
      std::lock_guard<SpinLock> lock(s.lock);
      for (Slot &slot : s.slots) {
        if (slot.state == 1 && slot.entry.device == device && slot.entry.counts_on_device) {
          gone.push_back(slot.entry);
          slot.state = 2;
          --s.full;
        }
      }
    }
    for (const LiveEntry &e : gone) account(e, -1);
  }
}

uint64_t LiveTable::device_live(int device) const { return live_[slot(device)].load(std::memory_order_relaxed); }
uint64_t LiveTable::device_peak(int device) const { return peak_[slot(device)].load(std::memory_order_relaxed); }
uint64_t LiveTable::total_device_live() const { return total_live_.load(std::memory_order_relaxed); }

std::vector<LiveTable::SiteTotal> LiveTable::by_site(int device) const {
  std::unordered_map<uint32_t, SiteTotal> sites;
  for (const Shard &s : shards_) {
    std::lock_guard<SpinLock> lock(s.lock);
    for (const Slot &slot : s.slots) {
      if (slot.state != 1) continue;
      const LiveEntry &e = slot.entry;
      if (!e.counts_on_device || (device >= 0 && e.device != device)) continue;
      SiteTotal &t = sites.try_emplace(e.stack_id, SiteTotal{e.stack_id, 0, 0}).first->second;
      t.bytes += e.size;
      ++t.count;
    }
  }
  std::vector<SiteTotal> out;
  for (auto &[id, t] : sites) out.push_back(t);
  std::sort(out.begin(), out.end(), [](const SiteTotal &a, const SiteTotal &b) { return a.bytes > b.bytes; });
  return out;
}

}  // namespace gpuleak::core
