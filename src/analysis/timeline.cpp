// Pass 0: one replay of the memory records that keeps no record. It counts them, interns the call
// sites in the order their first allocation happens, finds every device, places the iteration
// spans and the OOM records on event positions, and (only for automatic period detection) keeps
// the site of each allocation.
#include <algorithm>
#include <numeric>

#include "analysis/timeline.h"

namespace gpuleak::analysis::detail {

using format::Capture;
using format::Kind;
using format::MemoryRecord;

uint32_t SiteTable::of(const MemoryRecord &r) const {
  // Every site was interned in pass 0, before any later pass asks.
  const uint32_t *found =
      const_cast<FlatMap<uint64_t, uint32_t, U64Hash> &>(index).find(site_key(r.stack_id, r.py_stack_id));
  return found ? *found : 0;
}

namespace {

// Positions of times, answered while the records pass in time order: lower (the first position
// whose time is >= t) or upper (the first whose time is > t).
class Placer {
 public:
  void add(uint64_t t, bool upper, uint32_t *answer) { queries_.push_back({t, upper, answer}); }
  void sort() {
    // Lower before upper at equal times: what record k answers is then always a prefix.
    std::stable_sort(queries_.begin(), queries_.end(),
                     [](const Query &a, const Query &b) { return a.t != b.t ? a.t < b.t : a.upper < b.upper; });
  }
  // Record k has time ts: answers every query whose position is k.
  void at(uint32_t k, uint64_t ts) {
    for (; next_ < queries_.size(); ++next_) {
      const Query &q = queries_[next_];
      if (q.upper ? q.t >= ts : q.t > ts) break;
      *q.answer = k;
    }
  }
  void finish(uint32_t n) {
    for (; next_ < queries_.size(); ++next_) *queries_[next_].answer = n;
  }

 private:
  struct Query {
    uint64_t t;
    bool upper;
    uint32_t *answer;
  };
  std::vector<Query> queries_;
  size_t next_ = 0;
};

}  // namespace

uint64_t capture_end_ns(const Capture &capture, const format::MemorySource &source) {
  uint64_t end = source.max_ts();
  for (const auto &r : capture.nvtx) end = std::max(end, r.ts_ns);
  for (const auto &r : capture.markers) end = std::max(end, r.ts_ns);
  for (const auto &r : capture.ooms) end = std::max(end, r.ts_ns);
  return end;
}

void place_spans(const Timeline &timeline, const std::vector<Span *> &spans) {
  Placer placer;
  for (Span *s : spans) {
    placer.add(s->start_ns, false, &s->begin);
    placer.add(s->end_ns, true, &s->end);
  }
  placer.sort();
  timeline.replay_times([&](uint32_t k, uint64_t ts) { placer.at(k, ts); });
  placer.finish(timeline.size);
  for (Span *s : spans) s->end = std::max(s->end, s->begin);
}

Timeline make_timeline(const Capture &capture, const format::MemorySource &source, std::vector<Span> *spans,
                       const std::vector<uint64_t> &oom_ts, std::vector<uint32_t> *oom_positions, bool sequence,
                       SiteTable *sites) {
  Timeline t;
  t.source = &source;
  // Positions are 32-bit; four billion records would be a 300 GB capture.
  t.size = static_cast<uint32_t>(std::min<uint64_t>(source.size(), kNone - 1));
  t.end_ns = capture_end_ns(capture, source);

  Placer placer;
  for (Span &s : *spans) {
    placer.add(s.start_ns, false, &s.begin);
    placer.add(s.end_ns, true, &s.end);
  }
  oom_positions->assign(oom_ts.size(), 0);
  for (size_t i = 0; i < oom_ts.size(); ++i) placer.add(oom_ts[i], false, &(*oom_positions)[i]);
  placer.sort();

  std::vector<bool> seen(INT16_MAX + 1, false);
  t.replay([&](uint32_t k, const MemoryRecord &r) {
    placer.at(k, r.ts_ns);
    int dev = device_of(r.device);
    if (!seen[dev]) seen[dev] = true, t.devices.push_back(dev);
    if (r.op == static_cast<uint8_t>(format::Op::kAlloc) && r.result == 0) {
      switch (static_cast<Kind>(r.kind)) {
        case Kind::kDevice:
          ++t.device_allocs;
          t.device_2mib_allocs += r.size % (2u << 20) == 0;
          break;
        case Kind::kAsync:
          ++t.async_allocs;
          break;
        case Kind::kVmm:
          ++t.vmm_allocs;
          break;
        case Kind::kPoolBlock:
          ++t.pool_block_allocs;
          break;
        default:
          break;
      }
    }
    const bool alloc = owned_alloc(r);
    if (!alloc && !successful_map(r)) return;
    auto [site, fresh] =
        sites->index.try_emplace(site_key(r.stack_id, r.py_stack_id), static_cast<uint32_t>(sites->sites.size()));
    if (fresh) sites->sites.push_back(Site{r.stack_id, r.py_stack_id});
    if (!alloc) return;
    ++sites->allocations;
    if (sequence) sites->alloc_sequence.push_back(*site), sites->alloc_positions.push_back(k);
  });
  placer.finish(t.size);
  for (Span &s : *spans) s.end = std::max(s.end, s.begin);
  // Record devices are int16; a device record's index is taken only in that range (untrusted).
  for (const auto &dev : capture.devices)
    if (dev.index >= 0 && dev.index <= INT16_MAX) t.devices.push_back(dev.index);
  std::sort(t.devices.begin(), t.devices.end());
  t.devices.erase(std::unique(t.devices.begin(), t.devices.end()), t.devices.end());
  return t;
}

}  // namespace gpuleak::analysis::detail
