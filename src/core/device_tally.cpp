#include "core/device_tally.h"

#include <algorithm>
#include <cstring>

namespace gpuleak::core {

namespace {

using format::Kind;

bool counts_on_device(Kind k) {
  return k == Kind::kDevice || k == Kind::kAsync || k == Kind::kVmm || k == Kind::kManaged || k == Kind::kPitched ||
         k == Kind::kArray || k == Kind::kMipmappedArray;
}
bool counts_on_host(Kind k) { return k == Kind::kHostPinned || k == Kind::kHostRegistered; }

void add_to(std::atomic<uint64_t> &a, int64_t bytes) {
  uint64_t v = a.load(std::memory_order_relaxed) + static_cast<uint64_t>(bytes);
  a.store(static_cast<int64_t>(v) < 0 ? 0 : v, std::memory_order_relaxed);  // a free never counted (a drop)
}

}  // namespace

// The recorder's former live-table accounting, from the records: an allocation the program owns
// (succeeded, not a graph reservation, not imported) adds its bytes; a free of a known pointer
// (which carries the allocation's size and kind) takes them away; a context reset empties its
// device.
bool DeviceTally::change_of(const format::MemoryRecord &r, Change *c) {
  if (r.result != 0) return false;
  auto op = static_cast<format::Op>(r.op);
  auto kind = static_cast<Kind>(r.kind);
  int16_t s = static_cast<int16_t>(slot(r.device));
  int64_t bytes = static_cast<int64_t>(r.size);
  if (op == format::Op::kAlloc) {
    if (r.flags & format::kFlagGraphReservation) return false;
  } else if (op == format::Op::kFree) {
    if (r.flags & format::kFlagUnknownPointer) return false;
    bytes = -bytes;
  } else if (op == format::Op::kContextReset) {
    *c = Change{r.ts_ns, 0, s, kReset};
    return true;
  } else {
    return false;
  }
  if (counts_on_device(kind))
    *c = Change{r.ts_ns, bytes, s, kDevice};
  else if (counts_on_host(kind))
    *c = Change{r.ts_ns, bytes, s, kHost};
  else
    return false;
  return true;
}

void DeviceTally::add(const format::MemoryRecord &r) {
  Change c;
  if (change_of(r, &c)) changes_.push_back(c);
}

void DeviceTally::add_now(const format::MemoryRecord &r) {
  Change c;
  if (change_of(r, &c)) apply(c);
}

void DeviceTally::settle() {
  auto by_time = [](const Change &a, const Change &b) { return a.ts < b.ts; };
  if (!std::is_sorted(changes_.begin(), changes_.end(), by_time))  // one thread's drain always is
    std::stable_sort(changes_.begin(), changes_.end(), by_time);
  for (const Change &c : changes_) apply(c);
  changes_.clear();
}

void DeviceTally::add_drained(const uint8_t *data, size_t n) {
  size_t pos = 0;
  while (pos + sizeof(format::RecordHeader) <= n) {
    format::RecordHeader h;
    std::memcpy(&h, data + pos, sizeof h);
    size_t body = pos + sizeof h;
    pos = body + h.size;
    if (h.type != static_cast<uint16_t>(format::RecordType::kMemory) || h.size < sizeof(format::MemoryRecord) ||
        pos > n)
      continue;
    format::MemoryRecord r;
    std::memcpy(&r, data + body, sizeof r);
    add(r);
  }
  settle();
}

void DeviceTally::apply(const Change &c) {
  if (c.what == kHost) return add_to(host_live_, c.bytes);
  std::atomic<uint64_t> &live = live_[c.slot];
  uint64_t before = live.load(std::memory_order_relaxed);
  if (c.what == kReset)
    live.store(0, std::memory_order_relaxed);
  else
    add_to(live, c.bytes);
  uint64_t after = live.load(std::memory_order_relaxed);
  add_to(total_live_, static_cast<int64_t>(after - before));
  if (after > peak_[c.slot].load(std::memory_order_relaxed)) peak_[c.slot].store(after, std::memory_order_relaxed);
  uint64_t total = total_live_.load(std::memory_order_relaxed);
  if (total > total_peak_.load(std::memory_order_relaxed)) total_peak_.store(total, std::memory_order_relaxed);
}

}  // namespace gpuleak::core
