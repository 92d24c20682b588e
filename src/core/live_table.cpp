#include "core/live_table.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>

namespace gpuleak::core {

namespace {
size_t mix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  return static_cast<size_t>(k ^ (k >> 33));
}
}  // namespace

inline __attribute__((always_inline)) LiveTable::Slot *LiveTable::Shard::find(uint64_t k) const {
  if (slots.empty()) return nullptr;
  size_t mask = slots.size() - 1;
  for (size_t i = mix(k) & mask;; i = (i + 1) & mask) {
    const Slot &slot = slots[i];
    if (slot.state == 0) return nullptr;
    if (slot.state == 1 && slot.key == k) return const_cast<Slot *>(&slot);
  }
}

inline __attribute__((always_inline)) LiveTable::Slot *LiveTable::Shard::claim(uint64_t k) {
  if (__builtin_expect((used + 1) * 2 > slots.size(), 0)) grow();
  size_t mask = slots.size() - 1;
  Slot *erased = nullptr;
  for (size_t i = mix(k) & mask;; i = (i + 1) & mask) {
    Slot &slot = slots[i];
    if (slot.state == 1 && slot.key == k) return &slot;
    if (slot.state == 2 && !erased) erased = &slot;
    if (slot.state == 0) return erased ? erased : &slot;
  }
}

__attribute__((noinline)) void LiveTable::Shard::grow() {
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

bool LiveTable::insert(Space space, uint64_t address, const LiveEntry &e, bool may_grow) {
  uint64_t k = key_of(space, address);
  Shard &s = shard(k);
  std::lock_guard<SpinLock> lock(s.lock);
  if (!may_grow && (s.used + 1) * 2 > s.slots.size()) return false;
  Slot *slot = s.claim(k);
  if (slot->state != 1) {  // else a stale entry at the same address, replaced
    if (slot->state == 0) ++s.used;
    s.full.store(s.full.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  *slot = Slot{k, e, 1};
  return true;
}

bool LiveTable::take(Space space, uint64_t address, LiveEntry *out) {
  uint64_t k = key_of(space, address);
  Shard &s = shard(k);
  std::lock_guard<SpinLock> lock(s.lock);
  Slot *slot = s.find(k);
  if (!slot) return false;
  *out = slot->entry;
  slot->state = 2;
  s.full.store(s.full.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  return true;
}

bool LiveTable::peek(Space space, uint64_t address, LiveEntry *out) const {
  uint64_t k = key_of(space, address);
  const Shard &s = shard(k);
  std::lock_guard<SpinLock> lock(s.lock);
  const Slot *slot = s.find(k);
  if (!slot) return false;
  *out = slot->entry;
  return true;
}

void LiveTable::drop_device(int device) {
  for (Shard &s : shards_) {
    std::lock_guard<SpinLock> lock(s.lock);
    for (Slot &slot : s.slots) {
      if (slot.state == 1 && slot.entry.device == device && slot.entry.counts_on_device) {
        slot.state = 2;
        --s.full;
      }
    }
  }
}

void LiveTable::reserve() {
  for (Shard &s : shards_) {
    std::lock_guard<SpinLock> lock(s.lock);
    if (s.slots.empty()) s.grow();
  }
}

uint64_t LiveTable::live_count() const {
  uint64_t n = 0;
  for (const Shard &s : shards_) n += s.full.load(std::memory_order_relaxed);
  return n;
}

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
