#include "format/free_pairing.h"

#include <algorithm>
#include <utility>

namespace gpuleak::format {

PairingTable::PairingTable(size_t capacity) : slots_(capacity < 16 ? 16 : capacity) {}

size_t PairingTable::home(uint64_t key) const {
  uint64_t h = key * 0x9e3779b97f4a7c15ull;
  return static_cast<size_t>(h >> 20) & (slots_.size() - 1);
}

PairingTable::Entry *PairingTable::find(uint64_t key) {
  size_t slot;
  return find(key, &slot);
}

PairingTable::Entry *PairingTable::find(uint64_t key, size_t *slot) {
  const size_t mask = slots_.size() - 1;
  for (size_t i = home(key);; i = (i + 1) & mask) {
    Slot &s = slots_[i];
    if (!s.used) return nullptr;
    if (s.key == key) {
      *slot = i;
      return &s.entry;
    }
  }
}

void PairingTable::erase_slot(size_t slot) {
  if (slot < slots_.size() && slots_[slot].used) erase_at(slot);
}

PairingTable::Entry *PairingTable::insert(uint64_t key, bool may_grow, bool *fresh) {
  if ((used_ + 1) * 2 > slots_.size()) {  // at most half full: probes stay short
    if (!may_grow && used_ + 1 >= slots_.size()) return nullptr;
    if (may_grow) grow();
  }
  const size_t mask = slots_.size() - 1;
  for (size_t i = home(key);; i = (i + 1) & mask) {
    Slot &s = slots_[i];
    if (s.used && s.key == key) {
      *fresh = false;
      return &s.entry;
    }
    if (!s.used) {
      s = Slot{key, Entry{}, true};
      ++used_;
      *fresh = true;
      return &s.entry;
    }
  }
}

void PairingTable::erase_at(size_t i) {
  // Backward shift: each later entry of the probe run moves into the hole if its home allows.
  const size_t mask = slots_.size() - 1;
  slots_[i].used = false;
  --used_;
  for (size_t j = (i + 1) & mask; slots_[j].used; j = (j + 1) & mask) {
    const size_t h = home(slots_[j].key);
    // Movable when its home is not in the cyclic range (i, j].
    const bool stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
    if (stays) continue;
    slots_[i] = slots_[j];
    slots_[j].used = false;
    i = j;
  }
}

void PairingTable::erase(uint64_t key) {
  const size_t mask = slots_.size() - 1;
  for (size_t i = home(key);; i = (i + 1) & mask) {
    if (!slots_[i].used) return;
    if (slots_[i].key == key) return erase_at(i);
  }
}

void PairingTable::erase_device(int16_t device) {
  for (size_t i = 0; i < slots_.size(); ++i)
    while (slots_[i].used && slots_[i].entry.device == device && counts_on_device(slots_[i].entry.kind)) erase_at(i);
}

void PairingTable::grow() {
  std::vector<Slot> old(slots_.size() * 2);
  old.swap(slots_);
  used_ = 0;
  for (const Slot &s : old) {
    if (!s.used) continue;
    bool fresh;
    *insert(s.key, false, &fresh) = s.entry;
  }
}

void PairingTable::reserve(size_t more) {
  while ((used_ + more) * 2 > slots_.size()) grow();
}

void FreePairing::apply(MemoryRecord &r) {
  switch (pair_role(r)) {
    case PairRole::kNone:
      return;
    case PairRole::kResetsDevice:
      return live_.erase_device(r.device);
    case PairRole::kLives: {
      bool fresh;  // an entry already there is an allocation whose free was never seen: replaced
      PairingTable::Entry *e = live_.insert(pairing_key(r.space, r.address), true, &fresh);
      *e = PairingTable::Entry{r.size, r.ts_ns, r.device, r.kind, 0};
      return;
    }
    case PairRole::kEnds: {
      size_t slot;
      const PairingTable::Entry *e = live_.find(pairing_key(r.space, r.address), &slot);
      if (!e) {
        r.flags |= kFlagUnknownPointer;
        return;
      }
      r.size = e->size;
      r.kind = e->kind;
      r.device = e->device;
      r.flags &= static_cast<uint16_t>(~kFlagGraphReservation);  // only a pointer never counted is one
      if (r.result == 0) live_.erase_slot(slot);                 // a free that failed leaves the allocation live
      return;
    }
  }
}

void pair_frees_in_place(std::vector<MemoryRecord> &records) {
  if (std::none_of(records.begin(), records.end(), [](const MemoryRecord &r) { return r.space != 0; })) return;
  std::vector<std::pair<uint64_t, uint32_t>> order;  // (ts, file index): the stable sort by time
  order.reserve(records.size());
  for (size_t i = 0; i < records.size(); ++i) order.emplace_back(records[i].ts_ns, static_cast<uint32_t>(i));
  std::sort(order.begin(), order.end());
  FreePairing pairing;
  for (const auto &o : order) pairing.apply(records[o.second]);
}

}  // namespace gpuleak::format
