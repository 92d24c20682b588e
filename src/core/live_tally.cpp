#include "core/live_tally.h"

#include <algorithm>
#include <cstring>

#include "format/record_framing.h"

namespace gpuleak::core {

namespace {

using format::Kind;
using format::PairingTable;
using format::PairRole;

bool counts_on_host(uint8_t kind) {
  return kind == static_cast<uint8_t>(Kind::kHostPinned) || kind == static_cast<uint8_t>(Kind::kHostRegistered);
}

void add_to(std::atomic<uint64_t> &a, int64_t bytes) {
  uint64_t v = a.load(std::memory_order_relaxed) + static_cast<uint64_t>(bytes);
  a.store(static_cast<int64_t>(v) < 0 ? 0 : v, std::memory_order_relaxed);
}

void raise(std::atomic<uint64_t> &peak, uint64_t v) {
  if (v > peak.load(std::memory_order_relaxed)) peak.store(v, std::memory_order_relaxed);
}

}  // namespace

void LiveTally::reserve() { table_.reserve(2048); }

void LiveTally::change(int16_t device, uint8_t kind, int64_t bytes) {
  if (counts_on_host(kind)) return add_to(host_live_, bytes);
  if (!format::counts_on_device(kind)) return;
  std::atomic<uint64_t> &live = live_[slot(device)];
  const uint64_t before = live.load(std::memory_order_relaxed);
  add_to(live, bytes);
  const uint64_t after = live.load(std::memory_order_relaxed);
  add_to(total_live_, static_cast<int64_t>(after - before));
  raise(peak_[slot(device)], after);
  raise(total_peak_, total_live_.load(std::memory_order_relaxed));
}

void LiveTally::reset(int16_t device) {
  table_.erase_device(device);
  count_.store(table_.size(), std::memory_order_relaxed);
  std::atomic<uint64_t> &live = live_[slot(device)];
  add_to(total_live_, -static_cast<int64_t>(live.load(std::memory_order_relaxed)));
  live.store(0, std::memory_order_relaxed);
}

void LiveTally::apply(const format::MemoryRecord &r, bool may_grow) {
  const PairRole role = format::pair_role(r);
  if (role == PairRole::kNone) return;
  if (role == PairRole::kResetsDevice) return reset(r.device);
  const uint64_t key = format::pairing_key(r.space, r.address);
  const bool owned = r.op == static_cast<uint8_t>(format::Op::kAlloc) && !(r.flags & format::kFlagGraphReservation);
  if (role == PairRole::kLives) {
    bool fresh = false;
    PairingTable::Entry *e = table_.insert(key, may_grow, &fresh);
    if (!e) return;
    uint8_t late = 0;
    if (!fresh) {
      if (e->birth_ns > r.ts_ns) {
        // An allocation older than the one at its address, drained after it: it ended before the
        // newer one began, and its free, still to come, is the entry's late free.
        if (e->late_frees < UINT8_MAX) ++e->late_frees;
        return;
      }
      // The address handed out again before its free reached us: the old allocation ends here,
      // and its free, when it comes (older than this entry), is consumed.
      change(e->device, e->kind, -static_cast<int64_t>(e->size));
      late = e->late_frees < UINT8_MAX ? e->late_frees + 1 : UINT8_MAX;
    }
    *e = PairingTable::Entry{r.size, r.ts_ns, r.device, r.kind, late};
    if (owned) change(r.device, r.kind, static_cast<int64_t>(r.size));
    count_.store(table_.size(), std::memory_order_relaxed);
    return;
  }
  // A free (or a range or pool given back). One that failed leaves the allocation live.
  if (r.result != 0) return;
  PairingTable::Entry *e = table_.find(key);
  if (!e) return;               // a pointer never seen allocated
  if (r.ts_ns < e->birth_ns) {  // the late free of an allocation this entry replaced
    if (e->late_frees > 0) --e->late_frees;
    return;
  }
  change(e->device, e->kind, -static_cast<int64_t>(e->size));
  table_.erase(key);
  count_.store(table_.size(), std::memory_order_relaxed);
}

void LiveTally::add_now(const format::MemoryRecord &r) { apply(r, false); }

void LiveTally::add_drained(const uint8_t *data, size_t n) {
  order_.clear();
  bool sorted = true;
  format::each_record(data, n, [&](const format::RecordHeader &h, const uint8_t *body, size_t) {
    if (h.type != static_cast<uint16_t>(format::RecordType::kMemory) || h.size < sizeof(format::MemoryRecord)) return;
    uint64_t ts;  // the record's first field
    std::memcpy(&ts, body, sizeof ts);
    if (!order_.empty() && ts < order_.back().first) sorted = false;
    order_.emplace_back(ts, static_cast<size_t>(body - data));
  });
  if (!sorted)
    std::stable_sort(order_.begin(), order_.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
  for (const auto &[ts, body] : order_) {
    format::MemoryRecord r;
    std::memcpy(&r, data + body, sizeof r);
    apply(r, true);
  }
}

}  // namespace gpuleak::core
